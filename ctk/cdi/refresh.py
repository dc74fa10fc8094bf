"""`ctk cdi refresh`'s decision: keep, create, update or replace the spec, and what changed.

A refresh runs unattended (at boot, after driver installs), so it repairs: an existing file that
is not a readable spec (not UTF-8, not YAML or JSON, empty, or no `kind` and `devices`) is
replaced, and said so, whatever exactly is wrong with it. Otherwise the structural diff of the
old spec and the new one (`ctk.cdi.diff`, the same as `ctk cdi diff`) decides: no difference,
nothing is written; else the file is updated and the message names what differs: the kind, the
CDI version, devices added and removed, the driver version, the hook program, the common edits
(driver libraries, device nodes, hooks, env) and the devices whose own edits changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ctk.cdi.diff import EditsDiff, SpecDiff, diff_json, diff_specs, gids_text
from ctk.cdi.load import Loaded, load_text
from ctk.enums import StrEnum

LISTED = 4  # at most this many names are listed; more are counted
SAME_CONTENT = "same content, new layout"
UNKNOWN_FIELDS = "fields CDI does not define removed"


class Outcome(StrEnum):
    """What a refresh does with the output file."""

    CREATE = "create"  # there was none
    KEEP = "keep"  # it already holds the new spec (whatever its layout): nothing is written
    UPDATE = "update"  # a readable spec that differs
    REPLACE = "replace"  # not a readable spec


@dataclass(frozen=True, slots=True)
class RefreshPlan:
    """The outcome and, for an update, what changed (short phrases, in a fixed order).

    ``diff`` is the structural diff of the old spec and the new one (for keep and update).
    """

    outcome: Outcome
    changes: tuple[str, ...] = ()
    diff: SpecDiff | None = field(default=None, compare=False)

    @property
    def written(self) -> bool:
        return self.outcome is not Outcome.KEEP


def plan_refresh(before: bytes | None, text: str, new: Mapping[str, object]) -> RefreshPlan:
    """Compare the output's bytes ``before`` with the new spec (its ``text`` and data).

    The structural diff decides: a spec that holds the same devices and edits is kept as it is
    (its bytes and mtime stay) even when its layout differs, unless reading it needed repairs
    (fields CDI does not define, values read with a warning), which the new file drops.
    """
    if before is None:
        return RefreshPlan(Outcome.CREATE)
    if before == text.encode():
        return RefreshPlan(Outcome.KEEP, diff=SpecDiff())
    loaded = _load(before)
    old = _readable(loaded.value if loaded else None)
    if loaded is None or old is None:
        return RefreshPlan(Outcome.REPLACE)
    diff = diff_specs(old, new)
    changes = change_phrases(diff)
    if any(problem.rule == "schema.unknown-field" for problem in loaded.problems):
        changes.append(UNKNOWN_FIELDS)  # the strict loader leaves them out
    if not changes and not loaded.problems:
        return RefreshPlan(Outcome.KEEP, diff=diff)
    return RefreshPlan(Outcome.UPDATE, tuple(changes) or (SAME_CONTENT,), diff)


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


def _listed(what: str, verb: str, names: tuple[str, ...]) -> list[str]:
    """`mounts added a, b`, or `12 mounts added` when there are many."""
    if not names:
        return []
    if len(names) > LISTED:
        return [f"{len(names)} {what} {verb}"]
    return [f"{what} {verb} {', '.join(names)}"]


def _edits_phrases(edits: EditsDiff, scope: str = "") -> list[tuple[str, str]]:
    """(area, phrase) for what differs between two `containerEdits`."""
    found: list[tuple[str, str]] = []
    for area in edits.areas:
        what = scope + area.area
        phrases = _listed(what, "added", area.added)
        phrases += _listed(what, "removed", area.removed)
        phrases += _listed(what, "changed", area.changed_names())
        phrases += [f"{what} reordered"] if area.reordered else []
        found += [(area.area, phrase) for phrase in phrases]
    if edits.gids is not None:
        old, new = (gids_text(gids) for gids in edits.gids)
        found.append(("additional GIDs", f"{scope}additional GIDs {old} -> {new}"))
    if edits.other:
        found.append(("other edits", f"{scope}other edits changed"))
    return found


def _device_phrases(diff: SpecDiff) -> list[str]:
    """The devices in both whose own edits or annotations differ, and in what."""
    names: list[str] = []
    areas: dict[str, None] = {}
    for change in diff.devices_changed:
        names.append(change.name)
        areas.update(dict.fromkeys(area for area, _ in _edits_phrases(change.edits)))
        if change.annotations:
            areas["annotations"] = None
    if not names:
        return []
    which = f"{len(names)} devices" if len(names) > LISTED else ", ".join(names)
    return [f"device edits changed: {which} ({', '.join(areas)})"]


def change_phrases(diff: SpecDiff) -> list[str]:
    """The diff as short phrases: fields, devices added and removed, driver, hook program, the
    common edits, the devices whose edits changed, other fields. Empty when nothing differs."""
    fields = {label: (old, new) for label, old, new in diff.changed_fields}
    phrases = [
        f"{label} {fields[key][0]} -> {fields[key][1]}"
        for key, label in (("kind", "kind"), ("cdiVersion", "cdiVersion"))
        if key in fields
    ]
    phrases += [f"added {', '.join(diff.devices_added)}"] if diff.devices_added else []
    phrases += [f"removed {', '.join(diff.devices_removed)}"] if diff.devices_removed else []
    driver = fields.get("driver version")
    if driver is not None and all(driver):  # a driver only one side names shows in its mounts
        phrases.append(f"driver {driver[0]} -> {driver[1]}")
    if "hook program" in fields:
        phrases.append("hook program {} -> {}".format(*fields["hook program"]))
    phrases += [phrase for _, phrase in _edits_phrases(diff.common, "common ")]
    phrases += _device_phrases(diff)
    phrases += ["other fields changed"] if diff.other_fields else []
    return phrases


def refresh_message(plan: RefreshPlan, output: str, summary: str) -> str:
    """The one line a refresh says: what it did with ``output``, the new spec's ``summary``, and
    for an update what changed."""
    if plan.outcome is Outcome.KEEP:
        return f"{output} is up to date ({summary}); nothing written"
    if plan.outcome is Outcome.CREATE:
        return f"created {output} ({summary})"
    if plan.outcome is Outcome.REPLACE:
        return f"replaced {output}, which was not a readable CDI spec ({summary})"
    return f"updated {output} ({'; '.join([summary, *plan.changes])})"


def refresh_json(
    plan: RefreshPlan, output: str, summary: Mapping[str, object]
) -> dict[str, object]:
    """What `ctk cdi refresh --json` prints: the outcome, the new spec's summary and the diff."""
    return {
        "output": output,
        "outcome": str(plan.outcome),
        "written": plan.written,
        **summary,
        "changes": list(plan.changes),
        "diff": None if plan.diff is None else diff_json(plan.diff),
    }
