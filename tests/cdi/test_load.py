"""Strict decoding: how YAML scalars, keys and documents become spec values (or problems)."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import pytest

from ctk.cdi.load import load_text
from ctk.cdi.problems import Problem

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
        pytest.param("1:0", "    env: [A=1]\n", {"containerEdits": {"env": ["A=1"]}}, [("parse.type", "expected a string, found the integer 1:0; quote it to make it a string")], id="unquoted-base60-name"),
        pytest.param("0:1", "    env: [A=1]\n", {"name": "0:1", "containerEdits": {"env": ["A=1"]}}, [], id="leading-zero-is-not-base60"),
        pytest.param("1.5", "    env: [A=1]\n", {"containerEdits": {"env": ["A=1"]}}, [("parse.type", "expected a string, found the number 1.5; quote it to make it a string")], id="unquoted-float-name"),
        pytest.param("gpu0", "    deviceNodes:\n    - {path: /d, major: 1.0}\n", {"name": "gpu0", "containerEdits": {"deviceNodes": [{"path": "/d"}]}}, [("parse.type", "expected an integer, found the number 1.0")], id="float-for-integer"),
        pytest.param("gpu0", "    env: ~\n", {"name": "gpu0", "containerEdits": {}}, [("parse.null", "expected a list, found null; omit the field")], id="null-list"),
        pytest.param("gpu0", "    env: [A=1]\n    <<: {mounts: [{hostPath: /a, containerPath: /a}], env: [B=2]}\n", {"name": "gpu0", "containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/a"}], "env": ["A=1"]}}, [], id="merge-key-explicit-wins"),
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
        pytest.param("!!float 1", "expected an integer, found the number 1", id="explicit-float"),
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
