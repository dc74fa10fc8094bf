"""`render.Printer` writes plain lines without rich that are byte for byte what rich's plain
console writes, and goes through rich on a colour terminal."""

from __future__ import annotations

import io

import pytest

from ctk.cli import render

LINES = [
    pytest.param(("a.yaml: ", ("valid", "bold green"), " (cdiVersion 0.5.0)"), id="styled"),
    pytest.param(("",), id="empty"),
    pytest.param(("no [bold]markup[/bold] is read",), id="brackets"),
    pytest.param(("carriage\r return, bell\x07, backspace\x08, \x0b\x0c",), id="control"),
    pytest.param(("escape \x1b[31m kept, NUL \x00 kept",), id="escape"),
    pytest.param(("tab\there", ("\tstyled", "red")), id="tabs"),
    pytest.param(("wide 漢字\tafter", "é"), id="wide-and-tab"),
    pytest.param(("two\nlines\n",), id="newlines"),
    pytest.param(("trailing spaces   ",), id="trailing-spaces"),
]


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("pieces", LINES)
def test_plain_lines_are_what_rich_writes(
    pieces: tuple[render.Styled, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    ours, theirs = Pipe(), Pipe()
    render.Printer(ours).line(*pieces)
    render.console(theirs).print(render._text(pieces))
    assert ours.getvalue() == theirs.getvalue()


def test_a_colour_terminal_gets_styles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    out = Pipe()
    render.Printer(out).line("x: ", ("invalid", "bold red"))
    assert out.getvalue() == "x: \x1b[1;31minvalid\x1b[0m\n"
