"""CDI versions and the minimum version a spec's content needs (reference: specs-go/version.go)."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import pytest

from ctk.cdi.version import (
    KNOWN_VERSIONS,
    Requirement,
    compare_versions,
    minimum_version,
    parse_version,
    requirements,
)


def _spec(device: dict[str, object] | None = None, **top: object) -> dict[str, object]:
    dev: dict[str, object] = {"name": "gpu0", "containerEdits": {"env": ["A=1"]}}
    dev.update(device or {})
    spec: dict[str, object] = {"cdiVersion": "0.3.0", "kind": "example.com/gpu", "devices": [dev]}
    spec.update(top)
    return spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(_spec(), "0.3.0", id="plain"),
        pytest.param(_spec({"containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/a", "type": "bind"}]}}), "0.4.0", id="mount-type"),
        pytest.param(_spec({"containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/a", "type": ""}]}}), "0.3.0", id="empty-mount-type"),
        pytest.param(_spec({"containerEdits": {"deviceNodes": [{"path": "/d", "hostPath": "/h"}]}}), "0.5.0", id="hostpath"),
        pytest.param(_spec({"name": "0"}), "0.5.0", id="digit-name"),
        pytest.param(_spec(annotations={"a": "b"}), "0.6.0", id="spec-annotations"),
        pytest.param(_spec(annotations={}), "0.3.0", id="empty-annotations"),
        pytest.param(_spec({"annotations": {"a": "b"}}), "0.6.0", id="device-annotations"),
        pytest.param(_spec(kind="example.com/gpu.x"), "0.6.0", id="dot-in-class"),
        pytest.param(_spec(kind="example.com/gpu"), "0.3.0", id="dot-in-vendor-only"),
        pytest.param(_spec(containerEdits={"intelRdt": {}}), "0.7.0", id="spec-intelrdt-empty"),
        pytest.param(_spec({"containerEdits": {"intelRdt": {"closID": "c"}}}), "0.7.0", id="device-intelrdt"),
        pytest.param(_spec({"containerEdits": {"additionalGids": [0]}}), "0.7.0", id="additional-gids"),
        pytest.param(_spec(containerEdits={"additionalGids": []}), "0.3.0", id="empty-additional-gids"),
        pytest.param(_spec(containerEdits={"intelRdt": {"schemata": []}}), "1.1.0", id="schemata-present"),
        pytest.param(_spec(containerEdits={"intelRdt": {"enableMonitoring": True}}), "1.1.0", id="monitoring-on"),
        pytest.param(_spec(containerEdits={"intelRdt": {"enableMonitoring": False}}), "0.7.0", id="monitoring-off"),
        pytest.param(_spec({"containerEdits": {"netDevices": [{"hostInterfaceName": "a", "name": "b"}]}}), "1.1.0", id="net-devices"),
        pytest.param(_spec(containerEdits={"netDevices": []}), "0.3.0", id="empty-net-devices"),
        pytest.param({"devices": "junk", "containerEdits": 3, "kind": 5}, "0.3.0", id="wrong-types"),
    ],
)  # fmt: skip
def test_minimum_version(spec: dict[str, object], expected: str) -> None:
    assert minimum_version(spec) == expected


def test_requirements_name_feature_and_place() -> None:
    spec = _spec({"name": "0", "annotations": {"a": "b"}}, containerEdits={"intelRdt": {}})
    assert requirements(spec) == [
        Requirement("0.5.0", "a device name starting with a digit", ("devices", 0, "name")),
        Requirement("0.6.0", "annotations", ("devices", 0, "annotations")),
        Requirement("0.7.0", "intelRdt", ("containerEdits", "intelRdt")),
    ]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("0.3.0", "0.3.0", 0, id="equal"),
        pytest.param("0.10.0", "0.9.0", 1, id="numeric-not-lexical"),
        pytest.param("v0.5.0", "0.6.0", -1, id="v-prefix"),
        pytest.param("1.0.0", "0.8.0", 1, id="major"),
    ],
)
def test_compare_versions(a: str, b: str, expected: int) -> None:
    assert compare_versions(a, b) == expected


@pytest.mark.parametrize("text", ["1.0", "x.y.z", "1.0.0.0", "", "vv1.0.0", "1.0.-1", "\u0661.0.0"])
def test_parse_version_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a version"):
        parse_version(text)


def test_known_versions_and_normalize() -> None:
    assert KNOWN_VERSIONS == (
        "0.3.0",
        "0.4.0",
        "0.5.0",
        "0.6.0",
        "0.7.0",
        "0.8.0",
        "1.0.0",
        "1.1.0",
    )
