"""Whatever the node's files hold, the doctor finishes: findings, never a crash."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.cli.app import main
from ctk.doctor.facts import NodeFacts, TimedOut
from ctk.doctor.model import REGISTRY, Status
from ctk.doctor.run import diagnose
from ctk.host.facts import gather
from ctk.runtime_config.engines import Runtime
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

FILES = (
    "proc/driver/nvidia/version",
    "proc/driver/nvidia/gpus/0000:01:00.0/information",
    "proc/driver/nvidia/params",
    "proc/driver/nvidia-caps/mig-minors",
    "proc/devices",
    "proc/modules",
    "proc/self/environ",
    "proc/self/mountinfo",
    "etc/docker/daemon.json",
    "etc/containerd/config.toml",
    "etc/crio/crio.conf",
    "etc/nvidia-container-runtime/config.toml",
    "var/lib/dpkg/status",
    "etc/cdi/nvidia.yaml",
    "etc/ld.so.conf",
    "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(st.sampled_from(FILES), st.binary(max_size=200), max_size=6))
def test_any_file_contents_give_findings(contents: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sys/firmware/efi").mkdir(parents=True)
        for path, data in contents.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        facts, _ = gather(root, nvml_timeout=5)
        findings = diagnose(facts)
    crashed = [f.check for f in findings if "crashed" in f.summary]
    assert (crashed, len(findings)) == ([], len(REGISTRY))


@pytest.fixture
def healthy(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node("healthy")


def test_a_fifo_proc_file_is_refused_at_once(
    healthy: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO where the driver's `information` file should be is not a driver file: never read.

    (Reading it would block forever; files.read_bytes refuses it before any read.)
    """
    information = healthy.root / "proc/driver/nvidia/gpus/0000:62:00.0/information"
    information.unlink()
    os.mkfifo(information)
    codes: list[int] = []
    worker = threading.Thread(
        target=lambda: codes.append(main(["doctor", "--json", "--root", str(healthy.root)])),
        daemon=True,
    )
    worker.start()
    worker.join(30)
    finished = not worker.is_alive()
    with contextlib.suppress(OSError):  # a reader stuck in open() goes: a writer that closes
        os.close(os.open(information, os.O_WRONLY | os.O_NONBLOCK))
    worker.join(5)
    assert finished
    document = json.loads(capsys.readouterr().out)
    unknown = {c["id"] for c in document["checks"] if c["status"] == "unknown"}
    problems = {c["id"] for c in document["checks"] if c["status"] in ("fail", "warn")}
    hung = [t["step"] for t in document["timings"] if t["timed_out"]]
    assert (codes, problems, unknown, hung) == ([0], {"driver.gpu-not-enumerated"}, set(), [])


def _timed_out(facts: NodeFacts, name: str) -> NodeFacts:
    """``facts`` with one step's facts replaced by the placeholder the gatherer leaves."""
    changes: dict[str, Any] = {name: TimedOut(name)}
    if name in set(Runtime):  # one engine's entry in the table
        changes = {"engines": {**facts.engines, Runtime(name): TimedOut(name)}}
    return replace(facts, **changes)


def test_a_timed_out_fact_is_unknown_never_a_crash(tmp_path: Path) -> None:
    facts, _ = gather(tmp_path, nvml_timeout=0.1)
    steps = ("kernel", "dev", "libs", "toolkit", "docker", "containerd", "crio", "cdi", "container")
    for name in steps:
        findings = {f.check: f for f in diagnose(_timed_out(facts, name))}
        assert [f.check for f in findings.values() if "crashed" in f.summary] == []
    findings = {f.check: f for f in diagnose(_timed_out(facts, "kernel"))}
    assert (findings["driver.not-loaded"].status, findings["driver.not-loaded"].summary) == (
        Status.UNKNOWN,
        "gathering kernel did not finish in time: cannot tell (a hung driver or /proc read)",
    )
