"""From gathered facts to container edits: one plain function per kind of thing to inject.

Pure: facts in, `ContainerEdits` out. The edits follow nvidia-ctk's choices (mount options,
hook arguments, which links to create) so that a spec from ctk diffs cleanly against one from
nvidia-ctk for the same node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ctk.cdi.model import ContainerEdits, DeviceNode, Hook, Mount
from ctk.cdi.options import DEFAULT_HOOKS, HookName
from ctk.node import CharDevice, DriverFacts, HostFile

READ_ONLY = ("ro", "nosuid", "nodev", "rbind", "rprivate")
IPC = ("nosuid", "nodev", "rbind", "rprivate", "noexec")
HOOK_ENV = ("NVIDIA_CTK_DEBUG=false",)
CREATE_CONTAINER = "createContainer"
WORLD_READ_WRITE = 0o006


@dataclass(frozen=True, slots=True)
class HookProgram:
    """The hook binary named in the spec, and which hooks it may add."""

    path: str
    enabled: frozenset[HookName] = DEFAULT_HOOKS

    def hook(self, name: HookName, *args: str) -> tuple[Hook, ...]:
        """The hook ``name`` with ``args``, or nothing when it is disabled."""
        if name not in self.enabled:
            return ()
        program = PurePosixPath(self.path).name
        prefix = (program, "hook") if program in ("nvidia-ctk", "ctk") else (program,)
        return (
            Hook(
                hook_name=CREATE_CONTAINER,
                path=self.path,
                args=(*prefix, name.value, *args),
                env=HOOK_ENV,
            ),
        )

    def links(self, links: Iterable[tuple[str, str]]) -> tuple[Hook, ...]:
        """A create-symlinks hook for (target, link) pairs; nothing when there are none."""
        args = [arg for target, link in links for arg in ("--link", f"{target}::{link}")]
        return self.hook(HookName.CREATE_SYMLINKS, *args) if args else ()


def device_node(facts: CharDevice) -> DeviceNode:
    """A `deviceNodes` entry with the host node's numbers, mode and group."""
    return DeviceNode(
        path=facts.container_path,
        host_path=facts.host_path if facts.host_path != facts.container_path else None,
        major=facts.major,
        minor=facts.minor or None,
        file_mode=facts.file_mode,
        permissions="rwm",
        gid=facts.gid or None,
    )


def nodes(facts: Iterable[CharDevice], *, gids: bool = True) -> ContainerEdits:
    """Device nodes; with ``gids``, a group the node is not world read+write without is added."""
    facts = tuple(facts)
    needed = tuple(
        f.gid for f in facts if f.gid and f.file_mode & WORLD_READ_WRITE != WORLD_READ_WRITE
    )
    return ContainerEdits(
        device_nodes=tuple(map(device_node, facts)),
        additional_gids=tuple(dict.fromkeys(needed)) if gids else (),
    )


def mounts(files: Iterable[HostFile], options: tuple[str, ...] = READ_ONLY) -> ContainerEdits:
    """Bind mounts of host files at their container paths."""
    return ContainerEdits(
        mounts=tuple(
            Mount(host_path=f.host_path, container_path=f.container_path, options=options)
            for f in files
        )
    )


def driver_files(driver: DriverFacts, *, graphics: bool, ipc: bool = True) -> ContainerEdits:
    """Libraries, binaries, firmware, IPC sockets and (with ``graphics``) graphics files."""
    edits = mounts(driver.libraries) + mounts(driver.binaries) + mounts(driver.firmware)
    if ipc:
        edits += mounts(driver.ipc, IPC)
    return edits + mounts(driver.graphics) if graphics else edits


def library_env(driver: DriverFacts) -> ContainerEdits:
    """`NVIDIA_CTK_LIBCUDA_DIR` (the driver's library dirs) and `NVIDIA_VISIBLE_DEVICES=void`."""
    env = ["NVIDIA_VISIBLE_DEVICES=void"]
    if driver.library_dirs:
        env.insert(0, "NVIDIA_CTK_LIBCUDA_DIR=" + ":".join(driver.library_dirs))
    return ContainerEdits(env=tuple(env))


def _library_links(driver: DriverFacts, version: str) -> list[tuple[str, str]]:
    """SONAME links that exist on the host, plus the development links CUDA programs open."""
    present = {PurePosixPath(f.container_path) for f in driver.libraries}
    links = list(driver.soname_links)
    for directory in driver.library_dirs:
        base = PurePosixPath(directory)
        for needs, target, name in (
            ("libcuda", "libcuda.so.1", "libcuda.so"),
            ("libnvidia-opticalflow", "libnvidia-opticalflow.so.1", "libnvidia-opticalflow.so"),
            ("libGLX_nvidia", f"libGLX_nvidia.so.{version}", "libGLX_indirect.so.0"),
        ):
            if base / f"{needs}.so.{version}" in present:
                links.append((target, str(base / name)))
    return links


def _graphics_links(driver: DriverFacts, version: str) -> list[tuple[str, str]]:
    """The GBM backend link next to libnvidia-allocator, the Vulkan producer and Xorg links."""
    present = {PurePosixPath(f.container_path) for f in driver.libraries}
    links = []
    for directory in driver.library_dirs:
        base = PurePosixPath(directory)
        if base / f"libnvidia-allocator.so.{version}" in present:
            links.append(("../libnvidia-allocator.so.1", str(base / "gbm" / "nvidia-drm_gbm.so")))
        producer = f"libnvidia-vulkan-producer.so.{version}"
        if base / producer in present:
            links.append((producer, str(base / "libnvidia-vulkan-producer.so")))
    return links + list(driver.graphics_links)


def driver_hooks(
    driver: DriverFacts, program: HookProgram, *, version: str, graphics: bool, ldconfig: str | None
) -> ContainerEdits:
    """The common hooks, in nvidia-ctk's order (``graphics``: nvml mode, not management)."""
    hooks: tuple[Hook, ...] = ()
    if graphics:
        hooks += program.links(_graphics_links(driver, version))
    hooks += program.links(_library_links(driver, version))
    hooks += program.hook(HookName.ENABLE_CUDA_COMPAT, f"--host-driver-version={version}")
    if driver.libraries:
        ldconfig_args = ("--ldconfig-path", ldconfig) if ldconfig else ()
        # every folder holding a mounted library (vdpau/ too), as nvidia-ctk lists them
        dirs = dict.fromkeys(str(PurePosixPath(f.container_path).parent) for f in driver.libraries)
        folders = [arg for d in dirs for arg in ("--folder", d)]
        hooks += program.hook(HookName.UPDATE_LDCACHE, *ldconfig_args, *folders)
    if graphics:
        hooks += program.hook(HookName.DISABLE_DEVICE_NODE_MODIFICATION)
        hooks += program.hook(HookName.UPDATE_APPLICATION_PROFILE)
    return ContainerEdits(hooks=hooks)


def device_folders_hook(
    program: HookProgram, device_nodes: Iterable[CharDevice]
) -> tuple[Hook, ...]:
    """`chmod --mode 755` of /dev/dri and /dev/nvidia-caps when a device has nodes there.

    Off unless enabled (`--enable-hook chmod`); then, as nvidia-ctk does, every device gets
    one, with no `--path` when it has no nested nodes. It works around crun giving nested
    device folders mode 0700 in rootless containers.
    """
    folders = dict.fromkeys(str(PurePosixPath(n.container_path).parent) for n in device_nodes)
    paths = [f for f in folders if f in ("/dev/dri", "/dev/nvidia-caps")]
    return program.hook(HookName.CHMOD, "--mode", "755", *(a for p in paths for a in ("--path", p)))
