"""What `ctk agent` tells the cluster, as file texts: Prometheus textfile, NFD label file, NPD line.

Pure: findings and counters in, text out. The host adapter writes them atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # the agent's pass without --prometheus-textfile loads no doctor code
    from ctk.doctor.model import Finding

# The label the chart's RuntimeClass selects on: present (=true) only while the node's engine
# runs the nvidia runtime and the CDI spec is valid (docs/agent.md).
READY_LABEL: Final = "ctk.nvidia.com/runtime.configured"
DRIVER_LABEL: Final = "ctk.nvidia.com/driver.version"
VERSION_LABEL: Final = "ctk.nvidia.com/ctk.version"
PROM_FILE: Final = "ctk.prom"
NFD_FILE: Final = "ctk"
NPD_WIDTH: Final = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Counters:
    """The agent's numbers for the textfile."""

    drift_repairs: int
    engine_restarts: int
    last_reconcile: float  # seconds since the epoch
    ready: bool
    restart_pending: bool


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(name: str, kind: str, help_text: str, samples: Sequence[str]) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]


def prometheus_text(findings: Sequence[Finding], counters: Counters, version: str) -> str:
    """The exposition-format text: one `ctk_check_status` sample per doctor check, and more.

    A check's sample is 1 when it is a problem (fail or warn) and 0 otherwise; its `status`
    label says which.
    """
    checks = [
        f'ctk_check_status{{id="{_label(f.check)}",severity="{_label(f.severity)}",'
        f'status="{_label(f.status)}"}} {int(f.is_problem)}'
        for f in findings
    ]
    lines = [
        *_family(
            "ctk_check_status", "gauge", "A ctk doctor check: 1 when it fails or warns.", checks
        ),
        *_family(
            "ctk_info", "gauge", "The ctk version.", [f'ctk_info{{version="{_label(version)}"}} 1']
        ),
        *_family(
            "ctk_drift_repairs_total",
            "counter",
            "Engine configs the agent re-applied after someone else changed them.",
            [f"ctk_drift_repairs_total {counters.drift_repairs}"],
        ),
        *_family(
            "ctk_engine_restarts_total",
            "counter",
            "Engine restarts (or reloads) the agent did.",
            [f"ctk_engine_restarts_total {counters.engine_restarts}"],
        ),
        *_family(
            "ctk_last_reconcile_timestamp_seconds",
            "gauge",
            "When the agent last finished a pass.",
            [f"ctk_last_reconcile_timestamp_seconds {counters.last_reconcile:.3f}"],
        ),
        *_family(
            "ctk_ready",
            "gauge",
            "1 while the engine runs the nvidia runtime and the CDI spec is valid.",
            [f"ctk_ready {int(counters.ready)}"],
        ),
        *_family(
            "ctk_restart_pending",
            "gauge",
            "1 while a config change waits for an engine restart the agent was told not to do.",
            [f"ctk_restart_pending {int(counters.restart_pending)}"],
        ),
    ]
    return "\n".join(lines) + "\n"


def _label_value(value: str) -> str:
    """A Kubernetes label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends."""
    kept = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in value)
    return kept[:63].strip("._-")


def nfd_text(*, ready: bool, driver_version: str | None, version: str) -> str:
    """A node-feature-discovery `features.d` file: `name=value` lines and `#` comments."""
    lines = ["# Written by ctk agent; removed by ctk agent --uninstall."]
    if ready:
        lines.append(f"{READY_LABEL}=true")
    if driver_version:
        lines.append(f"{DRIVER_LABEL}={_label_value(driver_version)}")
    lines.append(f"{VERSION_LABEL}={_label_value(version)}")
    return "\n".join(lines) + "\n"


NPD_OK: Final = 0
NPD_PROBLEM: Final = 1
NPD_UNKNOWN: Final = 2


def npd_report(findings: Sequence[Finding]) -> tuple[int, str]:
    """node-problem-detector's custom-plugin answer: exit code and a first line <= 80 chars.

    A failed error-severity check is a problem, named by the first one in stack order (the
    root cause); when none failed but a check could not decide, the answer is unknown.
    """
    failed = [f for f in findings if f.status == "fail" and f.severity == "error"]
    if failed:
        return NPD_PROBLEM, _cut(f"{failed[0].check}: {failed[0].summary}")
    unknown = [f for f in findings if f.status == "unknown" and f.severity == "error"]
    if unknown:
        return NPD_UNKNOWN, _cut(f"{unknown[0].check} unknown: {unknown[0].summary}")
    return NPD_OK, f"ok: {len(findings)} checks, no errors"


def _cut(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= NPD_WIDTH else line[: NPD_WIDTH - 3] + "..."
