"""`ctk.cdi.diff`: two specs are the same exactly when their data are equal, device order and
empty lists aside (CDI runtimes look devices up by name, and an empty list adds nothing; the
order of edits counts, as runtimes apply it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctk.cdi.diff import diff_specs
from ctk.cdi.refresh import change_phrases

NAMES = st.sampled_from(["a", "b", "c"])
ENV = st.builds(lambda k, v: f"{k}={v}", NAMES, st.sampled_from(["1", "2"]))
NODE = st.builds(lambda p: {"path": f"/dev/{p}"}, NAMES)
MOUNT = st.builds(
    lambda p, o: {"hostPath": f"/h/{p}", "containerPath": f"/c/{p}", "options": o},
    NAMES,
    st.sampled_from([["ro"], ["rw"]]),
)
HOOK = st.builds(
    lambda prog, sub, arg: {
        "hookName": "createContainer",
        "path": prog,
        "args": [prog.rsplit("/", 1)[1], sub, arg],
    },
    st.sampled_from(["/usr/bin/nvidia-cdi-hook", "/opt/ctk-hook"]),
    st.sampled_from(["create-symlinks", "update-ldcache"]),
    NAMES,
)
EDITS = st.fixed_dictionaries(
    {},
    optional={
        "env": st.lists(ENV, max_size=3),
        "deviceNodes": st.lists(NODE, max_size=2),
        "hooks": st.lists(HOOK, max_size=3),
        "mounts": st.lists(MOUNT, max_size=3),
        "additionalGids": st.lists(st.sampled_from([44, 105]), max_size=2),
    },
)
DEVICES = st.dictionaries(NAMES, EDITS, max_size=3).map(
    lambda found: [{"name": name, "containerEdits": edits} for name, edits in found.items()]
)
SPEC = st.builds(
    lambda kind, version, devices, edits: {
        "cdiVersion": version,
        "kind": kind,
        "devices": devices,
        "containerEdits": edits,
    },
    st.sampled_from(["nvidia.com/gpu", "example.com/gpu"]),
    st.sampled_from(["0.5.0", "0.7.0"]),
    DEVICES,
    EDITS,
)


def _edits(edits: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in edits.items() if value != []}


def _by_name(spec: dict[str, object]) -> dict[str, object]:
    devices = spec["devices"]
    edits = spec["containerEdits"]
    assert isinstance(devices, list)
    assert isinstance(edits, dict)
    named = [{**d, "containerEdits": _edits(d["containerEdits"])} for d in devices]
    return {
        **spec,
        "devices": sorted(named, key=lambda d: str(d["name"])),
        "containerEdits": _edits(edits),
    }


@given(SPEC, SPEC)
def test_same_exactly_when_equal_but_for_device_order(
    old: dict[str, object], new: dict[str, object]
) -> None:
    diff = diff_specs(old, new)
    assert diff.same == (_by_name(old) == _by_name(new))
    assert (change_phrases(diff) == []) == diff.same


@given(SPEC)
def test_a_spec_is_the_same_as_itself_in_any_device_order(spec: dict[str, object]) -> None:
    devices = spec["devices"]
    assert isinstance(devices, list)
    assert diff_specs(spec, {**spec, "devices": devices[::-1]}).same


def test_hooks_that_swap_programs_are_a_change() -> None:
    """The programs of the two specs are the same set, but each hook runs the other one."""
    one, two = "/usr/bin/nvidia-cdi-hook", "/opt/ctk-hook"

    def spec(first: str, second: str) -> dict[str, object]:
        hooks = [
            {"hookName": "createContainer", "path": first, "args": ["x", "create-symlinks"]},
            {"hookName": "createContainer", "path": second, "args": ["x", "update-ldcache"]},
        ]
        return {"kind": "a/b", "devices": [], "containerEdits": {"hooks": hooks}}

    diff = diff_specs(spec(one, two), spec(two, one))
    assert change_phrases(diff) == ["common hooks changed create-symlinks, update-ldcache"]
