"""Deciding what `ctk runtime configure` and `unconfigure` change, for any engine.

Pure: the CLI reads the files into `Inputs`, this module returns a `Plan`, the CLI shows or
writes it. What differs between engines is asked of their `EngineEditor` (`editor.py`); this
module never branches on the engine.
"""

from __future__ import annotations

from dataclasses import replace

from ctk.errors import CtkError
from ctk.runtime_config.changes import (
    FINAL_NEWLINE_ADDED,
    Change,
    ChangeKind,
    Edit,
    merge_records,
    restore_whole_file,
    whole_file_change,
)
from ctk.runtime_config.editor import EngineEditor, Inputs, editor_for
from ctk.runtime_config.engines import Runtime, RuntimeRequest
from ctk.runtime_config.inspect import OWN_DROP_IN
from ctk.runtime_config.plan import FileChange, Plan

__all__ = ["Inputs", "check", "configure", "unconfigure", "uses_drop_in"]


def uses_drop_in(runtime: Runtime, inputs: Inputs) -> bool:
    """Whether the change goes into a drop-in (containerd v1 configs cannot import one)."""
    return inputs.drop_in is not None and editor_for(runtime).uses_drop_in(inputs)


def check(runtime: Runtime, inputs: Inputs) -> None:
    """Refuse files the engine itself would refuse (`CtkError` naming the file and key)."""
    editor_for(runtime).check(inputs)


# The first line of every drop-in ctk writes: a file without it is the user's.


def written_by_ctk(inputs: Inputs) -> bool:
    """Whether the existing drop-in is ctk's: its header, or the record of the import ctk added."""
    if inputs.drop_in_text is None or inputs.drop_in_text.startswith(OWN_DROP_IN):
        return True
    for change in inputs.record:
        if change.keys != ("imports",) or not isinstance(change.after, list):
            continue
        before = change.before if change.existed and isinstance(change.before, list) else []
        if inputs.drop_in in change.after and inputs.drop_in not in before:
            return True
    return False


def check_drop_in(inputs: Inputs, *, force: bool, verb: str) -> None:
    """Refuse to replace or delete a drop-in that ctk did not write, unless ``force``."""
    if force or written_by_ctk(inputs):
        return
    action = "replace" if verb == "configure" else "delete"
    raise CtkError(
        f"{inputs.drop_in}: exists and was not written by ctk (no {OWN_DROP_IN!r} header); "
        f"{verb} would {action} it, so nothing was changed",
        hint="choose another file with --drop-in-config, or pass --force to let ctk "
        f"{action} this one",
    )


def configure(
    runtime: Runtime, inputs: Inputs, request: RuntimeRequest, *, force: bool = False
) -> Plan:
    """Plan adding the runtime ``request`` describes (``force``: take over a foreign drop-in)."""
    editor = editor_for(runtime)
    editor.check(inputs)
    notes = list(editor.notes(inputs))
    warnings = [*_replaced_path(editor, inputs, request), *editor.warnings(inputs)]
    if inputs.drop_in is not None and editor.uses_drop_in(inputs):
        check_drop_in(inputs, force=force, verb="configure")
        request = _keep_earlier_choices(editor, inputs, request)
        drop_in = editor.configure_drop_in(inputs, request, _own_drop_in(inputs))
        if drop_in.text != inputs.drop_in_text:  # what the drop-in holds, said when it changes
            notes.extend(drop_in.notes)
        warnings.extend(drop_in.warnings)
        files = (
            [replace(_with_record(inputs, drop_in.main), record_for=inputs.drop_in)]
            if drop_in.main is not None
            else []
        )
        foreign = not written_by_ctk(inputs)
        files.append(
            FileChange(
                inputs.drop_in, inputs.drop_in_text, drop_in.text, own=True, taken_over=foreign
            )
        )
        return Plan(tuple(files), tuple(notes), tuple(warnings))
    in_place = editor.configure_in_place(inputs, request)
    warnings.extend(in_place.warnings)
    notes.extend(in_place.edit.notes)
    return Plan((_with_record(inputs, in_place.edit),), tuple(notes), tuple(warnings))


def _replaced_path(editor: EngineEditor, inputs: Inputs, request: RuntimeRequest) -> list[str]:
    """Warn when a runtime of that name exists with another binary (the GPU Operator's, say)."""
    own = [(inputs.drop_in, inputs.drop_in_text)] if inputs.drop_in and inputs.drop_in_text else []
    found = editor.view([inputs.main, *inputs.before, *own, *inputs.after]).runtime_named(
        request.name
    )
    if found is None or found.binary_path in (None, request.path):
        return []
    old = found.binary_path
    return [
        f"{found.source} sets the {request.name} runtime's path to {old}; replacing it with "
        f"{request.path} (pass --nvidia-runtime-path {old} to keep it)"
    ]


def _keep_earlier_choices(
    editor: EngineEditor, inputs: Inputs, request: RuntimeRequest
) -> RuntimeRequest:
    """Keep the default runtime and CDI that an earlier run put into our drop-in.

    The drop-in is written afresh from the other files; a run without --set-as-default must not
    quietly take back the default an earlier run set (nvidia-ctk does).
    """
    if not inputs.drop_in or inputs.drop_in_text is None:
        return request
    view = editor.view([(inputs.drop_in, inputs.drop_in_text)])
    return replace(
        request,
        set_as_default=request.set_as_default or view.default_runtime == request.name,
        enable_cdi=request.enable_cdi or view.cdi_enabled is True,
    )


def _own_drop_in(inputs: Inputs) -> tuple[str, str] | None:
    """ctk's existing drop-in (None: missing, or a user's file being taken over)."""
    if inputs.drop_in is None or inputs.drop_in_text is None:
        return None
    if not inputs.drop_in_text.startswith(OWN_DROP_IN) and not written_by_ctk(inputs):
        return None
    return inputs.drop_in, inputs.drop_in_text


def _with_record(inputs: Inputs, edit: Edit) -> FileChange:
    after = edit.text
    if after == (inputs.config_text or "") and inputs.config_text is not None:
        # Already configured: an empty record says so, and unconfigure then keeps the runtime.
        keep: tuple[Change, ...] | None = None if inputs.recorded else ()
        return FileChange(inputs.config, inputs.config_text, after, keep)
    if after == "" and inputs.config_text is None:
        return FileChange(inputs.config, None, None)
    newline: tuple[Change, ...] = ()
    added_newline = any(c.kind is ChangeKind.FINAL_NEWLINE for c in edit.changes)
    if inputs.config_text and not inputs.config_text.endswith("\n") and not added_newline:
        newline = (FINAL_NEWLINE_ADDED,)
    new = (*whole_file_change(inputs.config_text), *edit.changes, *newline)
    return FileChange(inputs.config, inputs.config_text, after, merge_records(inputs.record, new))


def unconfigure(
    runtime: Runtime, inputs: Inputs, runtime_name: str, *, force: bool = False
) -> Plan:
    """Plan removing the runtime and whatever else the record says configure added."""
    editor = editor_for(runtime)
    text = inputs.config_text
    if inputs.drop_in is not None and editor.uses_drop_in(inputs):
        check_drop_in(inputs, force=force, verb="unconfigure")
        own = _own_drop_in(inputs)
        if own is not None and editor.keeps_others(inputs, own, runtime_name):
            # Other runtimes of ctk's stay: take out only this one.
            kept = editor.remove(own[0], own[1], runtime_name, (), recorded=False)
            return Plan((FileChange(own[0], own[1], kept, own=True),))
        files: list[FileChange] = []
        new_main = editor.unconfigure_main(inputs) if text is not None else None
        if text is not None and new_main is not None:
            files.append(replace(_undone(inputs, text, new_main), record_for=inputs.drop_in))
        if not written_by_ctk(inputs):  # --force: deleted, but kept in the backup folder
            files.append(FileChange(inputs.drop_in, inputs.drop_in_text, None, keep_before=True))
        else:  # ctk's drop-in goes; a user's file it took over comes back
            restored = inputs.taken_over
            files.append(
                FileChange(
                    inputs.drop_in,
                    inputs.drop_in_text,
                    restored,
                    own=True,
                    restores=restored is not None,
                )
            )
        return Plan(tuple(files))
    if text is None:
        return Plan((FileChange(inputs.config, None, None),))
    split = _split_record(editor, inputs, runtime_name)
    if split is not None:  # other runtimes ctk added stay, and so does their part of the record
        inputs = replace(inputs, record=split[0])
    new = editor.remove(inputs.config, text, runtime_name, inputs.record, recorded=inputs.recorded)
    undone = _undone(inputs, text, new, blank=editor.blank(new))
    if split is not None:
        undone = replace(undone, record=split[1], drop_record=False)
    return Plan((undone,))


def _split_record(
    editor: EngineEditor, inputs: Inputs, name: str
) -> tuple[tuple[Change, ...], tuple[Change, ...]] | None:
    """Split the record into the changes for runtime ``name`` and the rest.

    None when the record shows no other runtime ctk added: then everything is undone. Otherwise
    only the runtime ``name`` and a default naming it are taken back; shared changes (the
    `runtimes` table, CDI, the built-in runc written out) stay with the other runtimes.
    """
    keys = editor.record_keys(inputs)
    prefix, depth = keys.runtimes, len(keys.runtimes)

    def runtime_of(change: Change) -> str | None:
        if len(change.keys) > depth and change.keys[:depth] == prefix:
            return change.keys[depth]
        return None

    others = {runtime_of(c) for c in inputs.record} - {None, name, *keys.builtin}
    if not others:
        return None
    mine = tuple(
        c
        for c in inputs.record
        if runtime_of(c) == name or (c.keys == keys.default and c.after == name)
    )
    return mine, tuple(c for c in inputs.record if c not in mine)


def _undone(inputs: Inputs, text: str, new: str, *, blank: bool | None = None) -> FileChange:
    if any(c.kind is ChangeKind.FINAL_NEWLINE for c in inputs.record) and new.endswith("\n"):
        new = new[:-2] if new.endswith("\r\n") else new[:-1]
    blank = not new.strip() if blank is None else blank
    after = restore_whole_file(new, inputs.record, blank=blank)
    if after == text:
        return FileChange(inputs.config, text, text, drop_record=inputs.recorded)
    return FileChange(inputs.config, text, after, drop_record=True)
