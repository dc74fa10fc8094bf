"""`ctk agent` against a real dockerd whose daemon.json lives in a fake host tree: this machine's
20.10 and today's 28 and 26 where CTK_ENGINES names them (tests/engines.py)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from ctk.host.agent import docker_runtimes
from ctk.host.root import HostRoot
from tests.agent.conftest import DAEMON_JSON, Host

pytestmark = pytest.mark.integration


def live(host: Host) -> frozenset[str] | None:
    return docker_runtimes(HostRoot(host.root))


def wait_for(condition: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.05)
    return False


def test_dockerd_reload_keeps_a_removed_runtime(docker_host: Host) -> None:
    """The measured fact behind "after a removal, restart dockerd, never reload it"."""
    daemon_json = docker_host.path("/etc/docker/daemon.json")
    daemon_json.write_text(json.dumps({"runtimes": {"nvidia": {"path": "/usr/bin/true"}}}))
    os.kill(docker_host.pid, signal.SIGHUP)
    assert wait_for(lambda: "nvidia" in (live(docker_host) or ()))
    daemon_json.write_text(DAEMON_JSON)
    os.kill(docker_host.pid, signal.SIGHUP)
    time.sleep(1.0)
    assert "nvidia" in (live(docker_host) or ())  # still there: a reload is not a revert


def test_signal_mode_reloads_after_adding_and_reports_after_removing(
    docker_host: Host, tmp_path: Path
) -> None:
    host = docker_host
    ready = tmp_path / "ready"
    pid = host.pid
    done = host.agent("--once", "--restart-mode", "signal", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert f"reloaded dockerd (SIGHUP to PID {pid}); no downtime\n" in done.stderr
    assert json.loads(host.path("/etc/docker/daemon.json").read_text())["runtimes"] == {
        "nvidia": {"args": [], "path": "/usr/bin/nvidia-container-runtime"}
    }
    assert host.pid == pid
    assert "nvidia" in (live(host) or ())
    assert ready.exists()

    done = host.agent("--uninstall", "--restart-mode", "signal", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert host.path("/etc/docker/daemon.json").read_text() == DAEMON_JSON
    assert (
        "restart needed: systemctl restart docker (dockerd keeps removed runtimes across a "
        "SIGHUP reload)\n"
    ) in done.stderr
    assert host.restarts == 0
    assert not ready.exists()


def test_systemd_mode_restarts_dockerd_once(docker_host: Host, tmp_path: Path) -> None:
    host = docker_host
    pid = host.pid
    for _ in range(2):
        done = host.agent("--once")
        assert done.returncode == 0, done.stderr
    assert host.restarts == 1
    assert host.pid != pid
    assert "nvidia" in (live(host) or ())
    done = host.agent("--uninstall")
    assert done.returncode == 0, done.stderr
    assert host.restarts == 2
    assert "nvidia" not in (live(host) or ())
    assert host.path("/etc/docker/daemon.json").read_text() == DAEMON_JSON
