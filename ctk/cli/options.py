"""What every command module shares: its `typer.Typer`, and the options several commands take.

A command declares every option as an `Annotated` alias with `typer.Option` or `typer.Argument`:
the shared ones here, its own beside it (``DryRun = Annotated[bool, Option(...)]``). A root
option (`--root`, `--driver-root`, `--dev-root`) names a directory of this machine and is checked
where the command runs with `ctk.host.root.existing_root`, so that the same mistake gives the same
error in every command (tests/test_cli_roots.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import Option

JSON_HELP = "Print the result as JSON."
SPEC_DIR_HELP = (
    "A CDI spec directory, lowest priority first; repeat for more. "
    "Default: NVIDIA_CTK_CDI_SPEC_DIRS (comma-separated), else /etc/cdi, then /var/run/cdi."
)

Json = Annotated[bool, Option("--json", help=JSON_HELP)]
"""Print the result as one JSON document instead of text."""

SpecDirOption = Annotated[
    list[Path] | None,
    Option("--spec-dir", help=SPEC_DIR_HELP, show_default=False, readable=False),
]
"""The CDI spec directories to read, as container runtimes do (lowest priority first)."""


def markup_mode() -> Any:
    """typer's rich help on a terminal; click's plain help (no colour, no boxes) when standard
    output is not a terminal, with NO_COLOR (https://no-color.org) or on a dumb terminal."""
    plain = (
        os.environ.get("NO_COLOR", "") != ""
        or os.environ.get("TERM") == "dumb"
        or not sys.stdout.isatty()
    )
    return None if plain else "rich"


def new_app(**settings: Any) -> typer.Typer:
    """A `typer.Typer` as every ctk command module makes it: help styled by `markup_mode`, no
    completion options of its own (the root's `--install-completion` serves every command)."""
    return typer.Typer(add_completion=False, rich_markup_mode=markup_mode(), **settings)
