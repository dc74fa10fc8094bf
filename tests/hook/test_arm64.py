"""The hook built for arm64 (Grace Hopper, Jetson/IGX, Graviton nodes): a static AArch64
executable that behaves as the amd64 one does, run here under qemu-user. qemu 7.2 (Debian 12)
refuses openat2 with ENOSYS, so these runs also take the O_PATH walk on arm64's syscall table."""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.hook.bundles import Bundle, make_bundle, snapshot

REPO = Path(__file__).resolve().parents[2]
ARM64_BUILD = REPO / "tests/.build/ctk-hook-arm64"
LIB = "usr/lib/x86_64-linux-gnu"
EM_AARCH64 = 183


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ctk_build_hook", REPO / "native/build_hook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def arm64_hook() -> Path:
    builder = _builder()
    if not ARM64_BUILD.exists() or ARM64_BUILD.stat().st_mtime < builder.newest_source():
        builder.build(ARM64_BUILD, goarch="arm64")
    return ARM64_BUILD


def test_static_aarch64_executable(arm64_hook: Path) -> None:
    elf = arm64_hook.read_bytes()
    assert elf[:4] == b"\x7fELF" and elf[4] == 2  # 64-bit
    assert int.from_bytes(elf[18:20], "little") == EM_AARCH64
    phoff = int.from_bytes(elf[32:40], "little")
    size, count = int.from_bytes(elf[54:56], "little"), int.from_bytes(elf[56:58], "little")
    types = [
        int.from_bytes(elf[phoff + i * size : phoff + i * size + 4], "little") for i in range(count)
    ]
    assert 3 not in types  # no PT_INTERP: no dynamic loader, no shared library


def _run(hook: Path, bundle: Bundle, *argv: str) -> subprocess.CompletedProcess[str]:
    qemu = shutil.which("qemu-aarch64")
    if qemu is None:
        pytest.skip("qemu-aarch64 is not installed (apt-get install qemu-user)")
    return subprocess.run(
        [qemu, str(hook), *argv],
        input=bundle.state,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_links_and_modes_inside_the_root(arm64_hook: Path, tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    before = snapshot(bundle.outside)
    links = _run(arm64_hook, bundle, "create-symlinks", f"--link=libcuda.so.1::/{LIB}/libcuda.so")
    modes = _run(arm64_hook, bundle, "chmod", "--mode=750", "--path=/dev/dri")
    assert (links.returncode, links.stderr, modes.returncode, modes.stderr) == (0, "", 0, "")
    assert os.readlink(bundle.rootfs / LIB / "libcuda.so") == "libcuda.so.1"
    assert stat.S_IMODE((bundle.rootfs / "dev/dri").stat().st_mode) == 0o750
    assert snapshot(bundle.outside) == before


def test_a_path_out_of_the_root_is_refused(arm64_hook: Path, tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    os.symlink("../../../host/lib", bundle.rootfs / "dev/escape")
    before = snapshot(bundle.outside)
    result = _run(arm64_hook, bundle, "chmod", "--mode=777", "--path=/dev/escape/x")
    assert result.returncode == 1
    assert result.stderr == (
        f"ctk-hook chmod: error: /dev/escape/x: leads out of the container root "
        f"{bundle.rootfs}; refusing\n"
    )
    assert snapshot(bundle.outside) == before
