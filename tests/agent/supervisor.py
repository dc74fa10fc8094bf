"""A stand-in for the host's systemd and root for `ctk agent` tests (no systemd on this machine).

The test starts a real engine whose config lives in a fake host tree. containerd runs in a
private mount namespace with the fake host's /etc/containerd and /run/containerd (the agent
tests: all of its /run, which also holds containerd 2.x's /var/run/nri/nri.sock) bound over the
real ones, so the host paths ctk writes into its config (the `imports` entry) resolve as they
would on a node. The agent reaches "the host's root" through this file as its `--host-exec`:

    python3 supervisor.py CTL systemctl restart containerd   # stop the engine, start it again
    python3 supervisor.py CTL containerd --config F config dump

CTL is a directory holding `host` (the fake host's path), `engine` (containerd or docker),
`engine.pid`, `engine.argv` (JSON), `engine.path` (optional: the PATH the engine and the host's
commands run with, so that a fetched engine's own `containerd` and shims come first) and
`restarts.log` (one line per restart).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BOUND = ("etc/containerd", "run")
"""The fake host's dirs that a host command sees as the real ones: its whole /run, as the engine
does (a bind onto /run/containerd first made that folder in the machine's own /run)."""
HOST_TIMEOUT = 100.0
"""Seconds a host command may take: less than the agent's own limit on its --host-exec (120 s)."""


def namespaced(host: Path, argv: list[str], bound: tuple[str, ...] = BOUND) -> list[str]:
    """``argv`` run in a mount namespace where the fake host's ``bound`` dirs (by default its
    containerd dirs) are the real ones."""
    binds = " && ".join(
        f"mkdir -p /{d} && mount -n --bind {host / d} /{d}" for d in bound if (host / d).is_dir()
    )
    script = f'{binds} && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def engine_env(ctl: Path) -> dict[str, str]:
    """The environment of the engine and of the host's commands: this one, with the PATH that
    `engine.path` names where the test wrote one."""
    path = ctl / "engine.path"
    return {**os.environ, "PATH": path.read_text().strip()} if path.exists() else {**os.environ}


def _default_signals() -> None:
    """The default action for the signals a caller may ignore (under `nohup`, SIGHUP): an
    ignored signal stays ignored across exec, and the engine would outlive the SIGHUP a test
    sends (tests/engines.py's default_signals; this file runs on its own, outside the tests)."""
    for number in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)


def start(ctl: Path) -> int:
    """Start the engine as `engine.argv` says (detached, default signal actions); record and
    return its PID."""
    argv = json.loads((ctl / "engine.argv").read_text())
    with (ctl / "engine.log").open("ab") as log:
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=engine_env(ctl),
            preexec_fn=_default_signals,  # noqa: PLW1509
        )
    (ctl / "engine.pid").write_text(f"{process.pid}\n")
    return process.pid


def stop(ctl: Path, timeout: float = 20.0) -> None:
    """Stop the recorded engine process and wait until it is gone."""
    pid = int((ctl / "engine.pid").read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (started by another supervisor process)
            done = 0 if Path(f"/proc/{pid}").exists() and _alive(pid) else pid
        if done == pid:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def main(argv: list[str]) -> int:
    ctl = Path(argv[0])
    command = argv[1:]
    host = Path((ctl / "host").read_text().strip())
    if command[:2] == ["systemctl", "restart"]:
        with (ctl / "restarts.log").open("a") as log:
            log.write(" ".join(command) + "\n")
        stop(ctl)
        start(ctl)
        return 0
    try:
        done = subprocess.run(
            namespaced(host, command), env=engine_env(ctl), check=False, timeout=HOST_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        print(f"{' '.join(command)}: no answer within {HOST_TIMEOUT:g} s", file=sys.stderr)
        return 124
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
