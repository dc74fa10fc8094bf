"""A state file that says more than the agent wrote (a hand, a bug, a restore from another node):
the agent never overwrites, restores or deletes a file on its word alone."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.agent.test_hostile_options import _agent

STATE = "var/lib/ctk/agent/state.json"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _host(tmp_path: Path, state: dict[str, object]) -> Path:
    host = tmp_path / "host"
    (host / STATE).parent.mkdir(parents=True)
    (host / STATE).write_text(json.dumps({"version": 1, "runtime": "docker", **state}))
    return host


def test_configs_it_does_not_manage_are_refused_before_any_pass(tmp_path: Path) -> None:
    host = _host(tmp_path, {})
    shadow = host / "etc/shadow"
    shadow.parent.mkdir()
    shadow.write_text("root:x:\n")
    entry = {"original": "root::\n", "left": _sha("root:x:\n")}  # the digest matches
    (host / STATE).write_text(
        json.dumps({"version": 1, "runtime": "docker", "configs": {"/etc/shadow": entry}})
    )
    before = (host / STATE).read_bytes()
    for mode in ("--once", "--uninstall"):
        code, err = _agent(["--host-root", str(host), "--runtime", "docker", mode])
        assert code == 1
        assert err == (
            f"error: {host / STATE}: names /etc/shadow, which this agent does not manage "
            "(/etc/docker/daemon.json); nothing was touched\n"
            "hint: run the agent with the --runtime, --config and --drop-in it was installed "
            "with, or move the state file away (the next pass starts afresh)\n"
        )
        assert shadow.read_text() == "root:x:\n"
        assert (host / STATE).read_bytes() == before
        assert not (host / "etc/docker").exists()


def test_uninstall_keeps_files_that_are_not_what_the_agent_wrote(tmp_path: Path) -> None:
    """The spec and the agent's own files (outlets, ready file) go only while they hold the
    bytes the agent left there; a path the state names for another file stays."""
    victim = tmp_path / "precious"
    victim.write_text("keep me\n")
    mine = tmp_path / "ready"
    mine.write_text("")
    host = _host(
        tmp_path,
        {
            "spec": "/etc/important",
            "spec_digest": _sha("a spec\n"),
            "created": [
                {"path": str(victim), "digest": _sha("something else")},
                {"path": str(mine), "digest": _sha("")},
            ],
        },
    )
    (host / "etc").mkdir()
    (host / "etc/important").write_text("not a spec\n")
    code, err = _agent(["--host-root", str(host), "--runtime", "docker", "--uninstall"])
    assert code == 0, err
    assert "kept /etc/important: not the spec the agent wrote\n" in err
    assert f"kept {victim}: not the file the agent wrote\n" in err
    assert f"removed {mine}\n" in err
    assert (host / "etc/important").read_text() == "not a spec\n"
    assert victim.read_text() == "keep me\n"
    assert not mine.exists()
    assert not (host / STATE).exists()  # forgotten: nothing else was owed
