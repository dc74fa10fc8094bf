"""configure/unconfigure never replace or delete a drop-in ctk did not write (review item 3)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from ctk.cli.app import main

MAIN = {"crio": ("crio.conf", "[crio.runtime]\n"), "containerd": ("config.toml", "version = 2\n")}
USERS = '# mine\n[crio.runtime]\nlog_level = "debug"\n'
MARK = "# Written by `ctk runtime configure`"


def configured(tmp_path: Path, runtime: str, drop_in_text: str) -> tuple[list[str], Path, Path]:
    name, text = MAIN[runtime]
    config = tmp_path / name
    config.write_text(text)
    drop_in = tmp_path / "conf.d" / "50-mine.toml"
    drop_in.parent.mkdir()
    drop_in.write_text(drop_in_text)
    args = ["--runtime", runtime, "--config", str(config), "--drop-in-config", str(drop_in)]
    return args, config, drop_in


@pytest.mark.parametrize("runtime", ["crio", "containerd"])
@pytest.mark.parametrize(("verb", "action"), [("configure", "replace"), ("unconfigure", "delete")])
def test_users_drop_in_is_refused_and_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str, verb: str, action: str
) -> None:
    args, config, drop_in = configured(tmp_path, runtime, USERS)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code = main(["runtime", verb, *args])
    out, err = capsys.readouterr()
    assert (code, out, err) == (
        1,
        "",
        f"error: {drop_in}: exists and was not written by ctk (no {MARK!r} header); {verb} "
        f"would {action} it, so nothing was changed\n"
        "hint: choose another file with --drop-in-config, or pass --force to let ctk "
        f"{action} this one\n",
    )
    assert drop_in.read_text() == USERS
    assert config.read_text() == MAIN[runtime][1]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("runtime", ["crio", "containerd"])
@pytest.mark.parametrize("users", [USERS, ""], ids=["settings", "empty"])
@pytest.mark.parametrize("backup", [[], ["--backup"]], ids=["plain", "backup"])
def test_force_takes_over_a_users_drop_in_and_unconfigure_gives_it_back(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    runtime: str,
    users: str,
    backup: list[str],
) -> None:
    args, config, drop_in = configured(tmp_path, runtime, users)
    kept = (
        Path(os.environ["CTK_STATE_DIR"]) / "runtime" / "taken-over" / quote(str(drop_in), safe="")
    )
    assert main(["runtime", "configure", *args, "--force", *backup]) == 0
    out = capsys.readouterr().out
    assert (
        f"backed up {drop_in} (not written by ctk) to {kept}; unconfigure puts it back"
        in out.splitlines()
    )
    assert kept.read_text() == users
    assert drop_in.read_text().startswith(MARK)
    assert main(["runtime", "configure", *args]) == 0  # now it is ctk's: no --force needed
    assert kept.read_text() == users
    capsys.readouterr()
    assert main(["runtime", "unconfigure", *args]) == 0
    assert capsys.readouterr().out.splitlines()[-2] == f"restored {drop_in}"
    assert drop_in.read_text() == users
    assert not kept.exists()
    assert config.read_text() == MAIN[runtime][1]


def test_force_removes_a_users_drop_in_keeping_a_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, _, drop_in = configured(tmp_path, "crio", USERS)
    assert main(["runtime", "unconfigure", *args, "--force"]) == 0
    assert not drop_in.exists()
    kept = Path(os.environ["CTK_STATE_DIR"]) / "runtime" / "backup"
    kept = kept / (quote(str(drop_in), safe="") + ".bak")
    assert capsys.readouterr().out.splitlines()[0] == f"backed up {drop_in} to {kept}"
    assert kept.read_text() == USERS


def test_drop_in_whose_import_ctk_added_is_ctks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without its header, the record of the import ctk added still marks the drop-in as ctk's."""
    args, config, drop_in = configured(tmp_path, "containerd", "")
    drop_in.unlink()
    assert main(["runtime", "configure", *args]) == 0
    drop_in.write_text(drop_in.read_text().replace(MARK, "# edited"))
    assert main(["runtime", "unconfigure", *args]) == 0
    assert not drop_in.exists()
    assert config.read_text() == "version = 2\n"
    capsys.readouterr()


@pytest.mark.parametrize("runtime", ["crio", "containerd"])
@pytest.mark.parametrize("verb", ["configure", "unconfigure"])
def test_drop_in_that_is_the_config_itself_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str, verb: str
) -> None:
    name, text = MAIN[runtime]
    config = tmp_path / name
    config.write_text(text)
    link = tmp_path / "link.toml"
    link.symlink_to(config)
    for drop_in in (config, link):
        code = main(
            [
                "runtime",
                verb,
                "--runtime",
                runtime,
                "--config",
                str(config),
                "--drop-in-config",
                str(drop_in),
                "--force",
            ]
        )
        out, err = capsys.readouterr()
        assert (code, out, err) == (
            2,
            "",
            f"error: --drop-in-config {drop_in} is the config file itself\n"
            'hint: pass --drop-in-config "" to edit the config in place\n',
        )
        assert config.read_text() == text
