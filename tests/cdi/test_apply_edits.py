"""`apply_edits` (`ctk cdi inject`'s core, as a CDI runtime applies a spec): whole OCI specs out.

The podman comparison (tests/cdi/test_inject_podman.py) shows the same effect end to end; these
tables pin each rule on its own, in-process (issue 26: the mutation run found them unpinned).
"""

from __future__ import annotations

import pytest

from ctk.cdi.inject import HostDevice, apply_edits, needed_host_paths
from ctk.errors import CtkError

GPU0 = HostDevice("c", 195, 0)


def _user(uid: int = 0, gid: int = 0, **more: object) -> dict[str, object]:
    return {"process": {"user": {"uid": uid, "gid": gid, **more}}}


@pytest.mark.parametrize(
    ("oci", "gids", "expected"),
    [
        pytest.param(_user(), [44, 0, 44], [44], id="root-gid-skipped-duplicates-once"),
        pytest.param(
            _user(additionalGids=[10, 44]), [44, 45], [10, 44, 45], id="kept-then-appended"
        ),
        pytest.param({}, [44], [44], id="no-process-yet"),
    ],
)
def test_additional_gids(oci: dict[str, object], gids: list[int], expected: list[int]) -> None:
    out = apply_edits(oci, {"additionalGids": gids}, {})
    assert out["process"]["user"]["additionalGids"] == expected  # type: ignore[index]


def test_only_gid_zero_adds_no_list() -> None:
    out = apply_edits(_user(), {"additionalGids": [0]}, {})
    assert out == _user()


@pytest.mark.parametrize(
    ("node", "hosts", "device", "rule"),
    [
        pytest.param(
            {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0},
            {},
            {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0},
            {"allow": True, "type": "c", "major": 195, "minor": 0, "access": "rwm"},
            id="complete-node",
        ),
        pytest.param(
            {"path": "/dev/nvidia0"},
            {"/dev/nvidia0": GPU0},
            {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0},
            {"allow": True, "type": "c", "major": 195, "minor": 0, "access": "rwm"},
            id="type-and-numbers-from-the-host",
        ),
        pytest.param(
            {"path": "/dev/nvidia1", "hostPath": "/host/dev/nvidia0", "type": "c"},
            {"/host/dev/nvidia0": GPU0},
            {"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 0},
            {"allow": True, "type": "c", "major": 195, "minor": 0, "access": "rwm"},
            id="numbers-of-the-host-path",
        ),
        pytest.param(
            {
                "path": "/dev/nvidiactl",
                "type": "c",
                "major": 195,
                "minor": 255,
                "permissions": "rw",
                "fileMode": 438,
                "uid": 5,
                "gid": 6,
            },
            {},
            {
                "path": "/dev/nvidiactl",
                "type": "c",
                "major": 195,
                "minor": 255,
                "fileMode": 438,
                "uid": 5,
                "gid": 6,
            },
            {"allow": True, "type": "c", "major": 195, "minor": 255, "access": "rw"},
            id="mode-owner-permissions",
        ),
        pytest.param(
            {"path": "/dev/fifo", "type": "p"},
            {},
            {"path": "/dev/fifo", "type": "p", "major": 0, "minor": 0},
            None,
            id="a-fifo-needs-no-numbers-nor-a-rule",
        ),
    ],
)
def test_device_nodes(
    node: dict[str, object],
    hosts: dict[str, HostDevice],
    device: dict[str, object],
    rule: dict[str, object] | None,
) -> None:
    out = apply_edits({}, {"deviceNodes": [node]}, hosts)
    linux = out["linux"]
    assert linux["devices"] == [device]  # type: ignore[index]
    if rule is None:
        assert "resources" not in linux  # type: ignore[operator]
    else:
        assert linux["resources"]["devices"] == [rule]  # type: ignore[index]


def test_device_nodes_take_the_users_ids_and_replace_one_of_the_same_path() -> None:
    oci = {
        **_user(uid=1000, gid=1001),
        "linux": {"devices": [{"path": "/dev/nvidia0", "type": "c", "major": 1, "minor": 1}]},
    }
    node = {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0}
    out = apply_edits(oci, {"deviceNodes": [node, "not a node"]}, {})
    assert out["linux"]["devices"] == [  # type: ignore[index]
        {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "uid": 1000, "gid": 1001}
    ]
    assert oci["linux"]["devices"][0]["major"] == 1  # type: ignore[index]  # the input is a copy


@pytest.mark.parametrize(
    ("node", "hosts", "error"),
    [
        pytest.param(
            {"path": "/dev/nvidia0"},
            {},
            "device node /dev/nvidia0: cannot read host device /dev/nvidia0",
            id="no-host-device",
        ),
        pytest.param(
            {"path": "/dev/nvidia0", "type": "b"},
            {"/dev/nvidia0": GPU0},
            "device node /dev/nvidia0: type b does not match host device /dev/nvidia0 (c)",
            id="type-differs-from-the-host",
        ),
    ],
)
def test_device_node_errors(
    node: dict[str, object], hosts: dict[str, HostDevice], error: str
) -> None:
    with pytest.raises(CtkError) as raised:
        apply_edits({}, {"deviceNodes": [node]}, hosts)
    assert raised.value.message == error


@pytest.mark.parametrize(
    ("nodes", "wanted"),
    [
        pytest.param([{"path": "/dev/a", "type": "c", "major": 1}], [], id="complete"),
        pytest.param([{"path": "/dev/a"}], ["/dev/a"], id="no-type"),
        pytest.param([{"path": "/dev/a", "type": "c"}], ["/dev/a"], id="no-major"),
        pytest.param([{"path": "/dev/a", "type": "p"}], [], id="fifo"),
        pytest.param([{"path": "/dev/a", "hostPath": "/h/a"}], ["/h/a"], id="host-path"),
        pytest.param(["x", {"path": "/dev/a", "type": "b"}], ["/dev/a"], id="non-node-skipped"),
    ],
)
def test_needed_host_paths(nodes: list[object], wanted: list[str]) -> None:
    assert needed_host_paths({"deviceNodes": nodes}) == wanted
    assert needed_host_paths({}) == []


def test_mounts_replace_by_destination_and_sort_by_depth() -> None:
    oci = {"mounts": [{"destination": "/usr/lib/x", "source": "/old"}, {"destination": "/proc"}]}
    mounts = [
        {"containerPath": "/usr/lib/x", "hostPath": "/new", "options": ["ro"], "type": "bind"},
        {"containerPath": "/a/b/c/d", "hostPath": "/deep"},
        "not a mount",
    ]
    out = apply_edits(oci, {"mounts": mounts}, {})
    assert out["mounts"] == [
        {"destination": "/proc"},
        {"destination": "/usr/lib/x", "type": "bind", "source": "/new", "options": ["ro"]},
        {"destination": "/a/b/c/d", "source": "/deep"},
    ]


def test_hooks_by_stage_in_the_oci_order() -> None:
    oci = {"hooks": {"poststop": [{"path": "/p"}], "custom": [{"path": "/c"}]}}
    hooks = [
        {"hookName": "createContainer", "path": "/h", "args": ["h", "x"], "env": ["A=1"]},
        {"hookName": "prestart", "path": "/s", "timeout": 5},
        {"hookName": "unknownStage", "path": "/u"},
        {"hookName": "createContainer", "path": "/h2", "args": []},
    ]
    stages = apply_edits(oci, {"hooks": hooks}, {})["hooks"]
    assert isinstance(stages, dict)
    assert list(stages) == ["prestart", "createContainer", "poststop", "custom"]
    assert stages["createContainer"] == [
        {"path": "/h", "args": ["h", "x"], "env": ["A=1"]},
        {"path": "/h2"},
    ]
    assert stages["prestart"] == [{"path": "/s", "timeout": 5}]


def test_intel_rdt_is_copied() -> None:
    rdt = {"closID": "gpu"}
    linux = apply_edits({}, {"intelRdt": rdt}, {})["linux"]
    assert isinstance(linux, dict)
    assert linux == {"intelRdt": rdt}
    assert linux["intelRdt"] is not rdt
