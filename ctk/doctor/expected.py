"""What a node should have, from the code that makes it: the CDI devices `ctk cdi generate` writes.

The doctor holds no rule of its own here. A spec names each device by one or more strategies
(index, UUID, type-index: the user's or nvidia-ctk's choice), so a device counts as present when
any of its names is in the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctk.cdi.generate import device_names
from ctk.doctor.facts import NodeFacts, NvmlAnswer

UUID_PREFIXES = ("GPU-", "MIG-")


@dataclass(frozen=True, slots=True)
class ExpectedDevice:
    """One CDI device the node should have: its names by strategy (index, uuid, type-index)."""

    names: tuple[str, ...]

    @property
    def index_name(self) -> str:
        """`0` for a GPU, `0:1` for a MIG device."""
        return self.names[0]

    @property
    def uuid(self) -> str:
        """`GPU-…` or `MIG-…`."""
        return self.names[1]

    @property
    def is_mig(self) -> bool:
        """Whether it is a MIG device (a GPU in MIG mode is no device itself)."""
        return self.uuid.startswith("MIG-")

    @property
    def label(self) -> str:
        """How a report names it."""
        kind = "MIG device" if self.is_mig else "GPU"
        return f"{kind} {self.index_name} ({self.uuid})"


def expected_devices(facts: NodeFacts) -> tuple[ExpectedDevice, ...] | None:
    """The devices `ctk cdi generate` would write for this node; None without NVML's answer."""
    nvml = facts.nvml
    if not isinstance(nvml, NvmlAnswer) or nvml.error_code is not None or nvml.found is None:
        return None
    return tuple(ExpectedDevice(names) for names in device_names(nvml.found))


def missing_from(
    expected: tuple[ExpectedDevice, ...], spec_names: set[str]
) -> list[ExpectedDevice]:
    """The expected devices the spec lacks; a spec that names devices by UUID must use each one's
    current UUID (a replaced GPU keeps its index, but its new UUID is unresolvable)."""
    by_uuid = any(name.startswith(UUID_PREFIXES) for name in spec_names)
    return [
        device
        for device in expected
        if (device.uuid not in spec_names)
        if by_uuid or not any(name in spec_names for name in device.names)
    ]


def unknown_uuids(expected: tuple[ExpectedDevice, ...], spec_names: set[str]) -> list[str]:
    """UUID-named spec devices that name no device generate would write (replaced, removed, or a
    GPU since put in MIG mode)."""
    current = {device.uuid for device in expected}
    return sorted(n for n in spec_names if n.startswith(UUID_PREFIXES) and n not in current)
