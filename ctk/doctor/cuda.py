"""CUDA/driver compatibility: the CSV table, versions, and `NVIDIA_REQUIRE_*` constraints.

The grammar follows the toolkit's requirement checker: a space separates alternatives, a comma
joins conditions, separate variables are ANDed; `cuda`, `driver` and `arch` compare as versions,
`brand` as a string; unknown properties are ignored.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctk.doctor.facts import CudaNeed, CudaRow

Version = tuple[int, ...]

_CONDITION = re.compile(r"^([a-z_]+)(!=|<=|>=|=|<|>)(.+)$")
TRUE_WORDS = frozenset({"1", "true", "yes", "on", "y", "t"})


def parse_version(text: str) -> Version | None:
    """`"550.54.15"` -> (550, 54, 15); None when it is not a dotted number."""
    text = text.strip().rstrip("?")
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        return None
    return tuple(int(part) for part in text.split("."))


def format_version(version: Version) -> str:
    """(12, 4) -> `"12.4"`."""
    return ".".join(str(part) for part in version)


def _compare(left: Version, right: Version) -> int:
    width = max(len(left), len(right))
    a = left + (0,) * (width - len(left))
    b = right + (0,) * (width - len(right))
    return (a > b) - (a < b)


def version_at_least(version: Version, minimum: Version) -> bool:
    """Component-wise integer comparison; missing components count as 0."""
    return _compare(version, minimum) >= 0


def parse_table(text: str) -> tuple[CudaRow, ...]:
    """Rows of `cuda-driver-compat.csv`, newest first as in the file."""
    rows = []
    for record in csv.DictReader(io.StringIO(text)):
        cuda = parse_version(record["cuda_version"])
        if cuda is None:
            continue
        raw_min = record["min_driver_linux"].strip()
        rows.append(
            CudaRow(
                cuda=cuda,
                min_driver=parse_version(raw_min),
                min_driver_mvc=parse_version(record["min_driver_linux_minor_compat"]),
                min_driver_text=raw_min.rstrip("?"),
                verified=not raw_min.endswith("?"),
            )
        )
    return tuple(rows)


def host_cuda_from_driver(table: Sequence[CudaRow], driver: Version) -> Version | None:
    """The newest CUDA major.minor whose (verified) minimum driver is at most ``driver``."""
    best: Version | None = None
    for row in table:
        if row.min_driver is None or not row.verified:
            continue
        if version_at_least(driver, row.min_driver) and (best is None or row.cuda > best):
            best = row.cuda
    return best[:2] if best else None


def row_for(table: Sequence[CudaRow], cuda: Version) -> CudaRow | None:
    """The first release of CUDA major.minor (e.g. 12.8.0 for 12.8)."""
    candidates = [row for row in table if row.cuda[:2] == cuda[:2]]
    return min(candidates, key=lambda row: row.cuda) if candidates else None


@dataclass(frozen=True, slots=True, kw_only=True)
class HostCuda:
    """The host side of a compatibility question."""

    driver: Version
    driver_text: str
    cuda: Version | None
    brands: frozenset[str] = frozenset()
    archs: tuple[Version, ...] = ()


def requirement_expressions(env: Mapping[str, str]) -> tuple[str, ...]:
    """The `NVIDIA_REQUIRE_*` expressions of an environment (JETPACK excluded), sorted by name."""
    return tuple(
        env[name].strip()
        for name in sorted(env)
        if name.startswith("NVIDIA_REQUIRE_")
        and name != "NVIDIA_REQUIRE_JETPACK"
        and env[name].strip()
    )


def need_from_env(env: Mapping[str, str], source: str) -> CudaNeed | None:
    """What an image or process environment asks of the driver; None when it asks nothing."""
    requirements = requirement_expressions(env)
    cuda_version = env.get("CUDA_VERSION", "").strip() or None
    disabled = env.get("NVIDIA_DISABLE_REQUIRE", "").strip().lower() in TRUE_WORDS
    if not requirements and cuda_version is None:
        return None
    return CudaNeed(
        source=source,
        requirements=requirements,
        cuda_version=cuda_version,
        disable_require=disabled,
    )


def effective_requirements(need: CudaNeed) -> tuple[str, ...]:
    """The expressions the runtime checks; legacy images get `cuda>=major.minor`."""
    if any(expr.startswith("cuda") or " cuda" in expr for expr in need.requirements):
        return need.requirements
    if need.cuda_version:
        version = parse_version(need.cuda_version)
        if version is not None:
            return (*need.requirements, f"cuda>={format_version(version[:2])}")
    return need.requirements


def _condition_holds(condition: str, host: HostCuda) -> bool:
    match = _CONDITION.match(condition.strip())
    if match is None:
        return True
    prop, op, value = match.groups()
    if prop == "brand":
        found = value.lower() in host.brands
        return found if op == "=" else not found if op == "!=" else True
    if prop == "cuda":
        actual: Iterable[Version] = (host.cuda,) if host.cuda else ()
    elif prop == "driver":
        actual = (host.driver,)
    elif prop == "arch":
        actual = host.archs
    else:
        return True
    wanted = parse_version(value)
    if wanted is None:
        return True
    if prop == "cuda":
        # the driver reports CUDA as major.minor (12040): 12.4.1 needs what 12.4 needs
        wanted = wanted[:2]
    values = list(actual)
    if not values:
        return False
    return all(_apply(op, _compare(v, wanted)) for v in values)


def _apply(op: str, cmp: int) -> bool:
    return {
        "=": cmp == 0,
        "!=": cmp != 0,
        "<": cmp < 0,
        "<=": cmp <= 0,
        ">": cmp > 0,
        ">=": cmp >= 0,
    }[op]


VERSIONED = frozenset({"cuda", "driver", "arch"})


def malformed(need: CudaNeed) -> tuple[str, ...]:
    """Conditions the requirement grammar cannot read (`cuda>=abc`, `cuda 12`), and a
    `CUDA_VERSION` that is no version when it is the only requirement."""
    bad = []
    for expression in need.requirements:
        for condition in (c for alt in expression.split() for c in alt.split(",") if c):
            match = _CONDITION.match(condition)
            if match is None or (
                match.group(1) in VERSIONED and parse_version(match.group(3)) is None
            ):
                bad.append(condition)
    if not need.requirements and need.cuda_version and parse_version(need.cuda_version) is None:
        bad.append(f"CUDA_VERSION={need.cuda_version}")
    return tuple(bad)


def expression_holds(expression: str, host: HostCuda) -> bool:
    """Whether any space-separated alternative has all its comma-joined conditions true."""
    alternatives = parse_expression(expression)
    if not alternatives:
        return True
    return any(alternative_holds(alt, host) for alt in alternatives)


@dataclass(frozen=True, slots=True)
class Alternative:
    """One space-separated term of a requirement: comma-joined conditions that must all hold."""

    conditions: tuple[str, ...]

    @property
    def text(self) -> str:
        """The term as the image wrote it (`brand=tesla,driver>=418,driver<419`)."""
        return ",".join(self.conditions)

    def values(self, prop: str) -> tuple[tuple[str, str], ...]:
        """(operator, value) of each condition on ``prop``, in order."""
        found = []
        for condition in self.conditions:
            match = _CONDITION.match(condition)
            if match and match.group(1) == prop:
                found.append((match.group(2), match.group(3)))
        return tuple(found)


def parse_expression(expression: str) -> tuple[Alternative, ...]:
    """The alternatives of one `NVIDIA_REQUIRE_*` value (space = OR, comma = AND); a term of
    nothing but commas is dropped, as both of NVIDIA's evaluators let it satisfy nothing."""
    terms = (tuple(c for c in term.split(",") if c) for term in expression.split())
    return tuple(Alternative(conditions) for conditions in terms if conditions)


def alternative_holds(alt: Alternative, host: HostCuda, *, assume_brand: bool = False) -> bool:
    """Whether every condition holds; ``assume_brand``: `brand` conditions count as met."""
    return all(
        (assume_brand and condition.startswith("brand")) or _condition_holds(condition, host)
        for condition in alt.conditions
    )


def branch_cuda(alt: Alternative, table: Sequence[CudaRow]) -> Version | None:
    """The newest CUDA major.minor a driver inside the term's `driver<` / `driver<=` bound runs
    natively, by the table's minimum drivers; None when the term sets no upper bound."""
    bounds = [(op, parse_version(value)) for op, value in alt.values("driver") if op in ("<", "<=")]
    best: Version | None = None
    for op, bound in bounds:
        if bound is None:
            continue
        for row in table:
            if row.min_driver is None or not row.verified:
                continue
            below = _compare(row.min_driver, bound)
            if (below < 0 or (op == "<=" and below == 0)) and (best is None or row.cuda[:2] > best):
                best = row.cuda[:2]
    return best


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardCompat:
    """The requirement holds through a term like `brand=tesla,driver>=418,driver<419` while the
    driver's CUDA is older than the workload's: only forward compatibility bridges the gap."""

    clause: str
    brands: tuple[str, ...]
    branch_cuda: Version | None
    """The newest CUDA the clause's driver range runs without compat libraries (the table)."""
    brand_assumed: bool = False
    """NVML named no brand: the clause holds only if the GPU is of its brand."""


def forward_compat_clause(
    expressions: Iterable[str],
    host: HostCuda,
    table: Sequence[CudaRow],
    required: Version | None,
) -> ForwardCompat | None:
    """The term that holds on a host whose CUDA is older than ``required`` (so not through a
    `cuda` condition); when NVML named no brand, one that would hold if the brand matched."""
    if required is None or host.cuda is None or host.cuda[:2] >= required[:2]:
        return None
    terms = [alt for expression in expressions for alt in parse_expression(expression)]
    held = next((alt for alt in terms if alternative_holds(alt, host)), None)
    assumed = False
    if held is None and not host.brands - {"unknown"}:
        held = next(
            (
                alt
                for alt in terms
                if alt.values("brand") and alternative_holds(alt, host, assume_brand=True)
            ),
            None,
        )
        assumed = held is not None
    if held is None:
        return None
    return ForwardCompat(
        clause=held.text,
        brands=tuple(value.lower() for _, value in held.values("brand")),
        branch_cuda=branch_cuda(held, table),
        brand_assumed=assumed,
    )


def required_cuda(expressions: Iterable[str]) -> Version | None:
    """The highest `cuda>=N` / `cuda>N` / `cuda=N` in the expressions."""
    best: Version | None = None
    for expression in expressions:
        for condition in re.split(r"[ ,]", expression):
            match = _CONDITION.match(condition)
            if match and match.group(1) == "cuda" and match.group(2) in (">=", ">", "="):
                version = parse_version(match.group(3))
                if version and (best is None or (*version, 0)[:2] > best):
                    best = (*version, 0)[:2]
    return best


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The answer to "does this driver run this workload?"."""

    satisfied: bool
    required: Version | None
    row: CudaRow | None
    mvc_applies: bool
    beyond_table: bool
    forward_compat: ForwardCompat | None = None
    """Set when the requirement is met only through a forward-compatibility clause."""


def judge(need: CudaNeed, host: HostCuda, table: Sequence[CudaRow]) -> Verdict:
    """Evaluate the need against the host, and whether minor-version compatibility helps."""
    expressions = effective_requirements(need)
    satisfied = all(expression_holds(expr, host) for expr in expressions)
    required = required_cuda(expressions)
    row = row_for(table, required) if required else None
    newest = max((r.cuda for r in table), default=())
    beyond = bool(required) and row is None and required is not None and required > newest[:2]
    mvc = (
        row is not None
        and host.cuda is not None
        and required is not None
        and required[0] == host.cuda[0]
        and required[0] >= 11
        and row.min_driver_mvc is not None
        and version_at_least(host.driver, row.min_driver_mvc)
    )
    bridge = forward_compat_clause(expressions, host, table, required)
    if bridge is not None and not satisfied:
        # with the brand unknown the clause may hold: then every other expression must
        others = [
            e for e in expressions if all(a.text != bridge.clause for a in parse_expression(e))
        ]
        if not bridge.brand_assumed or not all(expression_holds(e, host) for e in others):
            bridge = None
    return Verdict(
        satisfied=satisfied,
        required=required,
        row=row,
        mvc_applies=mvc,
        beyond_table=beyond,
        forward_compat=bridge,
    )
