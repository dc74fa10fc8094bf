"""The agent's `GET /info` against a hostile server on the docker socket: capped, never a hang."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctk.errors import CtkError
from ctk.host import agent as host_agent
from ctk.host.root import HostRoot
from tests.agent.conftest import DAEMON_JSON, _make_host
from tests.fake_nvml import FakeNode

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
SOCK = "/var/run/docker.sock"

Behaviour = Callable[[socket.socket, threading.Event], None]


def endless_chunked(conn: socket.socket, stop: threading.Event) -> None:
    """A valid chunked JSON answer that never ends."""
    conn.sendall(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b'{"Runtimes": {"nvidia": {}}, "x": "' + b"a" * 65000
    while not stop.is_set():
        conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))


def endless_unframed(conn: socket.socket, stop: threading.Event) -> None:
    """No length, no chunking: the body runs until the connection closes, which it never does."""
    conn.sendall(HEAD + b"Connection: close\r\n\r\n")
    while not stop.is_set():
        conn.sendall(b" " * 65536)


def huge_length(conn: socket.socket, stop: threading.Event) -> None:
    """A Content-Length of 1 TB, and bytes to match."""
    conn.sendall(HEAD + b"Content-Length: 1000000000000\r\n\r\n")
    while not stop.is_set():
        conn.sendall(b"[" * 65536)


def drip(conn: socket.socket, stop: threading.Event) -> None:
    """One byte every 0.2 s: each read is quick, the whole answer never comes."""
    conn.sendall(HEAD + b"Content-Length: 100000\r\n\r\n")
    while not stop.wait(0.2):
        conn.sendall(b" ")


@pytest.fixture
def hostile(short_tmp: Path) -> Iterator[Callable[..., Path]]:
    """Serve ``behaviour`` on <root>/var/run/docker.sock (root: a short temporary dir)."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def serve(behaviour: Behaviour, root: Path = short_tmp) -> Path:
        path = root / SOCK.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        server.bind(str(path))
        server.listen(8)

        def loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)  # the request
                    with contextlib.suppress(OSError):  # the client gave up, as it should
                        behaviour(conn, stop)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        threads.append(thread)
        return root

    yield serve
    stop.set()
    server.close()
    for thread in threads:
        thread.join(timeout=5)


@pytest.mark.parametrize(
    "behaviour",
    [
        pytest.param(endless_chunked, id="endless-chunked"),
        pytest.param(endless_unframed, id="endless-unframed"),
        pytest.param(huge_length, id="huge-content-length"),
    ],
)
def test_an_endless_body_is_cut_at_the_cap(
    hostile: Callable[..., Path], behaviour: Behaviour
) -> None:
    root = hostile(behaviour)
    start = time.monotonic()
    with pytest.raises(CtkError) as caught:
        host_agent.docker_runtimes(HostRoot(root))
    assert time.monotonic() - start < 5
    assert caught.value.message == (
        f"{root}{SOCK}: the engine's GET /info answer is larger than 1 MiB; not read"
    )
    assert caught.value.hint == "is dockerd what listens on this socket? check --socket"


def test_a_drip_feed_is_cut_at_the_deadline(
    hostile: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host_agent, "INFO_DEADLINE", 1.0)
    root = hostile(drip)
    start = time.monotonic()
    with pytest.raises(CtkError) as caught:
        host_agent.docker_runtimes(HostRoot(root))
    assert 1.0 <= time.monotonic() - start < 4
    assert caught.value.message == (
        f"{root}{SOCK}: the engine's GET /info answer took longer than 1 s; not read"
    )


def test_an_agent_pass_says_why_it_is_not_ready_and_finishes(
    hostile: Callable[..., Path], workstation: FakeNode, tmp_path: Path
) -> None:
    """The whole `ctk agent --once` process: not ready, the reason on stderr, no hang."""
    host = _make_host(tmp_path, workstation, "docker")
    hostile(endless_chunked, host.root)
    host.path("/etc/docker").mkdir(parents=True)
    host.path("/etc/docker/daemon.json").write_text(DAEMON_JSON)
    start = time.monotonic()
    done = host.agent("--once", "--runtime", "docker", "--restart-mode", "none")
    assert time.monotonic() - start < 60
    assert done.returncode == 0, done.stderr
    assert (
        f"not ready: {host.root}{SOCK}: the engine's GET /info answer is larger than 1 MiB; "
        "not read\n" in done.stderr
    )
