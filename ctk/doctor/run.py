"""Run the checks over gathered facts: applicability, root-cause skipping, selection.

Pure: facts in, findings out. Checks run dependencies first; a check whose dependency failed is
skipped and names the root cause instead of reporting another symptom.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

import ctk.doctor.checks  # noqa: F401  (fills the registry)
from ctk.doctor.facts import FactTimedOut, NodeFacts
from ctk.doctor.fixes import Tool, command_line, tool_of
from ctk.doctor.groups import Group
from ctk.doctor.model import (
    REGISTRY,
    Check,
    Finding,
    Result,
    Severity,
    Status,
    Where,
    checks_in_order,
)

HOST_GROUPS: Final = frozenset({Group.DRIVER, Group.GPU, Group.DEV})
"""The checks whose commands act on the machine itself (the driver, the GPUs, /dev), wherever
the doctor runs: in a container they are to be run on the host."""


def _where_notes(check: Check, result: Result, facts: NodeFacts | None) -> tuple[str, ...]:
    """Where the commands of ``result`` are to be run, when that is not where the doctor ran."""
    if facts is None or not result.commands or facts.root != "/":
        return ()  # under --root the report's head says where its commands run
    if facts.where is not Where.HOST and check.group in HOST_GROUPS:
        return ("run the commands on the host, not in this container",)
    return ()


def _finding(
    check: Check,
    result: Result,
    blocked_by: tuple[str, ...] = (),
    tool: Tool = Tool.CTK,
    facts: NodeFacts | None = None,
) -> Finding:
    root = facts.root if facts is not None else "/"
    rendered = (command_line(fix, tool, root) for fix in result.fixes)
    return Finding(
        check=check.id,
        group=check.group,
        status=result.status,
        severity=result.severity or check.severity,
        title=check.title,
        summary=result.summary,
        evidence=result.evidence,
        remedy=check.remedy if result.status in (Status.FAIL, Status.WARN) else None,
        commands=(*(line for line in rendered if line is not None), *result.commands),
        notes=(*result.notes, *_where_notes(check, result, facts)),
        sources=check.sources,
        blocked_by=blocked_by or result.blocked_by,
        fixes=result.fixes,
        needs_root=result.needs_root,
    )


def _evaluate(check: Check, facts: NodeFacts, done: dict[str, Finding]) -> Finding:
    if facts.where not in check.where:
        places = "/".join(sorted(w.value for w in check.where))
        return _finding(check, Result(status=Status.SKIP, summary=f"applies on {places} only"))
    blocked: list[str] = []
    for dep in check.depends_on:
        finding = done[dep]
        if finding.status is Status.FAIL and finding.severity is Severity.ERROR:
            blocked.append(dep)
        blocked.extend(b for b in finding.blocked_by if b not in blocked)
    if blocked:
        roots = tuple(dict.fromkeys(blocked))
        summary = f"skipped: needs {', '.join(roots)} fixed first"
        return _finding(check, Result(status=Status.SKIP, summary=summary), roots)
    unread = [
        d for d in check.depends_on if done[d].needs_root and done[d].status is Status.UNKNOWN
    ]
    if unread:  # what the dependency could not read, this check cannot judge either
        summary = f"skipped: {unread[0]} needs root"
        return _finding(check, Result(status=Status.SKIP, summary=summary))
    try:
        result = check.run(facts)
    except FactTimedOut as exc:  # the fact's gather step hung or failed: this check cannot tell
        why = " (a hung driver or /proc read)" if exc.reason is None else ""
        result = Result(status=Status.UNKNOWN, summary=f"{exc}: cannot tell{why}")
    except Exception as exc:  # a broken check must not take the whole report down
        result = Result(
            status=Status.UNKNOWN,
            summary=f"check crashed ({type(exc).__name__}: {exc}); please report it",
        )
    return _finding(check, result, tool=tool_of(facts), facts=facts)


def evaluation_order(registry: dict[str, Check] = REGISTRY) -> tuple[Check, ...]:
    """Every check after the checks it depends on (stack order otherwise)."""
    ordered: dict[str, Check] = {}

    def visit(check: Check, path: tuple[str, ...]) -> None:
        if check.id in ordered:
            return
        if check.id in path:
            raise ValueError(f"dependency cycle: {' -> '.join((*path, check.id))}")
        for dep in check.depends_on:
            visit(registry[dep], (*path, check.id))
        ordered[check.id] = check

    for check in checks_in_order(registry):
        visit(check, ())
    return tuple(ordered.values())


def select(
    *,
    ids: Collection[str] = (),
    groups: Collection[str] = (),
    registry: dict[str, Check] = REGISTRY,
) -> tuple[str, ...]:
    """The check ids to show: the named ones and the named groups' (all when none named)."""
    chosen = [
        check.id
        for check in checks_in_order(registry)
        if (not ids and not groups) or check.id in ids or check.group.value in groups
    ]
    return tuple(chosen)


def diagnose(
    facts: NodeFacts,
    *,
    show: Sequence[str] | None = None,
    registry: dict[str, Check] = REGISTRY,
) -> tuple[Finding, ...]:
    """Evaluate every check (dependencies need them) and return the shown ones in stack order."""
    done: dict[str, Finding] = {}
    for check in evaluation_order(registry):
        done[check.id] = _evaluate(check, facts, done)
    wanted = set(show) if show is not None else set(registry)
    order = {group: i for i, group in enumerate(Group)}
    ordered = sorted((f for f in done.values() if f.check in wanted), key=lambda f: order[f.group])
    return tuple(ordered)


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts per status, the root cause, and the exit code."""

    counts: dict[str, int]
    root_cause: str | None
    needs_root: int
    exit_code: int


def summarize(findings: Sequence[Finding], *, strict: bool = False) -> Summary:
    """Exit 1 when an error-severity check failed (with strict: any warning or unknown too)."""
    counts = {status.value: 0 for status in Status}
    for finding in findings:
        counts[finding.status.value] += 1
    errors = [f for f in findings if f.status is Status.FAIL and f.severity is Severity.ERROR]
    problems = [f for f in findings if f.is_problem and f.severity is not Severity.INFO]
    root = errors[0].check if errors else (problems[0].check if problems else None)
    failing = bool(errors)
    if strict:
        failing = failing or bool(problems) or counts[Status.UNKNOWN.value] > 0
    return Summary(
        counts=counts,
        root_cause=root,
        needs_root=sum(1 for f in findings if f.needs_root),
        exit_code=1 if failing else 0,
    )
