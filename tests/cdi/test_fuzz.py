"""Bad input never raises: any bytes give a report with known rule ids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.cdi.validate import RULES, validate_bytes, validate_text

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
