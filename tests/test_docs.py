"""The README stays true: its two first commands, and an example for every command."""

from __future__ import annotations

import re
from pathlib import Path

import click

from ctk.cli.commands import build_app

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _leaf_commands(command: click.Command, path: tuple[str, ...]) -> list[str]:
    if isinstance(command, click.Group):
        return [
            name
            for sub_name, sub in sorted(command.commands.items())
            for name in _leaf_commands(sub, (*path, sub_name))
        ]
    return [" ".join(path)]


def _example_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    return [line.removeprefix("sudo ") for block in blocks for line in block.splitlines()]


def test_every_command_has_an_example() -> None:
    commands = _leaf_commands(build_app(), ("ctk",))
    assert len(commands) >= 10
    examples = _example_lines()
    missing = [c for c in commands if not any(e == c or e.startswith(c + " ") for e in examples)]
    assert missing == []


def test_first_lines_are_install_and_test_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    install, test = first_block.group(1).splitlines()
    assert install.startswith("sudo scripts/install && ")
    assert (REPO / "scripts/install").stat().st_mode & 0o111
    assert test == "python3 -m pip install -e '.[test]' && scripts/check"
    ci = (REPO / ".ci" / "run").read_text()
    assert test in ci.splitlines()


def test_linked_docs_exist() -> None:
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (REPO / link).exists(), link
