"""The refresh units under packaging/systemd pass `systemd-analyze verify`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNITS = Path(__file__).resolve().parents[2] / "packaging" / "systemd"


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_units_verify(tmp_path: Path) -> None:
    for unit in ("ctk-cdi-refresh.service", "ctk-cdi-refresh.path"):
        text = (UNITS / unit).read_text()
        # the unit names /usr/bin/ctk; verify checks that the program exists, so point it at one
        (tmp_path / unit).write_text(text.replace("/usr/bin/ctk ", f"{sys.executable} "))
    result = subprocess.run(
        ["systemd-analyze", "verify", "ctk-cdi-refresh.service", "ctk-cdi-refresh.path"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    service = (UNITS / "ctk-cdi-refresh.service").read_text()
    assert "ExecStart=/usr/bin/ctk cdi refresh --output /etc/cdi/nvidia.yaml" in service
