"""How ctk writes to a person or a program: one console rule, one JSON dump.

Colour and styles need a terminal: with a non-empty `NO_COLOR` (no-color.org), `TERM=dumb` or
output that is not a TTY (and no non-empty `FORCE_COLOR`), the console writes plain text with no
escape codes at all, so logs and pipes read the same. rich is imported only when a console is
made, so JSON output never loads it.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


def plain(stream: TextIO) -> bool:
    """Whether output to ``stream`` must be plain text (no colour, no bold, no escape codes)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return True
    if os.environ.get("FORCE_COLOR"):  # force-color.org: a colour terminal behind a pipe
        return False
    isatty = getattr(stream, "isatty", None)
    return not (callable(isatty) and isatty())


def console(stream: TextIO) -> Console:
    """A rich console on ``stream`` that follows the `plain` rule."""
    from rich.console import Console

    if plain(stream):
        return Console(file=stream, highlight=False, soft_wrap=True, emoji=False, color_system=None)
    return Console(file=stream, highlight=False, soft_wrap=True, emoji=False)


def dump_json(value: object, stream: TextIO) -> None:
    """Write ``value`` as one indented JSON document and a newline (non-ASCII kept as is)."""
    json.dump(value, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
