"""Bad input never raises: any bytes give a report with known rule ids."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.cdi.problems import Problem
from ctk.cdi.validate import RULES, validate_bytes, validate_text

CASES = Path(__file__).parent.parent / "fixtures" / "conformance" / "cdi-cases"
_YAMLISH = st.text(
    alphabet=st.sampled_from(list("{}[],:-'\"&*!|>#%@` \n\t=/.aZ09é\x00")), max_size=80
)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(["spec.yaml", "spec.json"]))
def test_any_bytes_give_a_report(data: bytes, source: str) -> None:
    report = validate_bytes(data, source)
    assert report.source == source
    assert {p.rule for p in report.problems} <= set(RULES)


@settings(max_examples=400, deadline=None)
@given(_YAMLISH)
def test_yaml_like_text_gives_a_report(text: str) -> None:
    report = validate_text(text, "spec.yaml")
    assert {p.rule for p in report.problems} <= set(RULES)
    assert report.valid is False  # none of these can be a complete spec


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_device_name_in_a_spec_gives_a_report(name: str) -> None:
    text = (
        'cdiVersion: "1.1.0"\nkind: example.com/gpu\ndevices:\n'
        f"- name: {name}\n  containerEdits:\n    env: [A=1]\n"
    )
    report = validate_text(text, "spec.yaml")
    assert {p.rule for p in report.problems} <= set(RULES)


_VALID = sorted((CASES / "valid").iterdir())


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_VALID),
    st.lists(
        st.tuples(st.sampled_from(["drop", "dup", "char"]), st.integers(0, 10**6), st.characters()),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_specs_give_a_report(path: Path, edits: list[tuple[str, int, str]]) -> None:
    """Real specs with lines dropped or repeated and characters replaced never raise."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for action, where, char in edits:
        if not lines:
            break
        at = where % len(lines)
        if action == "drop":
            del lines[at]
        elif action == "dup":
            lines.insert(at, lines[at])
        elif lines[at]:
            column = where % len(lines[at])
            lines[at] = lines[at][:column] + char + lines[at][column + 1 :]
    report = validate_text("".join(lines), path.name)
    assert {p.rule for p in report.problems} <= set(RULES)


_TAGS = st.sampled_from(
    ["", "!!int ", "!!float ", "!!bool ", "!!null ", "!!str ", "!!binary ", "!!timestamp ", "!x "]
)
_SCALAR = st.text(alphabet=st.sampled_from(list("0123456789abcxobe_+-.:=/ ")), max_size=8)
_TEMPLATE = (
    "cdiVersion: {0}\nkind: {1}\ndevices:\n- name: {2}\n  containerEdits:\n"
    "    env: [{3}]\n    deviceNodes:\n    - {{path: {4}, major: {5}, uid: {6}, fileMode: {7}}}\n"
    "    intelRdt: {{enableMonitoring: {8}, closID: {9}}}\n"
    "    hooks:\n    - {{hookName: {10}, path: {11}, timeout: {12}}}\n"
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TAGS, _SCALAR), min_size=13, max_size=13))
def test_any_tagged_scalar_in_any_field_gives_a_report(fields: list[tuple[str, str]]) -> None:
    text = _TEMPLATE.format(*(f"{tag}'{value}'" if tag else repr(value) for tag, value in fields))
    report = validate_text(text, "spec.yaml")
    assert {p.rule for p in report.problems} <= set(RULES)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TAGS, _SCALAR), min_size=13, max_size=13))
def test_any_plain_tagged_scalar_gives_a_report(fields: list[tuple[str, str]]) -> None:
    text = _TEMPLATE.format(*(f"{tag}{value}" for tag, value in fields))
    report = validate_text(text, "spec.yaml")
    assert {p.rule for p in report.problems} <= set(RULES)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, categories=None), max_size=40))
def test_any_python_text_gives_a_report(text: str) -> None:
    """Even text no file can hold (lone surrogates) is a problem, not an exception."""
    report = validate_text("cdiVersion: " + text, "spec.yaml")
    assert {p.rule for p in report.problems} <= set(RULES)


def test_lone_surrogate() -> None:
    report = validate_text("kind: a\ud800", "spec.yaml")
    assert report.problems == (
        Problem(
            "parse.encoding",
            "not valid Unicode text (character 7: surrogates not allowed)",
            (),
            1,
            8,
        ),
    )
