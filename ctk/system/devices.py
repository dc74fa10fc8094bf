"""NVIDIA device nodes and their /dev/char links: facts in, plans out (no I/O here).

The driver registers its character-device majors in /proc/devices and describes each GPU in
/proc/driver/nvidia/gpus/<bus-id>/information; from those follow the nodes that should exist
(`/dev/nvidia<minor>`, and the control nodes) and the `/dev/char/<major>:<minor>` links that
systemd's device cgroup rules need to find them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from ctk import nvproc
from ctk.enums import StrEnum

FRONTEND_MAJOR = 195
CTL_MINOR, MODESET_MINOR = 255, 254


class Major(StrEnum):
    """Names under which the NVIDIA modules register majors in /proc/devices."""

    FRONTEND = "nvidia-frontend"
    NVIDIA = "nvidia"
    UVM = "nvidia-uvm"
    CAPS = "nvidia-caps"
    CAPS_IMEX = "nvidia-caps-imex-channels"
    NVSWITCH = "nvidia-nvswitch"
    NVLINK = "nvidia-nvlink"


@dataclass(frozen=True, slots=True, order=True)
class DeviceNode:
    """A character device node: where it lives and its numbers."""

    path: PurePosixPath
    major: int
    minor: int


@dataclass(frozen=True, slots=True, order=True)
class CharLink:
    """`link` (`/dev/char/<major>:<minor>`) pointing at the device node `target`."""

    link: PurePosixPath
    target: PurePosixPath


def parse_proc_devices(text: str) -> dict[str, int]:
    """Return name -> major of the character devices in /proc/devices."""
    return nvproc.parse_proc_devices(text)


def nvidia_majors(majors: dict[str, int]) -> dict[Major, int]:
    """The NVIDIA entries of ``majors``."""
    return {name: majors[name.value] for name in Major if name.value in majors}


def parse_device_minor(information: str) -> int | None:
    """Return the `Device Minor:` of a /proc/driver/nvidia/gpus/*/information file."""
    return nvproc.parse_gpu_information(information).device_minor


def wanted_nodes(
    majors: dict[Major, int], gpu_minors: list[int], *, control_devices: bool
) -> list[DeviceNode]:
    """The nodes a node with these majors and GPUs should have, sorted by path."""
    frontend = majors.get(Major.FRONTEND, majors.get(Major.NVIDIA))
    if frontend is None:
        return []
    dev = PurePosixPath("/dev")
    nodes = [DeviceNode(dev / f"nvidia{minor}", frontend, minor) for minor in set(gpu_minors)]
    if control_devices:
        nodes.append(DeviceNode(dev / "nvidiactl", frontend, CTL_MINOR))
        nodes.append(DeviceNode(dev / "nvidia-modeset", frontend, MODESET_MINOR))
        if Major.UVM in majors:
            nodes.append(DeviceNode(dev / "nvidia-uvm", majors[Major.UVM], 0))
            nodes.append(DeviceNode(dev / "nvidia-uvm-tools", majors[Major.UVM], 1))
    return sorted(nodes)


def char_links(nodes: list[DeviceNode], dev_char: PurePosixPath) -> list[CharLink]:
    """One `/dev/char/<major>:<minor>` link per node (the first node of a number wins)."""
    links: dict[PurePosixPath, CharLink] = {}
    for node in sorted(nodes):
        link = dev_char / f"{node.major}:{node.minor}"
        links.setdefault(link, CharLink(link, node.path))
    return sorted(links.values())
