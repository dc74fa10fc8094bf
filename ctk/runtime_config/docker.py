"""Docker: add or remove the nvidia runtime in daemon.json, keeping its key order and indent."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ctk.errors import CtkError
from ctk.runtime_config import jsonedit
from ctk.runtime_config.changes import (
    FINAL_NEWLINE_ADDED,
    Change,
    ChangeKind,
    Edit,
    keep_line_ends,
    kept_existing,
    new_table,
    newline_of,
)
from ctk.runtime_config.editor import DropIn, EngineEditor, InPlace, Inputs, RecordKeys
from ctk.runtime_config.engines import CDI_SPEC_DIRS, RuntimeRequest
from ctk.runtime_config.inspect import EngineView, inspect_docker
from ctk.runtime_config.parse import JSONValue, load_json_object, type_name

DEFAULT_INDENT = "    "


def _object(name: str, data: dict[str, JSONValue], key: str) -> dict[str, JSONValue] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CtkError(
            f"{name}: `{key}` must be an object, found {type_name(value)}",
            hint="dockerd refuses this file as well; fix that key and run again",
        )
    return value


def configure(name: str, text: str | None, request: RuntimeRequest) -> Edit:
    """Add the runtime ``request`` describes to the daemon.json ``text`` (None: no file yet).

    An existing but empty file is an error, as it is for dockerd.
    """
    source = "{}\n" if text is None else text
    data = load_json_object(name, source)
    changes: list[Change] = []
    notes: list[str] = []
    current = source

    def put(keys: tuple[str, ...], value: JSONValue, existed: bool, before: JSONValue) -> None:
        nonlocal current
        parent = jsonedit.find_object(current, keys[:-1])
        if parent is not None and not parent.members and parent.close > parent.open + 1:
            # `{ }` becomes `{}` when its last member goes: keep the blank inside to restore.
            inner = current[parent.open + 1 : parent.close]
            changes.append(Change(keys[:-1], True, inner, None, ChangeKind.BLANK_INSIDE))
        old = current
        current = jsonedit.set_member(current, keys, value, default_unit=DEFAULT_INDENT)
        if (
            existed
            and jsonedit.set_member(current, keys, before, default_unit=DEFAULT_INDENT) != old
        ):
            # Writing the old value back would change its layout: keep its text to restore.
            raw = _value_text(old, keys)
            changes.append(Change(keys, True, raw, before, ChangeKind.VALUE_TEXT))
        changes.append(Change(keys, existed, before, value))

    runtimes = _object(name, data, "runtimes")
    if runtimes is None:
        put(("runtimes",), {}, False, None)
        changes[-1] = new_table(("runtimes",))
        runtimes = {}
    entry = runtimes.get(request.name)
    if not isinstance(entry, dict):
        existed = request.name in runtimes
        put(("runtimes", request.name), {"path": request.path, "args": []}, existed, entry)
    elif entry.get("path") != request.path:
        put(("runtimes", request.name, "path"), request.path, "path" in entry, entry.get("path"))
    if request.set_as_default and data.get("default-runtime") != request.name:
        before = data.get("default-runtime")
        put(("default-runtime",), request.name, "default-runtime" in data, before)
    if request.enable_cdi:
        notes.extend(_enable_cdi(name, data, put, changes))
    if changes and not current.endswith("\n"):
        current += newline_of(source)
        changes.append(FINAL_NEWLINE_ADDED)
    # A runtime ctk creates is one change (unconfigure removes it whole); no change below it
    # is made, so none is recorded.
    return Edit(
        keep_line_ends(source, current) if changes else source, tuple(changes), tuple(notes)
    )


Put = Callable[[tuple[str, ...], JSONValue, bool, JSONValue], None]


def _enable_cdi(
    name: str, data: dict[str, JSONValue], put: Put, changes: list[Change]
) -> tuple[str, ...]:
    """Turn on dockerd's CDI support, and give it spec directories where it has none."""
    features = _object(name, data, "features")
    if features is None:
        put(("features",), {}, False, None)
        changes[-1] = new_table(("features",))
        features = {}
    if features.get("cdi") is not True:
        put(("features", "cdi"), True, "cdi" in features, features.get("cdi"))
    dirs = data.get("cdi-spec-dirs")
    if not isinstance(dirs, list) or any(dirs):
        return ()
    # dockerd takes [] and [""] as no directory (not its defaults): CDI would fail.
    put(("cdi-spec-dirs",), list(CDI_SPEC_DIRS), True, dirs)
    return (empty_spec_dirs_note(name, dirs),)


def empty_spec_dirs_note(name: str, dirs: JSONValue) -> str:
    """What configure says when it sets the `cdi-spec-dirs` that named no directory."""
    defaults = json.dumps(list(CDI_SPEC_DIRS))
    return (
        f"{name}: cdi-spec-dirs = {json.dumps(dirs)} names no directory, so dockerd would fail "
        f"every CDI device request; setting it to {defaults}, dockerd's defaults (unconfigure "
        "puts it back)"
    )


def _value_text(text: str, keys: tuple[str, ...]) -> str:
    parent = jsonedit.find_object(text, keys[:-1])
    assert parent is not None
    member = next(m for m in parent.members if m.key == keys[-1])
    return text[member.value_start : member.value_end]


def unconfigure(
    name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool = False
) -> str:
    """Remove the runtime, a default naming it, and what ``record`` says ctk added.

    ``recorded``: a record exists, so a runtime it does not show ctk creating stays.
    """
    data = load_json_object(name, text)
    current = text
    runtimes = _object(name, data, "runtimes")
    keep = kept_existing(record, ("runtimes", runtime_name), recorded=recorded)
    if runtimes is not None and runtime_name in runtimes and not keep:
        current = jsonedit.delete_member(current, ("runtimes", runtime_name))
    for change in reversed(record):
        current = _undo(current, change, runtime_name if not keep else None)
    if not keep and load_json_object(name, current).get("default-runtime") == runtime_name:
        current = jsonedit.delete_member(current, ("default-runtime",))
    return current


def _undo(text: str, change: Change, runtime_name: str | None) -> str:
    if change.kind is ChangeKind.VALUE_TEXT:
        return _restore_value_text(text, change)
    if change.kind is ChangeKind.BLANK_INSIDE:
        span = jsonedit.find_object(text, change.keys)
        blank = change.before
        if (
            span is None
            or span.members
            or not isinstance(blank, str)
            or blank.strip(jsonedit.WHITESPACE)
        ):
            return text  # a record's "blank" that is not JSON whitespace is not put back
        return text[: span.open + 1] + blank + text[span.close :]
    if (
        change.kind in (ChangeKind.WHOLE_FILE, ChangeKind.FINAL_NEWLINE)
        or not change.keys
        or (runtime_name is not None and change.keys[:2] == ("runtimes", runtime_name))
    ):
        return text
    parent = jsonedit.find_object(text, change.keys[:-1])
    if parent is None:
        return text
    member = next((m for m in parent.members if m.key == change.keys[-1]), None)
    if member is None:
        return text
    value = load_json_object("-", '{"v": ' + text[member.value_start : member.value_end] + "}")["v"]
    if change.kind is ChangeKind.NEW_TABLE:
        return jsonedit.delete_member(text, change.keys) if value == {} else text
    if value != change.after:
        return text
    if change.existed:
        return jsonedit.set_member(text, change.keys, change.before, default_unit=DEFAULT_INDENT)
    return jsonedit.delete_member(text, change.keys)


def _restore_value_text(text: str, change: Change) -> str:
    """Put back the old text of a value that undo has restored (and the user has not changed)."""
    parent = jsonedit.find_object(text, change.keys[:-1])
    member = next((m for m in parent.members if m.key == change.keys[-1]), None) if parent else None
    raw = change.before
    if member is None or not isinstance(raw, str):
        return text
    current = text[member.value_start : member.value_end]
    try:
        # as JSON text, so that 1 and true differ
        values = {json.dumps(v, sort_keys=True) for v in (json.loads(raw), json.loads(current))}
    except ValueError:  # a record's text that is not JSON: leave the value as it is
        return text
    same = values == {json.dumps(change.after, sort_keys=True)}
    return text[: member.value_start] + raw + text[member.value_end :] if same else text


class DockerEditor:
    """Docker's daemon.json, which has no drop-ins (see `EngineEditor`)."""

    records_hold_null = True

    def check(self, inputs: Inputs) -> None:
        if inputs.config_text is not None:
            inspect_docker(inputs.config_text, name=inputs.config)

    def uses_drop_in(self, inputs: Inputs) -> bool:
        return False

    def notes(self, inputs: Inputs) -> tuple[str, ...]:
        return ()

    def warnings(self, inputs: Inputs) -> tuple[str, ...]:
        return ()

    def view(self, files: Sequence[tuple[str, str]]) -> EngineView:
        name, text = files[0]
        return inspect_docker(text or "{}", name=name)

    def configure_in_place(self, inputs: Inputs, request: RuntimeRequest) -> InPlace:
        return InPlace(configure(inputs.config, inputs.config_text, request))

    def configure_drop_in(
        self, inputs: Inputs, request: RuntimeRequest, own: tuple[str, str] | None
    ) -> DropIn:
        raise ValueError("dockerd has no drop-in configs")

    def keeps_others(self, inputs: Inputs, own: tuple[str, str], name: str) -> bool:
        return False

    def remove(
        self, name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool
    ) -> str:
        return unconfigure(name, text, runtime_name, record, recorded=recorded)

    def unconfigure_main(self, inputs: Inputs) -> str | None:
        return None

    def blank(self, text: str) -> bool:
        return text.strip() in ("", "{}")

    def record_keys(self, inputs: Inputs) -> RecordKeys:
        return RecordKeys(("runtimes",), ("default-runtime",))


EDITOR: EngineEditor = DockerEditor()
