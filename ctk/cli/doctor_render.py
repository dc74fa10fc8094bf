"""Human output of `ctk doctor`: grouped by layer, problems in detail, one summary line.

Symbols need a colour terminal; with a non-empty `NO_COLOR`, `TERM=dumb` or output that is not a
TTY the labels are plain text (`[ok]`, `[FAIL]`, ...) without any escape codes, so logs and pipes
read the same.
"""

from __future__ import annotations

import sys
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


def _details(finding: Finding, pad: str) -> list[Text]:
    lines = []
    for i, evidence in enumerate(finding.evidence):
        head = "evidence  " if i == 0 else " " * 10
        lines.append(Text(f"{pad}{head}{evidence.source}: {evidence.value}"))
    if finding.remedy:
        lines.append(Text(f"{pad}remedy    {finding.remedy}"))
    for i, command in enumerate(finding.commands):
        head = "fix       " if i == 0 else " " * 10
        lines.append(Text(f"{pad}{head}{command}"))
    if finding.remedy and finding.sources:
        lines.append(Text(f"{pad}docs      {finding.sources[0]}"))
    return lines


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


def report(facts: NodeFacts, findings: Sequence[Finding], *, verbose: bool, strict: bool) -> None:
    """Print the report to stdout."""
    console = render.console(sys.stdout)
    plain = render.plain(sys.stdout)
    user = "root" if facts.is_root else "not root"
    console.print(
        Text(f"ctk doctor: {facts.where.value}, root {facts.root}, {user}, ctk {__version__}")
    )
    if facts.host_mount:
        console.print(
            Text(
                f"The node's file system is mounted at {facts.host_mount}: run "
                f"`ctk doctor --root {facts.host_mount}` for the host's checks.",
                style="dim",
            )
        )
    width = max((len(f.check) for f in findings), default=0)
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.group.value, []).append(finding)
    idle = [name for name, items in groups.items() if _not_applicable(items) and not verbose]
    for name, items in groups.items():
        if name not in idle:
            _group(console, name, items, plain=plain, verbose=verbose, width=width)
    if idle:
        console.print(Text(f"\nnot applicable here: {', '.join(idle)}", style="dim"))
    console.print(_summary_line(findings, strict=strict))


def _group(
    console: Console,
    name: str,
    findings: Sequence[Finding],
    *,
    plain: bool,
    verbose: bool,
    width: int,
) -> None:
    console.print(Text(f"\n{name}", style="bold"))
    pad = INDENT + " " * (7 if plain else 2)
    skipped = []
    for finding in findings:
        if finding.status is Status.SKIP and not verbose:
            skipped.append(finding)
            continue
        line = Text(INDENT)
        line.append(mark(finding, plain=plain))
        line.append(f" {finding.check:<{width}}  {finding.summary}")
        console.print(line)
        if finding.is_problem or verbose:
            for detail in _details(finding, pad):
                console.print(detail)
    if skipped:
        console.print(_skipped_line(skipped, plain))


def _summary_line(findings: Sequence[Finding], *, strict: bool) -> Text:
    summary = summarize(findings, strict=strict)
    errors = sum(1 for f in findings if f.status is Status.FAIL and f.severity is Severity.ERROR)
    warnings = sum(
        1
        for f in findings
        if f.is_problem and not (f.status is Status.FAIL and f.severity is Severity.ERROR)
    )
    counts = summary.counts
    text = (
        f"\n{errors} error(s), {warnings} warning(s), {counts['ok']} ok, "
        f"{counts['skip']} skipped, {counts['unknown']} unknown."
    )
    if summary.root_cause:
        text += f" Fix first: {summary.root_cause}."
    if summary.needs_root:
        text += f"\n{summary.needs_root} check(s) need root; rerun with sudo for a full report."
    return Text(text)
