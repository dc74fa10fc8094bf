"""How the loader reads scalars as go-yaml v2 and Go's strconv do, and where it says a problem is.

From issue 26's mutation run: each table pins a rule/message/line:column a user sees, for the
corners (signs, underscores, `.`-floats, null spellings, syntax errors, aliases) left unpinned.
"""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ctk.cdi import load
from ctk.cdi.load import load_text, locate
from ctk.cdi.problems import Path, ProblemSeverity
from ctk.cdi.validate import validate_text

HEAD = "cdiVersion: 0.5.0\nkind: example.com/gpu\n"
Seen = tuple[str, str, int | None, int | None]


@pytest.fixture(autouse=True)
def fresh_scalar_memo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test reads its scalars as a fresh process does.

    The loader memoises the tag of each plain scalar for the life of the process, so without
    this a test would only see what some earlier test's text left in the memo.
    """
    monkeypatch.setattr(load, "_PLAIN_TAGS", dict.fromkeys(load._BOOLEANS, load.BOOL))
    load._yaml11_tag.cache_clear()
    yield
    load._yaml11_tag.cache_clear()


def _seen(text: str) -> list[Seen]:
    return [(p.rule, p.message, p.line, p.column) for p in load_text(text).problems]


def _device(name: str = "gpu0", edits: str = "    env: [A=1]\n") -> str:
    return f"{HEAD}devices:\n- name: {name}\n  containerEdits:\n{edits}"


def _quote(what: str) -> str:
    return f"expected a string, found {what}; quote it to make it a string"


@pytest.mark.parametrize(
    ("name", "problems"),
    [
        pytest.param("_1", [], id="underscore-first-is-a-string"),
        pytest.param("._5", [], id="underscore-after-the-dot-is-a-string"),
        pytest.param(".5_0e1", [("parse.type", _quote("the number .5_0e1"), 4, 9)], id="dot-underscore-between-digits-is-a-number"),
        pytest.param("1e3", [("parse.type", _quote("the number 1e3"), 4, 9)], id="exponent"),
        pytest.param("+1e3", [("parse.type", _quote("the number +1e3"), 4, 9)], id="plus-exponent"),
        pytest.param("-1e3", [("parse.type", _quote("the number -1e3"), 4, 9)], id="minus-exponent"),
        pytest.param(".5e3", [("parse.type", _quote("the number .5e3"), 4, 9)], id="dot-exponent"),
        pytest.param("0X1F", [("parse.type", _quote("the integer 0X1F"), 4, 9)], id="upper-hex-integer"),
        pytest.param("0o17", [("parse.type", _quote("the integer 0o17"), 4, 9)], id="yaml12-octal-integer"),
        pytest.param(".inf", [("parse.type", _quote("the number .inf"), 4, 9)], id="infinity-no-base60"),
        pytest.param(".NaN", [("parse.type", _quote("the number .NaN"), 4, 9)], id="nan-no-base60"),
        pytest.param("2001-12-14", [("parse.type", _quote("a value tagged !!timestamp (2001-12-14)"), 4, 9)], id="timestamp"),
        pytest.param("!!null x", [("parse.null", "expected a string, found null (x); omit the field", 4, 9)], id="tagged-null-text-shown"),
    ],
)  # fmt: skip
def test_device_names_go_yaml_reads_as_other_types(name: str, problems: list[Seen]) -> None:
    """A plain scalar that go-yaml v2 reads as a number is no device name (`_1` is one)."""
    assert _seen(_device(name)) == problems


@pytest.mark.parametrize("spelled", ["null", "Null", "NULL", "~", "!!null null"])
def test_every_null_spelling_reads_as_plain_null(spelled: str) -> None:
    assert _seen(_device(edits=f"    env: {spelled}\n")) == [
        ("parse.null", "expected a list, found null; omit the field", 6, 10)
    ]


def _form(text: str, number: int, yaml11: str) -> str:
    return f"CDI runtimes read {text} as the integer {number}, YAML 1.1 as {yaml11}; write {number}"


def _octal(text: str, written: str) -> str:
    return f"{text} is an octal number in YAML 1.2 (and for CDI runtimes) but a string in YAML 1.1; write {written}"


INT64 = "(-9223372036854775808 to 9223372036854775807)"


@pytest.mark.parametrize(
    ("value", "major", "problem"),
    [
        pytest.param("1_0.0", 10, ("parse.number-form", _form("1_0.0", 10, "a floating-point number")), id="underscore-in-float"),
        pytest.param("!!float 1_0.0", 10, ("parse.number-form", _form("1_0.0", 10, "a floating-point number")), id="tagged-underscore-float"),
        pytest.param(".5__0", None, ("parse.type", "'.5__0' is not a number CDI runtimes read"), id="leading-dot-double-underscore"),
        pytest.param(".5_", None, ("parse.type", "'.5_' is not a number CDI runtimes read"), id="leading-dot-trailing-underscore"),
        pytest.param(".5_0e1", 5, ("parse.number-form", "CDI runtimes read .5_0e1 as the integer 5, YAML 1.1 as a string; write 5"), id="leading-dot-underscore-between-digits"),
        pytest.param(".5_0", None, ("parse.type", "expected an integer, found the number .5_0"), id="leading-dot-underscore-fraction"),
        pytest.param("!!float 0x1F", 31, ("parse.number-form", _form("0x1F", 31, "something else")), id="tagged-float-hex"),
        pytest.param("!!float 017", 15, ("parse.number-form", _form("017", 15, "something else")), id="tagged-float-leading-zero-octal"),
        pytest.param("!!float 0b101", 5, ("parse.number-form", _form("0b101", 5, "something else")), id="tagged-float-binary"),
        pytest.param("1e20", None, ("schema.range", f"100000000000000000000 is out of range {INT64}"), id="below-1e21-is-an-integer"),
        pytest.param("1e21", None, ("parse.type", "expected an integer, found the number 1e21"), id="1e21-json-has-an-exponent"),
        pytest.param("-0o17", -15, ("parse.octal", _octal("-0o17", "-017")), id="negative-yaml12-octal"),
        pytest.param("+0o17", 15, ("parse.octal", _octal("+0o17", "+017")), id="plus-yaml12-octal"),
        pytest.param("0o1_7", 15, ("parse.octal", _octal("0o1_7", "01_7")), id="yaml12-octal-underscore"),
    ],
)  # fmt: skip
def test_integer_field_reads_numbers_as_go_does(
    value: str, major: int | None, problem: tuple[str, str]
) -> None:
    loaded = load_text(_device(edits=f"    deviceNodes:\n    - {{path: /d, major: {value}}}\n"))
    assert loaded.value is not None
    node: dict[str, object] = {"path": "/d"} | ({} if major is None else {"major": major})
    assert loaded.value["devices"] == [{"name": "gpu0", "containerEdits": {"deviceNodes": [node]}}]
    assert [(p.rule, p.message, p.line, p.column) for p in loaded.problems] == [(*problem, 7, 25)]


ANNOTATIONS = f"{HEAD}annotations:\n  a: x\n  1: y\n  a: z\n  '': v\n  b: w\ndevices:\n- name: gpu0\n  containerEdits: {{env: [A=1]}}\n"


def test_annotation_keys_duplicate_wrong_type_and_empty() -> None:
    """A bad annotation key is reported where it is and skipped; the keys after it are read."""
    loaded = load_text(ANNOTATIONS)
    assert loaded.value is not None
    assert loaded.value["annotations"] == {"a": "x", "b": "w"}
    assert [(p.rule, p.message, p.path, p.line, p.column) for p in loaded.problems] == [
        ("parse.key-type", "keys must be strings, found the integer 1", ("annotations", "1"), 5, 3),
        ("parse.duplicate-key", "duplicate key 'a' (first on line 4)", ("annotations", "a"), 6, 3),
        ("schema.empty-key", "keys must not be empty", ("annotations", ""), 7, 3),
    ]


def test_device_annotation_duplicate_names_its_first_line() -> None:
    text = f"{HEAD}devices:\n- name: gpu0\n  annotations:\n\n    k: x\n    k: y\n    l: z\n  containerEdits: {{env: [A=1]}}\n"
    loaded = load_text(text)
    assert loaded.value is not None
    assert loaded.value["devices"] == [
        {"name": "gpu0", "annotations": {"k": "x", "l": "z"}, "containerEdits": {"env": ["A=1"]}}
    ]
    assert [(p.rule, p.message, p.path, p.line, p.column) for p in loaded.problems] == [
        ("parse.duplicate-key", "duplicate key 'k' (first on line 7)", ("devices", 0, "annotations", "k"), 8, 5),
    ]  # fmt: skip


def test_complex_keys_get_a_question_mark_in_the_path() -> None:
    text = (
        f"{HEAD}? [a]\n: 1\n{{b: c}}: 2\ndevices:\n- name: gpu0\n  containerEdits: {{env: [A=1]}}\n"
    )
    assert [(p.rule, p.message, p.path, p.line, p.column) for p in load_text(text).problems] == [
        ("parse.key-type", "keys must be strings, found a list", ("?",), 3, 3),
        ("parse.key-type", "keys must be strings, found a mapping", ("?",), 5, 1),
    ]


def test_paths_after_a_shared_node_are_still_found() -> None:
    """An alias makes a node reachable twice; the problems elsewhere keep their paths."""
    text = "cdiVersion: 5\nkind: 6\ndevices:\n- name: gpu0\n  containerEdits: &e\n    env: [A=1]\n- name: gpu1\n  containerEdits: *e\n"
    problems = load_text(text).problems
    assert [(p.path, p.line, p.column) for p in problems] == [
        (("cdiVersion",), 1, 13),
        (("kind",), 2, 7),
    ]


@pytest.mark.parametrize(
    ("text", "reason", "line", "column"),
    [
        pytest.param("a: b: c", "mapping values are not allowed in this context", 1, 5, id="on-the-last-line"),
        pytest.param("a: 1\nb: [1,\n2", "did not find expected ',' or ']' (while parsing a flow sequence)", 3, 2, id="problem-mark-not-context-mark"),
        pytest.param("a: 1\nb: 2\nc: 'x\r", "found unexpected end of stream (while scanning a quoted scalar)", 3, 7, id="end-of-input-past-the-last-line"),
        pytest.param("a: 1\nb: 2\nc: x\x00y\nd: 4\n", "unacceptable character #x0000: control characters are not allowed", 3, 5, id="reader-error-third-line"),
        pytest.param("\nkind: x\x00y\n", "unacceptable character #x0000: control characters are not allowed", 2, 8, id="reader-error-after-a-blank-first-line"),
        pytest.param("k: \x00", "unacceptable character #x0000: control characters are not allowed", 1, 4, id="reader-error-first-line"),
        pytest.param("kind: 日本\x00\n", "unacceptable character #x0000: control characters are not allowed", 1, 9, id="reader-error-after-wide-characters"),
        pytest.param("a: é\nkind: é\x00", "unacceptable character #x0000: control characters are not allowed", 2, 8, id="reader-error-after-two-byte-characters"),
    ],
)  # fmt: skip
def test_syntax_errors_say_where(text: str, reason: str, line: int, column: int) -> None:
    loaded = load_text(text)
    assert (loaded.root, loaded.value) == (None, None)
    assert _seen(text) == [("parse.syntax", f"not valid YAML or JSON: {reason}", line, column)]


@pytest.mark.parametrize(
    ("text", "index", "line", "column"),
    [
        pytest.param("a: 1\nb: \ud800\nc: 3\n", 8, 2, 4, id="second-line"),
        pytest.param("\n\ud800", 1, 2, 1, id="after-a-blank-line"),
        pytest.param("a: 1\nb: 2\nc: 3\nd: x\udfff\ne: 5\n", 19, 4, 5, id="fourth-line"),
    ],
)
def test_lone_surrogate_position(text: str, index: int, line: int, column: int) -> None:
    assert _seen(text) == [
        (
            "parse.encoding",
            f"not valid Unicode text (character {index}: surrogates not allowed)",
            line,
            column,
        )
    ]


MISCASED = f"{HEAD}devices:\n- name: gpu0\n  ContainerEdits:\n    env: [A=1]\n    Mounts:\n    - {{hostPath: /a, containerPath: rel}}\n"


def test_problem_under_a_miscased_key_is_positioned_at_its_value() -> None:
    """Rules name the specification's spelling; the position is found under the file's."""
    problems = validate_text(MISCASED).problems
    assert [(p.rule, p.path, p.line, p.column, p.severity) for p in problems] == [
        ("parse.key-case", ("devices", 0, "ContainerEdits"), 5, 3, ProblemSeverity.WARNING),
        ("parse.key-case", ("devices", 0, "ContainerEdits", "Mounts"), 7, 5, ProblemSeverity.WARNING),
        ("path.relative", ("devices", 0, "containerEdits", "mounts", 0, "containerPath"), 8, 37, ProblemSeverity.WARNING),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "at_key", "where"),
    [
        pytest.param(("devices", 0, "containerEdits", "env", 0), False, (6, 11), id="through-a-miscased-key"),
        pytest.param(("devices", 0, "CONTAINEREDITS", "env"), False, (6, 10), id="any-case-asked"),
        pytest.param(("devices", 0, "containerEdits"), True, (5, 3), id="the-miscased-key-itself"),
        pytest.param(("devices", 0, "containerEdits", "hooks"), False, (6, 5), id="missing-key-gives-its-parent"),
        pytest.param(("devices", 0, "annotations", "a"), False, (4, 3), id="missing-key-of-a-device"),
        pytest.param(("devices", 0, "env"), False, (8, 8), id="exact-spelling-first"),
        pytest.param(("devices", 0, "Env"), False, (7, 8), id="exact-spelling-other-case"),
        pytest.param(("devices", 0, "ENV"), False, (7, 8), id="first-of-the-case-variants"),
    ],
)  # fmt: skip
def test_locate(path: Path, at_key: bool, where: tuple[int, int]) -> None:
    text = f"{HEAD}devices:\n- name: gpu0\n  ContainerEdits:\n    env: [A=1]\n  Env: [B=2]\n  env: {{}}\n"
    root = load_text(text).root
    assert locate(root, path, at_key=at_key) == where


def _aliases(k: int, m: int, f: int | None = None) -> str:
    """`k` scalars under an anchor, `m` aliases of them, and `f` more scalars (or no third key)."""
    text = "a: &a [" + ",".join("x" * k) + "]\nb: [" + ",".join(["*a"] * m) + "]\n"
    return text if f is None else text + "c: [" + ",".join("y" * f) + "]\n"


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        pytest.param(_aliases(11, 8332), None, id="exactly-the-limit"),
        pytest.param(_aliases(11, 8333), "YAML aliases expand 16 nodes to 100012 (more than 100000); not read", id="past-the-limit"),
        pytest.param(_aliases(4742, 19, 5264), None, id="exactly-tenfold"),
        pytest.param(_aliases(4743, 19, 5265), "YAML aliases expand 10015 nodes to 100151 (more than 100000); not read", id="just-past-tenfold"),
        pytest.param(_aliases(20000, 5, 0), None, id="large-but-under-tenfold"),
    ],
)  # fmt: skip
def test_alias_expansion_limit(text: str, refused: str | None) -> None:
    """Refused: more than 100,000 nodes once expanded and more than ten times the distinct ones."""
    loaded = load_text(text)
    aliases = [p.message for p in loaded.problems if p.rule == "parse.aliases"]
    assert aliases == ([] if refused is None else [refused])
    assert (loaded.value is None) == (refused is not None)


def test_a_problem_in_a_node_shared_through_aliases_is_one_problem_at_the_anchor() -> None:
    """An anchor's node, decoded once for each alias, is reported once, with the path of its
    first place in the document (where the anchor is, and where line:column points)."""
    text = (
        f"{HEAD}devices:\n- name: a\n  containerEdits: &e\n    env: [5]\n"
        "- name: b\n  containerEdits: *e\n- name: c\n  containerEdits: *e\n"
    )
    problems = load_text(text).problems
    assert [(p.rule, p.path, p.line, p.column) for p in problems] == [
        ("parse.type", ("devices", 0, "containerEdits", "env", 0), 6, 11)
    ]
