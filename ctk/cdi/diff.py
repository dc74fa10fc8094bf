"""`ctk cdi diff`: what differs between two specs, as data (pure: spec data in, `SpecDiff` out).

Entries are compared by what names them: env by variable, device nodes by container path, mounts
by container path, hooks by subcommand (several `create-symlinks` hooks are one group). The driver
version is read from the spec itself: the `enable-cuda-compat` hook's `--host-driver-version`,
else the version in a mounted `libcuda.so.<version>` or `libnvidia-ml.so.<version>`. The hook
program (the hooks' `path`) is one field of the spec, not a change of every hook.

Two specs are the same exactly when a CDI runtime would do the same with them: the order of the
edits counts (a runtime applies mounts and hooks in order), the order of the devices does not
(they are looked up by name), and neither does the layout of the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

_VERSIONED = re.compile(r"/lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)$")


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


Key = Callable[[object], tuple[str, object]]


def _env(entry: object) -> tuple[str, object]:
    return str(entry).partition("=")[0], entry


def _node(entry: object) -> tuple[str, object]:
    return str(_mapping(entry).get("path", "?")), entry


def _mount(entry: object) -> tuple[str, object]:
    return str(_mapping(entry).get("containerPath", "?")), entry


def _hook(entry: object, *, program: bool = True) -> tuple[str, object]:
    """A hook's subcommand, and all of it; without its ``program`` when that is reported on its
    own (the programs of the two specs differ)."""
    hook = _mapping(entry)
    args = [str(a) for a in _list(hook.get("args"))]
    rest = args[1:]
    if rest[:1] == ["hook"]:  # nvidia-ctk hook <name>
        rest = rest[1:]
    name = rest[0] if rest else "?"
    if program:
        return name, entry
    others = {k: v for k, v in hook.items() if k not in ("path", "args")}
    return name, (rest[1:], others)


def _hook_without_program(entry: object) -> tuple[str, object]:
    return _hook(entry, program=False)


AREAS: tuple[tuple[str, str, Key], ...] = (
    ("env", "env", _env),
    ("deviceNodes", "device nodes", _node),
    ("hooks", "hooks", _hook),
    ("mounts", "mounts", _mount),
)


def grouped(items: list[object], key: Key) -> dict[str, list[object]]:
    """Entries by name, in order; a name can repeat (`create-symlinks` hooks)."""
    grouped: dict[str, list[object]] = {}
    for item in items:
        name, value = key(item)
        grouped.setdefault(name, []).append(value)
    return grouped


@dataclass(frozen=True, slots=True)
class AreaDiff:
    """Names added, removed and changed in one area of container edits (env, mounts...).

    ``counts`` has (name, before, after) for the changed names that repeat (`create-symlinks`)
    and whose number of entries changed; ``reordered`` says the names both have moved.
    """

    area: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    counts: tuple[tuple[str, int, int], ...] = ()
    reordered: bool = False

    @property
    def same(self) -> bool:
        return not (self.added or self.removed or self.changed or self.reordered)

    def changed_names(self) -> tuple[str, ...]:
        """The changed names, each with its count when that changed: `create-symlinks (2 -> 1)`."""
        counted = {name: f"{name} ({a} -> {b})" for name, a, b in self.counts}
        return tuple(counted.get(name, name) for name in self.changed)


@dataclass(frozen=True, slots=True)
class EditsDiff:
    """What differs between two `containerEdits`."""

    areas: tuple[AreaDiff, ...] = ()
    other: bool = False  # intelRdt, netDevices, fields CDI does not define...
    gids: tuple[tuple[object, ...], tuple[object, ...]] | None = None  # additionalGids moved

    @property
    def same(self) -> bool:
        return not self.other and self.gids is None and all(a.same for a in self.areas)


@dataclass(frozen=True, slots=True)
class DeviceChange:
    """A device in both specs whose edits or annotations differ."""

    name: str
    edits: EditsDiff
    annotations: bool = False


@dataclass(frozen=True, slots=True)
class SpecDiff:
    """Everything that differs between an old and a new spec; `same` when nothing does."""

    # kind, cdiVersion, driver version, hook program: (label, old, new)
    changed_fields: tuple[tuple[str, object, object], ...] = ()
    devices_added: tuple[str, ...] = ()
    devices_removed: tuple[str, ...] = ()
    devices_changed: tuple[DeviceChange, ...] = ()
    common: EditsDiff = field(default_factory=EditsDiff)
    other_fields: bool = False

    @property
    def same(self) -> bool:
        return (
            not (
                self.changed_fields
                or self.devices_added
                or self.devices_removed
                or self.devices_changed
                or self.other_fields
            )
            and self.common.same
        )


def driver_version(spec: Mapping[str, object]) -> str | None:
    """The driver version a spec was generated for, when it says."""
    editses = [_mapping(spec.get("containerEdits"))]
    editses += [_mapping(_mapping(d).get("containerEdits")) for d in _list(spec.get("devices"))]
    for edits in editses:
        for hook in _list(edits.get("hooks")):
            for arg in _list(_mapping(hook).get("args")):
                if isinstance(arg, str) and arg.startswith("--host-driver-version="):
                    return arg.partition("=")[2]
    for edits in editses:
        for mount in _list(edits.get("mounts")):
            found = _VERSIONED.search(str(_mapping(mount).get("containerPath", "")))
            if found:
                return found.group(1)
    return None


def hook_programs(spec: Mapping[str, object]) -> tuple[str, ...]:
    """The programs the spec's hooks run, each once, sorted."""
    editses = [_mapping(spec.get("containerEdits"))]
    editses += [_mapping(_mapping(d).get("containerEdits")) for d in _list(spec.get("devices"))]
    return tuple(
        sorted({str(_mapping(h).get("path")) for e in editses for h in _list(e.get("hooks"))})
    )


def _area(area: str, before: dict[str, list[object]], after: dict[str, list[object]]) -> AreaDiff:
    changed = tuple(k for k in after if k in before and before[k] != after[k])
    counts = tuple(
        (k, len(before[k]), len(after[k])) for k in changed if len(before[k]) != len(after[k])
    )
    kept_before = [k for k in before if k in after]
    kept_after = [k for k in after if k in before]
    return AreaDiff(
        area,
        tuple(k for k in after if k not in before),
        tuple(k for k in before if k not in after),
        changed,
        counts,
        kept_before != kept_after,
    )


def diff_edits(
    old: Mapping[str, object], new: Mapping[str, object], *, programs: bool = True
) -> EditsDiff:
    """Compare two `containerEdits` area by area; hooks without their program unless
    ``programs`` (when the specs' hook programs differ, that is one change of its own)."""
    keys = {key: name_of for key, _, name_of in AREAS}
    if not programs:
        keys["hooks"] = _hook_without_program
    areas = tuple(
        _area(
            area, grouped(_list(old.get(key)), keys[key]), grouped(_list(new.get(key)), keys[key])
        )
        for key, area, _ in AREAS
    )
    old_gids, new_gids = _list(old.get("additionalGids")), _list(new.get("additionalGids"))
    gids = None if old_gids == new_gids else (tuple(old_gids), tuple(new_gids))
    known = {key for key, _, _ in AREAS} | {"additionalGids"}
    other = any(old.get(k) != new.get(k) for k in {*old, *new} - known)
    return EditsDiff(areas, other, gids)


def _devices(spec: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    return {str(_mapping(d).get("name")): _mapping(d) for d in _list(spec.get("devices"))}


def diff_specs(old: Mapping[str, object], new: Mapping[str, object]) -> SpecDiff:
    """Compare two specs' plain data."""
    fields = []
    for label, before, after in (
        ("kind", old.get("kind"), new.get("kind")),
        ("cdiVersion", old.get("cdiVersion"), new.get("cdiVersion")),
        ("driver version", driver_version(old), driver_version(new)),
    ):
        if before != after:
            fields.append((label, before, after))
    programs = (", ".join(hook_programs(old)), ", ".join(hook_programs(new)))
    if all(programs) and programs[0] != programs[1]:  # else hooks are added or removed
        fields.append(("hook program", *programs))
    same_programs = programs[0] == programs[1]
    olds, news = _devices(old), _devices(new)
    changed = []
    for name, device in news.items():
        if name not in olds:
            continue
        edits = diff_edits(
            _mapping(olds[name].get("containerEdits")),
            _mapping(device.get("containerEdits")),
            programs=same_programs,
        )
        annotations = olds[name].get("annotations") != device.get("annotations")
        if not edits.same or annotations:
            changed.append(DeviceChange(name, edits, annotations))
    known = {"cdiVersion", "kind", "devices", "containerEdits"}
    return SpecDiff(
        tuple(fields),
        tuple(n for n in news if n not in olds),
        tuple(n for n in olds if n not in news),
        tuple(changed),
        diff_edits(
            _mapping(old.get("containerEdits")),
            _mapping(new.get("containerEdits")),
            programs=same_programs,
        ),
        any(old.get(k) != new.get(k) for k in {*old, *new} - known),
    )


def gids_text(gids: tuple[object, ...]) -> str:
    return ", ".join(map(str, gids)) or "none"


def _edits_lines(edits: EditsDiff, indent: str) -> list[str]:
    lines = []
    for area in edits.areas:
        for verb, names in (
            ("added", area.added),
            ("removed", area.removed),
            ("changed", area.changed_names()),
        ):
            if names:
                lines.append(f"{indent}{area.area} {verb}: {', '.join(names)}")
        if area.reordered:
            lines.append(f"{indent}{area.area} reordered")
    if edits.gids is not None:
        old, new = edits.gids
        lines.append(f"{indent}additional GIDs: {gids_text(old)} -> {gids_text(new)}")
    if edits.other:
        lines.append(f"{indent}other edits changed")
    return lines


def diff_lines(diff: SpecDiff) -> list[str]:
    """The diff as text lines (empty when the specs are the same)."""
    lines = [f"{label}: {before} -> {after}" for label, before, after in diff.changed_fields]
    if diff.devices_added:
        lines.append(f"devices added: {', '.join(diff.devices_added)}")
    if diff.devices_removed:
        lines.append(f"devices removed: {', '.join(diff.devices_removed)}")
    common = _edits_lines(diff.common, "  ")
    if common:
        lines += ["common edits:", *common]
    for change in diff.devices_changed:
        lines.append(f"device {change.name}:")
        lines += _edits_lines(change.edits, "  ")
        if change.annotations:
            lines.append("  annotations changed")
    if diff.other_fields:
        lines.append("other fields changed")
    return lines


def _area_json(area: AreaDiff) -> dict[str, object]:
    result: dict[str, object] = {
        "added": list(area.added),
        "removed": list(area.removed),
        "changed": list(area.changed),
    }
    if area.counts:
        result["counts"] = {name: {"old": a, "new": b} for name, a, b in area.counts}
    if area.reordered:
        result["reordered"] = True
    return result


def _edits_json(edits: EditsDiff) -> dict[str, object]:
    result: dict[str, object] = {
        area.area: _area_json(area) for area in edits.areas if not area.same
    }
    if edits.gids is not None:
        result["additionalGids"] = {"old": list(edits.gids[0]), "new": list(edits.gids[1])}
    if edits.other:
        result["other"] = True
    return result


def diff_json(diff: SpecDiff) -> dict[str, object]:
    """The diff as JSON-ready data."""
    return {
        "same": diff.same,
        "fields": {label: {"old": b, "new": a} for label, b, a in diff.changed_fields},
        "devices": {
            "added": list(diff.devices_added),
            "removed": list(diff.devices_removed),
            "changed": {
                c.name: {**_edits_json(c.edits), **({"annotations": True} if c.annotations else {})}
                for c in diff.devices_changed
            },
        },
        "commonEdits": _edits_json(diff.common),
        "otherFields": diff.other_fields,
    }
