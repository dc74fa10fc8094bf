"""The native hook under test: the package's ctk/_bin/ctk-hook (rebuilt from native/ when a
source is newer, so a checkout under edit tests what it holds), and the `ctkhooktest` build that
can swap a folder for a symlink at a chosen moment (see native/testhook_on.go)."""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from ctk.host.hook_program import packaged_hook

REPO = Path(__file__).resolve().parents[2]
TEST_BUILD = REPO / "tests/.build/ctk-hook-test"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ctk_build_hook", REPO / "native/build_hook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh(path: Path, *, tags: tuple[str, ...] = ()) -> Path:
    builder = _builder()
    if not path.exists() or path.stat().st_mtime < builder.newest_source():
        builder.build(path, tags=tags)
    return path


def hook_binary() -> Path:
    """The installed native hook (built first when this checkout's sources are newer)."""
    if (REPO / "native").is_dir():
        _fresh(REPO / "ctk/_bin/ctk-hook")
    return packaged_hook()


def test_hook_binary() -> Path:
    """The hook built with the `ctkhooktest` tag (CTK_HOOK_SWAP, CTK_HOOK_LDCONFIG_TIMEOUT)."""
    return _fresh(TEST_BUILD, tags=("ctkhooktest",))


test_hook_binary.__test__ = False  # type: ignore[attr-defined]  # not a test of pytest's


# The kernel refuses openat2 (before Linux 5.6, or a seccomp filter that answers ENOSYS/EPERM):
# strace makes every openat2 of the hook fail with ENOSYS, so the hook takes its O_PATH walk.
# Set by the `resolver` fixture of tests/hook/conftest.py.
RESOLVER_ENV = "CTK_TEST_HOOK_RESOLVER"
NO_OPENAT2 = ("strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=openat2")
NO_OPENAT2_INJECT = ("-e", "inject=openat2:error=ENOSYS")


def _resolver_prefix() -> list[str]:
    if os.environ.get(RESOLVER_ENV) == "walk":
        return [*NO_OPENAT2, *NO_OPENAT2_INJECT]
    return []


def run_native(argv: list[str], stdin: str | None = None) -> int:
    """Run the hook as an OCI runtime does; its output goes to this process's sys.stdout and
    sys.stderr (so pytest's capsys sees it). ``stdin`` defaults to a test's sys.stdin stand-in."""
    if stdin is None:
        stdin = sys.stdin.getvalue() if isinstance(sys.stdin, io.StringIO) else ""
    testing = os.environ.get("CTK_HOOK_SWAP") or os.environ.get("CTK_HOOK_LDCONFIG_TIMEOUT")
    program = test_hook_binary() if testing else hook_binary()
    result = subprocess.run(
        [*_resolver_prefix(), str(program), *argv],
        input=stdin.encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    sys.stdout.write(result.stdout.decode(errors="replace"))
    sys.stderr.write(result.stderr.decode(errors="replace"))
    return result.returncode
