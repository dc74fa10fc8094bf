"""Engines too old for CDI: what the docker and containerd checks say (facts built directly).

dockerd before 25.0 and containerd before 1.7 have no CDI support; dockerd 20.10 refuses to
start on a daemon.json with `cdi-spec-dirs` (measured on the real daemons in
tests/doctor/test_engine_facts_real.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctk.doctor.checks.containerd import containerd_cdi
from ctk.doctor.checks.docker import daemon_json_invalid, docker_cdi
from ctk.doctor.facts import EngineFacts, NodeFacts
from ctk.doctor.model import Severity, Status
from tests.doctor.test_cdi_readers import CONTAINERD, DOCKER
from tests.doctor.test_cdi_readers import node as readers_node


def node(engine: EngineFacts) -> NodeFacts:
    """A Kubernetes node with ``engine`` and the toolkit in CDI mode."""
    return readers_node(engine, mode="cdi")


@pytest.mark.parametrize(
    ("version", "status"),
    [("20.10.24", Status.FAIL), ("24.0.9", Status.FAIL), ("25.0.0", Status.OK), (None, Status.OK)],
)
def test_docker_cdi_needs_docker_25(version: str | None, status: Status) -> None:
    result = docker_cdi(node(replace(DOCKER, version=version)))
    assert result.status is status, result
    if status is Status.FAIL:  # an error, as CDI off and no spec directory are (issue 23, 6)
        assert f"docker {version} has no CDI support (it came in 25.0)" in result.summary
        assert result.severity is Severity.ERROR


@pytest.mark.parametrize(
    ("version", "dirs", "status"),
    [
        ("20.10.24", ("/etc/cdi",), Status.FAIL),
        ("24.0.9", (), Status.FAIL),
        ("20.10.24", None, Status.OK),
        ("25.0.0", ("/etc/cdi",), Status.OK),
        (None, ("/etc/cdi",), Status.OK),
    ],
)
def test_cdi_spec_dirs_stop_dockerd_before_25(
    version: str | None, dirs: tuple[str, ...] | None, status: Status
) -> None:
    docker = replace(DOCKER, version=version, cdi_spec_dirs=dirs, config_exists=True)
    result = daemon_json_invalid(node(docker))
    assert result.status is status, result
    if status is Status.FAIL:
        assert "sets cdi-spec-dirs" in result.summary
        assert "dockerd refuses to start" in result.summary


@pytest.mark.parametrize(
    ("version", "status"), [("1.6.20", Status.WARN), ("1.7.0", Status.OK), (None, Status.OK)]
)
def test_containerd_cdi_needs_containerd_1_7(version: str | None, status: Status) -> None:
    result = containerd_cdi(node(replace(CONTAINERD, version=version)))
    assert result.status is status, result
    if status is Status.WARN:
        assert f"containerd {version} has no CDI support (it came in 1.7)" in result.summary
