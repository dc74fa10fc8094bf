"""One model of a GPU node, shared by every command: GPUs, MIG devices, driver files, device nodes.

Pure data and pure rules. The adapters in `ctk.host` fill these values (NVML, the driver root,
the dev root); `cdi generate`, `doctor` and `system` decide from the same values, so that what a
spec contains, what the doctor expects and what `system create-device-nodes` creates cannot
drift apart.

Here: the files and device nodes under the roots, what every spec is built from. The rest of the
model is in modules of this package that only the commands using them import (each frozen
dataclass costs about a millisecond to define): `ctk.node.nvml` (GPUs, MIG devices and health as
NVML reports them, NVML's return codes), `ctk.node.dev` (which device nodes a loaded driver
implies) and `ctk.node.classes` (what the other discovery modes find).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctk.node.nvml import NvmlFacts


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
