"""One model of a GPU node, shared by every command: GPUs, MIG devices, driver files, device nodes.

Pure data and pure rules. The adapters in `ctk.host` fill these values (NVML, the driver root,
the dev root); `cdi generate`, `doctor` and `system` decide from the same values, so that what a
spec contains, what the doctor expects and what `system create-device-nodes` creates cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import PurePosixPath

from ctk.enums import StrEnum


class NvmlReturn(IntEnum):
    """NVML's return codes (`nvmlReturn_t` in nvml.h), as pynvml's exceptions carry them."""

    SUCCESS = 0
    UNINITIALIZED = 1
    INVALID_ARGUMENT = 2
    NOT_SUPPORTED = 3
    NO_PERMISSION = 4
    ALREADY_INITIALIZED = 5
    NOT_FOUND = 6
    INSUFFICIENT_SIZE = 7
    INSUFFICIENT_POWER = 8
    DRIVER_NOT_LOADED = 9
    TIMEOUT = 10
    IRQ_ISSUE = 11
    LIBRARY_NOT_FOUND = 12
    FUNCTION_NOT_FOUND = 13
    CORRUPTED_INFOROM = 14
    GPU_IS_LOST = 15
    RESET_REQUIRED = 16
    OPERATING_SYSTEM = 17
    LIB_RM_VERSION_MISMATCH = 18
    IN_USE = 19
    MEMORY = 20
    NO_DATA = 21
    VGPU_ECC_NOT_SUPPORTED = 22
    INSUFFICIENT_RESOURCES = 23
    FREQ_NOT_SUPPORTED = 24
    ARGUMENT_VERSION_MISMATCH = 25
    DEPRECATED = 26
    NOT_READY = 27
    GPU_NOT_FOUND = 28
    INVALID_STATE = 29
    UNKNOWN = 999

    @classmethod
    def of(cls, value: object) -> NvmlReturn | None:
        """The code ``value`` names (an exception's `.value`), or None when it names none."""
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                return None
        return None


# --- GPUs, as NVML reports them ----------------------------------------------------------------


class MigMode(StrEnum):
    """Whether a GPU can be split into MIG devices, and whether it is."""

    UNSUPPORTED = "unsupported"
    DISABLED = "disabled"
    ENABLED = "enabled"


@dataclass(frozen=True, slots=True, kw_only=True)
class MigDevice:
    """One MIG device (a compute instance inside a GPU instance) as NVML reports it."""

    parent_index: int
    index: int  # its slot under the parent: nvmlDeviceGetMigDeviceHandleByIndex
    gpu_instance: int
    compute_instance: int
    uuid: str
    profile: str  # e.g. "1g.10gb", "1g.10gb+me", "4c.7g.80gb"
    gpu_slices: int = 0
    compute_slices: int = 0
    memory_mib: int = 0

    @property
    def attributes(self) -> tuple[str, ...]:
        """Profile attributes such as `me` or `gfx` (the `+...` suffixes of the profile name)."""
        return tuple(self.profile.split("+")[1:])


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One full GPU as NVML reports it."""

    index: int
    minor: int
    uuid: str
    name: str
    pci_bus_id: str  # NVML's form, "00000000:07:00.0"
    mig_mode: MigMode = MigMode.UNSUPPORTED
    migs: tuple[MigDevice, ...] = ()

    @property
    def sysfs_bus_id(self) -> str:
        """The bus id as /sys spells it: "0000:07:00.0"."""
        domain, _, rest = self.pci_bus_id.partition(":")
        return f"{domain[-4:]}:{rest}".lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class NvmlFacts:
    """What NVML says about the node."""

    driver_version: str
    cuda_driver_version: int  # NVML's integer form: 12040 is CUDA 12.4
    gpus: tuple[Gpu, ...] = ()

    @property
    def cuda_version(self) -> str:
        """The CUDA driver version as people write it: "12.4"."""
        major, minor = divmod(self.cuda_driver_version, 1000)
        return f"{major}.{minor // 10}"


@dataclass(frozen=True, slots=True)
class ComputeProcess:
    """A process with a compute context on a GPU; ``used_memory`` None: NVML could not say."""

    pid: int
    used_memory: int | None


@dataclass(frozen=True, slots=True)
class GpuHealth:
    """What NVML says about a GPU's state beyond its identity (the doctor's questions).

    None: NVML refused (``errors`` says why) or the GPU does not support it. ``mig_current`` and
    ``mig_pending`` are `nvmlDeviceGetMigMode`'s pair (1 enabled, 0 disabled).
    """

    index: int
    brand: str | None = None
    mig_current: int | None = None
    mig_pending: int | None = None
    memory_total: int | None = None
    memory_used: int | None = None
    processes: tuple[ComputeProcess, ...] | None = None
    ecc_uncorrected: int | None = None  # volatile (since the last driver load)
    retired_pages_pending: bool | None = None
    remap_pending: bool | None = None
    remap_failed: bool | None = None
    clock_reasons: int | None = None  # nvmlClocksEventReason* bits in force now
    persistence: bool | None = None
    errors: tuple[str, ...] = ()


# --- files and device nodes under the roots ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CharDevice:
    """A character device found under the dev root (`container_path` is its `/dev/...` name)."""

    container_path: str
    host_path: str
    major: int
    minor: int
    file_mode: int  # permission bits only
    gid: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class HostFile:
    """A file to mount: where it is on the host, where the container sees it."""

    container_path: str
    host_path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverFacts:
    """What the driver root and dev root hold, gathered in one scan."""

    driver_root: str
    dev_root: str
    libraries: tuple[HostFile, ...] = ()  # every lib*.so.<version> in the driver's library dirs
    library_dirs: tuple[str, ...] = ()  # container paths of those dirs
    soname_links: tuple[tuple[str, str], ...] = ()  # (target file name, link path in container)
    # GLVND/OpenCL libraries behind their dev links: --feature-flag enable-explicit-driver-libraries
    explicit_libraries: tuple[HostFile, ...] = ()
    explicit_links: tuple[tuple[str, str], ...] = ()
    binaries: tuple[HostFile, ...] = ()
    firmware: tuple[HostFile, ...] = ()
    ipc: tuple[HostFile, ...] = ()
    graphics: tuple[HostFile, ...] = ()
    graphics_links: tuple[tuple[str, str], ...] = ()  # (target, link) for create-symlinks
    control_nodes: tuple[CharDevice, ...] = ()
    gpu_nodes: tuple[CharDevice, ...] = ()  # /dev/nvidia<minor>
    cap_nodes: tuple[CharDevice, ...] = ()  # /dev/nvidia-caps/nvidia-cap<N>
    other_nodes: tuple[CharDevice, ...] = ()  # other /dev/nvidia*, imex channels: management
    mig_minors: tuple[tuple[str, int], ...] = ()  # ("gpu0/gi1/access", 12) from mig-minors
    mig_minors_malformed: tuple[str, ...] = ()  # "line 3: 'gpu0/gi1/access x'": not parsed
    drm: tuple[tuple[str, tuple[CharDevice, ...]], ...] = ()  # sysfs bus id -> DRM nodes
    drm_links: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # bus id -> by-path links
    # host path of the driver root's /sbin/ldconfig.real (Debian, Ubuntu: /sbin/ldconfig is a
    # shell script around it), for the update-ldcache hook
    ldconfig: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GatheredNode:
    """Everything gathered about a node for its spec (``nvml`` is None in management mode)."""

    nvml: NvmlFacts | None
    driver: DriverFacts
    driver_version: str


# --- which device nodes a node should have -----------------------------------------------------


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


# --- what the other discovery modes find (csv, wsl, imex, gds, gdrcopy, mofed, nvswitch) ------


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
