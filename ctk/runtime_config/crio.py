"""CRI-O: add or remove the nvidia runtime in crio.conf (in place) or in a crio.conf.d drop-in.

CRI-O reads every file of crio.conf.d itself and merges them key by key, so a drop-in needs
only the runtime table (a copy of the default runtime's, else runc's, else crun's).
"""

from __future__ import annotations

from collections.abc import Sequence

from ctk.runtime_config import tomledit
from ctk.runtime_config.changes import (
    TABLE_KINDS,
    Change,
    Edit,
    kept_existing,
    new_table,
    replaced_keys,
    without_inside,
)
from ctk.runtime_config.editor import DropIn, EngineEditor, Files, InPlace, Inputs, RecordKeys
from ctk.runtime_config.engines import RuntimeRequest
from ctk.runtime_config.inspect import DROP_IN_HEADER, EngineView, deep_merge, inspect_crio
from ctk.runtime_config.parse import JSONValue, load_toml

RUNTIME_KEYS = ("crio", "runtime")
RUNTIMES_KEYS = ("crio", "runtime", "runtimes")
CDI_NOTE = "CRI-O always reads CDI specs: --cdi.enabled changes nothing for crio"


def configure_in_place(name: str, text: str, request: RuntimeRequest) -> Edit:
    """Add the runtime ``request`` describes to crio.conf ``text``."""
    doc = tomledit.parse_document(name, tomledit.with_final_newline(text))
    changes: list[Change] = []
    runtimes = tomledit.ensure_table(name, doc, RUNTIMES_KEYS, changes)
    crio_runtime = tomledit.find_table(name, doc, RUNTIME_KEYS)
    assert crio_runtime is not None
    keys = (*RUNTIMES_KEYS, request.name)
    runtime = tomledit.child_table(name, runtimes, request.name, RUNTIMES_KEYS)
    created = runtime is None
    if runtime is None:
        source = _source(name, crio_runtime, runtimes, request.name)
        runtime = tomledit.empty_table() if source is None else tomledit.copy_item(source)
        tomledit.append_table(runtimes, request.name, runtime)
        changes.append(new_table(keys))
    tomledit.set_key(runtime, (*keys, "runtime_path"), request.path, changes)
    tomledit.set_key(runtime, (*keys, "runtime_type"), "oci", changes)
    if request.set_as_default:
        default_keys = (*RUNTIME_KEYS, "default_runtime")
        tomledit.set_key(crio_runtime, default_keys, request.name, changes)
    notes = (CDI_NOTE,) if request.enable_cdi else ()
    out = tomledit.finish(name, doc, text, replaced=replaced_keys(changes))
    return Edit(out, without_inside(changes, keys) if created else tuple(changes), notes)


def _source(
    name: str, crio_runtime: tomledit.Tab, runtimes: tomledit.Tab, wanted: str
) -> tomledit.Tab | None:
    default = tomledit.plain(crio_runtime.get("default_runtime", ""))
    for candidate in (default, "runc", "crun"):
        if isinstance(candidate, str) and candidate and candidate != wanted:
            found = tomledit.child_table(name, runtimes, candidate, RUNTIMES_KEYS)
            if found is not None:
                return found
    return None


def carried_runtimes(
    drop_in: tuple[str, str], others: Sequence[tuple[str, str]], skip: str
) -> tuple[dict[str, JSONValue], str | None]:
    """The runtimes of ctk's ``drop_in`` (but ``skip``) that ``others`` do not define.

    Earlier runs added them; returned with the drop-in's default when it names one of them.
    """
    defined: set[str] = set()
    for name, text in others:
        defined.update(_runtimes(load_toml(name, text)))
    data = load_toml(*drop_in)
    kept = {k: v for k, v in _runtimes(data).items() if k != skip and k not in defined}
    crio = data.get("crio")
    runtime = crio.get("runtime") if isinstance(crio, dict) else None
    default = runtime.get("default_runtime") if isinstance(runtime, dict) else None
    return kept, default if isinstance(default, str) and default in kept else None


def _runtimes(data: dict[str, JSONValue]) -> dict[str, JSONValue]:
    crio = data.get("crio")
    runtime = crio.get("runtime") if isinstance(crio, dict) else None
    runtimes = runtime.get("runtimes") if isinstance(runtime, dict) else None
    return runtimes if isinstance(runtimes, dict) else {}


def configure_drop_in(
    files: Sequence[tuple[str, str]],
    drop_in_name: str,
    request: RuntimeRequest,
    carried: tuple[dict[str, JSONValue], str | None] = ({}, None),
) -> Edit:
    """Write a drop-in with the runtime; ``files`` are crio.conf and the drop-ins read before it.

    ``carried``: runtimes earlier runs put into the drop-in, and their default, kept.
    """
    merged: dict[str, JSONValue] = {}
    for name, text in files:
        merged = deep_merge(merged, load_toml(name, text))
    crio = merged.get("crio", {})
    runtime = crio.get("runtime", {}) if isinstance(crio, dict) else {}
    runtimes = runtime.get("runtimes", {}) if isinstance(runtime, dict) else {}
    default = runtime.get("default_runtime", "") if isinstance(runtime, dict) else ""
    table: dict[str, JSONValue] = {}
    for candidate in (default, "runc", "crun"):
        found = runtimes.get(candidate) if isinstance(runtimes, dict) else None
        if candidate and candidate != request.name and isinstance(found, dict):
            table = dict(found)
            break
    section: dict[str, JSONValue] = {"runtimes": {**carried[0], request.name: table}}
    if carried[1] is not None:
        section["default_runtime"] = carried[1]
    base: dict[str, JSONValue] = {"crio": {"runtime": section}}
    text = DROP_IN_HEADER + tomledit.document_from(base)
    edit = configure_in_place(drop_in_name, text, request)
    configured = load_toml(drop_in_name, edit.text)
    return Edit(DROP_IN_HEADER + tomledit.document_from(configured), edit.changes, edit.notes)


def unconfigure_in_place(
    name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool = False
) -> str:
    """Remove the runtime, a default naming it, and what ``record`` says ctk added.

    ``recorded``: a record exists, so a runtime it does not show ctk creating stays.
    """
    doc = tomledit.parse_document(name, tomledit.with_final_newline(text))
    tomledit.undo_changes(doc, record)
    runtimes = tomledit.find_table(name, doc, RUNTIMES_KEYS)
    # The user's own runtime stays, and so does a default naming it (undo took back ours).
    keep = kept_existing(record, (*RUNTIMES_KEYS, runtime_name), recorded=recorded)
    if runtimes is not None and not keep:
        tomledit.delete_key(runtimes, runtime_name)
    crio_runtime = tomledit.find_table(name, doc, RUNTIME_KEYS)
    if (
        crio_runtime is not None
        and not keep
        and tomledit.plain(crio_runtime.get("default_runtime")) == runtime_name
    ):
        tomledit.delete_key(crio_runtime, "default_runtime")
    tomledit.undo_changes(doc, [c for c in record if c.kind in TABLE_KINDS])
    return tomledit.finish(name, doc, text, replaced=replaced_keys(record), undo=True)


class CrioEditor:
    """CRI-O's crio.conf and the crio.conf.d drop-ins it reads itself (see `EngineEditor`)."""

    records_hold_null = False

    def check(self, inputs: Inputs) -> None:
        inspect_crio([inputs.main, *inputs.before])

    def uses_drop_in(self, inputs: Inputs) -> bool:
        return True

    def notes(self, inputs: Inputs) -> tuple[str, ...]:
        return ()

    def warnings(self, inputs: Inputs) -> tuple[str, ...]:
        return ()

    def view(self, files: Sequence[tuple[str, str]]) -> EngineView:
        return inspect_crio(files)

    def configure_in_place(self, inputs: Inputs, request: RuntimeRequest) -> InPlace:
        edit = configure_in_place(*inputs.main, request)
        return InPlace(edit, tuple(_overridden_later(inputs.after, inputs.config, request)))

    def configure_drop_in(
        self, inputs: Inputs, request: RuntimeRequest, own: tuple[str, str] | None
    ) -> DropIn:
        assert inputs.drop_in is not None
        others = [inputs.main, *inputs.before]
        carried = carried_runtimes(own, others, request.name) if own else ({}, None)
        edit = configure_drop_in(others, inputs.drop_in, request, carried)
        later = _overridden_later(inputs.after, inputs.drop_in, request)
        return DropIn(None, edit.text, edit.notes, tuple(later))

    def keeps_others(self, inputs: Inputs, own: tuple[str, str], name: str) -> bool:
        return bool(carried_runtimes(own, [inputs.main, *inputs.before], name)[0])

    def remove(
        self, name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool
    ) -> str:
        return unconfigure_in_place(name, text, runtime_name, record, recorded=recorded)

    def unconfigure_main(self, inputs: Inputs) -> str | None:
        return None  # CRI-O reads crio.conf.d itself: the main file was never touched

    def blank(self, text: str) -> bool:
        return not text.strip()

    def record_keys(self, inputs: Inputs) -> RecordKeys:
        return RecordKeys(RUNTIMES_KEYS, (*RUNTIME_KEYS, "default_runtime"))


def _overridden_later(after: Files, written: str, request: RuntimeRequest) -> list[str]:
    """A warning for each file of ``after`` (read after the ``written`` one) that defines the
    runtime too or, where it is to be the default, names another default: CRI-O takes the last
    file's value, so ctk's would not hold."""
    out = []
    for name, text in after:
        view = inspect_crio([(name, text)])
        overrides = view.runtime_named(request.name) is not None or (
            request.set_as_default and view.default_runtime not in (None, request.name)
        )
        if overrides:
            out.append(f"{name} is read after {written} and overrides its settings")
    return out


EDITOR: EngineEditor = CrioEditor()
