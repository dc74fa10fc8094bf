"""Gather NVIDIA device facts from a (possibly fake) host root and make nodes and links."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ctk.errors import CtkError
from ctk.host import files
from ctk.host.root import HostRoot
from ctk.node import DevNode, nvidia_majors
from ctk.nvproc import parse_gpu_information, parse_proc_devices
from ctk.system.devices import CharLink

PROC_DEVICES = "/proc/devices"
GPUS_DIR = "/proc/driver/nvidia/gpus"


@dataclass(frozen=True, slots=True)
class DriverNumbers:
    """What the driver says: its majors (`Major` names) and the minor of each GPU."""

    majors: dict[str, int]
    gpu_minors: list[int]
    source: Path


def _proc_path(root: HostRoot, path: str) -> Path:
    """``path`` under the root; a driver root without /proc (a driver container) uses the host's."""
    inside = root.path(path)
    if str(root.root) != "/" and not root.path("/proc").is_dir():
        return Path(path)
    return inside


def read_driver_facts(root: HostRoot) -> DriverNumbers:
    """Read /proc/devices and the GPUs' information files under ``root``."""
    devices = _proc_path(root, PROC_DEVICES)
    text = files.read_text(devices, missing_ok=True) or ""
    gpus_dir = _proc_path(root, GPUS_DIR)
    minors: list[int] = []
    if gpus_dir.is_dir():
        for entry in sorted(gpus_dir.iterdir()):
            info = files.read_text(entry / "information", missing_ok=True)
            minor = parse_gpu_information(info or "").device_minor
            if minor is not None:
                minors.append(minor)
    return DriverNumbers(nvidia_majors(parse_proc_devices(text)), minors, devices)


def find_nodes(dev_root: HostRoot, majors: dict[str, int]) -> list[DevNode]:
    """The existing character nodes under <dev-root>/dev whose major is an NVIDIA one."""
    wanted = set(majors.values())
    dev = dev_root.path("/dev")
    candidates = sorted(dev.glob("nvidia*")) + sorted(dev.glob("nvidia-caps*/*"))
    nodes: list[DevNode] = []
    for path in candidates:
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) in wanted:
            nodes.append(
                DevNode(PurePosixPath(path), os.major(info.st_rdev), os.minor(info.st_rdev))
            )
    return nodes


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


def make_link(link: CharLink) -> None:
    """Create (or replace) the symlink ``link.link`` -> ``link.target``."""
    path = Path(link.link)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.ctk-tmp")
        if os.path.lexists(tmp):
            tmp.unlink()
        os.symlink(link.target, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise CtkError(f"{path}: cannot create symlink: {exc.strerror}") from exc
