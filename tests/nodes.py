"""Fixture nodes: one format, one loader, for generate, doctor, system and hook tests alike.

A node is a directory holding a file tree (what stands for the node's `/`) and `node.yaml`, which
says what cannot live in git. It lives in `tests/fixtures/roots/` (nodes the CDI, system and hook
tests start from) or `tests/fixtures/doctor/` (`base`, a healthy H100 host, and one scenario per
doctor finding); names are unique across both, and any node may start from any other. Keys:

```yaml
base: base                 # start from that node: its tree first, its node.yaml merged under this
driver_root: /             # where the driver is inside the tree (/run/nvidia/driver: container)
dev_root: /                # where /dev, /proc, /sys are
nvml: {library: ..., driver: ..., cuda: ..., gpus: [...]}   # the fake NVML (tests/fake_nvml)
devices: {dev/nvidia0: [195, 0, "0666", 0]}   # mknod'ed: [major, minor, mode, gid]; null: none
sockets: [run/nvidia-persistenced/socket]     # unix sockets bound at materialise time
remove: [path, ...]        # paths of the base's tree this node lacks
files: {path: text}        # files written over the tree
links: {path: target}      # symlinks made over the tree
environ: {KEY: value}      # the diagnosed process's environment (`proc/self/environ`)
shm: 64m                   # a real tmpfs of that size mounted at dev/shm
kernel_module: true        # an nvidia.ko for the running kernel
cuda_compat: {path: json}  # a forward-compat libcuda with that .note.cuda.fwd_compatibility
ld_cache: [[name, path]]   # the driver root's /etc/ld.so.cache (glibc's new format) with these
```

Facts that cannot be plain files come from the real adapters: `os.stat` on real device nodes,
`statvfs` on a real tmpfs, the real pynvml on the fake library placed in the node's driver root
(where `nvml.library` says), which reads the topology file `FakeNode.topology`
(`CTK_FAKE_NVML_TOPOLOGY`, see `FakeNode.env`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT_NODES = FIXTURES / "roots"
DOCTOR_NODES = FIXTURES / "doctor"
NODE_DIRS = (ROOT_NODES, DOCTOR_NODES)
TOPOLOGY_ENV = "CTK_FAKE_NVML_TOPOLOGY"


class SkipNode(Exception):
    """The node cannot be materialised here (not root, no gcc); the message says why."""


def names(directory: Path | None = None) -> list[str]:
    """The nodes of ``directory`` (one of `NODE_DIRS`), or of all of them, by name."""
    where = NODE_DIRS if directory is None else (directory,)
    return sorted(p.parent.name for d in where for p in d.glob("*/node.yaml"))


def node_dir(name: str) -> Path:
    """The directory of node ``name``."""
    for directory in NODE_DIRS:
        if (directory / name / "node.yaml").is_file():
            return directory / name
    raise KeyError(f"no fixture node {name!r} in {', '.join(str(d) for d in NODE_DIRS)}")


def load_spec(name: str) -> dict[str, Any]:
    """The node's node.yaml merged over its base's; `tree` lists the trees to copy, base first."""
    spec: dict[str, Any] = yaml.safe_load((node_dir(name) / "node.yaml").read_text()) or {}
    base = spec.get("base")
    if base is None:
        return {**spec, "tree": [name]}
    merged = load_spec(base)
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "nvml":
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    merged["tree"] = [*merged["tree"], name]
    return merged


def topology_text(nvml: dict[str, Any]) -> str:
    """The line format `fake_nvml.c` reads, from the `nvml:` table of a node.yaml."""
    lines = [f"driver {nvml['driver']}", f"cuda {nvml['cuda']}"]
    if nvml.get("error"):
        lines.append(f"error {nvml['error']}")
    if nvml.get("unprivileged"):
        lines.append("unprivileged")
    for gpu in nvml.get("gpus", []):
        mig = {True: "on", False: "off"}.get(gpu["mig"], gpu["mig"])  # YAML reads on/off as bools
        lines.append(f"gpu {gpu['minor']} {mig} {gpu['uuid']} {gpu['pci']} {gpu['name']}")
        if "pending" in gpu:
            lines.append(f"pending {gpu['pending']}")
        if "brand" in gpu:
            lines.append(f"brand {gpu['brand']}")
        if "memory" in gpu:
            lines.append(f"memory {gpu['memory']['total']} {gpu['memory']['used']}")
        lines += _health_lines(gpu)
        for pid, used in gpu.get("processes", []):
            lines.append(f"process {pid} {'na' if used is None else used}")
        for slot, gi, ci, gi_slices, ci_slices, memory, uuid, profile in gpu.get("migs", []):
            name = f"{gpu['name']} MIG {profile}"
            lines.append(f"mig {slot} {gi} {ci} {gi_slices} {ci_slices} {memory} {uuid} {name}")
            for pid, used in gpu.get("mig_processes", {}).get(slot, []):
                lines.append(f"migprocess {pid} {'na' if used is None else used}")
    return "\n".join(lines) + "\n"


def _health_lines(gpu: dict[str, Any]) -> list[str]:
    """The optional health lines of one GPU (ECC, memory repair, clocks, persistence)."""
    lines = [
        f"{key} {int(gpu[key])}" for key in ("ecc", "retired-pending", "persistence") if key in gpu
    ]
    if "remap" in gpu:
        lines.append(f"remap {int(gpu['remap'][0])} {int(gpu['remap'][1])}")
    if "throttle" in gpu:
        lines.append(f"throttle {gpu['throttle']}")
    if gpu.get("nohealth"):
        lines.append("nohealth")
    return lines


@dataclass(frozen=True, slots=True)
class FakeNode:
    """A materialised fixture node."""

    name: str
    root: Path  # the tree as a whole: stands for the host's `/`
    driver_root: Path
    dev_root: Path
    topology: Path
    spec: dict[str, Any]  # the merged node.yaml
    shm: Path | None = None  # the tmpfs mounted for `shm:`, unmounted by `release`

    @property
    def env(self) -> dict[str, str]:
        """Environment variables the fake library needs."""
        return {TOPOLOGY_ENV: str(self.topology)}


def materialise(name: str, dest: Path, library: Path | None) -> FakeNode:
    """Build node ``name`` under ``dest`` with the fake NVML ``library``; `release` it after."""
    if os.geteuid() != 0:
        raise SkipNode("fixture nodes need mknod (and mount), which need root")
    spec = load_spec(name)
    root = dest / "root"
    for tree in spec["tree"]:
        shutil.copytree(
            node_dir(tree),
            root,
            symlinks=True,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("node.yaml"),
        )
    _overlay(root, spec)
    _devices(root, spec.get("devices") or {})
    for path in spec.get("sockets") or []:
        _bind_socket(_under(root, path))
    driver_root = _under(root, spec.get("driver_root", "/"))
    dev_root = _under(root, spec.get("dev_root", "/"))
    topology = dest / "nvml-topology.txt"
    nvml = spec.get("nvml")
    if nvml:
        topology.write_text(topology_text(nvml))
        if library is not None and nvml.get("library"):
            _link_or_copy(library, _under(driver_root, nvml["library"]))
    shm = None
    if spec.get("shm"):
        shm = root / "dev" / "shm"
        shm.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-n", "-t", "tmpfs", "-o", f"size={spec['shm']}", "tmpfs", str(shm)],
            check=True,
        )
    return FakeNode(name, root, driver_root, dev_root, topology, spec, shm)


def release(node: FakeNode) -> None:
    """Unmount what `materialise` mounted for ``node``."""
    if node.shm is not None:
        subprocess.run(["umount", "-n", str(node.shm)], check=False, timeout=30)


@contextlib.contextmanager
def materialised(name: str, dest: Path, library: Path | None) -> Iterator[FakeNode]:
    """`materialise`, released when the block ends."""
    node = materialise(name, dest, library)
    try:
        yield node
    finally:
        release(node)


def ld_cache_bytes(entries: list[tuple[str, str]], prefix: bytes = b"") -> bytes:
    """A new-format ld.so.cache (glibc's layout) holding ``entries``; ``prefix``: an old part."""
    header = 48
    table = 24 * len(entries)
    strings = b""
    rows = b""
    for name, path in entries:
        key = header + table + len(strings)
        strings += name.encode() + b"\0"
        value = header + table + len(strings)
        strings += path.encode() + b"\0"
        rows += struct.pack("<iIIIQ", 0x303, key, value, 0, 0)
    head = b"glibc-ld.so.cache1.1" + struct.pack("<II", len(entries), len(strings)) + bytes(20)
    return prefix + head + rows + strings


def _under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def _write(root: Path, path: str, text: str) -> None:
    target = _under(root, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    target.write_text(text)


def _remove(root: Path, path: str) -> None:
    target = _under(root, path)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_symlink() or target.exists():
        target.unlink()


def _overlay(root: Path, spec: dict[str, Any]) -> None:
    from tests.doctor.elf_note import elf_with_note

    for path in spec.get("remove") or []:
        _remove(root, path)
    for path, text in (spec.get("files") or {}).items():
        _write(root, path, text)
    for path, target in (spec.get("links") or {}).items():
        _remove(root, path)
        _under(root, path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, _under(root, path))
    if "environ" in spec:
        env = "".join(f"{k}={v}\0" for k, v in spec["environ"].items())
        _write(root, "proc/self/environ", env)
    if spec.get("ld_cache"):
        driver = _under(root, spec.get("driver_root", "/"))
        target = _under(driver, "etc/ld.so.cache")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(ld_cache_bytes([(name, path) for name, path in spec["ld_cache"]]))
    for path, payload in (spec.get("cuda_compat") or {}).items():
        target = _under(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(elf_with_note(payload.encode()))
    if spec.get("kernel_module"):
        _write(root, f"lib/modules/{os.uname().release}/updates/dkms/nvidia.ko", "")


def _devices(root: Path, devices: dict[str, list[Any] | None]) -> None:
    for path, numbers in devices.items():
        if numbers is None:
            continue
        major, minor, mode, gid = numbers
        node = _under(root, path)
        node.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(node, stat.S_IFCHR | int(mode, 8), os.makedev(major, minor))
        os.chmod(node, int(mode, 8))
        os.chown(node, 0, gid)


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _bind_socket(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # through the directory's descriptor: a tmp_path is often longer than AF_UNIX allows
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(f"/proc/self/fd/{directory}/{path.name}")
    finally:
        os.close(directory)
