"""Fixture nodes for `ctk doctor`: a base tree plus one small `node.yaml` per scenario.

`tests/fixtures/doctor/base/` is a healthy H100 host. A scenario's `node.yaml` says `base: base`
and lists what differs: `remove` (paths), `files` (path -> text), `links` (path -> target),
`devices` (character devices made with mknod, `null` removes one), `nvml` (the fake NVML's
topology, see tests/fake_nvml), `environ` (the diagnosed process's environment, written to
`proc/self/environ`), `shm` (size of a real tmpfs mounted at `dev/shm`), `kernel_module: true`
(an `nvidia.ko` for the running kernel), `cuda_compat` (path -> the JSON of a generated
forward-compat `libcuda` ELF note). Facts that cannot be plain files therefore come from the
real adapters: `os.stat` on real device nodes, `statvfs` on a real tmpfs, the real pynvml on the
fake library placed in the node's library directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.doctor.elf_note import elf_with_note
from tests.fake_nvml import SkipNode, topology_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "doctor"


@dataclass(frozen=True, slots=True)
class Node:
    """A materialised fixture node."""

    name: str
    root: Path
    topology: Path


def load_spec(name: str) -> dict[str, Any]:
    """The node's node.yaml merged over its base's."""
    spec: dict[str, Any] = yaml.safe_load((FIXTURES / name / "node.yaml").read_text()) or {}
    base = spec.get("base")
    if base is None:
        return spec
    merged = load_spec(base)
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "nvml":
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    merged["tree"] = [*merged.get("tree", [base]), name]
    return merged


def _copy_tree(source: Path, root: Path) -> None:
    shutil.copytree(
        source, root, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns("node.yaml")
    )


def _write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    target.write_text(text)


def _remove(root: Path, path: str) -> None:
    target = root / path
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_symlink() or target.exists():
        target.unlink()


def _overlay(root: Path, spec: dict[str, Any]) -> None:
    for path in spec.get("remove") or []:
        _remove(root, path)
    for path, text in (spec.get("files") or {}).items():
        _write(root, path, text)
    for path, target in (spec.get("links") or {}).items():
        _remove(root, path)
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / path)
    if "environ" in spec:
        env = "".join(f"{k}={v}\0" for k, v in spec["environ"].items())
        _write(root, "proc/self/environ", env)
    for path, payload in (spec.get("cuda_compat") or {}).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(elf_with_note(payload.encode()))
    if spec.get("kernel_module"):
        _write(root, f"lib/modules/{os.uname().release}/updates/dkms/nvidia.ko", "")


def _devices(root: Path, devices: dict[str, list[Any] | None]) -> None:
    for path, numbers in devices.items():
        if numbers is None:
            continue
        major, minor, mode, gid = numbers
        node = root / path
        node.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(node, stat.S_IFCHR | int(mode, 8), os.makedev(major, minor))
        os.chmod(node, int(mode, 8))
        os.chown(node, 0, gid)


def _nvml(root: Path, nvml: dict[str, Any] | None, topology: Path, library: Path) -> None:
    if not nvml:
        return
    topology.write_text(topology_text(nvml))
    if nvml.get("library"):
        target = root / nvml["library"]
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        if _same_fs(library, target):
            os.link(library, target)
        else:
            shutil.copy2(library, target)


@contextlib.contextmanager
def materialise(name: str, dest: Path, library: Path) -> Iterator[Node]:
    """Build fixture node ``name`` under ``dest``; unmounts its tmpfs afterwards."""
    if os.geteuid() != 0:
        raise SkipNode("fixture nodes need mknod and mount, which need root")
    spec = load_spec(name)
    root = dest / "root"
    for tree in spec.get("tree", [name]):
        _copy_tree(FIXTURES / tree, root)
    _overlay(root, spec)
    _devices(root, spec.get("devices") or {})
    topology = dest / "nvml-topology.txt"
    _nvml(root, spec.get("nvml"), topology, library)
    mounted = None
    if spec.get("shm"):
        mounted = root / "dev" / "shm"
        mounted.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={spec['shm']}", "tmpfs", str(mounted)],
            check=True,
        )
    try:
        yield Node(name, root, topology)
    finally:
        if mounted is not None:
            subprocess.run(["umount", str(mounted)], check=False)


def _same_fs(a: Path, b: Path) -> bool:
    return a.stat().st_dev == b.parent.stat().st_dev


def scenario_names() -> list[str]:
    """Every fixture node but the base."""
    return sorted(p.parent.name for p in FIXTURES.glob("*/node.yaml"))
