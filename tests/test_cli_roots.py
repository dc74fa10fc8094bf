"""One set of root options (`--root`, `--driver-root`, `--dev-root`): the same mistake gives the
same one-line error, the same hint and exit 1 in every command that takes one (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.cli.commands import GROUPS, load_group
from tests.cli_tree import Command, is_group, is_option

ROOT_FLAGS = ("--root", "--driver-root", "--dev-root", "--host-root")
NOT_CHECKED = {
    # the agent's --driver-root is a path inside --host-root, checked there (docs/agent.md)
    ("agent", "--driver-root"),
    # trees ctk writes into, created as needed (tests/system/test_system.py)
    ("system create-device-nodes", "--dev-root"),
}

# Each command line names the root once ({root}) with what else it needs, so the root is the only
# mistake; `system`'s --root is another name of its --driver-root, which the message names.
GENERATE = "cdi generate --mode management"
REFRESH = "cdi refresh --mode management"
NODES = "system create-device-nodes --dry-run"
LINKS = "system create-dev-char-symlinks --dry-run"
CASES = [
    pytest.param("doctor --root {root}", None, id="doctor"),
    pytest.param("cdi validate --root {root}", None, id="cdi-validate"),
    pytest.param("cdi list --root {root}", None, id="cdi-list"),
    pytest.param(f"{GENERATE} --driver-root {{root}}", None, id="generate-driver"),
    pytest.param(f"{GENERATE} --driver-root {{tmp}} --dev-root {{root}}", None, id="generate-dev"),
    pytest.param(f"{REFRESH} --driver-root {{root}}", None, id="refresh-driver"),
    pytest.param(f"{REFRESH} --driver-root {{tmp}} --dev-root {{root}}", None, id="refresh-dev"),
    pytest.param(f"{NODES} --driver-root {{root}}", None, id="nodes"),
    pytest.param(f"{NODES} --root {{root}}", None, id="nodes-root"),  # named as given
    pytest.param(f"{LINKS} --driver-root {{root}}", None, id="links"),
    pytest.param(f"{LINKS} --root {{root}}", None, id="links-root"),
    pytest.param("runtime configure --dry-run --root {root}", None, id="configure"),
    pytest.param("runtime unconfigure --dry-run --root {root}", None, id="unconfigure"),
    pytest.param("agent --once --host-root {root}", None, id="agent"),
    pytest.param("install --root {root}", None, id="install"),  # issue 22, item 3
    pytest.param("uninstall --root {root}", None, id="uninstall"),
]


def _flag(line: str) -> str:
    words = line.split()
    return words[words.index("{root}") - 1]


def _command(line: str) -> str:
    return " ".join(w for w in line.split() if not w.startswith(("-", "{")) and w != "management")


@pytest.mark.parametrize(("line", "shown"), CASES)
@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(("{tmp}/missing", "no such directory"), id="missing"),
        pytest.param(("{tmp}/file", "not a directory"), id="file"),
    ],
)
def test_a_root_that_is_no_directory(
    line: str,
    shown: str | None,
    bad: tuple[str, str],
    *,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = shown or _flag(line)
    monkeypatch.setenv("CTK_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "file").write_text("not a directory\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    root = bad[0].format(tmp=tmp_path)
    assert main(line.format(root=root, tmp=tmp_path).split()) == 1
    assert capsys.readouterr() == (
        "",
        f"error: {shown} {root}: {bad[1]}\nhint: pass an existing directory\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["doctor", "--root", ""], id="doctor"),
        pytest.param(["runtime", "configure", "--root", "", "--dry-run"], id="configure"),
        pytest.param(["install", "--root", ""], id="install"),
        pytest.param(["uninstall", "--root", ""], id="uninstall"),
    ],
)
def test_an_empty_root(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 1
    assert capsys.readouterr() == ("", "error: --root is empty\nhint: pass an existing directory\n")


def _root_options(command: Command, path: str) -> set[tuple[str, str]]:
    if is_group(command):
        return {
            found
            for name in list(command.commands)
            for found in _root_options(command.commands[name], f"{path} {name}".strip())
        }
    return {
        (path, opt)
        for param in command.params
        if is_option(param)
        for opt in param.opts
        if opt in ROOT_FLAGS
    }


def test_every_root_option_is_covered() -> None:
    """A new command with a root option joins the table above."""
    found = set().union(*(_root_options(load_group(g), g.name) for g in GROUPS))
    covered = {(_command(str(c.values[0])), _flag(str(c.values[0]))) for c in CASES}
    assert found - NOT_CHECKED == covered
