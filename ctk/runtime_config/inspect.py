"""Read-only views of engine configs, for `ctk doctor` and for "already configured" checks.

Each reader turns config text (already read by the caller) into an `EngineView`: the runtimes the
engine will know, its default runtime and its CDI settings, as the engine itself would see them.
Malformed input raises `CtkError` naming the file and position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ctk.enums import StrEnum
from ctk.errors import CtkError
from ctk.runtime_config.engines import CONTAINERD_CRI_PLUGIN, Runtime
from ctk.runtime_config.parse import (
    IMPORTS_HINT,
    TYPE_HINT,
    JSONValue,
    load_json_object,
    load_toml,
    type_name,
)


class PluginMerge(StrEnum):
    """How containerd combines a plugin table that several config files define."""

    REPLACE = "replace"  # containerd 1.x: the later file's table replaces the whole table
    DEEP = "deep"  # containerd 2.x: tables merge key by key

    @classmethod
    def of(cls, version: int, release: str | None) -> PluginMerge:
        """How the containerd that reads a config of ``version`` merges imports.

        A version 3 config is read by containerd 2.x only; otherwise ``release``, the installed
        package's upstream version ("2.1.9"), decides, and an unknown one counts as 1.x.
        """
        head = (release or "").partition(".")[0]
        major = int(head) if head.isdigit() and len(head) <= 6 else 0
        return cls.DEEP if version >= 3 or major >= 2 else cls.REPLACE


T = TypeVar("T")

OWN_DROP_IN = "# Written by `ctk runtime configure`"
"""How every drop-in ctk writes begins."""
DROP_IN_HEADER = f"{OWN_DROP_IN}; `ctk runtime unconfigure` removes it.\n"
"""The first line of every drop-in ctk writes."""
MERGED_MARK = "# containerd 2.x merges this file"
"""The start of the line that says a containerd drop-in holds only ctk's additions (no copy)."""


@dataclass(frozen=True, slots=True)
class RuntimeView:
    """One runtime an engine offers."""

    name: str
    binary_path: str | None  # containerd options.BinaryName, CRI-O runtime_path, Docker path
    runtime_type: str | None  # containerd runtime_type, CRI-O runtime_type; None for Docker
    systemd_cgroup: bool | None  # containerd options.SystemdCgroup; None where not per runtime
    source: str  # the file that defined it


@dataclass(frozen=True, slots=True)
class EngineView:
    """What an engine's config files say, merged the way the engine merges them."""

    runtime: Runtime
    files: tuple[str, ...]  # every file that was read, in load order
    version: int | None  # containerd config version; None for Docker and CRI-O
    runtimes: tuple[RuntimeView, ...]  # sorted by name
    default_runtime: str | None  # None: the engine's built-in default (runc, or crun for CRI-O)
    cdi_enabled: bool | None  # None: not set in the files (the engine's default applies)
    cdi_spec_dirs: tuple[str, ...] | None  # None: not set (the engine's default applies)
    imports: tuple[str, ...]  # containerd: the main file's `imports` as written
    cgroup_driver: str | None  # Docker exec-opts native.cgroupdriver, CRI-O cgroup_manager

    def runtime_named(self, name: str) -> RuntimeView | None:
        """Return the runtime called ``name``, if the engine has one."""
        return next((r for r in self.runtimes if r.name == name), None)

    @property
    def runtime_names(self) -> tuple[str, ...]:
        """The names of all runtimes, sorted."""
        return tuple(r.name for r in self.runtimes)


def containerd_version(name: str, data: Mapping[str, JSONValue], *, empty: bool) -> int:
    """Return the config version containerd reads from ``data`` (empty file: 2, no key: 1)."""
    if empty:
        return 2
    version = data.get("version")
    if version is None:
        return 1
    if isinstance(version, bool) or not isinstance(version, int):
        raise CtkError(
            f"{name}: `version` must be an integer (1, 2 or 3), found {type_name(version)}",
            hint="containerd itself refuses this file; fix the version line",
        )
    if version not in CONTAINERD_CRI_PLUGIN:
        raise CtkError(
            f"{name}: unsupported containerd config version {version}",
            hint="ctk knows versions 1, 2 and 3",
        )
    return version


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
"""A key TOML writes without quotes: ASCII letters, digits, `_` and `-` (not `é`, not empty)."""


def dotted(keys: Sequence[str]) -> str:
    """Write a key path the way TOML does: `plugins."io.containerd.grpc.v1.cri".containerd`;
    a key that is not bare goes in a basic string, escaped (`"a\\"b"`: JSON's escapes are
    TOML's, and TOML escapes DEL too)."""
    return ".".join(
        k
        if _BARE_KEY.fullmatch(k)
        else json.dumps(k, ensure_ascii=False).replace("\x7f", "\\u007f")
        for k in keys
    )


def _table(
    name: str, data: Mapping[str, JSONValue], *keys: str, within: Sequence[str] = ()
) -> Mapping[str, JSONValue]:
    """Return the table at ``keys`` (empty when missing); `CtkError` when something else is."""
    current: Mapping[str, JSONValue] = data
    for index, key in enumerate(keys):
        value = current.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            where = dotted([*within, *keys[: index + 1]])
            raise CtkError(
                f"{name}: `{where}` must be a table, found {type_name(value)}", hint=TYPE_HINT
            )
        current = value
    return current


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _opt_str(name: str, table: Mapping[str, JSONValue], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None or isinstance(value, str):
        return value
    raise CtkError(
        f"{name}: `{_at(where, key)}` must be a string, found {type_name(value)}", hint=TYPE_HINT
    )


def _opt_bool(name: str, table: Mapping[str, JSONValue], key: str, where: str) -> bool | None:
    value = table.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise CtkError(
        f"{name}: `{_at(where, key)}` must be a boolean, found {type_name(value)}", hint=TYPE_HINT
    )


def _str_list(name: str, table: Mapping[str, JSONValue], key: str, where: str) -> tuple[str, ...]:
    return _opt_str_list(name, table, key, where) or ()


def _opt_str_list(
    name: str, table: Mapping[str, JSONValue], key: str, where: str
) -> tuple[str, ...] | None:
    """The array of strings at ``key``; None where it is not set (an empty array is ())."""
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    hint = IMPORTS_HINT if key == "imports" and not where else TYPE_HINT
    raise CtkError(f"{name}: `{_at(where, key)}` must be an array of strings", hint=hint)


def deep_merge(
    base: Mapping[str, JSONValue], over: Mapping[str, JSONValue]
) -> dict[str, JSONValue]:
    """Return ``base`` with ``over`` merged in: tables merge key by key, other values replace."""
    out: dict[str, JSONValue] = dict(base)
    for key, value in over.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = deep_merge(old, value)
        else:
            out[key] = value
    return out


def inspect_containerd(
    files: Sequence[tuple[str, str]], *, merge: PluginMerge = PluginMerge.REPLACE
) -> EngineView:
    """View containerd's config: the main file first, then its imports in containerd's load order.

    ``files`` holds (path, text) pairs. Plugin tables combine as ``merge`` says (containerd 1.x
    replaces a whole plugin table per file, 2.x merges them key by key).
    """
    if not files:
        raise ValueError("inspect_containerd needs at least the main file")
    main_name, main_text = files[0]
    main = load_toml(main_name, main_text)
    version = containerd_version(main_name, main, empty=not main_text.strip())
    plugin = CONTAINERD_CRI_PLUGIN[version]
    cri: dict[str, JSONValue] = {}
    sources: dict[str, str] = {}  # runtime name -> file defining it
    settings: dict[str, str] = {}  # setting -> the last file that set it (for its errors)
    for name, text in files:
        data = main if name == main_name else load_toml(name, text)
        table = _table(name, data, "plugins", plugin)
        containerd = _table(name, table, "containerd", within=("plugins", plugin))
        _table(name, containerd, "runtimes", within=("plugins", plugin, "containerd"))
        if not table and plugin not in _table(name, data, "plugins"):
            continue
        if merge is PluginMerge.REPLACE:
            cri = dict(table)
            sources = {}
            settings = {}
        else:
            cri = deep_merge(cri, table)
        for runtime in _table(name, containerd, "runtimes"):
            sources[runtime] = name
        settings.update(dict.fromkeys([*table, *(f"containerd.{key}" for key in containerd)], name))
    within = ("plugins", plugin)
    where = dotted(within)
    containerd = _table(main_name, cri, "containerd", within=within)
    runtimes = []
    for runtime, value in _table(main_name, cri, "containerd", "runtimes", within=within).items():
        rwhere = dotted([*within, "containerd", "runtimes", runtime])
        source = sources.get(runtime, main_name)
        if not isinstance(value, dict):
            raise CtkError(
                f"{source}: `{rwhere}` must be a table, found {type_name(value)}", hint=TYPE_HINT
            )
        options = _table(
            source, value, "options", within=[*within, "containerd", "runtimes", runtime]
        )
        runtimes.append(
            RuntimeView(
                name=runtime,
                binary_path=_opt_str(source, options, "BinaryName", rwhere + ".options"),
                runtime_type=_opt_str(source, value, "runtime_type", rwhere),
                systemd_cgroup=_opt_bool(source, options, "SystemdCgroup", rwhere + ".options"),
                source=source,
            )
        )
    return EngineView(
        runtime=Runtime.CONTAINERD,
        files=tuple(name for name, _ in files),
        version=version,
        runtimes=tuple(sorted(runtimes, key=lambda r: r.name)),
        default_runtime=_opt_str(
            settings.get("containerd.default_runtime_name", main_name),
            containerd,
            "default_runtime_name",
            f"{where}.containerd",
        ),
        cdi_enabled=_opt_bool(settings.get("enable_cdi", main_name), cri, "enable_cdi", where),
        cdi_spec_dirs=_opt_str_list(
            settings.get("cdi_spec_dirs", main_name), cri, "cdi_spec_dirs", where
        ),
        imports=_str_list(main_name, main, "imports", ""),
        cgroup_driver=None,
    )


def stale_copy(files: Sequence[tuple[str, str]]) -> tuple[str, tuple[str, ...]] | None:
    """ctk's containerd drop-in that carries a copy of the CRI plugin settings of the files
    loaded before it (``files``: the main file first, then its imports in load order), and the
    settings where that copy no longer says what those files say (dotted, sorted); None where no
    drop-in carries a copy. What ctk adds (its runtimes, the default runtime name, enable_cdi)
    is not compared. Malformed files raise `CtkError`.
    """
    main_name, main_text = files[0]
    main = load_toml(main_name, main_text)
    version = containerd_version(main_name, main, empty=not main_text.strip())
    if version == 1:  # no imports
        return None
    plugin = CONTAINERD_CRI_PLUGIN[version]
    copied: dict[str, JSONValue] = {}
    for index, (name, text) in enumerate(files):
        data = main if index == 0 else load_toml(name, text)
        table = _table(name, data, "plugins", plugin)
        if index and text.startswith(OWN_DROP_IN) and MERGED_MARK not in text:
            return name, tuple(sorted(_differing(copied, table)))
        copied = deep_merge(copied, table)
    return None


def _differing(copied: Mapping[str, JSONValue], copy: Mapping[str, JSONValue]) -> Iterator[str]:
    """The settings of ``copied`` that ``copy`` lacks or changed, and those it has on its own."""
    runtimes = _runtimes_of(copy)
    # ctk's runtimes, and containerd's built-in runc that ctk writes out where no file has one
    added = set(runtimes) - set(_runtimes_of(copied))
    for keys in sorted(set(leaf_paths(copied)) | set(leaf_paths(copy))):
        if keys in (("enable_cdi",), ("containerd", "default_runtime_name")):
            continue
        ours = keys[:2] == ("containerd", "runtimes") and len(keys) > 2
        if ours and (keys[2] in added or _is_nvidia(runtimes.get(keys[2]))):
            continue
        if keys == ("containerd", "runtimes"):
            # a table empty on one side: where the files' is empty, every runtime of the copy is
            # ctk's (added); where the copy's is, it lacks every runtime of the files
            if value_at(copied, keys) != {}:
                yield dotted(keys)
            continue
        if value_at(copied, keys) != value_at(copy, keys):
            yield dotted(keys)


def _runtimes_of(cri: Mapping[str, JSONValue]) -> Mapping[str, JSONValue]:
    containerd = cri.get("containerd")
    runtimes = containerd.get("runtimes") if isinstance(containerd, dict) else None
    return runtimes if isinstance(runtimes, dict) else {}


def _is_nvidia(runtime: JSONValue) -> bool:
    """Whether ``runtime`` runs NVIDIA's runtime (what ctk writes; a copy differs on purpose)."""
    options = runtime.get("options") if isinstance(runtime, dict) else None
    binary = options.get("BinaryName") if isinstance(options, dict) else None
    return isinstance(binary, str) and "nvidia" in binary.rpartition("/")[2]


def leaf_paths(
    value: Mapping[str, JSONValue], at: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    for key, item in value.items():
        if isinstance(item, dict) and item:
            yield from leaf_paths(item, (*at, key))
        else:
            yield (*at, key)


def value_at(value: JSONValue, keys: Sequence[str]) -> JSONValue:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def inspect_docker(text: str, *, name: str = "/etc/docker/daemon.json") -> EngineView:
    """View Docker's daemon.json (a missing file is the caller's "{}")."""
    data = load_json_object(name, text)
    runtimes_value = data.get("runtimes", {})
    if not isinstance(runtimes_value, dict):
        raise CtkError(
            f"{name}: `runtimes` must be an object, found {type_name(runtimes_value)}",
            hint='dockerd refuses this file too; make it {"name": {"path": ...}}',
        )
    runtimes = []
    for runtime, value in runtimes_value.items():
        if not isinstance(value, dict):
            raise CtkError(
                f"{name}: `runtimes.{runtime}` must be an object, found {type_name(value)}",
                hint='dockerd refuses this file too; make it {"path": "/usr/bin/...", "args": []}',
            )
        runtimes.append(
            RuntimeView(
                name=runtime,
                binary_path=_opt_str(name, value, "path", f"runtimes.{runtime}"),
                runtime_type=None,
                systemd_cgroup=None,
                source=name,
            )
        )
    features = data.get("features", {})
    if not isinstance(features, dict):
        raise CtkError(
            f"{name}: `features` must be an object, found {type_name(features)}", hint=TYPE_HINT
        )
    cgroup_driver = None
    for opt in _str_list(name, data, "exec-opts", ""):
        key, _, value = opt.partition("=")
        if key.strip() == "native.cgroupdriver":
            cgroup_driver = value.strip()
    return EngineView(
        runtime=Runtime.DOCKER,
        files=(name,),
        version=None,
        runtimes=tuple(sorted(runtimes, key=lambda r: r.name)),
        default_runtime=_opt_str(name, data, "default-runtime", ""),
        cdi_enabled=_opt_bool(name, features, "cdi", "features"),
        cdi_spec_dirs=_opt_str_list(name, data, "cdi-spec-dirs", ""),
        imports=(),
        cgroup_driver=cgroup_driver,
    )


def inspect_crio(files: Sequence[tuple[str, str]]) -> EngineView:
    """View CRI-O's config: crio.conf, then its crio.conf.d drop-ins in lexical order.

    CRI-O applies each drop-in over the previous files key by key.
    """
    merged: dict[str, JSONValue] = {}
    sources: dict[str, str] = {}  # a runtime's table, a crio.runtime key: the file that set it last
    settings: dict[str, str] = {}
    for name, text in files:
        data = load_toml(name, text)
        merged = deep_merge(merged, data)
        for runtime in _table(name, data, "crio", "runtime", "runtimes"):
            sources[runtime] = name
        settings.update(dict.fromkeys(_table(name, data, "crio", "runtime"), name))
    first = files[0][0] if files else "/etc/crio/crio.conf"
    crio_runtime = _table(first, merged, "crio", "runtime")

    def setting(getter: Callable[[str, Mapping[str, JSONValue], str, str], T], key: str) -> T:
        return getter(settings.get(key, first), crio_runtime, key, "crio.runtime")

    runtimes = []
    for runtime, value in _table(first, merged, "crio", "runtime", "runtimes").items():
        where = f"crio.runtime.runtimes.{runtime}"
        source = sources.get(runtime, first)
        if not isinstance(value, dict):
            raise CtkError(
                f"{source}: `{where}` must be a table, found {type_name(value)}", hint=TYPE_HINT
            )
        runtimes.append(
            RuntimeView(
                name=runtime,
                binary_path=_opt_str(source, value, "runtime_path", where),
                runtime_type=_opt_str(source, value, "runtime_type", where),
                systemd_cgroup=None,
                source=source,
            )
        )
    return EngineView(
        runtime=Runtime.CRIO,
        files=tuple(name for name, _ in files),
        version=None,
        runtimes=tuple(sorted(runtimes, key=lambda r: r.name)),
        default_runtime=setting(_opt_str, "default_runtime"),
        cdi_enabled=None,
        cdi_spec_dirs=setting(_opt_str_list, "cdi_spec_dirs"),
        imports=(),
        cgroup_driver=setting(_opt_str, "cgroup_manager"),
    )
