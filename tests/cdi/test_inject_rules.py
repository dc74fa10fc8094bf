"""`ctk cdi inject`'s rules, each on its own, as the reference CDI library (`InjectDevices`, used
by containerd and Podman) applies container edits; issue 26's mutation run found them unpinned.

tests/cdi/test_apply_edits.py pins the common cases; these tables pin the edges: merging edit
sets, env keys with `=` in the value, the process user's ids, block devices, and the fields a
malformed OCI spec is refused for.
"""

from __future__ import annotations

import pytest

from ctk.cdi.inject import HostDevice, MalformedOciSpec, apply_edits, merge_edits
from ctk.errors import CtkError

GPU0 = HostDevice("c", 195, 0)
NODE = {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0}
RULE = {"allow": True, "type": "c", "major": 195, "minor": 0, "access": "rwm"}


# --- merging the spec's and the devices' edits ---------------------------------------------------


def test_merge_concatenates_gids_and_keeps_the_last_intel_rdt() -> None:
    """As the reference's `ContainerEdits.Append`: lists in order, a later intelRdt replaces."""
    blocks: list[dict[str, object]] = [
        {"additionalGids": [44], "intelRdt": {"closID": "spec"}},
        {"env": ["A=1"], "additionalGids": [45, 44]},
        {"intelRdt": {"closID": "gpu0", "schemata": ["L3:0=f"]}},
        {"intelRdt": None},
    ]
    assert merge_edits(blocks) == {
        "env": ["A=1"],
        "additionalGids": [44, 45, 44],
        "intelRdt": {"closID": "gpu0", "schemata": ["L3:0=f"]},
    }


def test_merge_without_intel_rdt_has_none() -> None:
    assert merge_edits([{"env": ["A=1"]}, {"intelRdt": None}]) == {"env": ["A=1"]}


def test_merged_edits_are_a_copy_of_the_specs() -> None:
    """Editing the merged set leaves the loaded specs (the blocks) as they were."""
    mount = {"hostPath": "/h", "containerPath": "/c", "options": ["ro"]}
    rdt = {"closID": "gpu", "schemata": ["L3:0=f"]}
    block = {"mounts": [mount], "intelRdt": rdt}
    merged = merge_edits([block])
    merged_mount = merged["mounts"]
    merged_rdt = merged["intelRdt"]
    assert isinstance(merged_mount, list)
    assert isinstance(merged_rdt, dict)
    merged_mount[0]["options"].append("nosuid")
    merged_rdt["schemata"].append("MB:0=50")
    assert block == {
        "mounts": [{"hostPath": "/h", "containerPath": "/c", "options": ["ro"]}],
        "intelRdt": {"closID": "gpu", "schemata": ["L3:0=f"]},
    }


def test_the_intel_rdt_written_is_a_copy() -> None:
    rdt = {"closID": "gpu", "schemata": ["L3:0=f"]}
    linux = apply_edits({}, {"intelRdt": rdt}, {})["linux"]
    assert isinstance(linux, dict)
    linux["intelRdt"]["schemata"].append("MB:0=50")
    assert rdt == {"closID": "gpu", "schemata": ["L3:0=f"]}


# --- env -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "env", "replace", "expected"),
    [
        pytest.param(
            ["PATH=/bin"],
            ["A=1", "B=2", "A=3"],
            False,
            ["PATH=/bin", "A=3", "B=2"],
            id="a-later-entry-of-the-edits-replaces-an-earlier-one",
        ),
        pytest.param(
            ["A=x=y", "B=1"],
            ["A=z"],
            True,
            ["A=z", "B=1"],
            id="the-key-is-before-the-first-equals-sign-of-the-config",
        ),
        pytest.param(
            ["A=1", "B=1"],
            ["A=b=c"],
            True,
            ["A=b=c", "B=1"],
            id="the-key-is-before-the-first-equals-sign-of-the-edit",
        ),
        pytest.param(
            ["A=1"],
            ["A=b=c", "A=2"],
            False,
            ["A=1", "A=2"],
            id="kept-config-entry-then-the-last-edit",
        ),
    ],
)
def test_env(current: list[str], env: list[str], replace: bool, expected: list[str]) -> None:
    oci = {"process": {"env": current}}
    out = apply_edits(oci, {"env": env}, {}, replace_existing_env=replace)
    assert out == {"process": {"env": expected}}


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param({"env": []}, id="env"),
        pytest.param({"mounts": []}, id="mounts"),
        pytest.param({"env": [], "mounts": [], "hooks": []}, id="all"),
        pytest.param({"deviceNodes": []}, id="no-device-nodes"),
        pytest.param({"deviceNodes": ["not a node"]}, id="no-readable-device-node"),
        pytest.param({"additionalGids": []}, id="no-gids"),
        pytest.param({"additionalGids": [0]}, id="only-gid-0"),
    ],
)
def test_empty_edits_leave_the_spec_as_it_was(edits: dict[str, object]) -> None:
    """No `process`, `linux` or `mounts` is added (the Go library makes a section with the first
    thing it adds there), and the config's own mounts keep their order (the reference sorts
    mounts only when it adds some)."""
    oci: dict[str, object] = {"mounts": [{"destination": "/a/b/c"}, {"destination": "/proc"}]}
    assert apply_edits(oci, edits, {}) == oci


# --- device nodes ----------------------------------------------------------------------------


def _devices(user: dict[str, object], node: dict[str, object]) -> list[object]:
    out = apply_edits({"process": {"user": user}}, {"deviceNodes": [node]}, {})
    devices = out["linux"]["devices"]  # type: ignore[index]
    assert isinstance(devices, list)
    return devices


@pytest.mark.parametrize(
    ("user", "node", "ids"),
    [
        pytest.param({"uid": 1, "gid": 1}, NODE, {"uid": 1, "gid": 1}, id="uid-and-gid-one"),
        pytest.param({"gid": 1001}, NODE, {"gid": 1001}, id="only-a-gid"),
        pytest.param({"uid": 1000}, NODE, {"uid": 1000}, id="only-a-uid"),
        pytest.param(
            {"uid": 1000, "gid": 1001},
            {**NODE, "uid": 5, "gid": 6},
            {"uid": 5, "gid": 6},
            id="the-nodes-own-ids-win",
        ),
        pytest.param({"uid": "1000", "gid": 2.5}, NODE, {}, id="ids-that-are-not-integers"),
        pytest.param({"uid": 0, "gid": 0}, NODE, {}, id="root"),
    ],
)
def test_device_node_owner(
    user: dict[str, object], node: dict[str, object], ids: dict[str, object]
) -> None:
    """A node without uid/gid takes the process user's when non-zero (the reference's
    `if uid := spec.Process.User.UID; uid > 0`); its own ids are kept."""
    assert _devices(user, node) == [{**NODE, **ids}]


def test_a_block_device_gets_a_cgroup_rule() -> None:
    node = {"path": "/dev/nvme0n1", "type": "b", "major": 259, "minor": 0, "permissions": "r"}
    out = apply_edits({}, {"deviceNodes": ["not a node", node]}, {})
    assert out["linux"] == {
        "devices": [{"path": "/dev/nvme0n1", "type": "b", "major": 259, "minor": 0}],
        "resources": {
            "devices": [{"allow": True, "type": "b", "major": 259, "minor": 0, "access": "r"}]
        },
    }


def test_a_node_without_a_type_keeps_its_own_numbers() -> None:
    """The reference's `fillMissingInfo`: the type comes from the host, the numbers only when
    the node has no major."""
    node = {"path": "/dev/nvidia0", "major": 195, "minor": 3}
    out = apply_edits({}, {"deviceNodes": [node]}, {"/dev/nvidia0": GPU0})
    assert out["linux"]["devices"] == [  # type: ignore[index]
        {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 3}
    ]


def test_a_missing_host_device_is_named_by_its_host_path() -> None:
    node = {"path": "/dev/nvidia1", "hostPath": "/run/driver/dev/nvidia0"}
    with pytest.raises(CtkError) as raised:
        apply_edits({}, {"deviceNodes": [node]}, {"/dev/nvidia1": GPU0})
    assert (raised.value.message, raised.value.hint) == (
        "device node /dev/nvidia1: cannot read host device /run/driver/dev/nvidia0",
        "the host path must be a device node on this machine",
    )


# --- mounts and gids ---------------------------------------------------------------------------


def test_entries_inject_cannot_read_are_skipped() -> None:
    """A CDI mount that is not an object is skipped, and the ones after it still applied."""
    mount = {"containerPath": "/usr/bin/nvidia-smi", "hostPath": "/driver/nvidia-smi"}
    out = apply_edits({}, {"mounts": ["not a mount", mount]}, {})
    assert out == {
        "mounts": [{"destination": "/usr/bin/nvidia-smi", "source": "/driver/nvidia-smi"}]
    }


def test_mounts_without_parts_sort_as_the_reference_does() -> None:
    """The reference's `orderedMounts`: by the `/`s of the cleaned destination, then by the
    destination, a missing one being "" (first); what the config holds that is not a mount is
    kept, and sorts as one without a destination."""
    oci: dict[str, object] = {"mounts": [{"destination": "A"}, "junk", {"type": "tmpfs"}]}
    out = apply_edits(oci, {"mounts": [{"containerPath": "/dev/x", "hostPath": "/x"}]}, {})
    assert out["mounts"] == [
        "junk",
        {"type": "tmpfs"},
        {"destination": "A"},
        {"destination": "/dev/x", "source": "/x"},
    ]


@pytest.mark.parametrize(
    ("oci", "edits"),
    [
        pytest.param({"linux": "x"}, {"deviceNodes": []}, id="linux"),
        pytest.param({"process": 1}, {"additionalGids": [0]}, id="process"),
        pytest.param({"process": {"user": []}}, {"additionalGids": [0]}, id="process.user"),
    ],
)
def test_a_section_nothing_is_added_to_is_not_read(
    oci: dict[str, object], edits: dict[str, object]
) -> None:
    assert apply_edits(oci, edits, {}) == oci


def test_gid_zero_first_is_skipped() -> None:
    out = apply_edits({}, {"additionalGids": [0, 44, 45]}, {})
    assert out == {"process": {"user": {"additionalGids": [44, 45]}}}


# --- malformed OCI specs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("oci", "edits", "field", "problem"),
    [
        pytest.param(
            {"process": True},
            {"additionalGids": [44]},
            "process",
            "process is a boolean, not an object",
            id="process-for-gids",
        ),
        pytest.param(
            {"process": {"user": 1.5}},
            {"additionalGids": [44]},
            "process.user",
            "process.user is a number, not an object",
            id="user",
        ),
        pytest.param(
            {"process": {"user": {"additionalGids": "44"}}},
            {"additionalGids": [44]},
            "process.user.additionalGids",
            "process.user.additionalGids is a string, not an array",
            id="additional-gids",
        ),
        pytest.param(
            {"process": {"env": ["A=1", None]}},
            {"env": ["B=2"]},
            "process.env[1]",
            "process.env[1] is null, not a string",
            id="null-env-entry",
        ),
        pytest.param(
            {"linux": []},
            {"deviceNodes": [NODE]},
            "linux",
            "linux is an array, not an object",
            id="linux-for-devices",
        ),
        pytest.param(
            {"linux": {"resources": []}},
            {"deviceNodes": [NODE]},
            "linux.resources",
            "linux.resources is an array, not an object",
            id="resources",
        ),
        pytest.param(
            {"linux": "x"},
            {"intelRdt": {"closID": "gpu"}},
            "linux",
            "linux is a string, not an object",
            id="linux-for-intel-rdt",
        ),
    ],
)
def test_malformed_oci_spec(
    oci: dict[str, object], edits: dict[str, object], field: str, problem: str
) -> None:
    with pytest.raises(MalformedOciSpec) as raised:
        apply_edits(oci, edits, {})
    error = raised.value
    assert (error.field, error.message, error.hint) == (
        field,
        f"the OCI spec's {problem}",
        "fix the OCI runtime spec (config.json): nothing was written",
    )
