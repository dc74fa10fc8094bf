"""A full (ENOSPC) or read-only (EROFS) file system under configure and unconfigure: exit 1 with
a one-line error, and nothing created or changed (no empty drop-in directory, no temp file)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.harness import REPO, Outcome, problems

UNSHARE = shutil.which("unshare")

DOCKER = {"daemon.json": '{\n    "log-driver": "local"\n}\n'}
CONTAINERD = {"config.toml": 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'}
CRIO = {"crio.conf": '[crio.runtime]\ndefault_runtime = "runc"\n'}


def _configure(verb: str, runtime: str, *args: str) -> list[str]:
    return ["runtime", verb, "--runtime", runtime, *args]


def _docker(verb: str, case: Path) -> list[str]:
    return _configure(verb, "docker", "--config", f"{case}/daemon.json")


def _containerd(verb: str, case: Path) -> list[str]:
    args = ("--config", f"{case}/config.toml", "--drop-in-config", f"{case}/conf.d/99-nvidia.toml")
    return _configure(verb, "containerd", *args)


def _crio(verb: str, case: Path) -> list[str]:
    drop_in = f"{case}/crio.conf.d/99-nvidia.toml"
    return _configure(verb, "crio", "--config", f"{case}/crio.conf", "--drop-in-config", drop_in)


ENGINES = {
    "docker": (DOCKER, _docker),
    "containerd": (CONTAINERD, _containerd),
    "crio": (CRIO, _crio),
}


@pytest.mark.skipif(
    UNSHARE is None or os.geteuid() != 0, reason="needs root and unshare for a private tmpfs"
)
@pytest.mark.parametrize("fault", ["enospc", "erofs"])
@pytest.mark.parametrize("verb", ["configure", "unconfigure"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_full_or_read_only(engine: str, verb: str, fault: str, tmp_path: Path) -> None:
    assert UNSHARE is not None
    seed, argv = ENGINES[engine]
    case = tmp_path / "case"
    request = {
        "case": str(case),
        "files": seed,
        "before": [argv("configure", case)] if verb == "unconfigure" else [],
        "argv": argv(verb, case),
        "fault": fault,
    }
    command = [UNSHARE, "-m", "--propagation", "private", sys.executable, "-m"]
    result = subprocess.run(
        [*command, "tests.faults.in_tmpfs", json.dumps(request)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    changed = report.pop("changed")
    outcome = Outcome(**report)
    named = (*seed, "conf.d", "crio.conf.d", "state")  # a success may change these, only
    assert problems(outcome, changed, named=named) == [], outcome.stderr
    # removing a drop-in needs no space: only unconfigure may succeed on a full disk
    expected = {0, 1} if (verb, fault) == ("unconfigure", "enospc") else {1}
    assert outcome.code in expected, outcome.stderr
    if outcome.code:  # one error line (warnings may come before it)
        errors = [line for line in outcome.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, outcome.stderr
