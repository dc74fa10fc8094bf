"""How ctk writes to a person or a program: one console rule, one JSON dump.

Colour and styles need a terminal: with a non-empty `NO_COLOR` (no-color.org), `TERM=dumb` or
output that is not a TTY (and no non-empty `FORCE_COLOR`), the console writes plain text with no
escape codes at all, so logs and pipes read the same. rich is imported only when a console is
made, so JSON output never loads it, and `Printer` writes plain lines without it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TextIO, TypeAlias

if TYPE_CHECKING:
    from rich.console import Console

Styled: TypeAlias = "str | tuple[str, str]"
"""A piece of a line: text, or (text, rich style) such as ("invalid", "bold red")."""

# What rich leaves out of any text it prints (bell, backspace, vertical tab, form feed, CR).
_CONTROL = dict.fromkeys((7, 8, 11, 12, 13))


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
    # no_color=False: the rule above has decided; rich before 14 would take an empty NO_COLOR as set
    return Console(file=stream, highlight=False, soft_wrap=True, emoji=False, no_color=False)


def echo(text: str) -> None:
    """One line on standard output, flushed at once (what ``click.echo`` does with a string),
    so that it keeps its place among warnings on standard error; no click to import."""
    import sys

    sys.stdout.write(text + "\n")
    sys.stdout.flush()


ERROR_SCHEMA = "ctk.error/v1"


@contextlib.contextmanager
def json_errors(as_json: bool) -> Iterator[None]:
    """With --json, an error is a JSON document on standard output too (then shown as usual).

    A program reading the output always gets one document: ``{"schema": "ctk.error/v1",
    "error": {"message", "hint", "exit_code"}}``; standard error and the exit code stay the same.
    """
    from ctk.errors import CtkError

    try:
        yield
    except CtkError as exc:
        if as_json:
            import sys

            error = {"message": exc.message, "hint": exc.hint, "exit_code": exc.exit_code}
            dump_json({"schema": ERROR_SCHEMA, "error": error}, sys.stdout)
        raise


def dump_json(value: object, stream: TextIO) -> None:
    """Write ``value`` as one indented JSON document and a newline (non-ASCII kept as is)."""
    import json

    json.dump(value, stream, indent=2, ensure_ascii=False)
    stream.write("\n")


class Printer:
    """Lines of styled pieces on a stream: through rich on a colour terminal, plain otherwise.

    The plain lines are what rich's plain console writes (control characters such as CR left
    out), without importing rich; a line with a tab still goes through rich, which expands tabs
    by the width of what precedes them on screen.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._plain = plain(stream)
        self._console: Console | None = None

    def line(self, *pieces: Styled) -> None:
        """Write one line made of ``pieces``."""
        text = "".join(p if isinstance(p, str) else p[0] for p in pieces)
        if self._plain and "\t" not in text:
            self._stream.write(text.translate(_CONTROL) + "\n")
            return
        self._rich().print(_text(pieces))

    def _rich(self) -> Console:
        if self._console is None:
            self._console = console(self._stream)
        return self._console


def _text(pieces: Sequence[Styled]) -> object:
    from rich.text import Text

    text = Text()
    for piece in pieces:
        if isinstance(piece, str):
            text.append(piece)
        else:
            text.append(piece[0], style=piece[1])
    return text
