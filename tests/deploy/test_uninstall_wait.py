"""The pre-delete hook's waiter against a stand-in API server (the real one cannot run here)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.deploy.chart import REPO

WAIT = REPO / "packaging" / "image" / "uninstall_wait.py"
BASE = "/apis/apps/v1/namespaces/gpu/daemonsets/"


class FakeApi:
    """DaemonSets by name; the agent one disappears after `gone_after` GETs once deleted."""

    def __init__(self) -> None:
        self.daemonsets: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.ready_after = 2  # GETs of the uninstall DaemonSet before its pods are all Ready
        self.agent_deleted = False


@pytest.fixture
def api() -> Iterator[tuple[FakeApi, str]]:
    state = FakeApi()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_DELETE(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length).decode()
            state.calls.append(("DELETE", self.path, body))
            name = self.path.removeprefix(BASE)
            if name not in state.daemonsets:
                self.reply(404, {})
                return
            del state.daemonsets[name]
            self.reply(200, {})

        def do_GET(self) -> None:
            state.calls.append(("GET", self.path, self.headers.get("Authorization", "")))
            name = self.path.removeprefix(BASE)
            ds = state.daemonsets.get(name)
            if ds is None:
                self.reply(404, {})
                return
            if name == "ctk-uninstall" and state.ready_after > 0:
                state.ready_after -= 1
            elif name == "ctk-uninstall":
                ds["status"]["numberReady"] = ds["status"]["desiredNumberScheduled"]
            self.reply(200, ds)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run_wait(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(WAIT),
            "--namespace=gpu",
            "--agent=ctk",
            "--uninstall=ctk-uninstall",
            f"--api={url}",
            "--poll=0.05",
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"CTK_API_TOKEN": "t0ken", "PATH": "/usr/bin:/bin"},
    )


def uninstall_ds(desired: int) -> dict[str, Any]:
    return {
        "metadata": {"generation": 1},
        "status": {"observedGeneration": 1, "desiredNumberScheduled": desired, "numberReady": 0},
    }


def test_stops_the_agent_then_waits_for_every_node(api: tuple[FakeApi, str]) -> None:
    state, url = api
    state.daemonsets = {"ctk": {}, "ctk-uninstall": uninstall_ds(3)}
    done = run_wait(url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "3/3 nodes reverted"
    first = state.calls[0]
    assert first[:2] == ("DELETE", BASE + "ctk")
    assert json.loads(first[2])["propagationPolicy"] == "Foreground"
    assert ("GET", BASE + "ctk-uninstall", "Bearer t0ken") in state.calls
    assert "ctk" not in state.daemonsets and "ctk-uninstall" in state.daemonsets


def test_a_node_that_never_reverts_times_out_with_the_count(api: tuple[FakeApi, str]) -> None:
    state, url = api
    state.daemonsets = {"ctk-uninstall": uninstall_ds(2)}
    state.ready_after = 10**6  # one node is down: its pod never becomes Ready
    done = run_wait(url, "--timeout=0.5")
    assert done.returncode == 1
    assert "timed out" in done.stderr and "0/2 nodes reverted" in done.stderr


def test_a_stale_status_is_not_taken_for_done(api: tuple[FakeApi, str]) -> None:
    state, url = api
    stale = uninstall_ds(0)  # not yet observed by the controller: 0/0 must not count
    stale["metadata"]["generation"] = 2
    state.daemonsets = {"ctk-uninstall": stale}
    state.ready_after = 10**6
    done = run_wait(url, "--timeout=0.5")
    assert done.returncode == 1
