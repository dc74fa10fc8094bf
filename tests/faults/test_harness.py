"""The harness keeps its own promises: each case runs under the address-space limit, in a session
of its own, and a case that hangs is killed at `KILL_S` with its time and peak RSS recorded."""

from __future__ import annotations

import os
from pathlib import Path

from ctk import __version__
from tests.faults.harness import ADDRESS_SPACE, run_ctk

# A prefix that reports the limits and session of the process about to exec ctk, then execs it.
REPORT = 'ulimit -v >&2; ps -o sid= -p $$ >&2; exec "$@"'


def test_a_case_runs_under_the_address_space_limit_in_its_own_session(tmp_path: Path) -> None:
    outcome = run_ctk(["--version"], cwd=tmp_path, prefix=["sh", "-c", REPORT, "sh"])
    limit, sid = outcome.stderr.split("\n")[:2]
    assert (outcome.code, outcome.stdout) == (0, f"ctk {__version__}\n")
    assert int(limit) == ADDRESS_SPACE // 1024  # ulimit -v counts KiB
    assert int(sid) != os.getsid(0)  # a session of its own (killed as one group on timeout)
    assert outcome.peak_rss_mb > 5
    assert not outcome.timed_out


def test_the_peak_is_the_cases_own_not_the_test_processs(tmp_path: Path) -> None:
    """A process started from pytest inherits pytest's peak RSS across exec; the harness must
    report what ctk itself used, however large the test process has grown."""
    ballast = bytearray(400 << 20)  # this process's peak RSS is now over 400 MB
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page
    outcome = run_ctk(["--version"], cwd=tmp_path)
    assert outcome.code == 0
    assert 5 < outcome.peak_rss_mb < 200
    del ballast
