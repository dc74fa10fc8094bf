"""Data for `ctk cdi generate`: the node's facts going in, the CDI spec coming out.

Facts are what the adapters (`ctk.host.nvml`, `ctk.host.driver`) gather; the pure core
(`ctk.cdi.discover`, `ctk.cdi.generate`) turns them into a `Spec`. Everything is frozen, and
paths inside a spec are plain strings because they are container or host paths of another
machine, never paths to open here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import TypeVar

from ctk.enums import StrEnum

T = TypeVar("T")


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


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceNodeFacts:
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
    control_nodes: tuple[DeviceNodeFacts, ...] = ()
    gpu_nodes: tuple[DeviceNodeFacts, ...] = ()  # /dev/nvidia<minor>
    cap_nodes: tuple[DeviceNodeFacts, ...] = ()  # /dev/nvidia-caps/nvidia-cap<N>
    other_nodes: tuple[DeviceNodeFacts, ...] = ()  # other /dev/nvidia*, imex channels: management
    mig_minors: tuple[tuple[str, int], ...] = ()  # ("gpu0/gi1/access", 12) from mig-minors
    mig_minors_malformed: tuple[str, ...] = ()  # "line 3: 'gpu0/gi1/access x'": not parsed
    drm: tuple[tuple[str, tuple[DeviceNodeFacts, ...]], ...] = ()  # sysfs bus id -> DRM nodes
    drm_links: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # bus id -> by-path links
    # host path of the driver root's /sbin/ldconfig.real (Debian, Ubuntu: /sbin/ldconfig is a
    # shell script around it), for the update-ldcache hook
    ldconfig: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFacts:
    """Everything gathered about a node for its spec (``nvml`` is None in management mode)."""

    nvml: NvmlFacts | None
    driver: DriverFacts
    driver_version: str


# --- the CDI spec ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceNode:
    """`containerEdits.deviceNodes[]`."""

    path: str
    host_path: str | None = None
    major: int | None = None
    minor: int | None = None
    file_mode: int | None = None
    permissions: str | None = None
    gid: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    """`containerEdits.mounts[]`."""

    host_path: str
    container_path: str
    options: tuple[str, ...] = ()
    type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Hook:
    """`containerEdits.hooks[]`."""

    hook_name: str
    path: str
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerEdits:
    """Edits to a container's OCI spec; `+` merges, keeping the first of duplicates."""

    env: tuple[str, ...] = ()
    device_nodes: tuple[DeviceNode, ...] = ()
    hooks: tuple[Hook, ...] = ()
    mounts: tuple[Mount, ...] = ()
    additional_gids: tuple[int, ...] = ()

    def __add__(self, other: ContainerEdits) -> ContainerEdits:
        return merge((self, other))

    def __sub__(self, other: ContainerEdits) -> ContainerEdits:
        """These edits without those also in ``other``."""
        return ContainerEdits(
            env=_without(self.env, other.env),
            device_nodes=_without(self.device_nodes, other.device_nodes),
            hooks=_without(self.hooks, other.hooks),
            mounts=_without(self.mounts, other.mounts),
            additional_gids=_without(self.additional_gids, other.additional_gids),
        )

    def __bool__(self) -> bool:
        return bool(
            self.env or self.device_nodes or self.hooks or self.mounts or self.additional_gids
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """`devices[]`: a name and its edits."""

    name: str
    edits: ContainerEdits = field(default_factory=ContainerEdits)
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec:
    """A whole CDI spec."""

    cdi_version: str
    kind: str
    devices: tuple[Device, ...]
    edits: ContainerEdits = field(default_factory=ContainerEdits)


def merge(many: Iterable[ContainerEdits]) -> ContainerEdits:
    """All edits in one, keeping the first of duplicates; linear in the total size."""
    many = tuple(many)
    return ContainerEdits(
        env=_unique(tuple(chain.from_iterable(e.env for e in many))),
        device_nodes=_unique(tuple(chain.from_iterable(e.device_nodes for e in many))),
        hooks=_unique(tuple(chain.from_iterable(e.hooks for e in many))),
        mounts=_unique(tuple(chain.from_iterable(e.mounts for e in many))),
        additional_gids=_unique(tuple(chain.from_iterable(e.additional_gids for e in many))),
    )


def _unique(items: tuple[T, ...]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(items))


def _without(items: tuple[T, ...], drop: tuple[T, ...]) -> tuple[T, ...]:
    gone = set(drop)
    return tuple(item for item in items if item not in gone)
