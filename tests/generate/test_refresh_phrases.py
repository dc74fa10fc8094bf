"""`ctk cdi refresh`'s change phrases for the rarer differences (devices added, annotations,
intelRdt and other edits, fields CDI leaves to vendors) and its `--json` diff; issue 26's
mutation run found them unpinned (tests/generate/test_refresh_plan.py has the common ones).
"""

from __future__ import annotations

import json

import pytest

from ctk.cdi.refresh import Outcome, RefreshPlan, plan_refresh, read_spec, refresh_json

SAME_DIFF = {
    "same": True,
    "fields": {},
    "devices": {"added": [], "removed": [], "changed": {}},
    "commonEdits": {},
    "otherFields": False,
}


def _spec(
    devices: tuple[str, ...] = ("0",),
    *,
    annotations: dict[str, str] | None = None,
    device_rdt: dict[str, str] | None = None,
    common_rdt: dict[str, str] | None = None,
    spec_annotations: dict[str, str] | None = None,
) -> dict[str, object]:
    entries = []
    for name in devices:
        edits: dict[str, object] = {"deviceNodes": [{"path": f"/dev/nvidia{name}"}]}
        if device_rdt is not None:
            edits["intelRdt"] = device_rdt
        entry: dict[str, object] = {"name": name, "containerEdits": edits}
        if annotations is not None:
            entry["annotations"] = annotations
        entries.append(entry)
    common: dict[str, object] = {"env": ["NVIDIA_VISIBLE_DEVICES=void"]}
    if common_rdt is not None:
        common["intelRdt"] = common_rdt
    spec: dict[str, object] = {
        "cdiVersion": "0.6.0",
        "kind": "nvidia.com/gpu",
        "devices": entries,
        "containerEdits": common,
    }
    if spec_annotations is not None:
        spec["annotations"] = spec_annotations
    return spec


def _text(data: dict[str, object]) -> str:
    return json.dumps(data) + "\n"


FOUR = ("0", "1", "2", "3")
RDT = {"closID": "gpu"}


@pytest.mark.parametrize(
    ("old", "new", "changes"),
    [
        pytest.param(_spec(), _spec(("0", "1", "2")), ("added 1, 2",), id="devices-added"),
        pytest.param(
            _spec(annotations={"a": "1"}),
            _spec(),
            ("device edits changed: 0 (annotations)",),
            id="device-annotations",
        ),
        pytest.param(
            _spec(FOUR, annotations={"a": "1"}),
            _spec(FOUR),
            ("device edits changed: 0, 1, 2, 3 (annotations)",),
            id="four-devices-are-listed",
        ),
        pytest.param(
            _spec(device_rdt=RDT),
            _spec(),
            ("device edits changed: 0 (other edits)",),
            id="device-intel-rdt",
        ),
        pytest.param(
            _spec(common_rdt=RDT), _spec(), ("common other edits changed",), id="common-intel-rdt"
        ),
        pytest.param(
            _spec(spec_annotations={"a": "1"}),
            _spec(),
            ("other fields changed",),
            id="spec-annotations",
        ),
    ],
)
def test_update_phrases(
    old: dict[str, object], new: dict[str, object], changes: tuple[str, ...]
) -> None:
    assert plan_refresh(_text(old).encode(), _text(new), new) == RefreshPlan(
        Outcome.UPDATE, changes
    )


def test_a_kept_spec_in_another_layout_has_its_diff_in_the_json() -> None:
    new = _spec()
    plan = plan_refresh(json.dumps(new, indent=4).encode(), _text(new), new)
    assert refresh_json(plan, "/etc/cdi/nvidia.yaml", {"devices": 1}) == {
        "output": "/etc/cdi/nvidia.yaml",
        "outcome": "keep",
        "written": False,
        "devices": 1,
        "changes": [],
        "diff": SAME_DIFF,
    }


@pytest.mark.parametrize(
    ("before", "outcome"),
    [
        pytest.param(None, "create", id="create"),
        pytest.param(b"\xff\xfe", "replace", id="replace"),
    ],
)
def test_json_of_a_spec_written_without_a_diff(before: bytes | None, outcome: str) -> None:
    new = _spec()
    plan = plan_refresh(before, _text(new), new)
    assert refresh_json(plan, "out.json", {}) == {
        "output": "out.json",
        "outcome": outcome,
        "written": True,
        "changes": [],
        "diff": None,
    }


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"\xff\xfe", None, id="not-utf8"),
        pytest.param(b"kind: a.com/b\ndevices: []\n", {"kind": "a.com/b", "devices": []}, id="ok"),
    ],
)
def test_read_spec(data: bytes, expected: dict[str, object] | None) -> None:
    assert read_spec(data) == expected
