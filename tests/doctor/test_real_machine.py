"""`ctk doctor` on the machine the tests run on (no GPU): the driver is the root cause.

Run in a subprocess: the scenario tests load the fake libnvidia-ml.so.1 into this process, and a
process keeps the first NVML library it loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]


def ctk(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `ctk ARGS` with this interpreter, from the repository."""
    code = f"from ctk.cli.app import main; raise SystemExit(main({list(args)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR": "1"},
    )


def schema() -> dict[str, object]:
    """The documented JSON schema of `ctk doctor --json`."""
    text = resources.files("ctk.schemas").joinpath("doctor-v1.json").read_text("utf-8")
    loaded: dict[str, object] = json.loads(text)
    return loaded


@pytest.fixture(scope="module")
def real_json() -> tuple[int, dict[str, object], str]:
    done = ctk("doctor", "--json")
    return done.returncode, json.loads(done.stdout), done.stderr


def test_json_names_the_driver_as_root_cause(real_json: tuple[int, dict[str, Any], str]) -> None:
    code, document, stderr = real_json
    jsonschema.validate(document, schema())
    assert (code, stderr) == (1, "")
    assert document["summary"]["root_cause"] == "driver.not-loaded"
    driver = next(c for c in document["checks"] if c["id"] == "driver.not-loaded")
    assert (driver["status"], driver["severity"]) == ("fail", "error")
    assert driver["evidence"][0] == {
        "source": "/proc/driver/nvidia/version",
        "value": "missing",
    }


def test_nothing_crashes(real_json: tuple[int, dict[str, Any], str]) -> None:
    _, document, _ = real_json
    crashed = [c["id"] for c in document["checks"] if "crashed" in c["summary"]]
    assert crashed == []
    assert len(document["checks"]) == len({c["id"] for c in document["checks"]})


def test_human_report_names_the_driver_first() -> None:
    done = ctk("doctor")
    assert (done.returncode, done.stderr) == (1, "")
    lines = done.stdout.splitlines()
    assert lines[-1].endswith("Fix first: driver.not-loaded.")
    first_problem = next(line for line in lines if line.startswith("  [FAIL]"))
    assert first_problem.split()[1] == "driver.not-loaded"
