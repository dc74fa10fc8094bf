"""Which resolver the hook uses: openat2(RESOLVE_IN_ROOT) where the kernel has it, else (Linux
before 5.6, or a seccomp filter refusing the call) its O_PATH|O_NOFOLLOW walk, chosen once per
run by a probe. strace counts the hook's openat2 calls, and makes the kernel refuse them."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.hook.bundles import make_bundle, snapshot
from tests.hook.native import NO_OPENAT2, NO_OPENAT2_INJECT, hook_binary

LIB = "usr/lib/x86_64-linux-gnu"
pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


def _openat2_calls(tmp_path: Path, *, refused: bool) -> int:
    bundle = make_bundle(tmp_path)
    before = snapshot(bundle.outside)
    trace = tmp_path / "trace"
    strace = [*NO_OPENAT2[:3], "-o", str(trace), *NO_OPENAT2[5:]]
    argv = [str(hook_binary()), "chmod", "--mode=750", "--path=/dev/dri", f"--path=/{LIB}"]
    result = subprocess.run(
        [*strace, *(NO_OPENAT2_INJECT if refused else ()), *argv],
        input=bundle.state.encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((bundle.rootfs / "dev/dri").stat().st_mode) == 0o750
    assert stat.S_IMODE((bundle.rootfs / LIB).stat().st_mode) == 0o750
    assert snapshot(bundle.outside) == before
    return sum("openat2(" in line for line in trace.read_text().splitlines())


def test_openat2_resolves_paths_where_the_kernel_has_it(tmp_path: Path) -> None:
    assert _openat2_calls(tmp_path, refused=False) > 1


def test_refused_openat2_is_probed_once_then_the_walk_resolves(tmp_path: Path) -> None:
    assert _openat2_calls(tmp_path, refused=True) == 1
