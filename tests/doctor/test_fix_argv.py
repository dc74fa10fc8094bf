"""`--fix` under `--root`: the command lines name paths resolved inside the root."""

from __future__ import annotations

import os
from pathlib import Path

from ctk.cli.doctor import fix_argv
from ctk.doctor.model import Fix


def _fix(*argv: str) -> Fix:
    return Fix(argv=argv, description="test")


def test_config_symlink_is_resolved_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "etc/docker").mkdir(parents=True)
    (tmp_path / "srv").mkdir()
    # an absolute link means the node's /srv, never this machine's
    os.symlink("/srv/daemon.json", tmp_path / "etc/docker/daemon.json")
    argv = fix_argv(_fix("runtime", "configure", "--runtime=docker"), tmp_path)
    assert argv == [
        "runtime",
        "configure",
        "--runtime=docker",
        f"--config={tmp_path}/srv/daemon.json",
    ]


def test_containerd_is_edited_in_place_under_a_root(tmp_path: Path) -> None:
    argv = fix_argv(_fix("runtime", "configure", "--runtime=containerd"), tmp_path)
    assert argv == [
        "runtime",
        "configure",
        "--runtime=containerd",
        f"--config={tmp_path}/etc/containerd/config.toml",
        "--drop-in-config=",
    ]


def test_dev_char_links_under_a_root(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    os.symlink("/run/char", tmp_path / "dev/char")
    argv = fix_argv(_fix("system", "create-dev-char-symlinks"), tmp_path)
    assert argv == [
        "system",
        "create-dev-char-symlinks",
        f"--root={tmp_path}",
        f"--dev-char-path={tmp_path}/run/char",
    ]


def test_no_root_keeps_the_command(tmp_path: Path) -> None:
    fix = _fix("runtime", "configure", "--runtime=docker")
    assert fix_argv(fix, Path("/")) == ["runtime", "configure", "--runtime=docker"]
