"""Device nodes under a dev root: the one scan of them, and the one place that makes them.

`cdi generate` (through `ctk.host.driver`), `doctor` (through `ctk.host.facts.kernel`) and
`system` read NVIDIA's character devices, `/dev/char` links and
`/proc/driver/nvidia-caps/mig-minors` here; `system` also creates nodes and `/dev/char` links
here. The driver's other /proc files (`/proc/devices`, the GPUs' information files), which
generate does not read, are read in `ctk.host.driver_numbers`. Every path goes through
`HostRoot`.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ctk.errors import CtkError
from ctk.host import files
from ctk.host.root import HostRoot, PathEscapeError
from ctk.node import CharDevice
from ctk.nvproc import MigMinors, parse_mig_minors

if TYPE_CHECKING:  # `system` and the doctor's; generate only scans /dev
    from ctk.node.dev import DevNode

CONTROL_NODES = (
    "/dev/nvidia-modeset",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidiactl",
)
MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"
GPU_NODE = re.compile(r"/dev/nvidia\d+")


def scan_dir(directory: Path) -> list[os.DirEntry[str]]:
    """The entries of ``directory`` by name; none when it is missing or not a directory."""
    try:
        with os.scandir(directory) as entries:
            return sorted(entries, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise CtkError(f"{directory}: cannot list: {exc.strerror}", hint="run as root") from exc


def dev_entries(dev: HostRoot, directory: str) -> list[str]:
    """The paths (as seen inside the root) of the entries of ``directory``, by name."""
    try:
        host = dev.path(directory)
    except PathEscapeError:
        return []
    return [f"{directory}/{e.name}" for e in scan_dir(host)]


def char_device(dev: HostRoot, container_path: str) -> CharDevice | None:
    """The character device at ``container_path`` under the root, or None (missing, not one)."""
    try:
        host = dev.path(container_path)
        info = os.stat(host)
    except (OSError, PathEscapeError):
        return None
    if not stat.S_ISCHR(info.st_mode):
        return None
    return CharDevice(
        container_path=container_path,
        host_path=str(host),
        major=os.major(info.st_rdev),
        minor=os.minor(info.st_rdev),
        file_mode=stat.S_IMODE(info.st_mode),
        gid=info.st_gid,
    )


def char_devices(dev: HostRoot, paths: Iterable[str]) -> list[CharDevice]:
    """The character devices among ``paths``, in their order."""
    return [node for node in (char_device(dev, path) for path in paths) if node is not None]


@dataclass(frozen=True, slots=True)
class NvidiaNodes:
    """NVIDIA's character devices under a dev root, by kind."""

    control: tuple[CharDevice, ...] = ()  # nvidiactl, nvidia-modeset, nvidia-uvm(-tools)
    gpus: tuple[CharDevice, ...] = ()  # /dev/nvidia<minor>, by minor
    caps: tuple[CharDevice, ...] = ()  # /dev/nvidia-caps/nvidia-cap<N>, by N
    other: tuple[CharDevice, ...] = ()  # other /dev/nvidia*, IMEX channels
    not_char: tuple[str, ...] = ()  # entries named like those that are not character devices

    def every(self) -> tuple[CharDevice, ...]:
        """All of them."""
        return (*self.control, *self.gpus, *self.caps, *self.other)


def nvidia_nodes(dev: HostRoot) -> NvidiaNodes:
    """Every `/dev/nvidia*`, `/dev/nvidia-caps/*` and IMEX channel node under the root."""
    entries = dev_entries(dev, "/dev")
    gpus = sorted(
        (p for p in entries if GPU_NODE.fullmatch(p)),
        key=lambda p: int(p.removeprefix("/dev/nvidia")),
    )
    known = {*gpus, *CONTROL_NODES}
    other = [p for p in entries if p.startswith("/dev/nvidia") and p not in known]
    other += dev_entries(dev, "/dev/nvidia-caps-imex-channels")
    caps = sorted(dev_entries(dev, "/dev/nvidia-caps"), key=lambda p: (len(p), p))
    found = NvidiaNodes(
        control=tuple(char_devices(dev, CONTROL_NODES)),
        gpus=tuple(char_devices(dev, gpus)),
        caps=tuple(char_devices(dev, caps)),
        other=tuple(char_devices(dev, sorted(other))),
    )
    named = {*(p for p in entries if p in CONTROL_NODES), *gpus, *caps, *other}
    chars = {node.container_path for node in found.every()}
    odd = sorted(p for p in named - chars if not _is_dir(dev, p))
    return replace(found, not_char=tuple(odd))


def _is_dir(dev: HostRoot, container_path: str) -> bool:
    try:
        return dev.path(container_path).is_dir()
    except (OSError, PathEscapeError):
        return False


def read_char_links(dev: HostRoot) -> dict[str, str]:
    """`/dev/char/<major>:<minor>` links that lead to an NVIDIA node: name -> `/dev/...` target."""
    links: dict[str, str] = {}
    for entry in dev_entries(dev, "/dev/char"):
        name = entry.rsplit("/", 1)[1]
        if ":" not in name:
            continue
        try:
            target = os.readlink(dev.path("/dev/char") / name)
        except (OSError, PathEscapeError):
            continue
        resolved = posixpath.normpath(posixpath.join("/dev/char", target))
        if resolved.startswith("/dev/nvidia"):
            links[name] = resolved
    return links


def read_mig_minors(dev: HostRoot) -> MigMinors:
    """The `<capability> <minor>` lines of mig-minors, and the lines that are not that."""
    try:
        data = files.read_bytes(dev.path(MIG_MINORS), limit=files.PROC_LIMIT)
    except (CtkError, PathEscapeError):
        return MigMinors()
    return parse_mig_minors(data.decode("utf-8", "backslashreplace"))


def drm_nodes(dev: HostRoot, bus_id: str) -> tuple[list[CharDevice], list[tuple[str, str]]]:
    """A GPU's /dev/dri nodes (from sysfs) and its (target, link) /dev/dri/by-path links."""
    names = [p.rsplit("/", 1)[1] for p in dev_entries(dev, f"/sys/bus/pci/devices/{bus_id}/drm")]
    nodes = char_devices(dev, (f"/dev/dri/{n}" for n in names if n.startswith(("card", "renderD"))))
    links = []
    for kind in ("card", "render"):
        link = f"/dev/dri/by-path/pci-{bus_id}-{kind}"
        try:
            target = os.readlink(dev.path("/dev/dri/by-path") / f"pci-{bus_id}-{kind}")
        except (OSError, PathEscapeError):
            continue
        links.append((target, link))
    return nodes, links


def dev_nodes(dev: HostRoot, majors: dict[str, int]) -> list[DevNode]:
    """NVIDIA's existing nodes under the root whose major is one of ``majors``, at host paths."""
    from ctk.node.dev import DevNode

    wanted = set(majors.values())
    return [
        DevNode(PurePosixPath(n.host_path), n.major, n.minor)
        for n in nvidia_nodes(dev).every()
        if n.major in wanted
    ]


# --- making nodes and links (system) -----------------------------------------------------------


def node_state(host_path: Path, node: DevNode) -> str:
    """'missing', 'ok', or a description of what is in the way."""
    try:
        info = host_path.lstat()
    except FileNotFoundError:
        return "missing"
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(node.major, node.minor):
        return "ok"
    if stat.S_ISCHR(info.st_mode):
        return f"is c {os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"
    return "is not a character device"


def make_node(host_path: Path, node: DevNode) -> None:
    """Create ``node`` at ``host_path`` (mode 0666, like nvidia-modprobe)."""
    try:
        host_path.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(host_path, 0o666 | stat.S_IFCHR, os.makedev(node.major, node.minor))
        os.chmod(host_path, 0o666)
    except OSError as exc:
        raise CtkError(
            f"{host_path}: cannot create device node: {exc.strerror}",
            hint="creating device nodes needs root (CAP_MKNOD)",
        ) from exc


def link_state(link: Path, target: Path) -> str:
    """'missing', 'ok' (already leads to the node), 'replace' (another link), or 'blocked'."""
    if not os.path.lexists(link):
        return "missing"
    if not link.is_symlink():
        return "blocked"
    return "ok" if os.path.realpath(link) == os.path.realpath(target) else "replace"


def make_link(link: Path, target: PurePosixPath) -> None:
    """Create (or replace) the symlink ``link`` -> ``target``."""
    try:
        link.parent.mkdir(parents=True, exist_ok=True)
        tmp = link.with_name(f".{link.name}.ctk-tmp")
        if os.path.lexists(tmp):
            tmp.unlink()
        os.symlink(target, tmp)
        os.replace(tmp, link)
    except OSError as exc:
        raise CtkError(f"{link}: cannot create symlink: {exc.strerror}") from exc
