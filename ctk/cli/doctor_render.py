"""Human output of `ctk doctor`: the problems in detail, grouped by layer, and a summary.

With `-v` every check is listed, an ok one as the state it confirmed (its title). Text wraps at
the terminal's width (or `COLUMNS`), each continuation under its label; commands are never
broken, so they can be pasted whole. A pipe gets unwrapped lines.

Symbols need a colour terminal; with a non-empty `NO_COLOR`, `TERM=dumb` or output that is not a
TTY the labels are plain text (`[ok]`, `[FAIL]`, ...) without any escape codes, so logs and pipes
read the same.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from ctk import __version__
from ctk.cli import render
from ctk.doctor.facts import NodeFacts
from ctk.doctor.model import Finding, Severity, Status
from ctk.doctor.run import summarize

SYMBOLS = {
    Status.OK: ("✓", "green"),
    Status.WARN: ("!", "yellow"),
    Status.FAIL: ("✗", "red"),
    Status.SKIP: ("\u2013", "dim"),
    Status.UNKNOWN: ("?", "magenta"),
}
LABELS = {
    Status.OK: "[ok]",
    Status.WARN: "[warn]",
    Status.FAIL: "[FAIL]",
    Status.SKIP: "[skip]",
    Status.UNKNOWN: "[?]",
}
INFO = ("i", "cyan", "[info]")
INDENT = "  "


def mark(finding: Finding, *, plain: bool) -> Text:
    """The status mark: a coloured symbol, or a text label."""
    if finding.severity is Severity.INFO and finding.status is Status.WARN:
        symbol, style, label = INFO
    else:
        symbol, style = SYMBOLS[finding.status]
        label = LABELS[finding.status]
    if plain:
        return Text(f"{label:<6}")
    return Text(symbol, style=style)


def _wrapped(text: str, first: str, rest: str, width: int | None) -> list[str]:
    """``text`` after ``first``, wrapped at ``width`` (None: one line) with ``rest`` indenting."""
    if width is None or len(first) + len(text) <= width:
        return [first + text]
    return textwrap.wrap(
        text,
        width=max(width, len(rest) + 20),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first]


def _details(finding: Finding, pad: str, width: int | None) -> list[Text]:
    lines: list[str] = []
    label = " " * 10

    def add(head: str, items: Sequence[str], *, wrap: bool = True) -> None:
        for i, item in enumerate(items):
            first = pad + (f"{head:<10}" if i == 0 else label)
            # a command is never broken: it is copied and pasted whole
            lines.extend(_wrapped(item, first, pad + label, width if wrap else None))

    add("evidence", [f"{e.source}: {e.value}" for e in finding.evidence])
    if finding.remedy:
        add("remedy", [finding.remedy])
    add("fix", finding.commands, wrap=False)
    add("note", finding.notes)
    if finding.remedy and finding.sources:
        add("docs", [finding.sources[0]], wrap=False)
    return [Text(line) for line in lines]


def width_of(console: Console) -> int | None:
    """The width to wrap at: the terminal's (or `COLUMNS`); None (no wrapping) for a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return console.width if console.is_terminal else None


def _skipped_line(skipped: Sequence[Finding], plain: bool) -> Text:
    roots = sorted({root for f in skipped for root in f.blocked_by})
    blocked = sum(1 for f in skipped if f.blocked_by)
    reasons = []
    if blocked:
        reasons.append(f"{blocked} need {', '.join(roots)} fixed first")
    if len(skipped) > blocked:
        reasons.append(f"{len(skipped) - blocked} not applicable here")
    line = Text(INDENT)
    line.append(Text("[skip]" if plain else "\u2013", style="dim"))
    line.append(f" {len(skipped)} skipped: {'; '.join(reasons)}")
    return line


def _not_applicable(findings: Sequence[Finding]) -> bool:
    return all(f.status is Status.SKIP and not f.blocked_by for f in findings)


def _shown(finding: Finding, *, verbose: bool) -> bool:
    """Problems and unknowns always; everything else with -v only."""
    return verbose or finding.is_problem or finding.status is Status.UNKNOWN


def report(facts: NodeFacts, findings: Sequence[Finding], *, verbose: bool, strict: bool) -> None:
    """Print the report to stdout: problems and the summary; with ``verbose`` every check."""
    console = render.console(sys.stdout)
    plain = render.plain(sys.stdout)
    width = width_of(console)
    user = "root" if facts.is_root else "not root"
    head = f"ctk doctor: {facts.where.value}, root {facts.root}, {user}, ctk {__version__}"
    for line in _wrapped(head, "", "  ", width):
        console.print(Text(line))
    if facts.root != "/" and any(f.is_problem and f.commands for f in findings):
        text = (
            f"The fixes below are for the node under {facts.root}: ctk's name that root; run "
            f"the others on that node (from a debug pod: `sudo chroot {facts.root}` first)."
        )
        for line in _wrapped(text, "", "", width):
            console.print(Text(line, style="dim"))
    if facts.host_mount:
        text = (
            f"The node's file system is mounted at {facts.host_mount}: run "
            f"`ctk doctor --root {facts.host_mount}` for the host's checks."
        )
        for line in _wrapped(text, "", "", width):
            console.print(Text(line, style="dim"))
    shown = [f for f in findings if _shown(f, verbose=verbose) and f.status is not Status.SKIP]
    id_width = max((len(f.check) for f in shown), default=0)
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.group.value, []).append(finding)
    idle = [name for name, items in groups.items() if _not_applicable(items)]
    for name, items in groups.items():
        if (verbose and name not in idle) or any(_shown(f, verbose=False) for f in items):
            _group(console, name, items, plain=plain, verbose=verbose, ids=(id_width, width))
    if verbose and idle:
        line = f"not applicable here: {', '.join(idle)}"
        console.print(Text("\n" + "\n".join(_wrapped(line, "", "  ", width)), style="dim"))
    for row in _summary_lines(findings, strict=strict, verbose=verbose, width=width):
        console.print(row)


def _line(finding: Finding, *, plain: bool, id_width: int, width: int | None) -> list[Text]:
    """The finding's status line(s): a problem by its id and summary, an ok one as a state."""
    symbol = mark(finding, plain=plain)
    lead = len(INDENT) + (6 if plain else 1) + 1
    if finding.status is Status.OK:
        text = f"{finding.title}: {finding.summary}"
        rows = _wrapped(text, " " * lead, " " * (lead + 2), width)
    else:
        one = f"{finding.check:<{id_width}}  {finding.summary}"
        if width is None or lead + len(one) <= width:
            rows = [" " * lead + one]
        else:  # narrow: the id on its own line, the summary wrapped under it
            rows = [" " * lead + finding.check]
            rows += _wrapped(finding.summary, " " * (lead + 2), " " * (lead + 2), width)
    first = Text(INDENT)
    first.append(symbol)
    first.append(rows[0][len(INDENT) + symbol.cell_len :])
    return [first, *(Text(row) for row in rows[1:])]


def _group(
    console: Console,
    name: str,
    findings: Sequence[Finding],
    *,
    plain: bool,
    verbose: bool,
    ids: tuple[int, int | None],
) -> None:
    id_width, width = ids
    console.print(Text(f"\n{name}", style="bold"))
    pad = INDENT + " " * (7 if plain else 2)
    skipped = []
    for finding in findings:
        if finding.status is Status.SKIP:
            skipped.append(finding)
            continue
        if not _shown(finding, verbose=verbose):
            continue
        for row in _line(finding, plain=plain, id_width=id_width, width=width):
            console.print(row)
        if finding.is_problem or verbose:
            for detail in _details(finding, pad, width):
                console.print(detail)
    if skipped and verbose:
        console.print(_skipped_line(skipped, plain))


def _summary_lines(
    findings: Sequence[Finding], *, strict: bool, verbose: bool, width: int | None
) -> list[Text]:
    summary = summarize(findings, strict=strict)
    errors = sum(1 for f in findings if f.status is Status.FAIL and f.severity is Severity.ERROR)
    warnings = sum(
        1
        for f in findings
        if f.is_problem and not (f.status is Status.FAIL and f.severity is Severity.ERROR)
    )
    counts = summary.counts
    text = (
        f"{errors} error(s), {warnings} warning(s), {counts['ok']} ok, "
        f"{counts['skip']} skipped, {counts['unknown']} unknown."
    )
    if summary.root_cause:
        text += f" Fix first: {summary.root_cause}."
    elif not verbose and not errors and not warnings and not counts["unknown"]:
        text += " -v lists every check."  # nothing else was printed
    rows = ["", *_wrapped(text, "", "", width)]
    if summary.needs_root:
        need = f"{summary.needs_root} check(s) need root; rerun with sudo for a full report."
        rows += _wrapped(need, "", "", width)
    return [Text(row) for row in rows]
