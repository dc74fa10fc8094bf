"""The rules on one block of container edits, on the declared cdiVersion, and the cap on the
problems a report lists: each rule's message, path and severity, at list indexes past 0, and the
edges of the cap (from the mutation run on ctk/cdi/validate.py)."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import pytest

from ctk.cdi.problems import Path, Problem, ProblemSeverity
from ctk.cdi.validate import (
    PROBLEM_LIMIT,
    _bounded,
    _check_edits,
    _check_version,
    _Issue,
    validate_text,
)
from ctk.cdi.version import KNOWN_VERSIONS, Requirement, requirements

E, W = ProblemSeverity.ERROR, ProblemSeverity.WARNING
AT = ("devices", 1, "containerEdits")
OK_NODE = {"path": "/dev/ok", "permissions": "rwm"}


def _relative(path: Path, what: str, value: str) -> _Issue:
    message = f"{what} {value!r} is relative; CDI runtimes expect absolute paths"
    return _Issue("path.relative", message, path, W)


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param(
            {"env": ["A=1", "=x"]},
            [_Issue("env.invalid", "env entry '=x' is not KEY=VALUE with a non-empty KEY", (*AT, "env", 1))],
            id="env",
        ),
        pytest.param(
            {"deviceNodes": [OK_NODE, {"path": "/dev/x", "permissions": "rwx"}]},
            [_Issue("device-node.permissions", "permissions 'rwx' may only contain r, w and m", (*AT, "deviceNodes", 1, "permissions"))],
            id="permissions",
        ),
        pytest.param(
            {"deviceNodes": [{"path": "/dev/x", "permissions": "rX"}]},
            [_Issue("device-node.permissions", "permissions 'rX' may only contain r, w and m", (*AT, "deviceNodes", 0, "permissions"))],
            id="permissions-capital-x",
        ),
        pytest.param({"deviceNodes": [{"path": "/dev/x", "permissions": ""}]}, [], id="permissions-empty"),
        pytest.param({"deviceNodes": [{"path": "/dev/x", "permissions": "mwr"}]}, [], id="permissions-any-order"),
        pytest.param(
            {"deviceNodes": [OK_NODE, {"path": "dev/x", "hostPath": "host/x"}]},
            [
                _relative((*AT, "deviceNodes", 1, "path"), "device node path", "dev/x"),
                _relative((*AT, "deviceNodes", 1, "hostPath"), "device node hostPath", "host/x"),
            ],
            id="device-node-relative",
        ),
        pytest.param(
            {"mounts": [{"hostPath": "/a", "containerPath": "/a"}, {"hostPath": "b", "containerPath": "b"}]},
            [_relative((*AT, "mounts", 1, "containerPath"), "mount containerPath", "b")],
            id="mount-relative-container-path",
        ),
        pytest.param(
            {"hooks": [{"hookName": "createRuntime", "path": "/bin/h"}, {"hookName": "poststop", "path": "bin/h"}]},
            [_Issue("hook.relative-path", "hook path 'bin/h' must be absolute", (*AT, "hooks", 1, "path"))],
            id="hook-relative",
        ),
        pytest.param({"hooks": [{"hookName": "poststop", "path": ""}]}, [], id="hook-path-empty"),
        pytest.param(
            {"hooks": [{"path": "/h"}, {"path": "/h", "env": ["B=2", "C"]}]},
            [_Issue("env.invalid", "env entry 'C' is not KEY=VALUE with a non-empty KEY", (*AT, "hooks", 1, "env", 1))],
            id="hook-env",
        ),
        pytest.param(
            {"intelRdt": {"closID": "a/b"}},
            [_Issue("intel-rdt.closid", "closID 'a/b' must be a file name (not '.' or '..', no '/' or newline)", (*AT, "intelRdt", "closID"))],
            id="closid",
        ),
        pytest.param(
            {"netDevices": [{"name": "n", "hostInterfaceName": "h"}, {"name": "n", "hostInterfaceName": "i"}]},
            [_Issue("net-device.duplicate", "name 'n' is already used by netDevices[0]", (*AT, "netDevices", 1, "name"))],
            id="net-devices",
        ),
        pytest.param(
            {
                "env": ["1"],
                "deviceNodes": [{"path": "d", "permissions": "q"}],
                "mounts": [{"containerPath": "m"}],
                "hooks": [{"path": "h", "env": ["2"]}],
                "intelRdt": {"closID": "."},
                "netDevices": [{"name": "x"}, {"name": "x"}],
            },
            [
                _Issue("env.invalid", "env entry '1' is not KEY=VALUE with a non-empty KEY", (*AT, "env", 0)),
                _Issue("device-node.permissions", "permissions 'q' may only contain r, w and m", (*AT, "deviceNodes", 0, "permissions")),
                _relative((*AT, "deviceNodes", 0, "path"), "device node path", "d"),
                _relative((*AT, "mounts", 0, "containerPath"), "mount containerPath", "m"),
                _Issue("hook.relative-path", "hook path 'h' must be absolute", (*AT, "hooks", 0, "path")),
                _Issue("env.invalid", "env entry '2' is not KEY=VALUE with a non-empty KEY", (*AT, "hooks", 0, "env", 0)),
                _Issue("intel-rdt.closid", "closID '.' must be a file name (not '.' or '..', no '/' or newline)", (*AT, "intelRdt", "closID")),
                _Issue("net-device.duplicate", "name 'x' is already used by netDevices[0]", (*AT, "netDevices", 1, "name")),
            ],
            id="every-rule-in-order",
        ),
        pytest.param(
            {
                "env": "A",
                "deviceNodes": ["d", {"permissions": 7, "path": 1, "hostPath": None}],
                "mounts": [{"containerPath": 3}],
                "hooks": ["h", {"path": 5, "env": "B"}, {"path": None}],
                "intelRdt": ["closID"],
                "netDevices": "n",
            },
            [],
            id="wrong-types-reach-no-rule",
        ),
        pytest.param({"intelRdt": {"closID": 3}}, [], id="closid-not-a-string"),
    ],
)  # fmt: skip
def test_check_edits(edits: dict[str, object], expected: list[_Issue]) -> None:
    assert list(_check_edits(edits, AT)) == expected


def test_edit_rules_reach_the_spec_and_each_device_block() -> None:
    text = (
        "cdiVersion: 0.3.0\nkind: example.com/gpu\n"
        "containerEdits:\n  hooks: [{hookName: poststop, path: top}]\n"
        "devices:\n"
        "- name: gpu0\n  containerEdits:\n    env: [A=1]\n"
        "- name: gpu1\n  containerEdits:\n    hooks: [{hookName: poststop, path: dev}]\n"
    )
    problems = validate_text(text, "spec.yaml").problems
    assert [(p.rule, p.message, p.path, p.line) for p in problems] == [
        (
            "hook.relative-path",
            "hook path 'top' must be absolute",
            ("containerEdits", "hooks", 0, "path"),
            4,
        ),
        (
            "hook.relative-path",
            "hook path 'dev' must be absolute",
            ("devices", 1, "containerEdits", "hooks", 0, "path"),
            11,
        ),
    ]


# --- cdiVersion ---------------------------------------------------------------------------------

KNOWN = ", ".join(KNOWN_VERSIONS)
WHERE = ("cdiVersion",)


def _needs(*versions: str) -> list[Requirement]:
    return [Requirement(v, f"f{i}", ("devices", i, "name")) for i, v in enumerate(versions)]


def _too_low(declared: str, needed: str, features: str) -> list[_Issue]:
    message = f"cdiVersion {declared} is too low, the content needs at least {needed}: {features}"
    return [_Issue("version.too-low", message, WHERE)]


@pytest.mark.parametrize(
    ("declared", "needs", "expected"),
    [
        pytest.param("0.3.0", [], [], id="earliest"),
        pytest.param("1.1.0", _needs("1.1.0", "0.4.0"), [], id="needs-met-exactly"),
        pytest.param(3, _needs("1.1.0"), [], id="not-a-string"),
        pytest.param(None, [], [], id="missing"),
        pytest.param(
            "0.1.0",
            _needs("1.1.0"),
            [_Issue("version.retired", "cdiVersion '0.1.0' is no longer accepted; the earliest is 0.3.0", WHERE)],
            id="retired",
        ),
        pytest.param(
            "v0.2.0",
            [],
            [_Issue("version.retired", "cdiVersion 'v0.2.0' is no longer accepted; the earliest is 0.3.0", WHERE)],
            id="retired-v-prefix",
        ),
        pytest.param(
            "0.9.0",
            _needs("1.1.0"),
            [_Issue("version.unknown", f"cdiVersion '0.9.0' is not a released CDI version ({KNOWN})", WHERE)],
            id="unknown",
        ),
        pytest.param(
            "vv0.3.0",
            [],
            [_Issue("version.unknown", f"cdiVersion 'vv0.3.0' is not a released CDI version ({KNOWN})", WHERE)],
            id="two-v",
        ),
        pytest.param(
            "v0.6.0",
            _needs("0.6.0"),
            [_Issue("version.v-prefix", "write cdiVersion as '0.6.0', without the 'v'", WHERE, W)],
            id="v-prefix",
        ),
        pytest.param(
            "v0.4.0",
            _needs("0.5.0"),
            [
                _Issue("version.v-prefix", "write cdiVersion as '0.4.0', without the 'v'", WHERE, W),
                *_too_low("v0.4.0", "0.5.0", "f0 (devices[0].name) needs 0.5.0"),
            ],
            id="v-prefix-and-too-low",
        ),
        pytest.param(
            "0.5.0",
            _needs("0.5.0", "0.7.0", "0.4.0", "0.6.0"),
            _too_low("0.5.0", "0.7.0", "f1 (devices[1].name) needs 0.7.0; f3 (devices[3].name) needs 0.6.0"),
            id="only-the-higher-needs",
        ),
        pytest.param(
            "0.3.0",
            _needs("0.4.0", "1.1.0", "0.5.0"),
            _too_low("0.3.0", "1.1.0", "f0 (devices[0].name) needs 0.4.0; f1 (devices[1].name) needs 1.1.0; f2 (devices[2].name) needs 0.5.0"),
            id="three-named",
        ),
        pytest.param(
            "0.3.0",
            _needs("0.4.0", "0.5.0", "0.6.0", "1.0.0"),
            _too_low("0.3.0", "1.0.0", "f0 (devices[0].name) needs 0.4.0; f1 (devices[1].name) needs 0.5.0; f2 (devices[2].name) needs 0.6.0; and 1 more"),
            id="four-three-named",
        ),
        pytest.param(
            "0.3.0",
            _needs("0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0"),
            _too_low("0.3.0", "0.8.0", "f0 (devices[0].name) needs 0.4.0; f1 (devices[1].name) needs 0.5.0; f2 (devices[2].name) needs 0.6.0; and 2 more"),
            id="five-three-named",
        ),
    ],
)  # fmt: skip
def test_check_version(declared: object, needs: list[Requirement], expected: list[_Issue]) -> None:
    spec = {"cdiVersion": declared, "kind": "example.com/gpu"}
    assert list(_check_version(spec, needs)) == expected


def test_the_version_needed_is_the_highest_by_number() -> None:
    needs = _needs("0.9.0", "0.10.0")  # not released yet: 0.10.0 sorts below 0.9.0 as text
    assert [i.message for i in _check_version({"cdiVersion": "0.3.0"}, needs)] == [
        "cdiVersion 0.3.0 is too low, the content needs at least 0.10.0: "
        "f0 (devices[0].name) needs 0.9.0; f1 (devices[1].name) needs 0.10.0"
    ]


def test_too_low_names_the_real_features() -> None:
    spec: dict[str, object] = {
        "cdiVersion": "0.6.0",
        "kind": "example.com/gpu",
        "containerEdits": {"additionalGids": [1], "netDevices": [{"name": "n"}]},
    }
    assert list(_check_version(spec, requirements(spec))) == _too_low(
        "0.6.0",
        "1.1.0",
        "additionalGids (containerEdits.additionalGids) needs 0.7.0; "
        "netDevices (containerEdits.netDevices) needs 1.1.0",
    )


# --- the cap on problems ------------------------------------------------------------------------


def _numbered(count: int, severity: ProblemSeverity = E) -> list[Problem]:
    """``count`` problems on lines 1, 2, ... in reverse order (the cap sorts what it shows)."""
    return [Problem("env.invalid", f"p{n}", (), n, 1, severity) for n in range(count, 0, -1)]


def _more(text: str, severity: ProblemSeverity) -> Problem:
    return Problem("problems.more", text, (), None, None, severity)


def test_at_the_limit_every_problem_is_listed_by_position() -> None:
    problems = _numbered(PROBLEM_LIMIT)
    assert _bounded(problems) == sorted(problems, key=lambda p: p.line or 0)
    assert [p.line for p in _bounded(problems)] == list(range(1, PROBLEM_LIMIT + 1))


def test_the_first_hundred_are_listed_and_the_rest_counted() -> None:
    lowest = Problem("env.invalid", "p0", (), 0, 1, E)  # the 101st: counted, not listed
    problems = [*_numbered(PROBLEM_LIMIT), lowest]
    bounded = _bounded(problems)
    assert bounded[:-1] == sorted(problems[:PROBLEM_LIMIT], key=lambda p: p.line or 0)
    assert bounded[-1] == _more("1 more problem not listed (1 error, 0 warnings)", E)
    assert len(bounded) == PROBLEM_LIMIT + 1


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        pytest.param([W], _more("1 more problem not listed (0 errors, 1 warning)", W), id="one-warning"),
        pytest.param([W, W], _more("2 more problems not listed (0 errors, 2 warnings)", W), id="warnings"),
        pytest.param([E, W], _more("2 more problems not listed (1 error, 1 warning)", E), id="one-each"),
        pytest.param([E, E, W, E], _more("4 more problems not listed (3 errors, 1 warning)", E), id="mixed"),
        pytest.param([W, E, E], _more("3 more problems not listed (2 errors, 1 warning)", E), id="error-last"),
    ],
)  # fmt: skip
def test_the_count_of_the_rest(rest: list[ProblemSeverity], expected: Problem) -> None:
    problems = [*_numbered(PROBLEM_LIMIT, W), *(Problem("x", "y", (), 1, 1, s) for s in rest)]
    assert _bounded(problems)[-1] == expected


def _listed(*problems: Problem) -> list[str]:
    return [p.message for p in _bounded(list(problems))]


def _p(message: str, line: int | None, column: int | None) -> Problem:
    return Problem("env.invalid", message, (), line, column)


@pytest.mark.parametrize(
    "padding", [0, PROBLEM_LIMIT - 2, PROBLEM_LIMIT - 1], ids=["few", "at-the-limit", "past-it"]
)
def test_problems_without_a_place_sort_as_line_and_column_zero(padding: int) -> None:
    late = [_p(f"late{n}", 9, 9) for n in range(padding)]
    # no line sorts before line 1, even with a column; no column before column 1
    assert _listed(_p("a", 1, None), _p("b", None, 5), *late)[:2] == ["b", "a"]
    assert _listed(_p("c", 2, 1), _p("d", 2, None), *late)[:2] == ["d", "c"]
