"""The refresh units `ctk install` writes (ctk/data/units) pass `systemd-analyze verify`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runners import OWN_RUN

UNITS = Path(__file__).resolve().parents[2] / "ctk" / "data" / "units"


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_units_verify(tmp_path: Path) -> None:
    for unit in ("ctk-cdi-refresh.service", "ctk-cdi-refresh.path"):
        text = (UNITS / unit).read_text()
        # `ctk install` puts the real path of ctk for @CTK@; verify checks that it exists
        (tmp_path / unit).write_text(text.replace("@CTK@ ", f"{sys.executable} "))
    result = subprocess.run(
        [*OWN_RUN, "systemd-analyze", "verify", "ctk-cdi-refresh.service", "ctk-cdi-refresh.path"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    service = (UNITS / "ctk-cdi-refresh.service").read_text()
    assert "ExecStart=@CTK@ cdi refresh --output /etc/cdi/nvidia.yaml" in service
