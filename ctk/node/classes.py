"""What a discovery mode other than nvml and management finds: csv, wsl, imex, gds, gdrcopy,
mofed, nvswitch.

Part of the one node model (`ctk.node`): `ctk.host.modes` fills it, `ctk.cdi.modes` builds
the spec from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctk.node import CharDevice, HostFile


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassFacts:
    """What a discovery mode other than nvml and management found under the roots."""

    driver_root: str
    dev_root: str
    nodes: tuple[CharDevice, ...] = ()  # the device's nodes: /dev/dxg, IMEX channels, ...
    device_mounts: tuple[HostFile, ...] = ()  # mounted with the nodes (gds: udev, cufile.json)
    mounts: tuple[HostFile, ...] = ()  # mounted in every container (wsl, csv: driver files)
    link_groups: tuple[tuple[tuple[str, str], ...], ...] = ()  # (target, link): a hook each
    warnings: tuple[str, ...] = ()  # what was skipped (a CSV file that cannot be read)
