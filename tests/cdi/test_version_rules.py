"""Which CDI version each feature of a spec needs, and where it is found (specs-go/version.go):
every feature's version, name and path, in spec and device edits, at list indexes past 0, and
the wrong types the requirements tolerate (from the mutation run on ctk/cdi/version.py)."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import pytest

from ctk.cdi.version import (
    Requirement,
    compare_versions,
    highest_version,
    minimum_version,
    parse_version,
    requirements,
)

TOP = ("containerEdits",)
DEV1 = ("devices", 1, "containerEdits")


def _with_edits(edits: object) -> dict[str, object]:
    """A spec whose own edits and second device's edits are both ``edits``."""
    return {
        "cdiVersion": "0.3.0",
        "kind": "example.com/gpu",
        "containerEdits": edits,
        "devices": [
            {"name": "gpu0", "containerEdits": {"env": ["A=1"]}},
            {"name": "gpu1", "containerEdits": edits},
        ],
    }


def _both(*found: tuple[str, str, tuple[str | int, ...]]) -> list[Requirement]:
    """The requirements ``found`` (version, feature, path within the edits) in both blocks."""
    return [
        Requirement(version, feature, (*block, *path))
        for block in (TOP, DEV1)
        for version, feature, path in found
    ]


MOUNT = {"hostPath": "/a", "containerPath": "/a"}


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param(
            {"mounts": [MOUNT, {**MOUNT, "type": "bind"}]},
            _both(("0.4.0", "mount type", ("mounts", 1, "type"))),
            id="mount-type",
        ),
        pytest.param({"mounts": [{**MOUNT, "type": ""}, MOUNT]}, [], id="mount-type-empty"),
        pytest.param(
            {"deviceNodes": [{"path": "/d"}, {"path": "/e", "hostPath": "/h"}]},
            _both(("0.5.0", "device node hostPath", ("deviceNodes", 1, "hostPath"))),
            id="device-node-hostpath",
        ),
        pytest.param({"deviceNodes": [{"path": "/d", "hostPath": ""}]}, [], id="hostpath-empty"),
        pytest.param({"intelRdt": {}}, _both(("0.7.0", "intelRdt", ("intelRdt",))), id="rdt"),
        pytest.param(
            {"intelRdt": {"closID": "c", "schemata": []}},
            _both(
                ("0.7.0", "intelRdt", ("intelRdt",)),
                ("1.1.0", "intelRdt.schemata", ("intelRdt", "schemata")),
            ),
            id="rdt-schemata-empty-list",
        ),
        pytest.param(
            {"intelRdt": {"schemata": None, "enableMonitoring": True}},
            _both(
                ("0.7.0", "intelRdt", ("intelRdt",)),
                ("1.1.0", "intelRdt.enableMonitoring", ("intelRdt", "enableMonitoring")),
            ),
            id="rdt-monitoring",
        ),
        pytest.param(
            {"intelRdt": {"enableMonitoring": False}},
            _both(("0.7.0", "intelRdt", ("intelRdt",))),
            id="rdt-monitoring-off",
        ),
        pytest.param(
            {"intelRdt": {"enableMonitoring": 1}},
            _both(("0.7.0", "intelRdt", ("intelRdt",))),
            id="rdt-monitoring-not-a-boolean",
        ),
        pytest.param(
            {"intelRdt": "junk"}, _both(("0.7.0", "intelRdt", ("intelRdt",))), id="rdt-not-a-map"
        ),
        pytest.param({"intelRdt": None}, [], id="rdt-null"),
        pytest.param(
            {"additionalGids": [5]},
            _both(("0.7.0", "additionalGids", ("additionalGids",))),
            id="additional-gids",
        ),
        pytest.param({"additionalGids": []}, [], id="additional-gids-empty"),
        pytest.param(
            {"netDevices": [{"name": "n", "hostInterfaceName": "h"}]},
            _both(("1.1.0", "netDevices", ("netDevices",))),
            id="net-devices",
        ),
        pytest.param({"netDevices": []}, [], id="net-devices-empty"),
        pytest.param(
            {"mounts": "junk", "deviceNodes": {"hostPath": "/h"}, "additionalGids": "1"},
            [],
            id="lists-of-the-wrong-type",
        ),
        pytest.param(
            {"mounts": ["type", ["type"]], "deviceNodes": ["hostPath", None]},
            [],
            id="items-of-the-wrong-type",
        ),
    ],
)
def test_each_edits_feature_needs_its_version(edits: object, expected: list[Requirement]) -> None:
    assert requirements(_with_edits(edits)) == expected


def test_all_edits_features_in_document_order() -> None:
    edits = {
        "netDevices": [{"name": "n", "hostInterfaceName": "h"}],
        "additionalGids": [1],
        "intelRdt": {"schemata": ["L3:0=f"], "enableMonitoring": True},
        "deviceNodes": [{"path": "/d", "hostPath": "/h"}],
        "mounts": [{**MOUNT, "type": "bind"}],
    }
    spec = {"kind": "example.com/gpu", "containerEdits": edits, "devices": []}
    assert requirements(spec) == [
        Requirement("0.4.0", "mount type", (*TOP, "mounts", 0, "type")),
        Requirement("0.5.0", "device node hostPath", (*TOP, "deviceNodes", 0, "hostPath")),
        Requirement("0.7.0", "intelRdt", (*TOP, "intelRdt")),
        Requirement("1.1.0", "intelRdt.schemata", (*TOP, "intelRdt", "schemata")),
        Requirement("1.1.0", "intelRdt.enableMonitoring", (*TOP, "intelRdt", "enableMonitoring")),
        Requirement("0.7.0", "additionalGids", (*TOP, "additionalGids")),
        Requirement("1.1.0", "netDevices", (*TOP, "netDevices")),
    ]
    assert minimum_version(spec) == "1.1.0"


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param({"mounts": [{**MOUNT, "type": "bind"}]}, "0.4.0", id="mount-type"),
        pytest.param({"deviceNodes": [{"path": "/d", "hostPath": "/h"}]}, "0.5.0", id="hostpath"),
        pytest.param({"intelRdt": {}}, "0.7.0", id="intel-rdt"),
        pytest.param({"additionalGids": [0]}, "0.7.0", id="additional-gids"),
        pytest.param({"intelRdt": {"schemata": []}}, "1.1.0", id="schemata"),
        pytest.param({"netDevices": [{"name": "n"}]}, "1.1.0", id="net-devices"),
    ],
)
def test_a_device_block_alone_sets_the_minimum(edits: dict[str, object], expected: str) -> None:
    spec = {"kind": "example.com/gpu", "devices": [{"name": "gpu0", "containerEdits": edits}]}
    assert minimum_version(spec) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"annotations": ["a"]}, [], id="annotations-not-a-map"),
        pytest.param({"kind": "example.com"}, [], id="kind-without-slash"),
        pytest.param({"kind": "example/a.b/c"}, [("0.6.0", "a '.' in the kind's class", ("kind",))], id="dot-before-second-slash"),
        pytest.param({"kind": "example/a/b.c"}, [("0.6.0", "a '.' in the kind's class", ("kind",))], id="dot-after-second-slash"),
        pytest.param({"kind": "example.com/gpu"}, [], id="dot-in-vendor"),
        pytest.param({"devices": [{"name": "0a"}]}, [("0.5.0", "a device name starting with a digit", ("devices", 0, "name"))], id="digit-then-letter"),
        pytest.param({"devices": [{"name": "0\u00e9"}]}, [("0.5.0", "a device name starting with a digit", ("devices", 0, "name"))], id="digit-then-non-ascii"),
        pytest.param({"devices": [{"name": "a0"}]}, [], id="letter-then-digit"),
        pytest.param({"devices": [{"name": "\u0661"}]}, [], id="non-ascii-digit"),
        pytest.param({"devices": [{"name": ""}]}, [], id="empty-name"),
        pytest.param({"devices": [{"name": 7}]}, [], id="name-not-a-string"),
        pytest.param({"devices": [{"annotations": ["a"]}]}, [], id="device-annotations-not-a-map"),
        pytest.param({"devices": [{"annotations": {}}]}, [], id="device-annotations-empty"),
        pytest.param(
            {"devices": ["junk", {"name": "1", "annotations": {"a": "b"}}]},
            [
                ("0.5.0", "a device name starting with a digit", ("devices", 1, "name")),
                ("0.6.0", "annotations", ("devices", 1, "annotations")),
            ],
            id="after-a-device-of-the-wrong-type",
        ),
        pytest.param(
            {"annotations": {"a": "b"}, "kind": "a.b/c.d"},
            [("0.6.0", "annotations", ("annotations",)), ("0.6.0", "a '.' in the kind's class", ("kind",))],
            id="spec-annotations-then-kind",
        ),
        pytest.param(
            {"devices": [7, {"containerEdits": {"additionalGids": [1]}}]},
            [("0.7.0", "additionalGids", ("devices", 1, "containerEdits", "additionalGids"))],
            id="device-edits-after-a-device-of-the-wrong-type",
        ),
        pytest.param({"devices": {"containerEdits": {"additionalGids": [1]}}}, [], id="devices-not-a-list"),
        pytest.param({"containerEdits": ["additionalGids"]}, [], id="edits-not-a-map"),
    ],
)  # fmt: skip
def test_spec_features(
    spec: dict[str, object], expected: list[tuple[str, str, tuple[str | int, ...]]]
) -> None:
    assert requirements(spec) == [Requirement(*need) for need in expected]


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        pytest.param([], "0.3.0", id="none"),
        pytest.param(["0.5.0"], "0.5.0", id="one"),
        pytest.param(["0.7.0", "1.1.0", "0.4.0"], "1.1.0", id="highest-in-the-middle"),
        pytest.param(["1.0.0", "0.8.0"], "1.0.0", id="highest-first"),
        pytest.param(["0.3.0"], "0.3.0", id="the-earliest"),
    ],
)
def test_highest_version(versions: list[str], expected: str) -> None:
    needs = [Requirement(v, "feature", ()) for v in versions]
    assert highest_version(needs) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0.5.0", (0, 5, 0), id="plain"),
        pytest.param("v1.10.2", (1, 10, 2), id="v-prefix"),
        pytest.param("10.0.07", (10, 0, 7), id="leading-zero"),
    ],
)
def test_parse_version(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_version(text) == expected


def test_parse_version_names_the_text() -> None:
    with pytest.raises(ValueError, match=r"^not a version: 'v1\.0'$"):
        parse_version("v1.0")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("0.4.0", "0.5.0", -1, id="lower"),
        pytest.param("0.5.1", "0.5.0", 1, id="patch"),
        pytest.param("v0.5.0", "0.5.0", 0, id="v-prefix-equal"),
    ],
)
def test_compare_versions_each_way(a: str, b: str, expected: int) -> None:
    assert compare_versions(a, b) == expected
