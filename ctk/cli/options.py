"""Options that several commands take, each defined once (one name, type and help everywhere).

A command declares every option as an `Annotated` alias: the shared ones here, its own beside it
(``DryRun = Annotated[bool, Option(...)]``), never an option as a default value. A
root option (`--root`, `--driver-root`, `--dev-root`) names a directory of this machine and is
checked where the command runs with `ctk.host.root.existing_root`, so that the same mistake gives
the same error in every command (tests/test_cli_roots.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from ctk.cli.declare import Option

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
