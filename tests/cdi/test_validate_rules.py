"""The validation rules the schema cannot express, at their edges: annotation keys (Kubernetes
qualified names), intelRdt closID, the position of a byte that is not UTF-8, and how problem
paths are written (from issue 26's mutation run)."""

from __future__ import annotations

import pytest

from ctk.cdi.problems import Path, Problem, ProblemSeverity, format_path
from ctk.cdi.validate import annotation_key_error, validate_bytes, validate_text

DNS = "its prefix is not a DNS subdomain (lower-case letters, digits, '-', '.')"
NAME = (
    "the name part must be ASCII letters, digits, '-', '_', '.', "
    "starting and ending with a letter or digit"
)
SPEC = (
    "cdiVersion: {v}\nkind: example.com/gpu\n"
    "devices:\n- name: gpu0\n  containerEdits:\n    env: [A=1]\n"
)


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        pytest.param("key", None, id="name"),
        pytest.param("example.com/key", None, id="prefixed"),
        pytest.param("a/b", None, id="one-letter-labels"),
        pytest.param("x-y.0-9.example/key", None, id="dashes-inside-labels"),
        pytest.param("Example.COM/Key", None, id="letter-case-ignored"),
        pytest.param("example.com/my_key.v-1", None, id="name-allows-underscore-dot-dash"),
        pytest.param("a" * 253 + "/k", None, id="prefix-253"),
        pytest.param("k" * 63, None, id="name-63"),
        pytest.param("a" * 254 + "/k", "its prefix is longer than 253 characters", id="prefix-254"),
        pytest.param("a/b/c", "a qualified name has at most one '/'", id="two-slashes"),
        pytest.param("/key", "the prefix before '/' must not be empty", id="empty-prefix"),
        pytest.param("example.com/", "the name part must not be empty", id="empty-name"),
        pytest.param("", "the name part must not be empty", id="empty"),
        pytest.param("exa_mple.com/key", DNS, id="underscore-in-prefix"),
        pytest.param("a..b/key", DNS, id="empty-label"),
        pytest.param("-a.com/key", DNS, id="label-starts-with-dash"),
        pytest.param("a-.com/key", DNS, id="label-ends-with-dash"),
        pytest.param("ex ample.com/key", DNS, id="space-in-prefix"),
        pytest.param("k" * 64, "the name part is longer than 63 characters", id="name-64"),
        pytest.param("example.com/-key", NAME, id="name-starts-with-dash"),
        pytest.param("key-", NAME, id="name-ends-with-dash"),
        pytest.param("a$b", NAME, id="dollar-inside-name"),
        pytest.param("-ab", NAME, id="dash-first"),
        pytest.param("kéy", NAME, id="not-ascii"),
    ],
)  # fmt: skip
def test_annotation_key_error(key: str, problem: str | None) -> None:
    assert annotation_key_error(key) == problem


def test_an_annotation_key_problem_names_the_key_and_its_position() -> None:
    text = SPEC.format(v="0.6.0") + "annotations:\n  example.com/-key: v\n"
    assert list(validate_text(text, "spec.yaml").problems) == [
        Problem(
            "annotation.key",
            f"annotation key 'example.com/-key': {NAME}",
            ("annotations", "example.com/-key"),
            8,
            3,
            ProblemSeverity.ERROR,
        )
    ]


CLOSID = "closID {!r} must be a file name (not '.' or '..', no '/' or newline)"


@pytest.mark.parametrize(
    ("closid", "message"),
    [
        pytest.param("/", None, id="root-class"),
        pytest.param("gpu", None, id="name"),
        pytest.param("...", None, id="three-dots"),
        pytest.param("c" * 4095, None, id="4095-bytes"),
        pytest.param("c" * 4096, "closID must be shorter than 4096 bytes", id="4096-bytes"),
        pytest.param("é" * 2048, "closID must be shorter than 4096 bytes", id="2048-characters"),
        pytest.param(".", CLOSID.format("."), id="dot"),
        pytest.param("..", CLOSID.format(".."), id="dot-dot"),
        pytest.param("a/b", CLOSID.format("a/b"), id="slash"),
        pytest.param("a\nb", CLOSID.format("a\nb"), id="newline"),
    ],
)
def test_closid_must_be_a_file_name(closid: str, message: str | None) -> None:
    escaped = closid.replace("\n", "\\n")
    text = SPEC.format(v="0.7.0") + f'containerEdits:\n  intelRdt: {{closID: "{escaped}"}}\n'
    report = validate_text(text, "spec.yaml")
    expected = [] if message is None else [("intel-rdt.closid", message)]
    assert [(p.rule, p.message) for p in report.problems] == expected
    assert all(p.path == ("containerEdits", "intelRdt", "closID") for p in report.problems)


@pytest.mark.parametrize(
    ("data", "byte", "line", "column"),
    [
        pytest.param(b"\xff", 0, 1, 1, id="first-byte"),
        pytest.param(b"\n\xff", 1, 2, 1, id="after-a-leading-newline"),
        pytest.param(b"a\nb\xff", 3, 2, 2, id="second-line"),
        pytest.param(b"a\nb\ncd\xff\n", 6, 3, 3, id="third-line"),
        pytest.param(b"kind: \xc3(\n", 6, 1, 7, id="broken-sequence"),
    ],
)
def test_a_byte_that_is_not_utf8_is_located(data: bytes, byte: int, line: int, column: int) -> None:
    report = validate_bytes(data, "spec.yaml")
    problem = Problem("parse.encoding", f"not UTF-8 text (byte {byte})", (), line, column)
    assert (report.source, report.spec, report.problems) == ("spec.yaml", None, (problem,))
    assert not report.valid


def test_a_byte_order_mark_is_allowed() -> None:
    report = validate_bytes(b"\xef\xbb\xbf" + SPEC.format(v="0.3.0").encode(), "spec.json")
    assert (report.source, report.valid, report.device_names) == ("spec.json", True, ("gpu0",))


def test_without_spec_keeps_the_verdict_and_drops_only_the_spec() -> None:
    report = validate_text(SPEC.format(v="v0.3.0"), "spec.yaml")
    assert report.spec is not None
    kept = report.without_spec()
    assert kept.spec is None
    assert (kept.source, kept.problems, kept.minimum_version) == (
        "spec.yaml",
        report.problems,
        "0.3.0",
    )
    assert (kept.declared_version, kept.kind, kept.device_names) == (
        "v0.3.0",
        "example.com/gpu",
        ("gpu0",),
    )
    assert [p.rule for p in kept.warnings] == ["version.v-prefix"]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        pytest.param((), "(document)", id="document"),
        pytest.param(("kind",), "kind", id="key"),
        pytest.param(("devices", 0, "name"), "devices[0].name", id="key-index-key"),
        pytest.param((0,), "[0]", id="index"),
        pytest.param(("a", "b", 2, 3), "a.b[2][3]", id="keys-indexes"),
    ],
)
def test_format_path(path: Path, text: str) -> None:
    assert format_path(path) == text
