"""The agent's decisions at their edges (issue 26: mutations no other test caught)."""

from __future__ import annotations

import pytest

from ctk.agent.model import State, Written, digest, spec_fresh, untouched
from ctk.agent.outlets import NPD_OK, NPD_PROBLEM, NPD_UNKNOWN, NPD_WIDTH, npd_report
from ctk.doctor.model import Severity, Status
from tests.agent.test_outlets import finding


def test_nothing_changed_is_not_untouched() -> None:
    """With no config written yet there is something to plan: `all` of nothing is not enough."""
    assert not untouched(State(), {})
    written = State(configs={"/etc/docker/daemon.json": Written(original=None, left=digest("{}"))})
    assert untouched(written, {"/etc/docker/daemon.json": "{}"})
    assert not untouched(written, {"/etc/docker/daemon.json": "{ }"})


@pytest.mark.parametrize(
    ("inputs", "current", "fresh"),
    [
        pytest.param("facts", "spec", True, id="same-inputs-same-file"),
        pytest.param(None, "spec", False, id="inputs-unknown"),
        pytest.param("facts", None, False, id="spec-file-gone"),
        pytest.param("other", "spec", False, id="inputs-changed"),
    ],
)
def test_spec_fresh(inputs: str | None, current: str | None, fresh: bool) -> None:
    assert spec_fresh(State(spec_inputs="facts", spec_digest="spec"), inputs, current) is fresh


def test_unknown_is_never_fresh() -> None:
    """Nothing recorded matches nothing seen: an unknown digest is a rebuild, not a match."""
    assert not spec_fresh(State(), None, None)
    assert not spec_fresh(State(spec_digest="spec"), None, "spec")  # facts not digested
    assert not spec_fresh(State(spec_inputs="facts"), "facts", None)  # no spec written, none there


def test_npd_ignores_warnings() -> None:
    """A failed warning-severity check is not a node problem."""
    findings = [
        finding("cdi.refresh-disabled", Status.FAIL, Severity.WARNING, "x"),
        finding("docker.runtime-not-configured", Status.OK, Severity.ERROR, "x"),
    ]
    assert npd_report(findings) == (NPD_OK, "ok: 2 checks, no errors")
    unknown = [*findings, finding("gpu.lost", Status.UNKNOWN, Severity.WARNING, "x")]
    assert npd_report(unknown)[0] == NPD_OK
    error = [*findings, finding("driver.not-loaded", Status.FAIL, Severity.ERROR, "no driver")]
    assert npd_report(error) == (NPD_PROBLEM, "driver.not-loaded: no driver")
    undecided = [*findings, finding("gpu.lost", Status.UNKNOWN, Severity.ERROR, "no NVML")]
    assert npd_report(undecided) == (NPD_UNKNOWN, "gpu.lost unknown: no NVML")


@pytest.mark.parametrize(
    ("width", "line"),
    [
        pytest.param(NPD_WIDTH - 1, "a: " + "b" * (NPD_WIDTH - 4), id="one-below"),
        pytest.param(NPD_WIDTH, "a: " + "b" * (NPD_WIDTH - 3), id="equal"),
        pytest.param(NPD_WIDTH + 1, "a: " + "b" * (NPD_WIDTH - 6) + "...", id="one-above"),
    ],
)
def test_npd_line_width(width: int, line: str) -> None:
    summary = "b" * (width - 3)
    code, shown = npd_report([finding("a", Status.FAIL, Severity.ERROR, summary)])
    assert (code, shown) == (NPD_PROBLEM, line)
    assert len(shown) <= NPD_WIDTH
