"""A fake NVIDIA driver for tests: the C library behind the real pynvml, and fixture nodes.

`build_library()` compiles `fake_nvml.c` into a `libnvidia-ml.so.1`. `materialise()` copies a
fixture node from `tests/fixtures/roots/<node>/` into a temporary directory, makes its character
devices (`mknod`, root only) and unix sockets, places the built library inside the node's driver
root where `node.yaml` says (so ctk loads it from the driver root like a real driver container's
library, with no test-only code path) and writes the topology file the library reads at
`nvmlInit`. Point `CTK_FAKE_NVML_TOPOLOGY` at `FakeNode.topology` (see `FakeNode.env`).

A process keeps the first `libnvidia-ml.so.1` it loads; the library therefore re-reads the
topology at every `nvmlInit`, and nodes get hard links to one built file where possible.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "fake_nvml.c"
ROOTS = HERE.parent / "fixtures" / "roots"
TOPOLOGY_ENV = "CTK_FAKE_NVML_TOPOLOGY"
GCC_FLAGS = ("-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wl,-soname,libnvidia-ml.so.1")


class SkipNode(Exception):
    """The node cannot be materialised here (not root, no gcc); the message says why."""


def nodes() -> list[str]:
    """Names of all fixture nodes."""
    return sorted(p.parent.name for p in ROOTS.glob("*/node.yaml"))


def build_library(out_dir: Path) -> Path:
    """Compile the fake NVML into ``out_dir/libnvidia-ml.so.1`` and return its path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SkipNode("gcc is not installed: cannot build the fake libnvidia-ml.so.1")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "libnvidia-ml.so.1"
    subprocess.run(
        [gcc, *GCC_FLAGS, "-o", str(target), str(SOURCE)],
        check=True,
    )
    return target


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


@dataclass(frozen=True, slots=True)
class FakeNode:
    """A materialised fixture node."""

    name: str
    root: Path  # the tree as a whole: stands for the host's `/`
    driver_root: Path
    dev_root: Path
    topology: Path
    spec: dict[str, Any]  # the parsed node.yaml

    @property
    def env(self) -> dict[str, str]:
        """Environment variables the fake library needs."""
        return {TOPOLOGY_ENV: str(self.topology)}


def _under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


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


def materialise(name: str, dest: Path, library: Path | None) -> FakeNode:
    """Build fixture node ``name`` under ``dest`` (created) with the fake NVML ``library``."""
    if os.geteuid() != 0:
        raise SkipNode("making fixture device nodes needs mknod, which needs root")
    source = ROOTS / name
    spec = yaml.safe_load((source / "node.yaml").read_text())
    root = dest / "root"
    shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns("node.yaml"))
    for path, (major, minor, mode, gid) in (spec.get("devices") or {}).items():
        node = _under(root, path)
        node.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(node, stat.S_IFCHR | int(mode, 8), os.makedev(major, minor))
        os.chmod(node, int(mode, 8))
        os.chown(node, 0, gid)
    for path in spec.get("sockets") or []:
        _bind_socket(_under(root, path))
    driver_root = _under(root, spec.get("driver_root", "/"))
    dev_root = _under(root, spec.get("dev_root", "/"))
    nvml = spec.get("nvml")
    topology = dest / "nvml-topology.txt"
    if nvml:
        topology.write_text(topology_text(nvml))
        if library is not None and nvml.get("library"):
            _link_or_copy(library, _under(driver_root, nvml["library"]))
    return FakeNode(name, root, driver_root, dev_root, topology, spec)
