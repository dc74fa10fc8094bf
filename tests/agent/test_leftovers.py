"""What the agent leaves on a host (issue 24, "Agent"; issue 22, item 4): host paths in its state,
no write at all in a pass with nothing to do, nothing of its own after `--uninstall`, and a hook
file it did not write never replaced or removed.

No engine runs here: the host has containerd's config, `--restart-mode none` and CDI on (the
handler runs plain runc), and no NVML, so each pass configures, says "restart needed" and cannot
build a spec; that is enough for the agent's own files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ctk.errors import CtkError
from tests.agent.test_hostile_options import _agent

STATE = "var/lib/ctk/agent/state.json"
LOCK = "run/ctk/agent.lock"
HOOK = "usr/local/libexec/ctk/ctk-hook"
CONFIG = "version = 2\n"


def _packaged() -> bytes:
    from ctk.host.hook_program import packaged_hook

    try:
        return packaged_hook().read_bytes()
    except CtkError as exc:
        pytest.skip(f"no native hook built here: {exc}")


def _host(tmp_path: Path, *, conf_d: bool = False) -> Path:
    host = tmp_path / "host"
    (host / "etc/containerd").mkdir(parents=True)
    (host / "etc/containerd/config.toml").write_text(CONFIG)
    if conf_d:
        (host / "etc/containerd/conf.d").mkdir()
    return host


def _run(host: Path, *more: str) -> tuple[int, str]:
    return _agent(
        [
            "--host-root",
            str(host),
            "--runtime",
            "containerd",
            "--restart-mode",
            "none",
            "--enable-cdi",
            "--ready-file",
            str(host / "run/ctk/ready"),
            *more,
        ]
    )


def _tree(top: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every file, folder and link under ``top``: kind, bytes, mtime (nothing left out)."""
    seen = {}
    for path in sorted(top.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            seen[str(path.relative_to(top))] = ("link", os.readlink(path).encode(), 0)
        elif path.is_dir():
            seen[str(path.relative_to(top))] = ("dir", b"", info.st_mtime_ns)
        else:
            seen[str(path.relative_to(top))] = ("file", path.read_bytes(), info.st_mtime_ns)
    return seen


def test_the_state_names_the_ready_file_by_its_host_path(tmp_path: Path) -> None:
    host = _host(tmp_path)
    _run(host, "--once")
    created = json.loads((host / STATE).read_text())["created"]
    assert created == [{"path": "/run/ctk/ready", "digest": None, "host": True}]


def test_an_earlier_versions_entry_is_renamed_in_place(tmp_path: Path) -> None:
    """A state of an earlier version named the ready file as the agent saw it: the next pass
    names it by the host's path, once, and uninstall removes the file."""
    host = _host(tmp_path)
    _run(host, "--once")
    state = json.loads((host / STATE).read_text())
    ready = host / "run/ctk/ready"
    ready.write_text("")
    state["created"] = [{"path": str(ready), "digest": None}]
    (host / STATE).write_text(json.dumps(state))
    _run(host, "--once")
    created = json.loads((host / STATE).read_text())["created"]
    assert created == [{"path": "/run/ctk/ready", "digest": None, "host": True}]


def test_a_pass_with_nothing_to_do_writes_nothing(tmp_path: Path) -> None:
    """Not the state, not the lock (which once took the new holder's PID each pass)."""
    host = _host(tmp_path)
    _run(host, "--once")
    before = _tree(host)
    assert LOCK in before
    _, err = _run(host, "--once")  # 1: no spec without NVML
    assert "pass: nothing changed; not ready\n" in err, err
    assert _tree(host) == before


def test_uninstall_leaves_nothing_of_the_agent(tmp_path: Path) -> None:
    """No lock, no state, and no conf.d that the agent made for its drop-in."""
    host = _host(tmp_path)
    before = _tree(host)
    _run(host, "--once")
    assert (host / "etc/containerd/conf.d/99-nvidia.toml").exists()
    code, err = _run(host, "--uninstall")
    assert code == 0, err
    assert "restart needed: systemctl restart containerd\n" in err  # said, and not kept
    left = {name for name in _tree(host) if not name.startswith(("run", "var"))}
    assert left == set(before)
    assert (host / "etc/containerd/config.toml").read_text() == CONFIG
    assert not (host / "run/ctk").exists()
    assert not (host / "var/lib/ctk").exists()


def test_uninstall_keeps_a_conf_d_that_was_there(tmp_path: Path) -> None:
    host = _host(tmp_path, conf_d=True)
    _run(host, "--once")
    assert _run(host, "--uninstall")[0] == 0
    assert (host / "etc/containerd/conf.d").is_dir()
    assert list((host / "etc/containerd/conf.d").iterdir()) == []


def test_uninstall_removes_only_folders_of_its_own_files(tmp_path: Path) -> None:
    """A state file that names other folders (a hand, a restore) gets none of them removed."""
    host = _host(tmp_path)
    (host / "srv/empty").mkdir(parents=True)
    (host / "var/lib/ctk/agent").mkdir(parents=True)
    (host / STATE).write_text(json.dumps({"version": 1, "folders": ["/srv/empty", "/srv"]}))
    assert _run(host, "--uninstall")[0] == 0
    assert (host / "srv/empty").is_dir()


def test_a_foreign_hook_is_never_replaced(tmp_path: Path) -> None:
    """The agent has no --force: a hook it did not write stays as it is, and the pass says so."""
    _packaged()
    host = _host(tmp_path)
    hook = host / HOOK
    hook.parent.mkdir(parents=True)
    hook.write_bytes(b"#!/bin/sh\n# the admin's\n")
    _, err = _run(host, "--once")
    assert "hook: kept /usr/local/libexec/ctk/ctk-hook: not written by ctk" in err
    assert hook.read_bytes() == b"#!/bin/sh\n# the admin's\n"
    assert sorted(p.name for p in hook.parent.iterdir()) == ["ctk-hook"]  # no manifest
    assert _run(host, "--uninstall")[0] == 0
    assert hook.read_bytes() == b"#!/bin/sh\n# the admin's\n"


def test_uninstall_keeps_a_hand_copied_identical_hook(tmp_path: Path) -> None:
    """Byte-identical to the agent's own is not the agent's: ownership is the manifest's."""
    content = _packaged()
    host = _host(tmp_path)
    hook = host / HOOK
    hook.parent.mkdir(parents=True)
    hook.write_bytes(content)
    hook.chmod(0o755)
    _run(host, "--once")
    code, err = _run(host, "--uninstall")
    assert code == 0, err
    assert hook.read_bytes() == content
    assert "removed /usr/local/libexec/ctk/ctk-hook" not in err


def test_uninstall_removes_the_hook_the_agent_wrote(tmp_path: Path) -> None:
    _packaged()
    host = _host(tmp_path)
    _run(host, "--once")
    assert (host / HOOK).exists()
    code, err = _run(host, "--uninstall")
    assert code == 0, err
    assert "removed /usr/local/libexec/ctk/ctk-hook\n" in err
    assert not (host / "usr").exists()


def test_a_second_agent_names_the_holder_from_the_kernel(tmp_path: Path) -> None:
    """The lock no longer takes each holder's PID (a write in every pass): the kernel says it."""
    import select
    import subprocess
    import sys

    host = _host(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from ctk.host.agent import agent_lock; "
            "from ctk.host.root import HostRoot\n"
            f"with agent_lock(HostRoot(Path({str(host)!r}))):\n"
            "    print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert holder.stdout is not None
        assert select.select([holder.stdout], [], [], 30)[0], "the holder did not take the lock"
        assert holder.stdout.readline() == "held\n"
        lock = host / LOCK
        before = lock.read_bytes()
        code, err = _run(host, "--once")
        assert code == 1
        assert err == (
            f"error: another ctk agent is running on this node (PID {holder.pid} holds {lock})\n"
            "hint: one agent per node: stop the other one first\n"
        )
        assert lock.read_bytes() == before
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0


def test_a_kept_foreign_hook_is_said_once_not_every_pass(tmp_path: Path) -> None:
    """A DaemonSet's log gets one line for a foreign hook that stays, not one a pass."""
    import subprocess
    import sys
    import time

    _packaged()
    host = _host(tmp_path)
    (host / HOOK).parent.mkdir(parents=True)
    (host / HOOK).write_bytes(b"#!/bin/sh\n# the admin's\n")
    log = tmp_path / "agent.log"
    argv = [sys.executable, "-c", "from ctk.cli.app import main; raise SystemExit(main())"]
    options = ["agent", "--host-root", str(host), "--runtime", "containerd"]
    options += ["--restart-mode", "none", "--enable-cdi", "--interval", "0.05"]
    with log.open("w") as out:
        agent = subprocess.Popen(
            [*argv, *options],
            stderr=out,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        try:
            deadline = time.monotonic() + 60
            while log.read_text().count("pass:") < 3:
                assert time.monotonic() < deadline, f"no three passes in 60 s:\n{log.read_text()}"
                assert agent.poll() is None, f"the agent exited:\n{log.read_text()}"
                time.sleep(0.05)
        finally:
            agent.terminate()
            agent.wait(timeout=30)
    text = log.read_text()
    assert text.count("hook: kept /usr/local/libexec/ctk/ctk-hook: not written by ctk") == 1, text
