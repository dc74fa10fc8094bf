"""Each fault a spec's values can have, as `validate_text` reports it: rule, message, path.

One case per schema fault and a few for the rules after the schema; the spec is written as JSON
text, the same text path `cdi validate` and `cdi generate` (on what it is about to write) take.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ctk.cdi.problems import Problem, ProblemSeverity
from ctk.cdi.validate import SpecReport, validate_text

E, W = ProblemSeverity.ERROR, ProblemSeverity.WARNING


def _spec(**changes: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "cdiVersion": "0.5.0",
        "kind": "example.com/gpu",
        "devices": [{"name": "gpu0", "containerEdits": {"env": ["A=1"]}}],
    }
    spec.update(changes)
    return spec


def _edits(**edits: object) -> dict[str, object]:
    """A 0.7.0 spec (additionalGids) whose device has ``edits`` besides its env."""
    device = {"name": "gpu0", "containerEdits": {"env": ["A=1"], **edits}}
    return _spec(cdiVersion="0.7.0", devices=[device])


def _device(**fields: object) -> dict[str, object]:
    """A spec whose one device is ``fields`` over a valid one."""
    return _spec(devices=[{"name": "gpu0", "containerEdits": {"env": ["A=1"]}, **fields}])


def _without(key: str) -> dict[str, object]:
    spec = _spec()
    del spec[key]
    return spec


EDITS = ("devices", 0, "containerEdits")
NODE = (*EDITS, "deviceNodes", 0)
TOP_FIELDS = "cdiVersion, kind, annotations, devices, containerEdits"
UINT32 = "(0 to 4294967295)"
QUOTE = "; quote it to make it a string"  # a JSON number where a string goes

CASES = [
    pytest.param(_spec(), [], id="valid"),
    pytest.param(
        _without("kind"),
        [Problem("schema.required", "missing required field 'kind'")],
        id="schema.required",
    ),
    pytest.param(
        _edits(deviceNodes=[{"type": "c"}]),
        [Problem("schema.required", "missing required field 'path'", NODE)],
        id="schema.required-nested",
    ),
    pytest.param(
        _spec(extra=1),
        [
            Problem(
                "schema.unknown-field",
                f"unknown field 'extra' (expected one of: {TOP_FIELDS})",
                ("extra",),
            )
        ],
        id="schema.unknown-field",
    ),
    pytest.param(
        _edits(deviceNodes=[{"path": "/dev/x", "type": "x"}]),
        [Problem("schema.enum", "'x' is not one of 'b', 'c', 'u', 'p'", (*NODE, "type"))],
        id="schema.enum",
    ),
    pytest.param(
        _edits(additionalGids=[-1, 4294967296, 0]),
        [
            Problem("schema.range", f"-1 is out of range {UINT32}", (*EDITS, "additionalGids", 0)),
            Problem(
                "schema.range",
                f"4294967296 is out of range {UINT32}",
                (*EDITS, "additionalGids", 1),
            ),
        ],
        id="schema.range",
    ),
    pytest.param(
        _edits(hooks=[{"hookName": "prestart", "path": "/bin/h", "timeout": 0}]),
        [
            Problem(
                "schema.range",
                "0 is out of range (1 to 4294967295)",
                (*EDITS, "hooks", 0, "timeout"),
            )
        ],
        id="schema.range-minimum-1",
    ),
    pytest.param(
        _edits(deviceNodes=[{"path": ""}]),
        [Problem("schema.empty", "must not be empty", (*NODE, "path"))],
        id="schema.empty",
    ),
    pytest.param(
        _spec(annotations={"": "v", "a": "b"}, cdiVersion="0.6.0"),
        [Problem("schema.empty-key", "keys must not be empty", ("annotations", ""))],
        id="schema.empty-key",
    ),
    pytest.param(
        _spec(devices=[]),
        [Problem("schema.min-items", "needs at least 1 item(s)", ("devices",))],
        id="schema.min-items",
    ),
    pytest.param(
        _device(name=7),
        [
            Problem(
                "parse.type",
                f"expected a string, found the integer 7{QUOTE}",
                ("devices", 0, "name"),
            )
        ],
        id="parse.type-string",
    ),
    pytest.param(
        _edits(additionalGids=[True]),
        [
            Problem(
                "parse.type",
                "expected an integer, found the boolean true",
                (*EDITS, "additionalGids", 0),
            )
        ],
        id="parse.type-integer",
    ),
    pytest.param(
        _spec(cdiVersion="0.7.0", containerEdits={"intelRdt": {"enableMonitoring": "yes"}}),
        [
            Problem(
                "parse.type",
                "expected a boolean, found the string 'yes'",
                ("containerEdits", "intelRdt", "enableMonitoring"),
            )
        ],
        id="parse.type-boolean",
    ),
    pytest.param(
        _spec(cdiVersion="0.7.0", containerEdits={"intelRdt": {"enableMonitoring": "y" * 41}}),
        [
            Problem(
                "parse.type",
                f"expected a boolean, found the string '{'y' * 37}...'",
                ("containerEdits", "intelRdt", "enableMonitoring"),
            )
        ],
        id="parse.type-long-string",
    ),
    pytest.param(
        _edits(env="A=1"),
        [Problem("parse.type", "expected a list, found the string 'A=1'", (*EDITS, "env"))],
        id="parse.type-list",
    ),
    pytest.param(
        _device(containerEdits=["A=1"]),
        [Problem("parse.type", "expected a mapping, found a list", EDITS)],
        id="parse.type-mapping",
    ),
    pytest.param(
        _spec(annotations=["a"], cdiVersion="0.6.0"),
        [Problem("parse.type", "expected a mapping, found a list", ("annotations",))],
        id="parse.type-map",
    ),
    pytest.param(
        _edits(mounts=[{"hostPath": "/a", "containerPath": {}}]),
        [
            Problem(
                "parse.type",
                "expected a string, found a mapping",
                (*EDITS, "mounts", 0, "containerPath"),
            )
        ],
        id="parse.type-scalar",
    ),
    pytest.param(
        _device(name=None),
        [
            Problem(
                "parse.null",
                "expected a string, found null; omit the field",
                ("devices", 0, "name"),
            )
        ],
        id="parse.null",
    ),
    pytest.param(
        {"cdiVersion": "0.5.0", "Kind": "example.com/gpu", "devices": _spec()["devices"]},
        [
            Problem(
                "parse.key-case",
                "key 'Kind' is spelled 'kind' in the specification",
                ("Kind",),
                severity=W,
            )
        ],
        id="parse.key-case",
    ),
    pytest.param(
        _spec(KIND="example.com/x"),
        [Problem("parse.case-duplicate", "key 'KIND' differs only in case from 'kind'", ("KIND",))],
        id="parse.case-duplicate",
    ),
    pytest.param(
        _device(name="-a", containerEdits={"env": ["A"]}),
        [
            Problem(
                "device.name",
                "device name '-a' must start with an ASCII letter or digit",
                ("devices", 0, "name"),
            ),
            Problem(
                "env.invalid",
                "env entry 'A' is not KEY=VALUE with a non-empty KEY",
                (*EDITS, "env", 0),
            ),
        ],
        id="rules-after-schema",
    ),
    pytest.param(
        _device(name=7, containerEdits={"env": [1]}),
        [
            Problem(
                "parse.type",
                f"expected a string, found the integer 7{QUOTE}",
                ("devices", 0, "name"),
            ),
            Problem(
                "parse.type", f"expected a string, found the integer 1{QUOTE}", (*EDITS, "env", 0)
            ),
        ],
        id="wrong-values-reach-no-rule",  # no device.name, and no device.empty-edits
    ),
    pytest.param(
        _spec(cdiVersion="0.3.0", annotations={"a": "b"}),
        [
            Problem(
                "version.too-low",
                "cdiVersion 0.3.0 is too low, the content needs at least 0.6.0: "
                "annotations (annotations) needs 0.6.0",
                ("cdiVersion",),
            )
        ],
        id="version-of-the-data",
    ),
]


def _unplaced(report: SpecReport) -> list[Problem]:
    return [replace(p, line=None, column=None) for p in report.problems]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_fault(data: dict[str, object], expected: list[Problem]) -> None:
    report = validate_text(json.dumps(data), "spec.json")
    assert _unplaced(report) == expected
    assert all(p.line is not None for p in report.problems)  # text: every problem has a place


def _facts(report: SpecReport) -> tuple[object, ...]:
    return (
        report.spec,
        report.minimum_version,
        report.declared_version,
        report.kind,
        report.device_names,
    )


def test_cleaned_spec_and_facts() -> None:
    """The report holds the spec without its wrong values, and what it declares."""
    data = _device(name="gpu0", annotations={"": "v", "a": "b"})
    data["cdiVersion"] = "v0.6.0"
    report = validate_text(json.dumps(data), "x.json")
    expected = _device(name="gpu0", annotations={"a": "b"})
    expected["cdiVersion"] = "v0.6.0"
    assert _facts(report) == (expected, "0.6.0", "v0.6.0", "example.com/gpu", ("gpu0",))
