"""`validate_data` judges a spec's plain data as `validate_text` judges its text.

`cdi generate` checks what it built this way, without reading its own YAML back (so without
PyYAML). The corpus of spec files gives both the same verdict; one case per schema fault shows
the whole list of problems the data gets, and that the text of the same data gets the same.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from ctk.cdi.problems import Problem, ProblemSeverity
from ctk.cdi.validate import SpecReport, validate_data, validate_text

E, W = ProblemSeverity.ERROR, ProblemSeverity.WARNING
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS = (FIXTURES / "conformance", FIXTURES / "specs", FIXTURES / "expected")
UNREAD = {  # not JSON (or not one YAML document): their data cannot be had without ctk's reader
    "conformance/cdi-cases/invalid/i054-json-truncated.json",
    "conformance/cdi-cases/valid/v049-multi-document-yaml.yaml",
    "conformance/cdi-upstream/bad/empty.json",
}


def _plain(value: object) -> bool:
    """Whether ``value`` is made of what ctk builds: dicts, lists, str, int, bool (and null)."""
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, (str, int, bool))


def _data(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def _spec_files() -> list[Path]:
    return sorted(
        path
        for root in CORPUS
        for path in root.rglob("*")
        if path.suffix in (".json", ".yaml", ".yml") and path.is_file()
    )


def _name(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def _corpus() -> list[object]:
    return [pytest.param(p, id=_name(p)) for p in _spec_files() if _name(p) not in UNREAD]


def test_corpus_is_read_but_for_the_unreadable() -> None:
    """Every spec file but the listed ones is JSON, or YAML whose data is plain."""
    unread = set()
    for path in _spec_files():
        try:
            if _plain(_data(path)):
                continue
        except (ValueError, yaml.YAMLError):
            pass
        unread.add(_name(path))
    assert unread == UNREAD


def _verdict(report: SpecReport) -> set[tuple[str, tuple[str | int, ...], ProblemSeverity]]:
    """The problems, but those about text (`parse.*`), which data cannot show."""
    return {
        (p.rule, p.path, p.severity) for p in report.problems if not p.rule.startswith("parse.")
    }


def _facts(report: SpecReport) -> tuple[object, ...]:
    return (
        report.spec,
        report.minimum_version,
        report.declared_version,
        report.kind,
        report.device_names,
    )


@pytest.mark.parametrize("path", _corpus())
def test_data_and_text_get_one_verdict(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    by_text = validate_text(text, path.name)
    by_data = validate_data(_data(path), path.name)
    assert _verdict(by_data) == _verdict(by_text)
    assert {p.line for p in by_data.problems} <= {None}
    if not any(p.rule.startswith("parse.") for p in by_text.problems):
        assert _facts(by_data) == _facts(by_text)


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

# Cases whose JSON text says something else: a key that is no string, a tuple; 1.0 is the integer
# 1 in JSON text (as CDI runtimes read it); the message on a huge integer quotes its digits.
DATA_ONLY = {
    "schema.range-huge",
    "parse.type-float",
    "parse.type-tuple",
    "parse.key-type",
    "parse.key-type-field",
}
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
        _edits(additionalGids=[2**200]),
        [
            Problem(
                "schema.range",
                f"an integer of 201 bits is out of range {UINT32}",
                (*EDITS, "additionalGids", 0),
            )
        ],
        id="schema.range-huge",
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
        [Problem("parse.type", "expected a string, found the integer 7", ("devices", 0, "name"))],
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
        _edits(additionalGids=[1.0]),
        [
            Problem(
                "parse.type",
                "expected an integer, found the number 1.0",
                (*EDITS, "additionalGids", 0),
            )
        ],
        id="parse.type-float",
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
        _edits(env=("A=1",)),
        [Problem("parse.type", "expected a list, found a tuple", (*EDITS, "env"))],
        id="parse.type-tuple",
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
        _spec(annotations={1: "v"}, cdiVersion="0.6.0"),
        [
            Problem(
                "parse.key-type", "keys must be strings, found the integer 1", ("annotations", "1")
            )
        ],
        id="parse.key-type",
    ),
    pytest.param(
        _device(containerEdits={"env": ["A=1"], 2: []}),
        [Problem("parse.key-type", "keys must be strings, found the integer 2", (*EDITS, "2"))],
        id="parse.key-type-field",
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
            Problem("parse.type", "expected a string, found the integer 7", ("devices", 0, "name")),
            Problem("parse.type", "expected a string, found the integer 1", (*EDITS, "env", 0)),
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


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_data_fault(
    data: dict[str, object], expected: list[Problem], request: pytest.FixtureRequest
) -> None:
    given = copy.deepcopy(data)
    report = validate_data(data, "spec.json")
    assert list(report.problems) == expected
    assert data == given  # the data is read, never changed
    if request.node.callspec.id not in DATA_ONLY:
        by_text = validate_text(json.dumps(data), "spec.json")
        assert _verdict(by_text) == _verdict(report)
        parse = [(p.rule, p.path) for p in by_text.problems if p.rule.startswith("parse.")]
        assert parse == [(p.rule, p.path) for p in expected if p.rule.startswith("parse.")]


@pytest.mark.parametrize(
    ("data", "found"),
    [
        pytest.param([], "a list", id="list"),
        pytest.param("spec", "the string 'spec'", id="string"),
        pytest.param(None, "null", id="null"),
    ],
)
def test_data_that_is_no_mapping(data: object, found: str) -> None:
    rule = "parse.null" if data is None else "parse.type"
    message = f"expected a mapping, found {found}" + ("; omit the field" if data is None else "")
    assert validate_data(data, "x") == SpecReport("x", None, (Problem(rule, message),), None)


def test_cleaned_spec_and_facts() -> None:
    """The report holds the data without its wrong values, as `validate_text`'s does."""
    data = _device(name="gpu0", annotations={"": "v", "a": "b"})
    data["cdiVersion"] = "v0.6.0"
    report = validate_data(data, "x")
    expected = _device(name="gpu0", annotations={"a": "b"})
    expected["cdiVersion"] = "v0.6.0"
    assert _facts(report) == (expected, "0.6.0", "v0.6.0", "example.com/gpu", ("gpu0",))
