"""One case per validation rule: the whole list of problems each spec gets.

Removing or weakening a rule makes its case fail; `test_every_rule_has_a_case` makes sure no rule
in `RULES` goes untested (registry.conflict, read.error and spec-dir.* are tested in
test_registry.py and test_cli_cdi.py).
"""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import sys

import pytest

from ctk.cdi.problems import Problem, ProblemSeverity
from ctk.cdi.validate import RULES, validate_bytes, validate_text

E, W = ProblemSeverity.ERROR, ProblemSeverity.WARNING
HEAD = "cdiVersion: {v}\nkind: {k}\ndevices:\n"
DEV = "- name: gpu0\n  containerEdits:\n    env: [A=1]\n"


def spec(devices: str, v: str = "0.3.0", k: str = "example.com/gpu", top: str = "") -> str:
    return HEAD.format(v=v, k=k) + devices + top


def _duplicate(index: int, line: int) -> Problem:
    message = "device 'gpu0' is already defined at devices[0]"
    return Problem("device.duplicate", message, ("devices", index, "name"), line, 9, E)


ALIASED_DEVICE = "- &d\n  name: gpu0\n  containerEdits:\n    env: [A=1]\n"

TEXT_CASES = [
    pytest.param(spec(DEV), [], id="read-ok"),
    pytest.param(
        spec(ALIASED_DEVICE + "- *d\n" * 12_500),
        [
            Problem(
                "parse.aliases",
                "YAML aliases expand 15 nodes to 100015 (more than 100000); not read",
                (),
                None,
                None,
                E,
            )
        ],
        id="parse.aliases",
    ),
    pytest.param(
        spec(ALIASED_DEVICE + "- *d\n" * 12_000),
        [
            *(_duplicate(index, 5) for index in range(1, 101)),
            Problem(
                "problems.more",
                "11900 more problems not listed (11900 errors, 0 warnings)",
                (),
                None,
                None,
                E,
            ),
        ],
        id="problems.more",
    ),
    pytest.param(
        "cdiVersion: 0.3.0\nkind: [\n",
        [
            Problem(
                "parse.syntax",
                "not valid YAML or JSON: did not find expected node content (while parsing a flow node)",
                (),
                3,
                1,
                E,
            )
        ],
        id="parse.syntax",
    ),
    pytest.param(
        "# nothing\n",
        [Problem("parse.empty", "the file holds no spec (empty document)", (), None, None, E)],
        id="parse.empty",
    ),
    pytest.param(
        spec(DEV) + "---\nfoo: 1\n",
        [
            Problem(
                "parse.multi-document",
                "only the first YAML document is read; the others are ignored",
                (),
                1,
                1,
                W,
            )
        ],
        id="parse.multi-document",
    ),
    pytest.param(
        spec(DEV) + "kind: example.com/other\n",
        [
            Problem(
                "parse.duplicate-key", "duplicate key 'kind' (first on line 2)", ("kind",), 7, 1, E
            )
        ],
        id="parse.duplicate-key",
    ),
    pytest.param(
        spec("- name: gpu0\n  Name: gpu1\n  containerEdits:\n    env: [A=1]\n"),
        [
            Problem(
                "parse.case-duplicate",
                "key 'Name' differs only in case from 'name'",
                ("devices", 0, "Name"),
                5,
                3,
                E,
            )
        ],
        id="parse.case-duplicate",
    ),
    pytest.param(
        spec("- name: gpu0\n  containerEdits:\n    Env: [A=1]\n"),
        [
            Problem(
                "parse.key-case",
                "key 'Env' is spelled 'env' in the specification",
                ("devices", 0, "containerEdits", "Env"),
                6,
                5,
                W,
            )
        ],
        id="parse.key-case",
    ),
    pytest.param(
        spec(DEV) + "1: x\n",
        [Problem("parse.key-type", "keys must be strings, found the integer 1", ("1",), 7, 1, E)],
        id="parse.key-type",
    ),
    pytest.param(
        spec("- name: gpu0\n  <<: [1]\n  containerEdits:\n    env: [A=1]\n"),
        [
            Problem(
                "parse.merge", "a merge key (<<) needs a mapping", ("devices", 0, "<<", 0), 5, 8, E
            )
        ],
        id="parse.merge",
    ),
    pytest.param(
        spec("- name: 0\n  containerEdits:\n    env: [A=1]\n", v="0.5.0"),
        [
            Problem(
                "parse.type",
                "expected a string, found the integer 0; quote it to make it a string",
                ("devices", 0, "name"),
                4,
                9,
                E,
            )
        ],
        id="parse.type",
    ),
    pytest.param(
        spec("- name: gpu0\n  containerEdits:\n    env: [A=1]\n    mounts:\n"),
        [
            Problem(
                "parse.null",
                "expected a list, found null; omit the field",
                ("devices", 0, "containerEdits", "mounts"),
                7,
                12,
                E,
            )
        ],
        id="parse.null",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    deviceNodes:\n    - {path: /dev/x, fileMode: 0o644}\n"
        ),
        [
            Problem(
                "parse.octal",
                "0o644 is an octal number in YAML 1.2 (and for CDI runtimes) but a string in YAML 1.1; write 0644",
                ("devices", 0, "containerEdits", "deviceNodes", 0, "fileMode"),
                7,
                32,
                W,
            )
        ],
        id="parse.octal",
    ),
    pytest.param(
        spec("- name: gpu0\n  containerEdits:\n    deviceNodes:\n    - {path: /dev/x, uid: 1e3}\n"),
        [
            Problem(
                "parse.number-form",
                "CDI runtimes read 1e3 as the integer 1000, YAML 1.1 as a string; write 1000",
                ("devices", 0, "containerEdits", "deviceNodes", 0, "uid"),
                7,
                27,
                W,
            )
        ],
        id="parse.number-form",
    ),
    pytest.param(
        spec("- name: 1:0\n  containerEdits:\n    env: [A=1]\n", v="0.5.0"),
        [
            Problem(
                "parse.base60",
                "1:0 is a string for CDI runtimes but a base-60 number in YAML 1.1; quote it",
                ("devices", 0, "name"),
                4,
                9,
                W,
            )
        ],
        id="parse.base60",
    ),
    pytest.param(
        spec("- containerEdits:\n    env: [A=1]\n"),
        [Problem("schema.required", "missing required field 'name'", ("devices", 0), 4, 3, E)],
        id="schema.required",
    ),
    pytest.param(
        spec(DEV) + "containerEdit: {}\n",
        [
            Problem(
                "schema.unknown-field",
                "unknown field 'containerEdit' (expected one of: cdiVersion, kind, annotations, devices, containerEdits)",
                ("containerEdit",),
                7,
                1,
                E,
            )
        ],
        id="schema.unknown-field",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    deviceNodes:\n    - path: /dev/x\n      type: x\n"
        ),
        [
            Problem(
                "schema.enum",
                "'x' is not one of 'b', 'c', 'u', 'p'",
                ("devices", 0, "containerEdits", "deviceNodes", 0, "type"),
                8,
                13,
                E,
            )
        ],
        id="schema.enum",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    hooks:\n    - hookName: prestart\n      path: /bin/h\n      timeout: 0\n"
        ),
        [
            Problem(
                "schema.range",
                "0 is out of range (1 to 4294967295)",
                ("devices", 0, "containerEdits", "hooks", 0, "timeout"),
                9,
                16,
                E,
            )
        ],
        id="schema.range",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    mounts:\n    - hostPath: ''\n      containerPath: /x\n"
        ),
        [
            Problem(
                "schema.empty",
                "must not be empty",
                ("devices", 0, "containerEdits", "mounts", 0, "hostPath"),
                7,
                17,
                E,
            )
        ],
        id="schema.empty",
    ),
    pytest.param(
        spec(DEV, v="0.6.0") + "annotations:\n  '': v\n",
        [Problem("schema.empty-key", "keys must not be empty", ("annotations", ""), 8, 3, E)],
        id="schema.empty-key",
    ),
    pytest.param(
        HEAD.format(v="0.3.0", k="example.com/gpu").replace("devices:\n", "devices: []\n"),
        [Problem("schema.min-items", "needs at least 1 item(s)", ("devices",), 3, 10, E)],
        id="schema.min-items",
    ),
    pytest.param(
        spec(DEV, v="0.9.0"),
        [
            Problem(
                "version.unknown",
                "cdiVersion '0.9.0' is not a released CDI version (0.3.0, 0.4.0, 0.5.0, 0.6.0, 0.7.0, 0.8.0, 1.0.0, 1.1.0)",
                ("cdiVersion",),
                1,
                13,
                E,
            )
        ],
        id="version.unknown",
    ),
    pytest.param(
        spec(DEV, v="0.1.0"),
        [
            Problem(
                "version.retired",
                "cdiVersion '0.1.0' is no longer accepted; the earliest is 0.3.0",
                ("cdiVersion",),
                1,
                13,
                E,
            )
        ],
        id="version.retired",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    mounts:\n    - {hostPath: /a, containerPath: /a, type: bind}\n"
        ),
        [
            Problem(
                "version.too-low",
                "cdiVersion 0.3.0 is too low, the content needs at least 0.4.0: mount type (devices[0].containerEdits.mounts[0].type) needs 0.4.0",
                ("cdiVersion",),
                1,
                13,
                E,
            )
        ],
        id="version.too-low",
    ),
    pytest.param(
        spec(DEV, v="v0.3.0"),
        [
            Problem(
                "version.v-prefix",
                "write cdiVersion as '0.3.0', without the 'v'",
                ("cdiVersion",),
                1,
                13,
                W,
            )
        ],
        id="version.v-prefix",
    ),
    pytest.param(
        spec(DEV, k="example.com/-gpu"),
        [
            Problem(
                "kind.invalid", "class '-gpu' must start with an ASCII letter", ("kind",), 2, 7, E
            )
        ],
        id="kind.invalid",
    ),
    pytest.param(
        spec(DEV, k="example.com/" + "c" * 64),
        [
            Problem(
                "kind.long-class",
                "the class is 64 characters long; the specification allows 63",
                ("kind",),
                2,
                7,
                W,
            )
        ],
        id="kind.long-class",
    ),
    pytest.param(
        spec(DEV, k="a" * 254 + "/gpu"),
        [
            Problem(
                "kind.long-vendor",
                "the vendor is 254 characters long; a DNS name has at most 253",
                ("kind",),
                2,
                7,
                W,
            )
        ],
        id="kind.long-vendor",
    ),
    pytest.param(
        spec("- name: gpu_\n  containerEdits:\n    env: [A=1]\n"),
        [
            Problem(
                "device.name",
                "device name 'gpu_' must end with an ASCII letter or digit",
                ("devices", 0, "name"),
                4,
                9,
                E,
            )
        ],
        id="device.name",
    ),
    pytest.param(
        spec(DEV + DEV),
        [
            Problem(
                "device.duplicate",
                "device 'gpu0' is already defined at devices[0]",
                ("devices", 1, "name"),
                7,
                9,
                E,
            )
        ],
        id="device.duplicate",
    ),
    pytest.param(
        spec("- name: gpu0\n  containerEdits: {}\n"),
        [
            Problem(
                "device.empty-edits",
                "the device has no container edits (every device must change the container)",
                ("devices", 0, "containerEdits"),
                5,
                19,
                E,
            )
        ],
        id="device.empty-edits",
    ),
    pytest.param(
        spec("- name: gpu0\n  containerEdits:\n    env: [=1]\n"),
        [
            Problem(
                "env.invalid",
                "env entry '=1' is not KEY=VALUE with a non-empty KEY",
                ("devices", 0, "containerEdits", "env", 0),
                6,
                11,
                E,
            )
        ],
        id="env.invalid",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    deviceNodes:\n    - {path: /dev/x, permissions: rw-}\n"
        ),
        [
            Problem(
                "device-node.permissions",
                "permissions 'rw-' may only contain r, w and m",
                ("devices", 0, "containerEdits", "deviceNodes", 0, "permissions"),
                7,
                35,
                E,
            )
        ],
        id="device-node.permissions",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    hooks:\n    - {hookName: poststop, path: bin/h}\n"
        ),
        [
            Problem(
                "hook.relative-path",
                "hook path 'bin/h' must be absolute",
                ("devices", 0, "containerEdits", "hooks", 0, "path"),
                7,
                34,
                E,
            )
        ],
        id="hook.relative-path",
    ),
    pytest.param(
        spec(DEV, v="0.7.0") + "containerEdits:\n  intelRdt: {closID: ..}\n",
        [
            Problem(
                "intel-rdt.closid",
                "closID '..' must be a file name (not '.' or '..', no '/' or newline)",
                ("containerEdits", "intelRdt", "closID"),
                8,
                22,
                E,
            )
        ],
        id="intel-rdt.closid",
    ),
    pytest.param(
        spec(DEV, v="1.1.0")
        + "containerEdits:\n  netDevices:\n  - {hostInterfaceName: eth0, name: n0}\n  - {hostInterfaceName: eth0, name: n1}\n",
        [
            Problem(
                "net-device.duplicate",
                "host interface 'eth0' is already used by netDevices[0]",
                ("containerEdits", "netDevices", 1, "hostInterfaceName"),
                10,
                25,
                E,
            )
        ],
        id="net-device.duplicate",
    ),
    pytest.param(
        spec(DEV, v="0.6.0") + "annotations:\n  a/b/c: v\n",
        [
            Problem(
                "annotation.key",
                "annotation key 'a/b/c': a qualified name has at most one '/'",
                ("annotations", "a/b/c"),
                8,
                3,
                E,
            )
        ],
        id="annotation.key",
    ),
    pytest.param(
        spec(DEV, v="0.6.0") + "annotations:\n  big: " + "x" * (256 * 1024) + "\n",
        [
            Problem(
                "annotation.size",
                "annotations take 262147 bytes; the limit is 262144 (256 KiB)",
                ("annotations",),
                8,
                3,
                E,
            )
        ],
        id="annotation.size",
    ),
    pytest.param(
        spec(
            "- name: gpu0\n  containerEdits:\n    mounts:\n    - {hostPath: /a, containerPath: a}\n"
        ),
        [
            Problem(
                "path.relative",
                "mount containerPath 'a' is relative; CDI runtimes expect absolute paths",
                ("devices", 0, "containerEdits", "mounts", 0, "containerPath"),
                7,
                37,
                W,
            )
        ],
        id="path.relative",
    ),
]

#: Python 3.13 names a trailing comma where it stands; older versions report what follows it.
_TRAILING_COMMA = (
    ("Illegal trailing comma before end of object", 115)
    if sys.version_info >= (3, 13)
    else ("Expecting property name enclosed in double quotes", 116)
)

BYTES_CASES = [
    pytest.param(
        b"cdiVersion: 0.3.0\nkind: \xff\n",
        "spec.yaml",
        [Problem("parse.encoding", "not UTF-8 text (byte 24)", (), 2, 7, E)],
        id="parse.encoding",
    ),
    pytest.param(
        b'{"cdiVersion": "0.3.0", "kind": "example.com/gpu", "devices": [{"name": "gpu0", "containerEdits": {"env": ["A=1"]},}]}',
        "spec.json",
        [
            Problem(
                "parse.not-json",
                f"not strict JSON ({_TRAILING_COMMA[0]}); read as YAML, as CDI runtimes do",
                (),
                1,
                _TRAILING_COMMA[1],
                W,
            )
        ],
        id="parse.not-json",
    ),
    pytest.param(
        ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 1200))).encode(),
        "spec.yaml",
        [
            Problem(
                "parse.syntax",
                "not valid YAML or JSON: exceeded maximum nesting depth (while increasing block level)",
                (),
                1000,
                1999,
                E,
            )
        ],
        id="parse.syntax",
    ),
]


@pytest.mark.parametrize(("text", "expected"), TEXT_CASES)
def test_rule(text: str, expected: list[Problem]) -> None:
    assert list(validate_text(text, "spec.yaml").problems) == expected


@pytest.mark.parametrize(("data", "source", "expected"), BYTES_CASES)
def test_rule_on_bytes(data: bytes, source: str, expected: list[Problem]) -> None:
    assert list(validate_bytes(data, source).problems) == expected


def test_every_rule_has_a_case() -> None:
    cases = [*TEXT_CASES, *BYTES_CASES]
    covered = {str(case.id) for case in cases}
    tested_elsewhere = {
        "registry.conflict",
        "read.error",
        "spec-dir.missing",
        "spec-dir.unreadable",
    }
    assert set(RULES) - tested_elsewhere <= covered
    for case in cases:
        problems = case.values[-1]
        assert isinstance(problems, list)
        if case.id != "read-ok":
            assert str(case.id) in {p.rule for p in problems}, case.id


def test_problems_past_the_limit_are_counted_in_one_line() -> None:
    """101 duplicates: the first 100 by position, then one line for the last (not aliased)."""
    more = Problem(
        "problems.more", "1 more problem not listed (1 error, 0 warnings)", (), None, None, E
    )
    expected = [*(_duplicate(index, 4 + 3 * index) for index in range(1, 101)), more]
    assert list(validate_text(spec(DEV * 102), "spec.yaml").problems) == expected
