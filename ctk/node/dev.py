"""Which device nodes a node should have: the one rule, from the driver's majors and minors.

Part of the one node model (`ctk.node`): `system create-device-nodes` creates these nodes and
`doctor` expects them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from ctk.enums import StrEnum


class Major(StrEnum):
    """Names under which the NVIDIA modules register majors in /proc/devices."""

    FRONTEND = "nvidia-frontend"
    NVIDIA = "nvidia"
    UVM = "nvidia-uvm"
    CAPS = "nvidia-caps"
    CAPS_IMEX = "nvidia-caps-imex-channels"
    NVSWITCH = "nvidia-nvswitch"
    NVLINK = "nvidia-nvlink"


CTL_MINOR = 255
MODESET_MINOR = 254
UVM_MINOR, UVM_TOOLS_MINOR = 0, 1


@dataclass(frozen=True, slots=True, order=True)
class DevNode:
    """A character device node by name: where it lives and its numbers."""

    path: PurePosixPath
    major: int
    minor: int


def nvidia_majors(majors: Mapping[str, int]) -> dict[str, int]:
    """The NVIDIA entries (`Major` names) of /proc/devices' name -> major table."""
    return {name.value: majors[name.value] for name in Major if name.value in majors}


def expected_nodes(
    majors: Mapping[str, int],
    gpu_minors: Iterable[int],
    *,
    control: bool = True,
    modeset: bool = False,
) -> tuple[DevNode, ...]:
    """The /dev nodes a loaded driver implies, sorted by path.

    ``majors`` is /proc/devices' table: the GPUs and nvidiactl use the major the driver
    registered (`nvidia-frontend`, or `nvidia` on older drivers), never an assumed 195, and
    without one no node is expected (no driver is loaded). ``control``: nvidiactl, plus
    nvidia-uvm and nvidia-uvm-tools when the UVM module registered its major — what CUDA opens.
    ``modeset``: also nvidia-modeset, which only display drivers open (`system
    create-device-nodes --control-devices` creates it, as nvidia-ctk does; a compute node
    without it is healthy).
    """
    frontend = majors.get(Major.FRONTEND.value, majors.get(Major.NVIDIA.value))
    if frontend is None:
        return ()
    dev = PurePosixPath("/dev")
    nodes = {DevNode(dev / f"nvidia{minor}", frontend, minor) for minor in gpu_minors}
    if control:
        nodes.add(DevNode(dev / "nvidiactl", frontend, CTL_MINOR))
        uvm = majors.get(Major.UVM.value)
        if uvm is not None:
            nodes.add(DevNode(dev / "nvidia-uvm", uvm, UVM_MINOR))
            nodes.add(DevNode(dev / "nvidia-uvm-tools", uvm, UVM_TOOLS_MINOR))
    if modeset:
        nodes.add(DevNode(dev / "nvidia-modeset", frontend, MODESET_MINOR))
    return tuple(sorted(nodes))
