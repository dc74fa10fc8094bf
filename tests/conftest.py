"""Test-wide setup: ctk's state directory (undo records, backups) goes under a temporary dir."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` for the block, then as it was."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


@pytest.fixture(autouse=True, scope="session")
def _ctk_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep `ctk runtime` records out of /var/lib/ctk (tests write only under temporary dirs)."""
    with _environment("CTK_STATE_DIR", str(tmp_path_factory.mktemp("ctk-state"))):
        yield


@pytest.fixture(autouse=True, scope="session")
def _mount_table_here(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """util-linux's mount and umount keep their table of mount options in /run/mount/utab,
    whoever runs them (the tests' namespaces, mmdebstrap): in a temporary dir instead, so they
    leave no /run/mount on the machine (libmount reads the path from LIBMOUNT_UTAB)."""
    with _environment("LIBMOUNT_UTAB", str(tmp_path_factory.mktemp("libmount") / "utab")):
        yield


@pytest.fixture(autouse=True, scope="session")
def _native_hook_built() -> None:
    """The package's native hook (ctk/_bin/ctk-hook) exists and is as new as native/ before any
    test runs: `pip install -e .` builds it, a fresh worktree or an edited native/ does not, and
    tests that run ctk as a node would (agent, generate) must find it from their first step."""
    from tests.hook.native import hook_binary

    hook_binary()


WATCHED = ("/etc", "/var/lib", "/run", "/usr/local")
"""Where the tests must leave the machine as they found it (they write only under their own
temporary directories): compared before and after the whole run."""
_SNAPSHOT = pytest.StashKey[dict[str, tuple[int, int, int]]]()


def _snapshot() -> dict[str, tuple[int, int, int]]:
    """Every path under `WATCHED` (links not followed): its mode, and a file's size and mtime."""
    found = {}
    for top in WATCHED:
        for directory, dirs, files in os.walk(top):
            for name in (*dirs, *files):
                path = os.path.join(directory, name)
                try:
                    info = os.lstat(path)
                except OSError:  # gone meanwhile
                    continue
                plain = not stat.S_ISDIR(info.st_mode)
                found[path] = (info.st_mode, info.st_size * plain, info.st_mtime_ns * plain)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    session.stash[_SNAPSHOT] = _snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test added, removed or changed anything under `WATCHED` (issue 22)."""
    before = session.stash.get(_SNAPSHOT, None)
    if before is None:
        return
    after = _snapshot()
    changes = [f"added {p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changes += [
        f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]
    ]
    if changes:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = "\n".join(changes[:40]) + ("\n..." if len(changes) > 40 else "")
        message = f"the tests wrote outside their temporary directories:\n{lines}\n"
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:
            sys.stderr.write(message)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
