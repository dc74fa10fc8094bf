"""`ctk cdi inject`: apply CDI devices' container edits to an OCI runtime spec, as a CDI runtime
does (the reference library's `InjectDevices`, which Podman, containerd and CRI-O call).

Order: for each requested device, its spec's own `containerEdits` (once per spec, when its first
device is met) and then the device's edits are appended into one edit set, which is applied:

- env: appended; a `KEY=VALUE` whose key an earlier edit set replaces that entry in place.
  An entry the OCI spec already had (image, engine defaults) stays, and a container sees
  both, as Podman 4.3 gives them (`replace_existing_env` replaces it instead);
- device nodes: a node's missing `hostPath` is its `path`; a missing type or major/minor comes
  from the host node (gathered by the caller); an entry with the same `path` is replaced; a node
  without uid/gid takes the process user's when non-zero; a `b`/`c` node also gets a cgroup
  rule (`allow`, its type and numbers, `permissions` or `rwm`);
- mounts: an existing mount at the same destination is removed, the new one appended, then all
  mounts are ordered by the depth of their destination, then by destination;
- hooks: appended to their stage; additionalGids: appended unless present; intelRdt: replaced.

Pure data in, data out: the OCI spec keeps its key order; keys are added in the OCI structs'
order.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from posixpath import normpath

from ctk.errors import CtkError

HOOK_STAGES = (
    "prestart",
    "createRuntime",
    "createContainer",
    "startContainer",
    "poststart",
    "poststop",
)


@dataclass(frozen=True, slots=True)
class HostDevice:
    """What the host says about a device node's host path: its type and numbers."""

    type: str  # "c", "b" or "p"
    major: int
    minor: int


def merge_edits(blocks: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """One edit set from ``blocks`` in order: lists concatenated, the last intelRdt wins."""
    merged: dict[str, list[object]] = {}
    intel_rdt: object = None
    for block in blocks:
        for key in ("env", "deviceNodes", "hooks", "mounts", "additionalGids"):
            items = block.get(key)
            if isinstance(items, list):
                merged.setdefault(key, []).extend(copy.deepcopy(items))
        if block.get("intelRdt") is not None:
            intel_rdt = copy.deepcopy(block["intelRdt"])
    result: dict[str, object] = dict(merged)
    if intel_rdt is not None:
        result["intelRdt"] = intel_rdt
    return result


class MalformedOciSpec(CtkError):
    """A field of the OCI spec that inject would edit has the wrong JSON type."""

    def __init__(self, field: str, value: object, wanted: str) -> None:
        super().__init__(
            f"the OCI spec's {field} is {_json_type(value)}, not {wanted}",
            hint="fix the OCI runtime spec (config.json): nothing was written",
        )
        self.field = field


def _json_type(value: object) -> str:
    names: tuple[tuple[type, str], ...] = (
        *((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number")),
        *((list, "an array"), (dict, "an object")),
    )
    return next((n for t, n in names if isinstance(value, t)), "null")


def _section(parent: dict[str, object], key: str, kind: type, field: str) -> object:
    """``parent[key]``, made empty where absent or null; `MalformedOciSpec` (naming ``field``)
    where it holds another type: the user's value is never replaced."""
    value = parent.get(key)
    if value is None:
        value = kind()
        parent[key] = value
    elif not isinstance(value, kind):
        raise MalformedOciSpec(field, value, "an object" if kind is dict else "an array")
    return value


def _apply_env(oci: dict[str, object], env: list[object], *, replace_existing: bool) -> None:
    process = _section(oci, "process", dict, "process")
    assert isinstance(process, dict)
    current = _section(process, "env", list, "process.env")
    assert isinstance(current, list)
    for i, entry in enumerate(current):
        if not isinstance(entry, str):
            raise MalformedOciSpec(f"process.env[{i}]", entry, "a string")
    index = {str(e).split("=", 1)[0]: i for i, e in enumerate(current)} if replace_existing else {}
    for entry in env:
        key = str(entry).split("=", 1)[0]
        if key in index:
            current[index[key]] = entry
        else:
            current.append(entry)
            index[key] = len(current) - 1


def _user_ids(oci: Mapping[str, object]) -> tuple[int, int]:
    process = oci.get("process")
    user = process.get("user") if isinstance(process, dict) else None
    if not isinstance(user, dict):
        return 0, 0
    uid, gid = user.get("uid", 0), user.get("gid", 0)
    return (uid if isinstance(uid, int) else 0), (gid if isinstance(gid, int) else 0)


def _oci_device(node: Mapping[str, object], host: HostDevice | None) -> dict[str, object]:
    kind = node.get("type")
    major, minor = node.get("major"), node.get("minor")
    host_path = node.get("hostPath") or node.get("path")
    if not kind or (not major and kind != "p"):
        if host is None:
            raise CtkError(
                f"device node {node.get('path')}: cannot read host device {host_path}",
                hint="the host path must be a device node on this machine",
            )
        if not kind:
            kind = host.type
        elif kind != host.type:
            raise CtkError(
                f"device node {node.get('path')}: type {kind} does not match host device "
                f"{host_path} ({host.type})"
            )
        if not major and kind != "p":
            major, minor = host.major, host.minor
    device: dict[str, object] = {"path": node.get("path"), "type": kind}
    device["major"] = major or 0
    device["minor"] = minor or 0
    for key in ("fileMode", "uid", "gid"):
        if node.get(key) is not None:
            device[key] = node[key]
    return device


def _apply_devices(
    oci: dict[str, object],
    nodes: list[object],
    hosts: Mapping[str, HostDevice],
) -> None:
    uid, gid = _user_ids(oci)
    for node in nodes:
        if not isinstance(node, dict):
            continue
        # made with the first device, as the Go library's specgen does: no device, no section
        linux = _section(oci, "linux", dict, "linux")
        assert isinstance(linux, dict)
        host_path = str(node.get("hostPath") or node.get("path"))
        device = _oci_device(node, hosts.get(host_path))
        if "uid" not in device and uid > 0:
            device["uid"] = uid
        if "gid" not in device and gid > 0:
            device["gid"] = gid
        devices = _section(linux, "devices", list, "linux.devices")
        assert isinstance(devices, list)
        devices[:] = [
            d for d in devices if not (isinstance(d, dict) and d.get("path") == device["path"])
        ]
        devices.append(device)
        if device["type"] in ("b", "c"):
            resources = _section(linux, "resources", dict, "linux.resources")
            assert isinstance(resources, dict)
            rules = _section(resources, "devices", list, "linux.resources.devices")
            assert isinstance(rules, list)
            rules.append(
                {
                    "allow": True,
                    "type": device["type"],
                    "major": device["major"],
                    "minor": device["minor"],
                    "access": node.get("permissions") or "rwm",
                }
            )


def _depth(mount: object) -> tuple[int, str]:
    destination = mount.get("destination") if isinstance(mount, dict) else None
    clean = normpath(str(destination or ""))
    return clean.count("/"), str(destination or "")


def _apply_mounts(oci: dict[str, object], mounts: list[object]) -> None:
    current = _section(oci, "mounts", list, "mounts")
    assert isinstance(current, list)
    for mount in mounts:
        if not isinstance(mount, dict):
            continue
        destination = mount.get("containerPath")
        current[:] = [
            m for m in current if not (isinstance(m, dict) and m.get("destination") == destination)
        ]
        oci_mount: dict[str, object] = {"destination": destination}
        if mount.get("type"):
            oci_mount["type"] = mount["type"]
        if mount.get("hostPath"):
            oci_mount["source"] = mount["hostPath"]
        if mount.get("options"):
            oci_mount["options"] = mount["options"]
        current.append(oci_mount)
    current.sort(key=_depth)


def _apply_hooks(oci: dict[str, object], hooks: list[object]) -> None:
    for hook in hooks:
        if not isinstance(hook, dict) or hook.get("hookName") not in HOOK_STAGES:
            continue
        stages = _section(oci, "hooks", dict, "hooks")
        assert isinstance(stages, dict)
        stage = _section(stages, str(hook["hookName"]), list, f"hooks.{hook['hookName']}")
        assert isinstance(stage, list)
        oci_hook = {"path": hook.get("path")}
        for key in ("args", "env", "timeout"):
            if hook.get(key):
                oci_hook[key] = hook[key]
        stage.append(oci_hook)
    stages = oci.get("hooks")
    if isinstance(stages, dict):  # in the OCI struct's order, as Go writes it
        ordered = {k: stages[k] for k in HOOK_STAGES if k in stages}
        oci["hooks"] = {**ordered, **{k: v for k, v in stages.items() if k not in ordered}}


def _apply_gids(oci: dict[str, object], gids: list[object]) -> None:
    for gid in gids:
        if gid == 0:
            continue
        process = _section(oci, "process", dict, "process")  # with the first gid it adds
        assert isinstance(process, dict)
        user = _section(process, "user", dict, "process.user")
        assert isinstance(user, dict)
        current = _section(user, "additionalGids", list, "process.user.additionalGids")
        assert isinstance(current, list)
        if gid not in current:
            current.append(gid)


def apply_edits(
    oci: Mapping[str, object],
    edits: Mapping[str, object],
    hosts: Mapping[str, HostDevice],
    *,
    replace_existing_env: bool = False,
) -> dict[str, object]:
    """A copy of the OCI spec ``oci`` with ``edits`` applied (see the module docstring).

    ``hosts`` maps the host path of each device node that lacks a type or major number to what
    the host has there.
    """
    result = copy.deepcopy(dict(oci))
    env = edits.get("env")
    if isinstance(env, list) and env:
        _apply_env(result, env, replace_existing=replace_existing_env)
    nodes = edits.get("deviceNodes")
    if isinstance(nodes, list):
        _apply_devices(result, nodes, hosts)
    mounts = edits.get("mounts")
    if isinstance(mounts, list) and mounts:
        _apply_mounts(result, mounts)
    hooks = edits.get("hooks")
    if isinstance(hooks, list):
        _apply_hooks(result, hooks)
    if edits.get("intelRdt") is not None:
        linux = _section(result, "linux", dict, "linux")
        assert isinstance(linux, dict)
        linux["intelRdt"] = copy.deepcopy(edits["intelRdt"])
    gids = edits.get("additionalGids")
    if isinstance(gids, list):
        _apply_gids(result, gids)
    return result


def needed_host_paths(edits: Mapping[str, object]) -> list[str]:
    """Host paths of the device nodes whose type or major number must come from the host."""
    nodes = edits.get("deviceNodes")
    wanted = []
    for node in nodes if isinstance(nodes, list) else []:
        if isinstance(node, dict) and (
            not node.get("type") or (not node.get("major") and node.get("type") != "p")
        ):
            wanted.append(str(node.get("hostPath") or node.get("path")))
    return wanted
