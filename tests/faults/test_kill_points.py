"""SIGKILL at every write, fsync and rename of configure and unconfigure (issue 15).

`strace -e inject=SYSCALL:signal=KILL:when=N` kills ctk at the Nth call, for every N until a run
gets through. After each kill the config is the old bytes or the new ones, never a mix, and the
next configure and a final unconfigure restore the original directory exactly: no temporary
file, no drop-in left behind (a stale drop-in would keep the nvidia runtime alive).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.faults.harness import run_ctk, snapshot

STRACE = shutil.which("strace")
SYSCALLS = ("write", "fsync", "rename")
MAX_POINTS = 60


@dataclass(frozen=True, slots=True)
class Engine:
    name: str
    config: str  # the file that shows whether the runtime is configured
    args: tuple[str, ...]
    setup: Callable[[Path], None]


def _docker(case: Path) -> None:
    (case / "etc").mkdir()
    (case / "etc/daemon.json").write_text('{\n    "log-driver": "local"\n}\n')


def _crio(case: Path) -> None:
    (case / "etc/crio.conf.d").mkdir(parents=True)
    (case / "etc/crio.conf").write_text('[crio.runtime]\ndefault_runtime = "runc"\n')
    (case / "etc/crio.conf.d/10-user.toml").write_text("[crio.runtime]\nlog_size_max = 1\n")


def _containerd(case: Path) -> None:
    (case / "etc").mkdir()
    (case / "etc/config.toml").write_text('version = 2\nimports = ["conf.d/*.toml"]\n')


ENGINES = (
    Engine("docker", "etc/daemon.json", ("--config", "{case}/etc/daemon.json"), _docker),
    Engine(
        "crio",
        "etc/crio.conf.d/99-nvidia.toml",
        (
            "--config",
            "{case}/etc/crio.conf",
            "--drop-in-config",
            "{case}/etc/crio.conf.d/99-nvidia.toml",
        ),
        _crio,
    ),
    Engine(
        "containerd",
        "etc/conf.d/99-nvidia.toml",
        (
            "--config",
            "{case}/etc/config.toml",
            "--drop-in-config",
            "{case}/etc/conf.d/99-nvidia.toml",
        ),
        _containerd,
    ),
)


def _argv(verb: str, engine: Engine, case: Path) -> list[str]:
    args = [a.replace("{case}", str(case)) for a in engine.args]
    return ["runtime", verb, "--runtime", engine.name, *args]


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def _files(top: Path) -> dict[str, tuple[str, ...]]:
    """The snapshot without directories: an empty drop-in directory that configure made may stay
    (containerd and CRI-O read nothing from it)."""
    return {k: v for k, v in snapshot(top).items() if v[0] != "dir"}


def _ctk(verb: str, engine: Engine, case: Path) -> int:
    return main(_argv(verb, engine, case))


@pytest.mark.skipif(STRACE is None, reason="needs strace (apt-get install strace)")
@pytest.mark.parametrize("syscall", SYSCALLS)
@pytest.mark.parametrize("verb", ["configure", "unconfigure"])
@pytest.mark.parametrize("engine", ENGINES, ids=[e.name for e in ENGINES])
def test_kill_at_every_point(
    *,
    engine: Engine,
    verb: str,
    syscall: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert STRACE is not None
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    engine.setup(pristine)
    before = _read(pristine / engine.config)
    # the configured bytes, from a clean run in a scratch copy
    scratch = tmp_path / "scratch"
    shutil.copytree(pristine, scratch, symlinks=True)
    monkeypatch.setenv("CTK_STATE_DIR", str(scratch / "state"))
    assert _ctk("configure", engine, scratch) == 0
    after = _read(scratch / engine.config)
    assert after != before
    kills = 0
    for point in range(1, MAX_POINTS + 1):
        case = tmp_path / f"kill-{point}"
        shutil.copytree(pristine, case, symlinks=True)
        monkeypatch.setenv("CTK_STATE_DIR", str(case / "state"))
        if verb == "unconfigure":
            assert _ctk("configure", engine, case) == 0
        strace = [STRACE, "-f", "-qq", "-o", os.devnull, "-e", f"trace={syscall}"]
        inject = f"inject={syscall}:signal=KILL:when={point}"
        outcome = run_ctk(
            _argv(verb, engine, case),
            cwd=case,
            env={"CTK_STATE_DIR": str(case / "state")},
            prefix=[*strace, "-e", inject, "--"],
        )
        assert _read(case / engine.config) in (before, after), f"kill at {syscall} #{point}"
        # the next configure and a final unconfigure put everything back, temp files included
        assert (_ctk("configure", engine, case), _read(case / engine.config)) == (0, after)
        assert (_ctk("unconfigure", engine, case), _read(case / engine.config)) == (0, before)
        assert _files(case / "etc") == _files(pristine / "etc"), f"kill at {syscall} #{point}"
        shutil.rmtree(case)
        if outcome.code != -9:
            assert outcome.code == 0, outcome.stderr
            break
        kills += 1
    else:
        pytest.fail(f"still killed at {syscall} #{MAX_POINTS}")
    capsys.readouterr()
    if verb == "configure":
        assert kills > 0  # configure writes, fsyncs and renames at least once
