"""The run-wide check that the tests leave /etc, /var/lib, /run and /usr/local as they found them
(tests/conftest.py): a test that writes there fails the whole run, naming the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="writing /run needs root")
def test_a_test_that_writes_the_machine_fails_the_run(tmp_path: Path) -> None:
    marker = Path("/run") / f"ctk-guard-{os.getpid()}"  # removed again below, before this run ends
    (tmp_path / "test_writes.py").write_text(
        f"from pathlib import Path\n\ndef test_writes() -> None:\n"
        f"    Path({str(marker)!r}).write_text('x')\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
             "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "bt"),
             str(tmp_path / "test_writes.py")],
            capture_output=True, text=True, timeout=300, cwd=REPO, check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    finally:
        marker.unlink(missing_ok=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert f"the tests wrote outside their temporary directories:\nadded {marker}" in done.stdout
