"""What the driver registered, from its /proc files under a root: the majors of /proc/devices
and each GPU's information file (its minor). `system` plans device nodes from them and the
doctor reads the information files; `cdi generate` needs neither (it scans /dev through
`ctk.host.devnodes`), so its runs do not define these records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctk.errors import CtkError
from ctk.host import files
from ctk.host.devnodes import scan_dir
from ctk.host.root import HostRoot
from ctk.node.dev import nvidia_majors
from ctk.nvproc import GpuInformation, parse_gpu_information, parse_proc_devices

PROC_DEVICES = "/proc/devices"
GPUS_DIR = "/proc/driver/nvidia/gpus"


@dataclass(frozen=True, slots=True)
class GpuInformationFile:
    """One GPU's information file: what it says, or why it could not be read."""

    container_path: str  # /proc/driver/nvidia/gpus/<bus id>/information, inside the root
    information: GpuInformation | None  # None: unreadable (``error`` says why)
    error: CtkError | None = None


def read_gpu_information(root: HostRoot) -> tuple[GpuInformationFile, ...]:
    """Each GPU's information file under ``root``, by bus id; a GPU without one is left out.

    An unreadable file (a FIFO, a directory, no permission, a link out of the root) is listed
    with its error: `ctk system` refuses to plan nodes without it, the doctor reads on.
    """
    found = []
    for entry in scan_dir(root.path(GPUS_DIR)):
        container_path = f"{GPUS_DIR}/{entry.name}/information"
        try:
            text = files.read_text(
                root.path(container_path), missing_ok=True, limit=files.PROC_LIMIT
            )
        except CtkError as exc:
            found.append(GpuInformationFile(container_path, None, exc))
            continue
        if text is not None:
            found.append(GpuInformationFile(container_path, parse_gpu_information(text)))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class DriverNumbers:
    """What the driver says: its majors (`ctk.node.dev.Major` names) and the minor of each GPU."""

    majors: dict[str, int]
    gpu_minors: list[int]
    source: Path


def read_driver_numbers(root: HostRoot, *, kernel: HostRoot | None = None) -> DriverNumbers:
    """/proc/devices and the GPUs' information files under ``root``.

    A root without /proc/devices is read through ``kernel`` instead, when given (`ctk system`
    passes `/`, as nvidia-ctk reads the running kernel's: a driver container's root has no
    /proc, and the majors are the kernel's, the same for every root on this machine; the
    result's ``source`` says which was read). Without ``kernel`` it is an error, never a silent
    read of this machine's /proc.
    """
    devices = root.path(PROC_DEVICES)
    text = files.read_text(devices, missing_ok=True, limit=files.PROC_LIMIT)
    if text is None and kernel is not None and kernel.path(PROC_DEVICES) != devices:
        root, devices = kernel, kernel.path(PROC_DEVICES)
        text = files.read_text(devices, missing_ok=True, limit=files.PROC_LIMIT)
    if text is None:
        raise CtkError(
            f"{devices}: no such file; the driver's majors are read under --driver-root",
            hint="pass the root whose /proc is the running kernel's (/, or a host mounted with "
            "its /proc), or bind-mount /proc there",
        )
    minors: list[int] = []
    for gpu in read_gpu_information(root):
        if gpu.error is not None:
            raise gpu.error
        assert gpu.information is not None  # read without an error
        if gpu.information.device_minor is not None:
            minors.append(gpu.information.device_minor)
    return DriverNumbers(nvidia_majors(parse_proc_devices(text)), minors, devices)
