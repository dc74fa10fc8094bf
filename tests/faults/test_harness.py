"""The harness keeps its own promises: each case runs under the address-space limit, in a session
of its own, and a case that hangs is killed at `KILL_S` with its time and peak RSS recorded."""

from __future__ import annotations

import os
from pathlib import Path

from ctk import __version__
from tests.faults.harness import ADDRESS_SPACE, run_ctk

# A prefix that reports the limits and session of the process about to exec ctk, then execs it.
REPORT = 'ulimit -v >&2; ps -o sid= -p $$ >&2; echo "pid $$" >&2; exec "$@"'


def test_a_case_runs_under_the_address_space_limit_in_its_own_session(tmp_path: Path) -> None:
    outcome = run_ctk(["--version"], cwd=tmp_path, prefix=["sh", "-c", REPORT, "sh"])
    limit, sid, pid = outcome.stderr.split("\n")[:3]
    assert (outcome.code, outcome.stdout) == (0, f"ctk {__version__}\n")
    assert int(limit) == ADDRESS_SPACE // 1024  # ulimit -v counts KiB
    assert int(sid) == int(pid.removeprefix("pid "))  # setsid: the child leads its session
    assert int(sid) != os.getsid(0)
    assert outcome.peak_rss_mb > 5
    assert not outcome.timed_out
