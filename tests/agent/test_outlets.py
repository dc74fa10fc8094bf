"""The agent's outlets as their readers read them: Prometheus' parser, NFD's grammar, NPD's rule."""

from __future__ import annotations

import re

import pytest

from ctk.agent.outlets import (
    NPD_OK,
    NPD_PROBLEM,
    NPD_UNKNOWN,
    Counters,
    nfd_text,
    npd_report,
    prometheus_text,
)
from ctk.doctor.groups import Group
from ctk.doctor.model import Finding, Severity, Status


def finding(
    check: str, status: Status, severity: Severity = Severity.ERROR, summary: str | None = None
) -> Finding:
    """A finding of ``check``; its summary by default has quotes and a second line."""
    return Finding(
        check=check,
        group=Group.DRIVER,
        status=status,
        severity=severity,
        title=check,
        summary=f'{check} is "{status}"\nsecond line' if summary is None else summary,
    )


FINDINGS = (
    finding("driver.loaded", Status.OK),
    finding("engine.nvidia-runtime", Status.FAIL),
    finding("cdi.spec-stale", Status.WARN, Severity.WARNING),
    finding('odd"id\\x', Status.SKIP, Severity.INFO),
)
COUNTERS = Counters(
    drift_repairs=3, engine_restarts=2, last_reconcile=1700000000.25, ready=True,
    restart_pending=False,
)  # fmt: skip


def test_prometheus_text_parses_with_prometheus_client() -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    text = prometheus_text(FINDINGS, COUNTERS, "0.1.0")
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    checks = [(s.labels, s.value) for s in families["ctk_check_status"].samples]
    assert checks == [
        ({"id": "driver.loaded", "severity": "error", "status": "ok"}, 0.0),
        ({"id": "engine.nvidia-runtime", "severity": "error", "status": "fail"}, 1.0),
        ({"id": "cdi.spec-stale", "severity": "warning", "status": "warn"}, 1.0),
        ({"id": 'odd"id\\x', "severity": "info", "status": "skip"}, 0.0),
    ]
    assert [(s.name, s.labels, s.value) for s in families["ctk_info"].samples] == [
        ("ctk_info", {"version": "0.1.0"}, 1.0)
    ]
    assert families["ctk_drift_repairs"].type == "counter"
    assert [s.value for s in families["ctk_drift_repairs"].samples] == [3.0]
    assert [s.value for s in families["ctk_engine_restarts"].samples] == [2.0]
    stamp = families["ctk_last_reconcile_timestamp_seconds"]
    assert [s.value for s in stamp.samples] == [1700000000.25]
    assert [s.value for s in families["ctk_ready"].samples] == [1.0]


def test_prometheus_families_say_what_they_measure() -> None:
    """Names, types and help texts are what dashboards and alerts key on: pinned exactly."""
    parser = pytest.importorskip("prometheus_client.parser")
    text = prometheus_text(FINDINGS, COUNTERS, "0.1.0")
    families = {
        f.name: (f.type, f.documentation, [s.value for s in f.samples])
        for f in parser.text_string_to_metric_families(text)
    }
    assert families == {
        "ctk_check_status": (
            "gauge", "A ctk doctor check: 1 when it fails or warns.", [0.0, 1.0, 1.0, 0.0]
        ),
        "ctk_info": ("gauge", "The ctk version.", [1.0]),
        "ctk_drift_repairs": (
            "counter", "Engine configs the agent re-applied after someone else changed them.",
            [3.0],
        ),
        "ctk_engine_restarts": ("counter", "Engine restarts (or reloads) the agent did.", [2.0]),
        "ctk_last_reconcile_timestamp_seconds": (
            "gauge", "When the agent last finished a pass.", [1700000000.25]
        ),
        "ctk_ready": (
            "gauge", "1 while the engine runs the nvidia runtime and the CDI spec is valid.", [1.0]
        ),
        "ctk_restart_pending": (
            "gauge",
            "1 while a config change waits for an engine restart the agent was told not to do.",
            [0.0],
        ),
    }  # fmt: skip
    # the text itself: one HELP and one TYPE line per family, samples after them
    assert text.count("# HELP ") == text.count("# TYPE ") == len(families)
    assert text.endswith("\n")


NFD_LINE = re.compile(r"^(#.*|[A-Za-z0-9./_-]+(=[A-Za-z0-9._-]{0,63})?)$")


@pytest.mark.parametrize(
    ("ready", "driver", "expected"),
    [
        pytest.param(
            True,
            "550.54.15",
            "# Written by ctk agent; removed by ctk agent --uninstall.\n"
            "ctk.nvidia.com/runtime.configured=true\n"
            "ctk.nvidia.com/driver.version=550.54.15\n"
            "ctk.nvidia.com/ctk.version=0.1.0+local\n",
            id="ready",
        ),
        pytest.param(
            False,
            None,
            "# Written by ctk agent; removed by ctk agent --uninstall.\n"
            "ctk.nvidia.com/ctk.version=0.1.0+local\n",
            id="not-ready-no-driver",
        ),
    ],
)
def test_nfd_file(ready: bool, driver: str | None, expected: str) -> None:
    text = nfd_text(ready=ready, driver_version=driver, version="0.1.0+local")
    assert text == expected.replace("0.1.0+local", "0.1.0_local")
    assert all(NFD_LINE.match(line) for line in text.splitlines())
    assert len(text.encode()) < 64 * 1024


def test_label_name_is_the_one_the_chart_selects_on() -> None:
    from ctk.agent.outlets import READY_LABEL

    assert READY_LABEL == "ctk.nvidia.com/runtime.configured"


@pytest.mark.parametrize(
    ("findings", "expected"),
    [
        pytest.param(FINDINGS[:1], (NPD_OK, "ok: 1 checks, no errors"), id="ok"),
        pytest.param(
            FINDINGS,
            (NPD_PROBLEM, 'engine.nvidia-runtime: engine.nvidia-runtime is "fail" second line'),
            id="problem",
        ),
        pytest.param(
            (finding("nvml.init", Status.UNKNOWN),),
            (NPD_UNKNOWN, 'nvml.init unknown: nvml.init is "unknown" second line'),
            id="unknown",
        ),
        pytest.param(
            (finding("x" * 90, Status.FAIL),),
            (NPD_PROBLEM, "x" * 77 + "..."),
            id="cut-to-80",
        ),
    ],
)
def test_npd_report(findings: tuple[Finding, ...], expected: tuple[int, str]) -> None:
    assert npd_report(findings) == expected


def test_prometheus_label_values_are_escaped_exactly() -> None:
    """The exposition format escapes backslash, double quote and newline in label values."""
    text = prometheus_text(FINDINGS, COUNTERS, "1.0\n2")
    assert 'ctk_check_status{id="odd\\"id\\\\x",severity="info",status="skip"} 0\n' in text
    assert 'ctk_info{version="1.0\\n2"} 1\n' in text


@pytest.mark.parametrize(
    ("driver", "label"),
    [
        pytest.param("550.54.15", "550.54.15", id="plain"),
        pytest.param("a.b_c-d", "a.b_c-d", id="dot-underscore-dash-kept"),
        pytest.param("-550.54.15+beta!", "550.54.15_beta", id="ends-alphanumeric"),
        pytest.param("1" * 63 + "2", "1" * 63, id="at-most-63"),
        pytest.param("é550", "550", id="ascii-only"),
        pytest.param("X550.54X", "X550.54X", id="letters-at-the-ends-kept"),
    ],
)
def test_nfd_label_values(driver: str, label: str) -> None:
    text = nfd_text(ready=False, driver_version=driver, version="0.1.0")
    values = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    assert values == {"ctk.nvidia.com/driver.version": label, "ctk.nvidia.com/ctk.version": "0.1.0"}
