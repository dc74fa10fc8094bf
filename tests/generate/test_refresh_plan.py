"""`ctk.cdi.refresh`: the refresh decision and its change phrases, on plain spec data."""

from __future__ import annotations

import json

import pytest

from ctk.cdi.refresh import Outcome, RefreshPlan, plan_refresh

HOOK = "/usr/bin/nvidia-cdi-hook"


def _mount(name: str) -> dict[str, object]:
    path = f"/usr/lib/{name}"
    return {"hostPath": path, "containerPath": path, "options": ["ro", "nosuid", "nodev", "bind"]}


def _hook(program: str, *args: str) -> dict[str, object]:
    name = program.rsplit("/", 1)[-1]
    return {"hookName": "createContainer", "path": program, "args": [name, *args]}


def _spec(
    *,
    kind: str = "nvidia.com/gpu",
    devices: tuple[str, ...] = ("0", "all"),
    mounts: tuple[str, ...] = ("libcuda.so.550.54.15",),
    hook: str = HOOK,
    device_gids: list[int] | None = None,
) -> dict[str, object]:
    edits: dict[str, object] = {"deviceNodes": [{"path": "/dev/nvidia0"}]}
    if device_gids is not None:
        edits["additionalGids"] = device_gids
    return {
        "cdiVersion": "0.5.0",
        "kind": kind,
        "devices": [{"name": name, "containerEdits": edits} for name in devices],
        "containerEdits": {
            "env": ["NVIDIA_VISIBLE_DEVICES=void"],
            "hooks": [_hook(hook, "update-ldcache", "--folder", "/usr/lib")],
            "mounts": [_mount(name) for name in mounts],
        },
    }


def _text(data: dict[str, object]) -> str:
    return json.dumps(data) + "\n"


NEW = _spec()


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        pytest.param(None, RefreshPlan(Outcome.CREATE), id="none"),
        pytest.param(_text(NEW).encode(), RefreshPlan(Outcome.KEEP), id="same-bytes"),
        pytest.param(b"\xff\xfe", RefreshPlan(Outcome.REPLACE), id="not-utf8"),
        pytest.param(b"", RefreshPlan(Outcome.REPLACE), id="empty"),
        pytest.param(b"{", RefreshPlan(Outcome.REPLACE), id="syntax"),
        pytest.param(b"[" * 5000, RefreshPlan(Outcome.REPLACE), id="deep-nesting"),
        pytest.param(b'{"kind": 1, "devices": []}', RefreshPlan(Outcome.REPLACE), id="kind-int"),
        pytest.param(
            b'{"kind": "a/b", "devices": [{"nom": "0"}]}',
            RefreshPlan(Outcome.REPLACE),
            id="device-without-name",
        ),
        pytest.param(
            json.dumps(NEW, indent=1).encode(),
            RefreshPlan(Outcome.KEEP),
            id="layout-only-is-kept",
        ),
        pytest.param(
            _text(_spec(kind="example.com/gpu", hook="/opt/ctk-hook")).encode(),
            RefreshPlan(
                Outcome.UPDATE,
                ("kind example.com/gpu -> nvidia.com/gpu", f"hook program /opt/ctk-hook -> {HOOK}"),
            ),
            id="kind-and-hook",
        ),
        pytest.param(
            _text(
                _spec(devices=("0", "1", "all"), mounts=tuple(f"l{i}" for i in range(6)))
            ).encode(),
            RefreshPlan(
                Outcome.UPDATE,
                (
                    "removed 1",
                    "common mounts added /usr/lib/libcuda.so.550.54.15",
                    "6 common mounts removed",
                ),
            ),
            id="many-mounts",
        ),
        pytest.param(
            _text(_spec(device_gids=[44])).encode(),
            RefreshPlan(Outcome.UPDATE, ("device edits changed: 0, all (additional GIDs)",)),
            id="device-gids",
        ),
    ],
)
def test_plan_refresh(before: bytes | None, expected: RefreshPlan) -> None:
    assert plan_refresh(before, _text(NEW), NEW) == expected


def test_many_devices_are_counted() -> None:
    names = tuple(str(i) for i in range(6))
    new = _spec(devices=names)
    old = _spec(devices=names, device_gids=[44])
    assert plan_refresh(_text(old).encode(), _text(new), new) == RefreshPlan(
        Outcome.UPDATE, ("device edits changed: 6 devices (additional GIDs)",)
    )


MIG = _spec(devices=("0", "2:2", "all"))


def _yaml(data: dict[str, object]) -> bytes:
    """``data`` as block YAML, with MIG device names left unquoted as people write them."""
    import yaml

    text = yaml.safe_dump(data, sort_keys=False)
    assert "name: '2:2'" in text
    return text.replace("name: '2:2'", "name: 2:2").encode()


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        pytest.param(
            _yaml(MIG),
            RefreshPlan(Outcome.UPDATE, ("same content, new layout",)),
            id="unquoted-mig-name-is-a-string",
        ),
        pytest.param(
            _yaml(_spec(devices=("0", "2:2", "1:30", "all"))),
            RefreshPlan(Outcome.UPDATE, ("removed 1:30",)),
            id="unquoted-base60-names",
        ),
        pytest.param(
            _yaml(MIG).replace(b"name: 2:2", b"name: no"),
            RefreshPlan(Outcome.REPLACE),
            id="unquoted-boolean-name",
        ),
        pytest.param(
            _text({**MIG, "vendorField": 1}).encode(),
            RefreshPlan(Outcome.UPDATE, ("fields CDI does not define removed",)),
            id="unknown-field",
        ),
    ],
)
def test_plan_refresh_reads_scalars_as_cdi_runtimes_do(
    before: bytes, expected: RefreshPlan
) -> None:
    """An unquoted `2:2` is the string "2:2" for the CDI library and Podman, not YAML 1.1's 122."""
    assert plan_refresh(before, _text(MIG), MIG) == expected


def _hooked(*hooks: tuple[str, ...]) -> dict[str, object]:
    """The spec with these common hooks (each: the `nvidia-cdi-hook` subcommand and args)."""
    spec = _spec()
    edits = spec["containerEdits"]
    assert isinstance(edits, dict)
    return {**spec, "containerEdits": {**edits, "hooks": [_hook(HOOK, *h) for h in hooks]}}


LINK_A = ("create-symlinks", "--link", "a::/a")
LINK_B = ("create-symlinks", "--link", "b::/b")
LDCACHE = ("update-ldcache", "--folder", "/usr/lib")
DEVNODES = ("disable-device-node-modification",)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            (LINK_A, LINK_B, LDCACHE),
            (LINK_A, LDCACHE),
            ("common hooks changed create-symlinks (2 -> 1)",),
            id="one-of-two-removed",
        ),
        pytest.param(
            (LINK_A, LDCACHE),
            (LINK_A, LINK_B, LDCACHE),
            ("common hooks changed create-symlinks (1 -> 2)",),
            id="second-added",
        ),
        pytest.param(
            (LINK_A, LINK_B, DEVNODES, LDCACHE),
            (LINK_B, LDCACHE),
            (
                "common hooks removed disable-device-node-modification",
                "common hooks changed create-symlinks (2 -> 1)",
            ),
            id="to-management-mode",
        ),
        pytest.param(
            (LINK_B, LDCACHE),
            (LINK_A, LINK_B, DEVNODES, LDCACHE),
            (
                "common hooks added disable-device-node-modification",
                "common hooks changed create-symlinks (1 -> 2)",
            ),
            id="from-management-mode",
        ),
        pytest.param(
            (LINK_A, LDCACHE),
            (LINK_B, LDCACHE),
            ("common hooks changed create-symlinks",),
            id="same-count-other-args",
        ),
        pytest.param(
            (LINK_A, LINK_B, LDCACHE),
            (LDCACHE,),
            ("common hooks removed create-symlinks",),
            id="all-removed",
        ),
        pytest.param(
            (LDCACHE,),
            (LINK_A, LINK_B, LDCACHE),
            ("common hooks added create-symlinks",),
            id="all-added",
        ),
    ],
)
def test_repeated_hooks_are_named_once(
    old: tuple[tuple[str, ...], ...],
    new: tuple[tuple[str, ...], ...],
    expected: tuple[str, ...],
) -> None:
    """A hook name that stays is `changed`, with its count when that changed, never `removed`."""
    before, after = _hooked(*old), _hooked(*new)
    assert plan_refresh(_text(before).encode(), _text(after), after) == RefreshPlan(
        Outcome.UPDATE, expected
    )
