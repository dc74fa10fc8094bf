"""The doctor's vocabulary: check results, findings, and the registry of checks.

A check is a small pure function from the gathered `NodeFacts` to a `Result`. The registry keeps
checks in stack order (driver first, container last), so that a failing lower layer can mark
the checks that depend on it as skipped instead of piling up symptoms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ctk.doctor.groups import Group
from ctk.enums import StrEnum

if TYPE_CHECKING:
    from ctk.doctor.facts import NodeFacts
    from ctk.doctor.fixes import Suggestion


class Status(StrEnum):
    """What a check concluded."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    UNKNOWN = "unknown"


class Severity(StrEnum):
    """How bad a failing check is: error breaks GPU containers now."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Where(StrEnum):
    """Where the doctor runs; it decides which checks apply."""

    HOST = "host"
    CONTAINER = "container"
    POD = "pod"


HOST_ONLY: Final = frozenset({Where.HOST})
INSIDE: Final = frozenset({Where.CONTAINER, Where.POD})
ANYWHERE: Final = frozenset(Where)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A fact a check looked at and where it came from."""

    source: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What a check function returns."""

    status: Status
    summary: str
    evidence: tuple[Evidence, ...] = ()
    commands: tuple[str, ...] = ()
    severity: Severity | None = None
    fixes: tuple[Suggestion, ...] = ()
    """ctk's (or nvidia-ctk's) part of the remedy, as values; shown before ``commands``."""
    notes: tuple[str, ...] = ()
    """Prose that goes with the commands: what to do where no command does it."""
    needs_root: bool = False
    blocked_by: tuple[str, ...] = ()
    """The checks whose failure is the root cause of this skip."""


def ok(summary: str, *evidence: Evidence) -> Result:
    """The check passed."""
    return Result(status=Status.OK, summary=summary, evidence=evidence)


def skip(summary: str, *, blocked_by: tuple[str, ...] = ()) -> Result:
    """The check does not apply here, or (``blocked_by``) only repeats those checks' failure."""
    return Result(status=Status.SKIP, summary=summary, blocked_by=blocked_by)


def unknown(summary: str, *, needs_root: bool = False) -> Result:
    """A fact the check needs could not be read."""
    return Result(status=Status.UNKNOWN, summary=summary, needs_root=needs_root)


def fail(
    summary: str,
    *evidence: Evidence,
    commands: tuple[str, ...] = (),
    severity: Severity | None = None,
    fixes: tuple[Suggestion, ...] = (),
    notes: tuple[str, ...] = (),
) -> Result:
    """The check found the problem it looks for."""
    return Result(
        status=Status.FAIL,
        summary=summary,
        evidence=evidence,
        commands=commands,
        severity=severity,
        fixes=fixes,
        notes=notes,
    )


def warn(
    summary: str,
    *evidence: Evidence,
    commands: tuple[str, ...] = (),
    fixes: tuple[Suggestion, ...] = (),
    severity: Severity | None = None,
    notes: tuple[str, ...] = (),
) -> Result:
    """The check found something degraded or risky."""
    return Result(
        status=Status.WARN,
        summary=summary,
        evidence=evidence,
        commands=commands,
        fixes=fixes,
        severity=severity,
        notes=notes,
    )


CheckFunction = Callable[["NodeFacts"], Result]


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """A registered check: its stable id, metadata, and the function."""

    id: str
    group: Group
    severity: Severity
    title: str
    remedy: str
    sources: tuple[str, ...]
    depends_on: tuple[str, ...]
    where: frozenset[Where]
    run: CheckFunction = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One check's outcome as the report shows it."""

    check: str
    group: Group
    status: Status
    severity: Severity
    title: str
    summary: str
    evidence: tuple[Evidence, ...] = ()
    remedy: str | None = None
    commands: tuple[str, ...] = ()
    """Runnable command lines only: the fixes rendered for the node's tool, then the check's."""
    notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    blocked_by: tuple[str, ...] = ()
    fixes: tuple[Suggestion, ...] = ()
    needs_root: bool = False

    @property
    def is_problem(self) -> bool:
        """Whether the finding is a failure or a warning (not ok, skip or unknown)."""
        return self.status in (Status.FAIL, Status.WARN)


REGISTRY: dict[str, Check] = {}


def check(
    check_id: str,
    *,
    severity: Severity,
    title: str,
    remedy: str,
    sources: tuple[str, ...] = (),
    depends_on: tuple[str, ...] = (),
    where: frozenset[Where] = ANYWHERE,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register ``function`` as the check ``check_id`` (group = the part before the dot)."""

    def register(function: CheckFunction) -> CheckFunction:
        if check_id in REGISTRY:
            raise ValueError(f"check {check_id} registered twice")
        REGISTRY[check_id] = Check(
            id=check_id,
            group=Group(check_id.split(".", 1)[0]),
            severity=severity,
            title=title,
            remedy=remedy,
            sources=sources,
            depends_on=depends_on,
            where=where,
            run=function,
        )
        return function

    return register


def checks_in_order(registry: Mapping[str, Check] = REGISTRY) -> tuple[Check, ...]:
    """All checks, bottom layer first, registration order within a layer."""
    order = {group: i for i, group in enumerate(Group)}
    return tuple(sorted(registry.values(), key=lambda c: order[c.group]))
