"""`ctk cdi refresh`'s decision: keep, create, update or replace the spec, and what changed.

A refresh runs unattended (at boot, after driver installs), so it repairs: an existing file that
is not a readable spec (not UTF-8, not YAML or JSON, empty, or no `kind` and `devices`) is
replaced, and said so, whatever exactly is wrong with it. A readable spec that differs is
updated, and the message names what differs: the kind, the CDI version, devices added and
removed, the hook program, the common edits (driver libraries, device nodes, hooks, env) and
the devices whose own edits changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ctk.cdi.diff import AREAS, driver_version, grouped
from ctk.cdi.load import Loaded, load_text
from ctk.enums import StrEnum

LISTED = 4  # at most this many names are listed; more are counted


class Outcome(StrEnum):
    """What a refresh does with the output file."""

    CREATE = "create"  # there was none
    KEEP = "keep"  # it is already exactly the new spec
    UPDATE = "update"  # a readable spec that differs
    REPLACE = "replace"  # not a readable spec


@dataclass(frozen=True, slots=True)
class RefreshPlan:
    """The outcome and, for an update, what changed (short phrases, in a fixed order)."""

    outcome: Outcome
    changes: tuple[str, ...] = ()


def plan_refresh(before: bytes | None, text: str, new: Mapping[str, object]) -> RefreshPlan:
    """Compare the output's bytes ``before`` with the new spec (its ``text`` and data)."""
    if before is None:
        return RefreshPlan(Outcome.CREATE)
    if before == text.encode():
        return RefreshPlan(Outcome.KEEP)
    loaded = _load(before)
    old = _readable(loaded.value if loaded else None)
    if loaded is None or old is None:
        return RefreshPlan(Outcome.REPLACE)
    changes = spec_changes(old, new)
    if any(problem.rule == "schema.unknown-field" for problem in loaded.problems):
        changes.append("fields CDI does not define removed")  # the strict loader leaves them out
    return RefreshPlan(Outcome.UPDATE, tuple(changes) or ("same content, new layout",))


def _load(data: bytes) -> Loaded | None:
    """``data`` read as `ctk cdi validate` and CDI runtimes read it, or None when not UTF-8."""
    try:
        return load_text(data.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError):
        return None


def read_spec(data: bytes) -> Mapping[str, object] | None:
    """``data`` as a spec's plain data, or None when it is not a readable spec.

    Scalars are read by the reference library's rules, not YAML 1.1's: an unquoted MIG device
    name `2:2` is the string "2:2", not the base-60 number 122; values of the wrong type and
    fields CDI does not define are left out (so an unquoted `no` as a name makes it unreadable).
    """
    loaded = _load(data)
    return _readable(loaded.value if loaded else None)


def _readable(value: object) -> Mapping[str, object] | None:
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return None
    devices = value.get("devices")
    if not isinstance(devices, list) or not all(
        isinstance(d, dict) and isinstance(d.get("name"), str) for d in devices
    ):
        return None
    return value


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _listed(what: str, verb: str, names: list[str]) -> list[str]:
    """`mounts added a, b`, or `12 mounts added` when there are many."""
    if not names:
        return []
    if len(names) > LISTED:
        return [f"{len(names)} {what} {verb}"]
    return [f"{what} {verb} {_names(names)}"]


def _changed(name: str, before: list[object], after: list[object]) -> str:
    """A changed name, with its count when that changed: `create-symlinks (2 -> 1)`."""
    return name if len(before) == len(after) else f"{name} ({len(before)} -> {len(after)})"


def _edits_changes(
    old: Mapping[str, object], new: Mapping[str, object], scope: str = ""
) -> list[tuple[str, str]]:
    """(area, phrase) for what differs between two `containerEdits`, hook programs aside."""
    found: list[tuple[str, str]] = []
    for field, area, key in AREAS:
        before = grouped(_list(old.get(field)), key)
        after = grouped(_list(new.get(field)), key)
        what = scope + area
        phrases = _listed(what, "added", [k for k in after if k not in before])
        phrases += _listed(what, "removed", [k for k in before if k not in after])
        changed = [k for k in after if k in before and before[k] != after[k]]
        phrases += _listed(what, "changed", [_changed(k, before[k], after[k]) for k in changed])
        found += [(area, phrase) for phrase in phrases]
    old_gids, new_gids = _list(old.get("additionalGids")), _list(new.get("additionalGids"))
    if old_gids != new_gids:
        shown = [", ".join(map(str, gids)) or "none" for gids in (old_gids, new_gids)]
        found.append(("additional GIDs", f"{scope}additional GIDs {shown[0]} -> {shown[1]}"))
    known = {field for field, _, _ in AREAS} | {"additionalGids"}
    if any(old.get(k) != new.get(k) for k in {*old, *new} - known):
        found.append(("other edits", f"{scope}other edits changed"))
    return found


def _hook_programs(spec: Mapping[str, object]) -> list[str]:
    editses = [_mapping(spec.get("containerEdits"))]
    editses += [_mapping(_mapping(d).get("containerEdits")) for d in _list(spec.get("devices"))]
    return sorted({str(_mapping(h).get("path")) for e in editses for h in _list(e.get("hooks"))})


def _device_changes(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """The devices in both whose own edits or annotations differ, and in what."""
    olds = {str(_mapping(d).get("name")): _mapping(d) for d in _list(old.get("devices"))}
    names: list[str] = []
    areas: dict[str, None] = {}
    for entry in _list(new.get("devices")):
        device = _mapping(entry)
        before = olds.get(str(device.get("name")))
        if before is None:
            continue
        found = _edits_changes(
            _mapping(before.get("containerEdits")), _mapping(device.get("containerEdits"))
        )
        if before.get("annotations") != device.get("annotations"):
            found.append(("annotations", ""))
        if found:
            names.append(str(device.get("name")))
            areas.update(dict.fromkeys(area for area, _ in found))
    if not names:
        return []
    which = f"{len(names)} devices" if len(names) > LISTED else _names(names)
    return [f"device edits changed: {which} ({', '.join(areas)})"]


def spec_changes(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """What differs between an old spec and the new one, as short phrases."""
    phrases: list[str] = []
    for key, label in (("kind", "kind"), ("cdiVersion", "cdiVersion")):
        if old.get(key) != new.get(key):
            phrases.append(f"{label} {old.get(key)} -> {new.get(key)}")
    old_names = [str(_mapping(d).get("name")) for d in _list(old.get("devices"))]
    new_names = [str(_mapping(d).get("name")) for d in _list(new.get("devices"))]
    added = [n for n in new_names if n not in old_names]
    removed = [n for n in old_names if n not in new_names]
    phrases += [f"added {_names(added)}"] if added else []
    phrases += [f"removed {_names(removed)}"] if removed else []
    old_driver, new_driver = driver_version(old), driver_version(new)
    if old_driver and new_driver and old_driver != new_driver:
        phrases.append(f"driver {old_driver} -> {new_driver}")
    old_programs, new_programs = _hook_programs(old), _hook_programs(new)
    if old_programs and new_programs and old_programs != new_programs:
        phrases.append(f"hook program {_names(old_programs)} -> {_names(new_programs)}")
    common = _edits_changes(
        _mapping(old.get("containerEdits")), _mapping(new.get("containerEdits")), "common "
    )
    phrases += [phrase for _, phrase in common]
    phrases += _device_changes(old, new)
    known = {"cdiVersion", "kind", "devices", "containerEdits"}
    if any(old.get(k) != new.get(k) for k in {*old, *new} - known):
        phrases.append("other fields changed")
    return phrases
