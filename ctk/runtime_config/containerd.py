"""containerd: add or remove the nvidia runtime in config.toml (in place) or in a drop-in.

Text in, text out. Tables ctk does not touch keep every byte; the nvidia runtime starts as a copy
of the default runtime's table (else runc's, else crun's), so `SystemdCgroup` and friends match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tomlkit.items import InlineTable
from tomlkit.toml_document import TOMLDocument

from ctk.errors import CtkError
from ctk.runtime_config import imports, tomledit
from ctk.runtime_config.changes import (
    TABLE_KINDS,
    Change,
    ChangeKind,
    Edit,
    kept_existing,
    new_table,
    replaced_keys,
    without_inside,
)
from ctk.runtime_config.editor import DropIn, EngineEditor, InPlace, Inputs, RecordKeys
from ctk.runtime_config.engines import CONTAINERD_CRI_PLUGIN, RuntimeRequest
from ctk.runtime_config.inspect import (
    DROP_IN_HEADER,
    MERGED_MARK,
    EngineView,
    PluginMerge,
    containerd_version,
    deep_merge,
    dotted,
    inspect_containerd,
    leaf_paths,
    value_at,
)
from ctk.runtime_config.parse import TYPE_HINT, JSONValue, load_toml

RUNC_V2 = "io.containerd.runc.v2"
# containerd's built-in `runc` runtime (`containerd config default`), which it uses only while no
# config file defines `runtimes`: once ctk adds one, the built-in one has to be written out too, or
# `default_runtime_name = "runc"` names nothing and the CRI plugin fails to load. Zero-valued
# options are left out; containerd 2.x also defaults `sandboxer` to podsandbox.
BUILTIN_RUNTIMES: dict[int, dict[str, JSONValue]] = {
    1: {"runc": {"runtime_type": RUNC_V2}},
    2: {"runc": {"runtime_type": RUNC_V2}},
    3: {"runc": {"runtime_type": RUNC_V2, "sandboxer": "podsandbox"}},
}
RUNTIME_V1_LINUX = "io.containerd.runtime.v1.linux"
CARRIED_HEADER = DROP_IN_HEADER + (
    "# containerd 1.x replaces a whole plugin table per imported file, so this file carries\n"
    "# the CRI plugin settings of the files imported before it as well: after editing them\n"
    "# there, run `ctk runtime configure` again.\n"
)
MERGED_HEADER = DROP_IN_HEADER + (
    f"{MERGED_MARK} into the ones before it key by key: it holds only\n# what ctk adds.\n"
)


def version_of(name: str, text: str) -> int:
    """Return the config version of ``text`` (empty: 2, no `version` key: 1)."""
    return containerd_version(name, load_toml(name, text), empty=not text.strip())


def cri_keys(version: int) -> tuple[str, str]:
    """The key path of the CRI plugin table holding runtimes for ``version``."""
    return ("plugins", CONTAINERD_CRI_PLUGIN[version])


def configure_in_place(name: str, text: str, request: RuntimeRequest) -> Edit:
    """Add the runtime ``request`` describes to the config ``text``."""
    doc = tomledit.parse_document(name, tomledit.with_final_newline(text))
    version = version_of(name, text)
    changes: list[Change] = []
    if not text.strip():
        tomledit.set_key(doc, ("version",), 2, changes)
    cri = cri_keys(version)
    runtimes_keys = (*cri, "containerd", "runtimes")
    builtin = not tomledit.plain(tomledit.find_table(name, doc, runtimes_keys) or {})
    runtimes = tomledit.ensure_table(name, doc, runtimes_keys, changes)
    if builtin:  # containerd's built-in runtimes were in effect: carry them
        for key, value in BUILTIN_RUNTIMES[version].items():
            tomledit.append_table(runtimes, key, tomledit.table_from(value))
            changes.append(Change((*runtimes_keys, key), False, None, value))
    containerd = tomledit.find_table(name, doc, (*cri, "containerd"))
    assert containerd is not None
    rt_keys = (*runtimes_keys, request.name)
    runtime = tomledit.child_table(name, runtimes, request.name, runtimes_keys)
    created = runtime is None
    if runtime is None:
        source = _source_runtime(name, containerd, runtimes, request.name)
        runtime = tomledit.copy_item(source) if source is not None else tomledit.empty_table()
        tomledit.append_table(runtimes, request.name, runtime)
        changes.append(new_table(rt_keys))
    runtime_type = tomledit.plain(runtime.get("runtime_type", ""))
    if not runtime_type:
        tomledit.set_key(runtime, (*rt_keys, "runtime_type"), RUNC_V2, changes)
        runtime_type = RUNC_V2
    # The old v1 shim names the binary `Runtime`; the runc v2 shim calls it `BinaryName`.
    binary_key = "Runtime" if runtime_type == RUNTIME_V1_LINUX else "BinaryName"
    copied = runtime.get("options")
    if isinstance(copied, InlineTable):  # `options = { ... }` as the runtime wrote it
        _set_inline(runtime, copied, (*rt_keys, "options", binary_key), request, changes)
    else:
        options = tomledit.ensure_table(name, doc, (*rt_keys, "options"), changes)
        tomledit.set_key(options, (*rt_keys, "options", binary_key), request.path, changes)
    if request.set_as_default:
        keys = (*cri, "containerd", "default_runtime_name")
        tomledit.set_key(containerd, keys, request.name, changes)
    if request.enable_cdi:
        cri_table = tomledit.find_table(name, doc, cri)
        assert cri_table is not None
        tomledit.set_key(cri_table, (*cri, "enable_cdi"), True, changes)
    inline = tomledit.inline_lines(doc, changes)  # an edited `options = { ... }` line
    out = tomledit.finish(name, doc, text, replaced=(*replaced_keys(changes), *inline))
    # A runtime ctk created goes as a whole on unconfigure; in the user's own, undo the edits.
    return Edit(out, without_inside(changes, rt_keys) if created else tuple(changes))


def _set_inline(
    runtime: tomledit.Tab,
    options: InlineTable,
    keys: tuple[str, ...],
    request: RuntimeRequest,
    changes: list[Change],
) -> None:
    """Set the binary in inline `options = { ... }`."""
    binary_key = keys[-1]
    if options.get(binary_key) == request.path:
        return
    existed = binary_key in options
    before = tomledit.plain(options.get(binary_key))
    if existed:  # in place: the rest of the line stays as it was, and comes back on undo
        options[binary_key] = request.path
    else:  # tomlkit adds a key to an inline table with stray blanks: written anew
        runtime["options"] = tomledit.new_inline_table(
            {**options.unwrap(), binary_key: request.path}
        )
    changes.append(Change(keys, existed, before, request.path))


def _source_runtime(
    name: str, containerd: tomledit.Tab, runtimes: tomledit.Tab, wanted: str
) -> tomledit.Tab | None:
    default = tomledit.plain(containerd.get("default_runtime_name", ""))
    for candidate in (default, "runc", "crun"):
        if isinstance(candidate, str) and candidate and candidate != wanted:
            found = tomledit.child_table(name, runtimes, candidate, ("runtimes",))
            if found is not None:
                return found
    return None


def unconfigure_in_place(
    name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool = False
) -> str:
    """Remove the runtime and what ``record`` says ctk added; keep everything else.

    ``recorded``: a record exists, so a runtime it does not show ctk creating stays.
    """
    doc = tomledit.parse_document(name, tomledit.with_final_newline(text))
    inline = tomledit.inline_lines(doc, record)
    tomledit.undo_changes(doc, record)
    version = version_of(name, text)
    cri = cri_keys(version)
    runtimes_keys = (*cri, "containerd", "runtimes")
    runtimes = tomledit.find_table(name, doc, runtimes_keys)
    # The user's own runtime stays, and so does a default naming it (undo took back ours).
    keep = kept_existing(record, (*runtimes_keys, runtime_name), recorded=recorded)
    if runtimes is not None and not keep:
        tomledit.delete_key(runtimes, runtime_name)
    containerd = tomledit.find_table(name, doc, (*cri, "containerd"))
    if (
        containerd is not None
        and not keep
        and tomledit.plain(containerd.get("default_runtime_name")) == runtime_name
    ):
        tomledit.delete_key(containerd, "default_runtime_name")
    tomledit.undo_changes(doc, [c for c in record if c.kind in TABLE_KINDS])
    return tomledit.finish(name, doc, text, replaced=(*replaced_keys(record), *inline), undo=True)


@dataclass(frozen=True, slots=True)
class DropInEdit:
    """The main file's edit (its `imports`) and the whole text of the drop-in."""

    main: Edit
    drop_in: str
    warnings: tuple[str, ...]
    notes: tuple[str, ...] = ()


def configure_drop_in(
    main: tuple[str, str],
    drop_in_name: str,
    before: Sequence[tuple[str, str]],
    after: Sequence[tuple[str, str]],
    request: RuntimeRequest,
    *,
    carried: Carried | None = None,
    merges: bool = False,
) -> DropInEdit:
    """Import a drop-in from the main file and write the runtime into the drop-in.

    ``carried``: the runtimes earlier runs put into the drop-in (and their default), kept.

    ``before`` and ``after`` are the other imported files that containerd loads before and after
    the drop-in. ``merges`` (containerd 2.x, see `PluginMerge.of`): the drop-in holds only what
    ctk adds. Otherwise it carries the CRI plugin table merged from the main file and
    ``before``, since containerd 1.x lets the last file's table replace the others.
    """
    main_name, main_text = main
    version = version_of(main_name, main_text)
    if version == 1:
        raise ValueError("version 1 configs cannot import drop-ins; edit them in place")
    doc = tomledit.parse_document(main_name, tomledit.with_final_newline(main_text))
    changes: list[Change] = []
    if not main_text.strip():
        tomledit.set_key(doc, ("version",), 2, changes)
    entries = imports.imports_in(main_name, main_text)
    if not imports.imported_by_all_versions(main_name, entries, drop_in_name):
        _add_import(doc, entries, drop_in_name, changes)
    cri = cri_keys(version)
    merged: dict[str, JSONValue] = {}
    for name, text in [main, *before]:
        table = _plugin_table(name, text, cri)
        if table is not None:
            merged = deep_merge(merged, table)
    copied = bool(merged)  # the other files' CRI settings (a 1.x drop-in carries them)
    kept: list[tuple[str, ...]] = []  # what a 2.x drop-in keeps: ctk's earlier additions
    if carried is not None and carried.runtimes:
        containerd: dict[str, JSONValue] = {"runtimes": dict(carried.runtimes)}
        kept += [(*cri, "containerd", "runtimes", n) for n in carried.runtimes]
        if carried.default is not None:
            containerd["default_runtime_name"] = carried.default
            kept.append((*cri, "containerd", "default_runtime_name"))
        merged = deep_merge(merged, {"containerd": containerd})
    base: dict[str, JSONValue] = {"version": version}
    if merged:
        base["plugins"] = {cri[1]: merged}
    edit = configure_in_place(drop_in_name, tomledit.document_from(base), request)
    configured = load_toml(drop_in_name, edit.text)
    if merges:  # the runtime as copied from the others' default, and the keys ctk set
        added = [c.keys for c in edit.changes if c.kind in (ChangeKind.SET, ChangeKind.NEW_TABLE)]
        written = _picked(configured, [("version",), *kept, *added])
        drop_in = MERGED_HEADER + tomledit.document_from(written)
        plugins = written.get("plugins", {})
        assert isinstance(plugins, dict)  # what _picked took from the configured drop-in
        warnings = _overriding(after, drop_in_name, list(leaf_paths(plugins, cri[:1])))
        notes: tuple[str, ...] = ()
    else:
        drop_in = CARRIED_HEADER + tomledit.document_from(configured)
        warnings = tuple(
            f"{name} is imported after {drop_in_name} and also defines [{dotted(cri)}]: "
            "containerd 1.x will use that table instead, without the nvidia runtime"
            for name, text in after
            if _plugin_table(name, text, cri) is not None
        )
        others = ", ".join(name for name, text in [main, *before] if _plugin_table(name, text, cri))
        notes = (
            (
                f"{drop_in_name} carries a copy of the [{dotted(cri)}] settings of {others} "
                "(containerd 1.x replaces the whole table per imported file): after editing "
                "them, run `ctk runtime configure` again",
            )
            if copied
            else ()
        )
    main_out = tomledit.finish(main_name, doc, main_text, replaced=replaced_keys(changes))
    return DropInEdit(Edit(main_out, tuple(changes)), drop_in, warnings, notes)


def _picked(data: dict[str, JSONValue], paths: Sequence[tuple[str, ...]]) -> dict[str, JSONValue]:
    """The values of ``data`` at ``paths`` (those present), in ``data``'s order."""
    out: dict[str, JSONValue] = {}
    for key, value in data.items():
        below = [path[1:] for path in paths if path and path[0] == key]
        if () in below or (below and not isinstance(value, dict)):
            out[key] = value
        elif below:
            out[key] = _picked(value, below)
    return out


def _overriding(
    after: Sequence[tuple[str, str]], drop_in_name: str, written: list[tuple[str, ...]]
) -> tuple[str, ...]:
    """Warn about files loaded after the drop-in that set a key it sets (theirs wins)."""
    out = []
    for name, text in after:
        data: JSONValue = load_toml(name, text)
        for keys in written:
            if value_at(data, keys) is not None:
                out.append(
                    f"{name} is imported after {drop_in_name} and also sets {dotted(keys)}: "
                    "containerd uses its value instead of ctk's"
                )
    return tuple(out)


def in_place_overridden(name: str, text: str, after: Sequence[tuple[str, str]]) -> list[str]:
    """Warn about imported files whose CRI plugin table replaces the one edited in ``name``.

    containerd 1.x replaces a whole plugin table per imported file, so an edit in place is
    lost when any imported file defines the table; a drop-in carries the merged table instead.
    """
    version = version_of(name, text)
    if version == 1:
        return []
    cri = cri_keys(version)
    return [
        f"{other} is imported by {name} and also defines [{dotted(cri)}]: containerd 1.x "
        "will use that table instead, without the nvidia runtime; configure with a drop-in "
        '(leave out --drop-in-config ""), which carries the merged table'
        for other, other_text in after
        if _plugin_table(other, other_text, cri) is not None
    ]


@dataclass(frozen=True, slots=True)
class Carried:
    """Runtimes ctk's drop-in holds that no other file defines (earlier runs added them)."""

    runtimes: dict[str, JSONValue]  # containerd's built-in runc, when written out, included
    default: str | None  # the drop-in's default runtime, when it names one of them
    added: tuple[str, ...]  # the names of those that are not the built-in runtimes


def carried_runtimes(
    drop_in: tuple[str, str], others: Sequence[tuple[str, str]], skip: str
) -> Carried:
    """The runtimes of ``drop_in`` (but ``skip``) that are not in ``others``."""
    name, text = drop_in
    version = version_of(name, text)
    if version == 1:
        return Carried({}, None, ())
    cri = cri_keys(version)
    defined: set[str] = set()
    for other, other_text in others:
        table = _plugin_table(other, other_text, cri) or {}
        containerd = table.get("containerd")
        runtimes = containerd.get("runtimes") if isinstance(containerd, dict) else None
        defined.update(runtimes if isinstance(runtimes, dict) else ())
    table = _plugin_table(name, text, cri) or {}
    containerd = table.get("containerd")
    containerd = containerd if isinstance(containerd, dict) else {}
    runtimes = containerd.get("runtimes")
    runtimes = runtimes if isinstance(runtimes, dict) else {}
    builtin = BUILTIN_RUNTIMES[version]
    kept = {k: v for k, v in runtimes.items() if k != skip and k not in defined}
    added = tuple(k for k, v in kept.items() if builtin.get(k) != v)
    default = containerd.get("default_runtime_name")
    return Carried(kept, default if isinstance(default, str) and default in added else None, added)


def _plugin_table(name: str, text: str, cri: tuple[str, str]) -> dict[str, JSONValue] | None:
    plugins = load_toml(name, text).get("plugins")
    if not isinstance(plugins, dict):
        return None
    table = plugins.get(cri[1])
    if table is None:
        return None
    if not isinstance(table, dict):
        raise CtkError(f"{name}: `{dotted(cri)}` must be a table", hint=TYPE_HINT)
    return table


def _add_import(doc: TOMLDocument, imports: list[str], path: str, changes: list[Change]) -> None:
    if "imports" in doc:
        array = doc["imports"]
        array.append(path)
        changes.append(Change(("imports",), True, imports, [*imports, path]))
    else:
        tomledit.set_key(doc, ("imports",), [path], changes)


def unconfigure_main(name: str, text: str, drop_in_name: str, record: Sequence[Change]) -> str:
    """Remove the drop-in's import from the main file, and what else ``record`` says ctk added."""
    doc = tomledit.parse_document(name, tomledit.with_final_newline(text))
    replaced = replaced_keys(record)
    if "imports" in doc:
        array = doc["imports"]
        entries = tomledit.plain(array)
        if isinstance(entries, list) and drop_in_name in entries:
            array.remove(drop_in_name)
            replaced = (*replaced, "imports")  # its line changes, with or without a record
            # An `imports` left empty goes, unless the record says it was there before ctk.
            existed = any(c.keys == ("imports",) and c.existed for c in record)
            if not existed and not array:
                del doc["imports"]
    tomledit.undo_changes(doc, [c for c in record if c.keys != ("imports",)])
    return tomledit.finish(name, doc, text, replaced=replaced, undo=True)


# Names under which `disabled_plugins` can switch off the CRI plugin (short and full ids).
CRI_PLUGIN_IDS = frozenset({"cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"})


class ContainerdEditor:
    """containerd's config.toml, its imports and ctk's drop-in (see `EngineEditor`)."""

    records_hold_null = False

    def check(self, inputs: Inputs) -> None:
        # what inspect refuses (the main file's `imports` too: containerd decodes it into a list
        # of strings whatever the config's version)
        inspect_containerd([inputs.main, *inputs.before, *inputs.after])

    def uses_drop_in(self, inputs: Inputs) -> bool:
        return version_of(*inputs.main) != 1

    def notes(self, inputs: Inputs) -> tuple[str, ...]:
        if inputs.drop_in is None or self.uses_drop_in(inputs):
            return ()
        return (
            f"{inputs.config} is a version 1 config, which cannot import drop-ins: "
            "editing it in place",
        )

    def warnings(self, inputs: Inputs) -> tuple[str, ...]:
        files = [inputs.main, *inputs.before, *inputs.after]
        out = list(_cri_disabled(files))
        # v1 has no imports; v3 is read by containerd 2.x only, which reads a relative glob from
        # the config's folder, as ctk does
        if version_of(*inputs.main) == 2:
            for name, file_text in files:
                entries = imports.imports_in(name, file_text)
                out.extend(imports.relative_glob_warnings(name, entries))
        return tuple(out)

    def view(self, files: Sequence[tuple[str, str]]) -> EngineView:
        return inspect_containerd(files, merge=PluginMerge.DEEP)

    def configure_in_place(self, inputs: Inputs, request: RuntimeRequest) -> InPlace:
        name, text = inputs.main
        edit = configure_in_place(name, text, request)
        return InPlace(edit, tuple(in_place_overridden(name, text, inputs.after)))

    def configure_drop_in(
        self, inputs: Inputs, request: RuntimeRequest, own: tuple[str, str] | None
    ) -> DropIn:
        assert inputs.drop_in is not None
        carried = carried_runtimes(own, [inputs.main], request.name) if own else None
        merge = PluginMerge.of(version_of(*inputs.main), inputs.engine_release)
        result = configure_drop_in(
            inputs.main,
            inputs.drop_in,
            inputs.before,
            inputs.after,
            request,
            carried=carried,
            merges=merge is PluginMerge.DEEP,
        )
        return DropIn(result.main, result.drop_in, result.notes, result.warnings)

    def keeps_others(self, inputs: Inputs, own: tuple[str, str], name: str) -> bool:
        return bool(carried_runtimes(own, [inputs.main], name).added)

    def remove(
        self, name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool
    ) -> str:
        return unconfigure_in_place(name, text, runtime_name, record, recorded=recorded)

    def unconfigure_main(self, inputs: Inputs) -> str | None:
        assert inputs.drop_in is not None
        return unconfigure_main(*inputs.main, inputs.drop_in, inputs.record)

    def blank(self, text: str) -> bool:
        return not text.strip()

    def record_keys(self, inputs: Inputs) -> RecordKeys:
        version = version_of(*inputs.main)
        runtimes = (*cri_keys(version), "containerd", "runtimes")
        return RecordKeys(
            runtimes, (*runtimes[:-1], "default_runtime_name"), frozenset(BUILTIN_RUNTIMES[version])
        )


def _cri_disabled(files: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """Warn when containerd's CRI plugin, which reads the runtimes, is disabled."""
    for name, text in files:
        disabled = load_toml(name, text).get("disabled_plugins")
        if isinstance(disabled, list) and CRI_PLUGIN_IDS.intersection(map(str, disabled)):
            return (
                f"{name} disables containerd's CRI plugin (disabled_plugins); the runtime is "
                "written, but only CRI clients (Kubernetes, crictl) use it, and not until `cri` "
                "is removed from disabled_plugins (Docker: use --runtime docker)",
            )
    return ()


EDITOR: EngineEditor = ContainerdEditor()
