"""Running ctk as a separate process on hostile input, and what a run may and may not do.

Every case runs the public CLI in its own process (`python -c ... main(argv)`), with a wall-clock
timeout, an address-space limit (util-linux's `prlimit`) and its peak RSS measured (`wait4`), and
snapshots the case's directory before and after, so a test can assert the promises of issue 15
for every case: exit 0, 1 or 2 (never 3, never a signal), an answer within `ANSWER_S`, peak
memory under `PEAK_RSS_MB`, and no file created or changed except those the user named (and
ctk's state directory), and none at all when the command failed.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
ANSWER_S: Final = 5.0
"""A case must end within this many seconds (the run is killed at `KILL_S`)."""
KILL_S: Final = 10.0
PEAK_RSS_MB: Final = 300
"""The most resident memory a case may use (a bare ctk start is about 40 MB)."""
ADDRESS_SPACE: Final = 2 << 30
"""RLIMIT_AS of a case: an unbounded read fails with MemoryError (exit 3) instead of swapping."""
ENTRY: Final = "import sys; from ctk.cli.app import main; sys.exit(main(sys.argv[1:]))"
_HASHED_UP_TO: Final = 64 << 20  # larger files are compared by size, inode and mtime


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run of ctk did."""

    code: int  # the exit status; minus the signal number when killed by one
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float
    timed_out: bool


Entry = tuple[str, ...]


def snapshot(top: Path) -> dict[str, Entry]:
    """Every entry below ``top`` as (kind, content digest or link target, mode); never opens a
    special file."""
    found: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            key = os.path.relpath(path, top)
            info = os.lstat(path)
            mode = oct(stat.S_IMODE(info.st_mode))
            if stat.S_ISLNK(info.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[key] = ("dir", mode)
            elif stat.S_ISREG(info.st_mode) and info.st_size <= _HASHED_UP_TO:
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                found[key] = ("file", digest, mode)
            elif stat.S_ISREG(info.st_mode):
                found[key] = ("big", str(info.st_size), str(info.st_ino), str(info.st_mtime_ns))
            else:
                found[key] = ("special", str(stat.S_IFMT(info.st_mode)), mode)
    return found


def changes(before: Mapping[str, Entry], after: Mapping[str, Entry]) -> list[str]:
    """The relative paths created, removed or changed between two snapshots, sorted."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def run_ctk(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] = {},
    prefix: Sequence[str] = (),
    stdin: Path | None = None,
) -> Outcome:
    """Run ``ctk argv`` (after ``prefix``, e.g. `setpriv ...` or `strace ...`) and measure it.

    The child is started by subprocess (no `os.fork` of this multi-threaded process); util-linux's
    `prlimit` sets its address-space limit before exec. A process started from pytest inherits
    pytest's peak RSS as its own (Linux keeps the larger of the old and new memory's peaks across
    exec), so the peak is read by `_MEASURE`, a small process that starts the case and reports
    its `wait4` usage.
    """
    environ = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", **env}
    limit = ["prlimit", f"--as={ADDRESS_SPACE}", "--"]
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch, "usage")
        measure = [sys.executable, "-I", "-S", "-c", _MEASURE, str(report)]
        command = [*limit, *measure, *prefix, sys.executable, "-c", ENTRY, *argv]
        return _run(command, cwd=cwd, environ=environ, stdin=stdin, report=report)


_MEASURE: Final = """
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(f"{usage.ru_maxrss}\\n")
code = os.waitstatus_to_exitcode(status)
if code < 0:
    if -code not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
"""Starts argv[2:] from a process of its own (small, single-threaded), writes the case's peak RSS
(KiB) to argv[1], and ends as the case ended (its exit code, or the same signal)."""


def _run(
    command: Sequence[str],
    *,
    cwd: Path,
    environ: Mapping[str, str],
    stdin: Path | None,
    report: Path,
) -> Outcome:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin_fd = os.open(stdin or os.devnull, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(stdin_fd, True)
        start = time.monotonic()
        try:
            child = subprocess.Popen(
                command,
                stdin=stdin_fd,
                stdout=out,
                stderr=err,
                cwd=cwd,
                env=environ,
                start_new_session=True,
            )
        finally:
            os.close(stdin_fd)
        timed_out = False
        while True:  # wait4, not Popen.wait: the peak RSS of this child only
            done, status, usage = os.wait4(child.pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() - start > KILL_S:
                timed_out = True
                os.killpg(child.pid, signal.SIGKILL)
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.01)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        seconds = time.monotonic() - start
        code = child.returncode
        out.seek(0)
        err.seek(0)
        return Outcome(
            code=code,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            seconds=seconds,
            peak_rss_mb=(int(report.read_text()) if report.exists() else usage.ru_maxrss) / 1024,
            timed_out=timed_out,
        )


def problems(
    outcome: Outcome,
    changed: Sequence[str],
    *,
    named: Sequence[str],
    codes: frozenset[int] = frozenset({0, 1, 2}),
) -> list[str]:
    """What a run did that it must not: the empty list when it kept every promise.

    ``named``: paths (relative, as in the snapshot) the user named and ctk's state directory,
    which a successful run may change; a failed run changes nothing.
    """
    found = []
    if outcome.code not in codes:
        found.append(f"exit {outcome.code}, expected one of {sorted(codes)}")
    if outcome.timed_out or outcome.seconds > ANSWER_S:
        found.append(f"took {outcome.seconds:.1f} s (limit {ANSWER_S:.0f} s)")
    if outcome.peak_rss_mb > PEAK_RSS_MB:
        found.append(f"peak RSS {outcome.peak_rss_mb:.0f} MB (limit {PEAK_RSS_MB} MB)")
    allowed = named if outcome.code == 0 else ()
    stray = [c for c in changed if not any(c == n or c.startswith(n + "/") for n in allowed)]
    if stray:
        found.append(f"changed {stray}")
    if "Traceback" in outcome.stderr or "internal error" in outcome.stderr:
        found.append("traceback: " + outcome.stderr.strip().splitlines()[-1][:200])
    return found
