"""Deciding what `ctk runtime configure` and `unconfigure` change, engine by engine.

Pure: the CLI reads the files into `Inputs`, this module returns a `Plan`, the CLI shows or
writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctk.errors import CtkError
from ctk.runtime_config import containerd, crio, docker, imports
from ctk.runtime_config.changes import (
    FINAL_NEWLINE_ADDED,
    Change,
    ChangeKind,
    Edit,
    merge_records,
    restore_whole_file,
    whole_file_change,
)
from ctk.runtime_config.engines import Runtime, RuntimeRequest
from ctk.runtime_config.inspect import (
    PluginMerge,
    inspect_containerd,
    inspect_crio,
    inspect_docker,
)
from ctk.runtime_config.parse import JSONValue, load_toml
from ctk.runtime_config.plan import FileChange, Plan

Files = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    """The files a runtime command reads, as found on the host."""

    config: str
    config_text: str | None  # None: missing
    record: tuple[Change, ...] = ()  # what earlier runs changed in the config
    recorded: bool = False  # whether a record exists (it may list no changes)
    drop_in: str | None = None  # None: edit the config in place
    drop_in_text: str | None = None
    taken_over: str | None = None  # the user's drop-in a --force configure replaced, kept by ctk
    before: Files = ()  # files the engine reads before the drop-in (not the main file)
    after: Files = ()  # files the engine reads after it


def uses_drop_in(runtime: Runtime, inputs: Inputs) -> bool:
    """Whether the change goes into a drop-in (containerd v1 configs cannot import one)."""
    if inputs.drop_in is None:
        return False
    if runtime is Runtime.CONTAINERD:
        return containerd.version_of(inputs.config, inputs.config_text or "") != 1
    return True


def check(runtime: Runtime, inputs: Inputs) -> None:
    """Refuse files the engine itself would refuse (`CtkError` naming the file and key)."""
    main = (inputs.config, inputs.config_text or "")
    if runtime is Runtime.DOCKER:
        if inputs.config_text is not None:
            inspect_docker(inputs.config_text, name=inputs.config)
    elif runtime is Runtime.CONTAINERD:
        view = inspect_containerd([main, *inputs.before, *inputs.after])
        if view.version != 1:  # v1 configs have no `imports`; containerd ignores them there
            imports.imports_in(inputs.config, inputs.config_text or "")
    else:
        inspect_crio([main, *inputs.before])


# The first line of every drop-in ctk writes: a file without it is the user's.
OWN_MARK = "# Written by `ctk runtime configure`"


def written_by_ctk(inputs: Inputs) -> bool:
    """Whether the existing drop-in is ctk's: its header, or the record of the import ctk added."""
    if inputs.drop_in_text is None or inputs.drop_in_text.startswith(OWN_MARK):
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
        f"{inputs.drop_in}: exists and was not written by ctk (no {OWN_MARK!r} header); "
        f"{verb} would {action} it, so nothing was changed",
        hint="choose another file with --drop-in-config, or pass --force to let ctk "
        f"{action} this one",
    )


def configure(
    runtime: Runtime, inputs: Inputs, request: RuntimeRequest, *, force: bool = False
) -> Plan:
    """Plan adding the runtime ``request`` describes (``force``: take over a foreign drop-in)."""
    check(runtime, inputs)
    text = inputs.config_text or ""
    notes: list[str] = []
    warnings: list[str] = _replaced_path(runtime, inputs, request)
    if runtime is Runtime.CONTAINERD:
        warnings.extend(_cri_disabled(inputs))
        if containerd.version_of(inputs.config, text) != 1:  # v1 has no imports
            for name, file_text in [(inputs.config, text), *inputs.before, *inputs.after]:
                entries = imports.imports_in(name, file_text)
                warnings.extend(imports.relative_glob_warnings(name, entries))
    if (
        runtime is Runtime.CONTAINERD
        and inputs.drop_in is not None
        and not uses_drop_in(runtime, inputs)
    ):
        notes.append(
            f"{inputs.config} is a version 1 config, which cannot import drop-ins: "
            "editing it in place"
        )
    if uses_drop_in(runtime, inputs):
        assert inputs.drop_in is not None
        check_drop_in(inputs, force=force, verb="configure")
        request = _keep_earlier_choices(runtime, inputs, request)
        if runtime is Runtime.CONTAINERD:
            result = containerd.configure_drop_in(
                (inputs.config, text),
                inputs.drop_in,
                inputs.before,
                inputs.after,
                request,
                carried=_carried_containerd(inputs, request.name),
            )
            main_edit, drop_in_text = result.main, result.drop_in
            warnings.extend(result.warnings)
        else:
            drop_edit = crio.configure_drop_in(
                ((inputs.config, text), *inputs.before),
                inputs.drop_in,
                request,
                _carried_crio(inputs, request.name),
            )
            main_edit, drop_in_text = None, drop_edit.text
            notes.extend(drop_edit.notes)
            warnings.extend(_crio_later(inputs, request))
        files = (
            [replace(_with_record(inputs, main_edit), record_for=inputs.drop_in)]
            if main_edit is not None
            else []
        )
        foreign = not written_by_ctk(inputs)
        files.append(
            FileChange(
                inputs.drop_in, inputs.drop_in_text, drop_in_text, own=True, taken_over=foreign
            )
        )
        return Plan(tuple(files), tuple(notes), tuple(warnings))
    if runtime is Runtime.CONTAINERD:
        edit = containerd.configure_in_place(inputs.config, text, request)
        warnings.extend(containerd.in_place_overridden(inputs.config, text, inputs.after))
    elif runtime is Runtime.DOCKER:
        edit = docker.configure(inputs.config, inputs.config_text, request)
    else:
        edit = crio.configure_in_place(inputs.config, text, request)
    notes.extend(edit.notes)
    return Plan((_with_record(inputs, edit),), tuple(notes), tuple(warnings))


def _replaced_path(runtime: Runtime, inputs: Inputs, request: RuntimeRequest) -> list[str]:
    """Warn when a runtime of that name exists with another binary (the GPU Operator's, say)."""
    main = (inputs.config, inputs.config_text or "")
    own = [(inputs.drop_in, inputs.drop_in_text)] if inputs.drop_in and inputs.drop_in_text else []
    files = [main, *inputs.before, *own, *inputs.after]
    if runtime is Runtime.DOCKER:
        view = inspect_docker(main[1], name=main[0]) if inputs.config_text is not None else None
    elif runtime is Runtime.CONTAINERD:
        view = inspect_containerd(files, merge=PluginMerge.DEEP)
    else:
        view = inspect_crio(files)
    found = view.runtime_named(request.name) if view is not None else None
    if found is None or found.binary_path in (None, request.path):
        return []
    old = found.binary_path
    return [
        f"{found.source} sets the {request.name} runtime's path to {old}; replacing it with "
        f"{request.path} (pass --nvidia-runtime-path {old} to keep it)"
    ]


# Names under which `disabled_plugins` can switch off the CRI plugin (short and full ids).
CRI_PLUGIN_IDS = frozenset({"cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"})


def _cri_disabled(inputs: Inputs) -> list[str]:
    """Warn when containerd's CRI plugin, which reads the runtimes, is disabled."""
    files = [(inputs.config, inputs.config_text or ""), *inputs.before, *inputs.after]
    for name, text in files:
        disabled = load_toml(name, text).get("disabled_plugins")
        if isinstance(disabled, list) and CRI_PLUGIN_IDS.intersection(map(str, disabled)):
            return [
                f"{name} disables containerd's CRI plugin (disabled_plugins); the runtime is "
                "written, but only CRI clients (Kubernetes, crictl) use it, and not until `cri` "
                "is removed from disabled_plugins (Docker: use --runtime docker)"
            ]
    return []


def _keep_earlier_choices(
    runtime: Runtime, inputs: Inputs, request: RuntimeRequest
) -> RuntimeRequest:
    """Keep the default runtime and CDI that an earlier run put into our drop-in.

    The drop-in is written afresh from the other files; a run without --set-as-default must not
    quietly take back the default an earlier run set (nvidia-ctk does).
    """
    if not inputs.drop_in or inputs.drop_in_text is None:
        return request
    assert inputs.drop_in is not None
    if runtime is Runtime.CONTAINERD:
        view = inspect_containerd([(inputs.drop_in, inputs.drop_in_text)])
        default, cdi = view.default_runtime, view.cdi_enabled
    else:
        view = inspect_crio([(inputs.drop_in, inputs.drop_in_text)])
        default, cdi = view.default_runtime, None
    return replace(
        request,
        set_as_default=request.set_as_default or default == request.name,
        enable_cdi=request.enable_cdi or cdi is True,
    )


def _own_drop_in(inputs: Inputs) -> tuple[str, str] | None:
    """ctk's existing drop-in (None: missing, or a user's file being taken over)."""
    if inputs.drop_in is None or inputs.drop_in_text is None:
        return None
    if not inputs.drop_in_text.startswith(OWN_MARK) and not written_by_ctk(inputs):
        return None
    return inputs.drop_in, inputs.drop_in_text


def _carried_containerd(inputs: Inputs, skip: str) -> containerd.Carried | None:
    """Runtimes (and their default) earlier runs added to the drop-in: kept next to ``skip``."""
    own = _own_drop_in(inputs)
    if own is None:
        return None
    return containerd.carried_runtimes(own, [(inputs.config, inputs.config_text or "")], skip)


def _carried_crio(inputs: Inputs, skip: str) -> tuple[dict[str, JSONValue], str | None]:
    own = _own_drop_in(inputs)
    if own is None:
        return {}, None
    return crio.carried_runtimes(
        own, [(inputs.config, inputs.config_text or ""), *inputs.before], skip
    )


def _crio_later(inputs: Inputs, request: RuntimeRequest) -> list[str]:
    out = []
    for name, text in inputs.after:
        view = inspect_crio([(name, text)])
        overrides = view.runtime_named(request.name) is not None or (
            request.set_as_default and view.default_runtime not in (None, request.name)
        )
        if overrides:
            out.append(f"{name} is read after {inputs.drop_in} and overrides its settings")
    return out


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
    files: list[FileChange] = []
    text = inputs.config_text
    if uses_drop_in(runtime, inputs):
        assert inputs.drop_in is not None
        check_drop_in(inputs, force=force, verb="unconfigure")
        own = _own_drop_in(inputs)
        if runtime is Runtime.CONTAINERD:
            carried = _carried_containerd(inputs, runtime_name)
            others = bool(carried and carried.added)
        else:
            others = bool(_carried_crio(inputs, runtime_name)[0])
        if own is not None and others:  # other runtimes of ctk's stay: take out only this one
            remove = (
                containerd.unconfigure_in_place
                if runtime is Runtime.CONTAINERD
                else crio.unconfigure_in_place
            )
            kept = remove(own[0], own[1], runtime_name, ())
            return Plan((FileChange(own[0], own[1], kept, own=True),))
        if runtime is Runtime.CONTAINERD and text is not None:
            new = containerd.unconfigure_main(inputs.config, text, inputs.drop_in, inputs.record)
            files.append(replace(_undone(inputs, text, new), record_for=inputs.drop_in))
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
    split = _split_record(runtime, inputs, text, runtime_name)
    if split is not None:  # other runtimes ctk added stay, and so does their part of the record
        inputs = replace(inputs, record=split[0])
    if runtime is Runtime.CONTAINERD:
        new = containerd.unconfigure_in_place(
            inputs.config, text, runtime_name, inputs.record, recorded=inputs.recorded
        )
    elif runtime is Runtime.DOCKER:
        new = docker.unconfigure(
            inputs.config, text, runtime_name, inputs.record, recorded=inputs.recorded
        )
    else:
        new = crio.unconfigure_in_place(
            inputs.config, text, runtime_name, inputs.record, recorded=inputs.recorded
        )
    blank = new.strip() in ("", "{}") if runtime is Runtime.DOCKER else not new.strip()
    undone = _undone(inputs, text, new, blank=blank)
    if split is not None:
        undone = replace(undone, record=split[1], drop_record=False)
    return Plan((undone,))


def _split_record(
    runtime: Runtime, inputs: Inputs, text: str, name: str
) -> tuple[tuple[Change, ...], tuple[Change, ...]] | None:
    """Split the record into the changes for runtime ``name`` and the rest.

    None when the record shows no other runtime ctk added: then everything is undone. Otherwise
    only the runtime ``name`` and a default naming it are taken back; shared changes (the
    `runtimes` table, CDI, the built-in runc written out) stay with the other runtimes.
    """
    if runtime is Runtime.DOCKER:
        prefix: tuple[str, ...] = ("runtimes",)
        default: tuple[str, ...] = ("default-runtime",)
        builtin: frozenset[str] = frozenset()
    elif runtime is Runtime.CONTAINERD:
        version = containerd.version_of(inputs.config, text)
        prefix = (*containerd.cri_keys(version), "containerd", "runtimes")
        default = (*prefix[:-1], "default_runtime_name")
        builtin = frozenset(containerd.BUILTIN_RUNTIMES[version])
    else:
        prefix, default, builtin = (
            crio.RUNTIMES_KEYS,
            (*crio.RUNTIME_KEYS, "default_runtime"),
            frozenset(),
        )
    depth = len(prefix)

    def runtime_of(change: Change) -> str | None:
        if len(change.keys) > depth and change.keys[:depth] == prefix:
            return change.keys[depth]
        return None

    others = {runtime_of(c) for c in inputs.record} - {None, name, *builtin}
    if not others:
        return None
    mine = tuple(
        c for c in inputs.record if runtime_of(c) == name or (c.keys == default and c.after == name)
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
