"""Strict decoding: how YAML scalars, keys and documents become spec values (or problems)."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import pytest

from ctk.cdi.load import load_text
from ctk.cdi.problems import Problem, ProblemSeverity

SPEC = (
    "cdiVersion: 1.1.0\nkind: example.com/gpu\ndevices:\n- name: {name}\n  containerEdits:\n{edits}"
)


def _decoded(name: str, edits: str) -> tuple[object, list[tuple[str, str]]]:
    loaded = load_text(SPEC.format(name=name, edits=edits))
    assert loaded.value is not None
    devices = loaded.value["devices"]
    assert isinstance(devices, list)
    return devices[0], [(p.rule, p.message) for p in loaded.problems]


@pytest.mark.parametrize(
    ("name", "edits", "device", "problems"),
    [
        pytest.param('"0"', "    env: [A=1]\n", {"name": "0", "containerEdits": {"env": ["A=1"]}}, [], id="quoted-digit-name"),
        pytest.param("gpu0", "    deviceNodes:\n    - {path: /d, fileMode: 0666, major: 0x1F, uid: 1_000}\n", {"name": "gpu0", "containerEdits": {"deviceNodes": [{"path": "/d", "fileMode": 438, "major": 31, "uid": 1000}]}}, [], id="yaml11-integers"),
        pytest.param("gpu0", "    intelRdt: {enableMonitoring: on}\n", {"name": "gpu0", "containerEdits": {"intelRdt": {"enableMonitoring": True}}}, [], id="yaml11-boolean-on"),
        pytest.param("gpu0", "    intelRdt: {enableMonitoring: n}\n", {"name": "gpu0", "containerEdits": {"intelRdt": {"enableMonitoring": False}}}, [], id="go-yaml-boolean-n"),
        pytest.param("y", "    env: [A=1]\n", {"containerEdits": {"env": ["A=1"]}}, [("parse.type", "expected a string, found the boolean y; quote it to make it a string")], id="unquoted-y-name"),
        pytest.param("1:0", "    env: [A=1]\n", {"name": "1:0", "containerEdits": {"env": ["A=1"]}}, [("parse.base60", "1:0 is a string for CDI runtimes but a base-60 number in YAML 1.1; quote it")], id="unquoted-base60-name"),
        pytest.param("1:30.5", "    env: [A=1]\n", {"name": "1:30.5", "containerEdits": {"env": ["A=1"]}}, [("parse.base60", "1:30.5 is a string for CDI runtimes but a base-60 number in YAML 1.1; quote it")], id="unquoted-base60-float-name"),
        pytest.param("!!str 1:0", "    env: [A=1]\n", {"name": "1:0", "containerEdits": {"env": ["A=1"]}}, [], id="tagged-base60-name"),
        pytest.param("0:1", "    env: [A=1]\n", {"name": "0:1", "containerEdits": {"env": ["A=1"]}}, [], id="leading-zero-is-not-base60"),
        pytest.param("1.5", "    env: [A=1]\n", {"containerEdits": {"env": ["A=1"]}}, [("parse.type", "expected a string, found the number 1.5; quote it to make it a string")], id="unquoted-float-name"),
        pytest.param("gpu0", "    env: ~\n", {"name": "gpu0", "containerEdits": {}}, [("parse.null", "expected a list, found null; omit the field")], id="null-list"),
        pytest.param("gpu0", "    env: [A=1]\n    <<: {mounts: [{hostPath: /a, containerPath: /a}], env: [B=2]}\n", {"name": "gpu0", "containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/a"}], "env": ["A=1"]}}, [], id="merge-key-explicit-wins"),
        pytest.param("gpu0", "    env: [A=1]\n    !!merge m: {mounts: [{hostPath: /a, containerPath: /a}]}\n", {"name": "gpu0", "containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/a"}], "env": ["A=1"]}}, [], id="merge-key-by-tag-not-spelled"),
        pytest.param("gpu0", "    <<: [{env: [A=1]}, {env: [B=1], hooks: []}]\n", {"name": "gpu0", "containerEdits": {"env": ["A=1"], "hooks": []}}, [], id="merge-earlier-mapping-wins"),
        pytest.param("gpu0", "    &e\n    env: [A=1]\n    <<: *e\n", {"name": "gpu0", "containerEdits": {"env": ["A=1"]}}, [("parse.merge", "a merge key (<<) includes its own mapping")], id="merge-itself"),
        pytest.param("gpu0", "    env: [A=1]\n    env: [B=1]\n", {"name": "gpu0", "containerEdits": {"env": ["A=1"]}}, [("parse.duplicate-key", "duplicate key 'env' (first on line 6)")], id="duplicate-key"),
        pytest.param("gpu0", "    env: [A=1]\n    ENV: [B=1]\n", {"name": "gpu0", "containerEdits": {"env": ["A=1"]}}, [("parse.case-duplicate", "key 'ENV' differs only in case from 'env'")], id="case-duplicate"),
    ],
)  # fmt: skip
def test_decoding(name: str, edits: str, device: object, problems: list[tuple[str, str]]) -> None:
    assert _decoded(name, edits) == (device, problems)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("!!int abc", "'abc' is not a YAML integer", id="letters"),
        pytest.param('!!int ""', "'' is not a YAML integer", id="empty"),
        pytest.param("!!int 0x", "'0x' is not a YAML integer", id="bare-hex-prefix"),
        pytest.param("!!int 0b2", "'0b2' is not a YAML integer", id="bad-binary"),
        pytest.param(
            "!!float 1.5", "expected an integer, found the number 1.5", id="explicit-float"
        ),
        pytest.param(
            "!!float abc", "'abc' is not a number CDI runtimes read", id="explicit-float-letters"
        ),
        pytest.param(
            "9" * 400 + ".0",
            "'9999999999999999999999999999999999999...' is not a number CDI runtimes read",
            id="float-overflow-is-a-string-for-go",
        ),
        pytest.param("0o_", "expected an integer, found the string '0o_'", id="octal-prefix-only"),
        pytest.param("'0o7'", "expected an integer, found the string '0o7'", id="quoted-octal"),
    ],
)
def test_explicit_tags_that_lie(value: str, problem: str) -> None:
    edits = f"    deviceNodes:\n    - {{path: /d, major: {value}}}\n"
    assert _decoded("gpu0", edits) == (
        {"name": "gpu0", "containerEdits": {"deviceNodes": [{"path": "/d"}]}},
        [("parse.type", problem)],
    )


def test_json_is_read_as_yaml_with_positions() -> None:
    loaded = load_text('{"cdiVersion": "0.3.0",\n "kind": 5}', strict_json=True)
    assert loaded.value == {"cdiVersion": "0.3.0"}
    assert loaded.problems == (
        Problem(
            "parse.type",
            "expected a string, found the integer 5; quote it to make it a string",
            ("kind",),
            2,
            10,
        ),
        Problem("schema.required", "missing required field 'devices'", (), 1, 1),
    )


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n", "~\n", "null", "---\n...\n"])
def test_empty_documents(text: str) -> None:
    loaded = load_text(text)
    assert (loaded.root, loaded.value) == (None, None)
    assert loaded.problems == (Problem("parse.empty", "the file holds no spec (empty document)"),)


def _form(text: str, number: int, yaml11: str) -> tuple[str, str]:
    return (
        "parse.number-form",
        f"CDI runtimes read {text} as the integer {number}, YAML 1.1 as {yaml11}; write {number}",
    )


@pytest.mark.parametrize(
    ("field", "value", "expected", "problems"),
    [
        pytest.param("major", "1e3", 1000, [_form("1e3", 1000, "a string")], id="exponent"),
        pytest.param("major", "1E+3", 1000, [_form("1E+3", 1000, "a string")], id="exponent-upper"),
        pytest.param("major", "1.0", 1, [_form("1.0", 1, "a floating-point number")], id="integral-float"),
        pytest.param("major", "!!float 1", 1, [_form("1", 1, "something else")], id="explicit-float-tag"),
        pytest.param("major", "2.5e1", 25, [_form("2.5e1", 25, "a string")], id="fraction-with-exponent"),
        pytest.param("major", "08", 8, [_form("08", 8, "a string")], id="not-octal-so-float"),
        pytest.param("major", "0X1F", 31, [_form("0X1F", 31, "a string")], id="upper-hex"),
        pytest.param("major", "-0.0", 0, [_form("-0.0", 0, "a floating-point number")], id="minus-zero-signed"),
        pytest.param("major", "1.152921504606846976e18", 1152921504606847000, [_form("1.152921504606846976e18", 1152921504606847000, "a string")], id="shortest-digits-like-go-json"),
        pytest.param("major", "1.5", None, [("parse.type", "expected an integer, found the number 1.5")], id="fraction"),
        pytest.param("major", "1.5e0", None, [("parse.type", "expected an integer, found the number 1.5e0")], id="fraction-exponent"),
        pytest.param("major", ".inf", None, [("parse.type", "expected an integer, found the number .inf")], id="infinity"),
        pytest.param("major", ".nan", None, [("parse.type", "expected an integer, found the number .nan")], id="nan"),
        pytest.param("major", "1e400", None, [("parse.type", "expected an integer, found the string '1e400'")], id="overflow-is-a-string-for-go"),
        pytest.param("major", "1e19", None, [("schema.range", "10000000000000000000 is out of range (-9223372036854775808 to 9223372036854775807)")], id="float-out-of-int64"),
        pytest.param("major", "1:30", None, [("parse.type", "expected an integer, found 1:30: a base-60 number in YAML 1.1 but a string for CDI runtimes")], id="base60"),
        pytest.param("major", "1:30.5", None, [("parse.type", "expected a number, found 1:30.5: a base-60 number in YAML 1.1 but a string for CDI runtimes")], id="base60-float"),
        pytest.param("uid", "-0.0", None, [("schema.range", "-0.0 is -0, which CDI runtimes refuse here")], id="minus-zero-unsigned"),
        pytest.param("uid", "4.294967295e9", 4294967295, [_form("4.294967295e9", 4294967295, "a string")], id="uint32-max"),
        pytest.param("uid", "4.294967296e9", None, [("schema.range", "4294967296 is out of range (0 to 4294967295)")], id="uint32-max-plus-one"),
        pytest.param("major", "0o17", 15, [("parse.octal", "0o17 is an octal number in YAML 1.2 (and for CDI runtimes) but a string in YAML 1.1; write 017")], id="yaml12-octal"),
        pytest.param("major", "017", 15, [], id="yaml11-octal"),
        pytest.param("major", "+1_000", 1000, [], id="sign-and-underscore"),
        pytest.param("major", "0" * 5000 + "17", 15, [], id="many-leading-zeros"),
        pytest.param("major", "9" * 5000, None, [("schema.range", "the integer 9999999999999999999999999999999999999... is out of range (-9223372036854775808 to 9223372036854775807)")], id="more-digits-than-python-converts"),
        pytest.param("major", "-0x" + "f" * 5000, None, [("schema.range", "the integer -0xffffffffffffffffffffffffffffffffff... is out of range (-9223372036854775808 to 9223372036854775807)")], id="huge-hex"),
        pytest.param("major", "0x" + "f" * 30, None, [("schema.range", "1329227995784915872903807060280344575 is out of range (-9223372036854775808 to 9223372036854775807)")], id="big-hex"),
    ],
)  # fmt: skip
def test_integers_as_cdi_runtimes_read_them(
    field: str, value: str, expected: int | None, problems: list[tuple[str, str]]
) -> None:
    """go-yaml v2 reads the scalar, sigs.k8s.io/yaml turns it into JSON, Go decodes the field."""
    node: dict[str, object] = {"path": "/d"} | ({} if expected is None else {field: expected})
    edits = f"    deviceNodes:\n    - {{path: /d, {field}: {value}}}\n"
    assert _decoded("gpu0", edits) == (
        {"name": "gpu0", "containerEdits": {"deviceNodes": [node]}},
        problems,
    )


@pytest.mark.parametrize(
    ("value", "kind"),
    [("1e3", "number"), ("1E3", "number"), ("08", "number"), ("+.5", "number"), ("1_0e1", "number"), ("0X1F", "integer"), ("0o17", "integer")],
)  # fmt: skip
def test_numbers_for_go_are_no_strings(value: str, kind: str) -> None:
    """sigs.k8s.io/yaml would turn a device name `1e3` into "1000": not the name written."""
    assert _decoded(value, "    env: [A=1]\n") == (
        {"containerEdits": {"env": ["A=1"]}},
        [
            (
                "parse.type",
                f"expected a string, found the {kind} {value}; quote it to make it a string",
            )
        ],
    )


def test_json_exponent_where_an_integer_is_needed() -> None:
    text = '{"cdiVersion": "0.3.0", "kind": "v.com/c", "devices": [{"name": "d", "containerEdits": {"deviceNodes": [{"path": "/dev/d", "uid": 1e3, "gid": 5.0E0}]}}]}'
    loaded = load_text(text, strict_json=True)
    assert loaded.value == {
        "cdiVersion": "0.3.0",
        "kind": "v.com/c",
        "devices": [
            {
                "name": "d",
                "containerEdits": {"deviceNodes": [{"path": "/dev/d", "uid": 1000, "gid": 5}]},
            }
        ],
    }
    assert loaded.problems == (
        Problem(
            "parse.number-form",
            "CDI runtimes read 1e3 as the integer 1000, YAML 1.1 as a string; write 1000",
            ("devices", 0, "containerEdits", "deviceNodes", 0, "uid"),
            1,
            text.index("1e3") + 1,
            ProblemSeverity.WARNING,
        ),
        Problem(
            "parse.number-form",
            "CDI runtimes read 5.0E0 as the integer 5, YAML 1.1 as a string; write 5",
            ("devices", 0, "containerEdits", "deviceNodes", 0, "gid"),
            1,
            text.index("5.0E0") + 1,
            ProblemSeverity.WARNING,
        ),
    )


def test_long_plain_scalars_are_not_memoised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo of plain-scalar tags lives as long as the process: a huge scalar stays out."""
    from ctk.cdi import load

    # a fresh memo: other tests may have filled the process's memo to its bound
    monkeypatch.setattr(load, "_PLAIN_TAGS", dict.fromkeys(load._BOOLEANS, load.BOOL))
    short, long = "memo-short-" + "x" * 200, "memo-long-" + "x" * 300
    for name in (short, long):
        load_text(SPEC.format(name=name, edits="    env: [A=1]\n"))
    assert (short in load._PLAIN_TAGS, long in load._PLAIN_TAGS) == (True, False)
