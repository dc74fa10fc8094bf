"""`ctk doctor --npd` keeps node-problem-detector's custom-plugin contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ctk.agent.outlets import NPD_WIDTH, npd_report
from ctk.doctor.run import diagnose
from ctk.host.facts import gather

REPO = Path(__file__).resolve().parents[2]


def test_npd_names_the_root_cause_in_one_short_line(tmp_path: Path) -> None:
    """This machine has no NVIDIA driver: a problem (exit 1) named by the driver check."""
    done = subprocess.run(
        [sys.executable, "-m", "ctk.cli.app", "doctor", "--npd"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    facts, _ = gather(Path("/"))
    code, line = npd_report(diagnose(facts))
    assert (done.returncode, done.stdout) == (code, line + "\n")
    assert code == 1
    assert line.startswith("driver.")
    assert len(line) <= NPD_WIDTH
