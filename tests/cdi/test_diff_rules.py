"""`ctk cdi diff`'s rules, in-process: what names an entry, what counts as a change, and the
lines and JSON it prints (issue 26: the mutation run found these unpinned)."""

from __future__ import annotations

import pytest

from ctk.cdi.diff import diff_edits, diff_json, diff_lines, diff_specs, hook_programs

HOOK = "/usr/bin/nvidia-cdi-hook"
LOCAL_HOOK = "/usr/local/bin/nvidia-cdi-hook"
Spec = dict[str, object]


def _hook(*args: str, path: str = HOOK, **more: object) -> dict[str, object]:
    """A hook as nvidia-cdi-hook's specs write it: the program's name, then the subcommand."""
    return {"hookName": "createContainer", "path": path, "args": ["nvidia-cdi-hook", *args], **more}


def _ctk_hook(*args: str) -> dict[str, object]:
    """A hook as `nvidia-ctk hook <name>` writes it."""
    path = "/usr/bin/nvidia-ctk"
    return {"hookName": "createContainer", "path": path, "args": ["nvidia-ctk", "hook", *args]}


def _spec(common: dict[str, object] | None = None, *devices: Spec, **top: object) -> Spec:
    spec: Spec = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", **top}
    if common is not None:
        spec["containerEdits"] = common
    spec["devices"] = list(devices)
    return spec


def _device(name: str, **edits: object) -> Spec:
    return {"name": name, "containerEdits": edits}


def _annotated(name: str, annotations: dict[str, str]) -> Spec:
    return {"name": name, "annotations": annotations, "containerEdits": {"env": ["A=1"]}}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            _spec({"env": ["OPTS=a=1"]}),
            _spec({"env": ["OPTS=a=2"]}),
            ["common edits:", "  env changed: OPTS"],
            id="env-named-by-what-precedes-the-first-equals",
        ),
        pytest.param(
            _spec({"env": []}),
            _spec({"env": ["A=1", "B=2"]}),
            ["common edits:", "  env added: A, B"],
            id="names-joined-with-commas",
        ),
        pytest.param(
            _spec({"env": ["A=1", "B=2"]}),
            _spec({"env": ["B=2", "A=1"]}),
            ["common edits:", "  env reordered"],
            id="env-reordered",
        ),
        pytest.param(
            _spec({}),
            _spec({"deviceNodes": [{"major": 195, "minor": 0}]}),
            ["common edits:", "  device nodes added: ?"],
            id="device-node-without-path",
        ),
        pytest.param(
            _spec({}),
            _spec({"mounts": [{"hostPath": "/usr/lib64/libcuda.so.1"}]}),
            ["common edits:", "  mounts added: ?"],
            id="mount-without-container-path",
        ),
        pytest.param(
            _spec({}),
            _spec({"hooks": [{"hookName": "createContainer", "path": HOOK}]}),
            ["common edits:", "  hooks added: ?"],
            id="hook-without-args",
        ),
        pytest.param(
            _spec({}),
            _spec({"hooks": [_ctk_hook("create-symlinks", "--link", "a::b")]}),
            ["common edits:", "  hooks added: create-symlinks"],
            id="nvidia-ctk-hook-named-by-its-subcommand",
        ),
        pytest.param(
            _spec({"hooks": [_ctk_hook("update-ldcache", "--folder", "/usr/lib64")]}),
            _spec({"hooks": [_ctk_hook("update-ldcache", "--folder", "/usr/lib")]}),
            ["common edits:", "  hooks changed: update-ldcache"],
            id="nvidia-ctk-hook-changed",
        ),
        pytest.param(
            _spec({"hooks": [_hook("enable-cuda-compat", "--host-driver-version=550.54.15")]}),
            _spec(
                {
                    "hooks": [
                        _hook(
                            "enable-cuda-compat", "--host-driver-version=560.35.03", path=LOCAL_HOOK
                        )
                    ]
                }
            ),
            [
                "driver version: 550.54.15 -> 560.35.03",
                f"hook program: {HOOK} -> {LOCAL_HOOK}",
                "common edits:",
                "  hooks changed: enable-cuda-compat",
            ],
            id="new-program-and-the-hook-argument-after-the-name",
        ),
        pytest.param(
            _spec({"hooks": [_hook("enable-cuda-compat", "--host-driver-version=550.54.15")]}),
            _spec({"hooks": [_hook("enable-cuda-compat", "--host-driver-version==550.54.15")]}),
            [
                "driver version: 550.54.15 -> =550.54.15",
                "common edits:",
                "  hooks changed: enable-cuda-compat",
            ],
            id="driver-version-is-all-after-the-first-equals",
        ),
        pytest.param(
            _spec({"hooks": [_hook("update-ldcache", env=["NVIDIA_CTK_DEBUG=false"])]}),
            _spec(
                {"hooks": [_hook("update-ldcache", path=LOCAL_HOOK, env=["NVIDIA_CTK_DEBUG=1"])]}
            ),
            [
                f"hook program: {HOOK} -> {LOCAL_HOOK}",
                "common edits:",
                "  hooks changed: update-ldcache",
            ],
            id="new-program-and-the-hook-env",
        ),
        pytest.param(
            _spec({"hooks": [_hook("update-ldcache", env=["NVIDIA_CTK_DEBUG=false"])]}),
            _spec(
                {
                    "hooks": [
                        _hook("update-ldcache", path=LOCAL_HOOK, env=["NVIDIA_CTK_DEBUG=false"])
                    ]
                }
            ),
            [f"hook program: {HOOK} -> {LOCAL_HOOK}"],
            id="new-program-only-is-one-field",
        ),
        pytest.param(
            _spec({"hooks": [_hook("create-symlinks", "--link", "a::b")]}),
            _spec({"hooks": [_ctk_hook("create-symlinks", "--link", "a::b")]}),
            [f"hook program: {HOOK} -> /usr/bin/nvidia-ctk"],
            id="nvidia-ctk-program-same-hooks",
        ),
        pytest.param(
            _spec(
                None,
                _device("0", hooks=[_hook("chmod", path="/a/hook")]),
                _device("1", hooks=[_hook("chmod", path="/b/hook")]),
            ),
            _spec(
                None,
                _device("0", hooks=[_hook("chmod", path="/b/hook")]),
                _device("1", hooks=[_hook("chmod", path="/a/hook")]),
            ),
            ["device 0:", "  hooks changed: chmod", "device 1:", "  hooks changed: chmod"],
            id="same-programs-swapped-between-devices",
        ),
        pytest.param(
            _spec(None, _device("1", env=["A=1"])),
            _spec(None, _device("0", env=["A=1"]), _device("1", env=["A=2"])),
            ["devices added: 0", "device 1:", "  env changed: A"],
            id="a-device-added-before-a-changed-one",
        ),
        pytest.param(
            _spec(None, _device("a"), _device("b")),
            _spec(None, _device("c"), _device("d")),
            ["devices added: c, d", "devices removed: a, b"],
            id="devices-added-and-removed",
        ),
        pytest.param(
            _spec(None, _annotated("0", {"x": "1"})),
            _spec(None, _annotated("0", {"x": "2"})),
            ["device 0:", "  annotations changed"],
            id="annotations-changed",
        ),
        pytest.param(
            _spec(None, _annotated("0", {"x": "1"})),
            _spec(None, _annotated("0", {"x": "1"})),
            [],
            id="annotations-same",
        ),
        pytest.param(
            _spec({"intelRdt": {"closID": "a"}}),
            _spec({"intelRdt": {"closID": "b"}}),
            ["common edits:", "  other edits changed"],
            id="other-edits-changed",
        ),
        pytest.param(
            _spec({"intelRdt": {"closID": "a"}}, _device("0", intelRdt={"closID": "a"})),
            _spec({"intelRdt": {"closID": "a"}}, _device("0", intelRdt={"closID": "a"})),
            [],
            id="other-edits-same",
        ),
        pytest.param(
            _spec(None, annotations={"a": "1"}),
            _spec(None, annotations={"a": "2"}),
            ["other fields changed"],
            id="other-fields-changed",
        ),
        pytest.param(
            _spec(None, annotations={"a": "1"}),
            _spec(None, annotations={"a": "1"}),
            [],
            id="other-fields-same",
        ),
        pytest.param(
            _spec({"additionalGids": [44, 45]}),
            _spec({"additionalGids": [44]}),
            ["common edits:", "  additional GIDs: 44, 45 -> 44"],
            id="gids-joined-with-commas",
        ),
        pytest.param(
            {"containerEdits": "junk", "devices": ["junk", {"name": "0"}]},
            {"containerEdits": "junk", "devices": ["junk", {"name": "0"}]},
            [],
            id="malformed-parts-read-as-empty",
        ),
    ],
)
def test_diff_lines(old: Spec, new: Spec, expected: list[str]) -> None:
    diff = diff_specs(old, new)
    assert diff_lines(diff) == expected
    assert diff.same is (expected == [])


def test_diff_json_reports_counts_order_gids_other_and_annotations() -> None:
    links = [_hook("create-symlinks", "--link", "a::b"), _hook("create-symlinks", "--link", "c::d")]
    ldcache = _hook("update-ldcache")
    old = _spec(
        {"hooks": [*links, ldcache], "additionalGids": [44, 45], "intelRdt": {"closID": "a"}},
        _annotated("0", {"x": "1"}),
    )
    new = _spec(
        {"hooks": [ldcache, links[0]], "additionalGids": [44], "intelRdt": {"closID": "b"}},
        _annotated("0", {"x": "2"}),
    )
    assert diff_json(diff_specs(old, new)) == {
        "same": False,
        "fields": {},
        "devices": {"added": [], "removed": [], "changed": {"0": {"annotations": True}}},
        "commonEdits": {
            "hooks": {
                "added": [],
                "removed": [],
                "changed": ["create-symlinks"],
                "counts": {"create-symlinks": {"old": 2, "new": 1}},
                "reordered": True,
            },
            "additionalGids": {"old": [44, 45], "new": [44]},
            "other": True,
        },
        "otherFields": False,
    }
    assert diff_lines(diff_specs(old, new)) == [
        "common edits:",
        "  hooks changed: create-symlinks (2 -> 1)",
        "  hooks reordered",
        "  additional GIDs: 44, 45 -> 44",
        "  other edits changed",
        "device 0:",
        "  annotations changed",
    ]


def test_diff_edits_compares_hook_programs_unless_told_not_to() -> None:
    old, new = {"hooks": [_hook("update-ldcache")]}, {"hooks": [_hook("update-ldcache", path="/x")]}
    hooks = next(a for a in diff_edits(old, new).areas if a.area == "hooks")
    assert hooks.changed == ("update-ldcache",)
    assert diff_edits(old, new, programs=False).same


def test_hook_programs_of_device_edits() -> None:
    spec = _spec({"env": ["A=1"]}, _device("0", hooks=[_hook("chmod", path="/opt/hook")]))
    assert hook_programs(spec) == ("/opt/hook",)
    moved = _spec({"env": ["A=1"]}, _device("0", hooks=[_hook("chmod", path="/usr/hook")]))
    assert diff_lines(diff_specs(spec, moved)) == ["hook program: /opt/hook -> /usr/hook"]
