"""CDI spec facts, read through the CDI registry and validator."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ctk.doctor.facts import (
    CdiFacts,
    SpecFileFacts,
    Unavailable,
)
from ctk.host.facts.gatherer import (
    LIB_VERSION,
    REFRESH_UNITS,
    Gatherer,
)
from ctk.runtime_config.engines import CDI_SPEC_DIRS

if TYPE_CHECKING:
    from ctk.cdi.registry import SpecFile as RegistryFile

# --- CDI ----------------------------------------------------------------------------------


def _edits(spec: Mapping[str, Any]) -> list[tuple[str | None, Mapping[str, Any]]]:
    """(device name or None for the top level, containerEdits) pairs of a decoded spec."""
    found: list[tuple[str | None, Mapping[str, Any]]] = []
    top = spec.get("containerEdits")
    if isinstance(top, Mapping):
        found.append((None, top))
    for device in spec.get("devices") or ():
        if isinstance(device, Mapping) and isinstance(device.get("containerEdits"), Mapping):
            found.append((str(device.get("name")), device["containerEdits"]))
    return found


def _entries(edits: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = edits.get(key) or ()
    return [item for item in items if isinstance(item, Mapping)]


def spec_file(
    *,
    g: Gatherer,
    path: str,
    kind: str | None,
    names: tuple[str, ...],
    spec: Mapping[str, Any],
    problems: tuple[str, ...],
) -> SpecFileFacts:
    """What the checks need from one decoded spec: paths, hooks, driver versions."""
    host_paths: list[str] = []
    hook_paths: list[str] = []
    versions: set[str] = set()
    nodes: dict[str, tuple[str, ...]] = {}
    for device, edits in _edits(spec):
        device_nodes = []
        for node in _entries(edits, "deviceNodes"):
            shown = str(node.get("hostPath") or node.get("path") or "")
            if shown:
                host_paths.append(shown)
                device_nodes.append(str(node.get("path") or shown))
        if device is not None:
            nodes[device] = tuple(device_nodes)
        host_paths += [str(m["hostPath"]) for m in _entries(edits, "mounts") if m.get("hostPath")]
        for hook in _entries(edits, "hooks"):
            if hook.get("path"):
                hook_paths.append(str(hook["path"]))
            for arg in hook.get("args") or ():
                if isinstance(arg, str) and arg.startswith("--host-driver-version="):
                    versions.add(arg.split("=", 1)[1])
    for host_path in host_paths:
        match = LIB_VERSION.search(host_path)
        if match and ("libcuda" in host_path or "libnvidia-ml" in host_path):
            versions.add(match.group(1))
    unique = tuple(dict.fromkeys(host_paths))
    hooks = tuple(dict.fromkeys(hook_paths))
    return SpecFileFacts(
        path=path,
        kind=kind,
        devices=names,
        host_paths=unique,
        missing_host_paths=tuple(p for p in unique if p.startswith("/") and not g.exists(p)),
        hook_paths=hooks,
        missing_hook_paths=tuple(p for p in hooks if p.startswith("/") and not g.exists(p)),
        driver_versions=frozenset(versions),
        device_node_paths=nodes,
        problems=problems,
    )


def _conflicts(files: Iterable[RegistryFile]) -> tuple[str, ...]:
    """The registry's own conflicts: one device defined twice at the same priority.

    A device in both `/etc/cdi` and `/var/run/cdi` is an override (the later directory wins), not
    a conflict, exactly as `ctk cdi list` and CDI runtimes see it.
    """
    return tuple(
        f"{spec.path}" + (f" line {p.line}" if p.line else "") + f": {p.message}"
        for spec in files
        for p in spec.conflicts
    )


def gather_cdi(g: Gatherer, extra_dirs: Iterable[str]) -> CdiFacts:
    """Spec files of the default and configured spec directories, read by the CDI registry."""
    from ctk.errors import CtkError
    from ctk.host.cdi_specs import load_spec_dirs

    dirs = tuple(dict.fromkeys((*CDI_SPEC_DIRS, *extra_dirs)))
    try:
        registry = load_spec_dirs(dirs, root=g.root.root)
    except CtkError as exc:
        denied = "ermission denied" in exc.message
        return CdiFacts(dirs=dirs, unreadable=Unavailable(exc.message, needs_root=denied))
    specs = []
    for spec in registry.files:
        report = spec.report
        problems = tuple(
            f"line {p.line}: {p.message}" if p.line else p.message for p in report.errors
        )
        specs.append(
            spec_file(
                g=g,
                path=spec.path,
                kind=report.kind,
                names=report.device_names,
                spec=report.spec or {},
                problems=problems,
            )
        )
    refresh = any(
        g.exists(f"{directory}/{wants}/{unit}")
        for directory in ("/etc/systemd/system",)
        for wants in ("multi-user.target.wants", "paths.target.wants", "sysinit.target.wants")
        for unit in REFRESH_UNITS
    )
    return CdiFacts(
        dirs=dirs,
        specs=tuple(specs),
        conflicts=_conflicts(registry.files),
        conflict_files=tuple(spec.path for spec in registry.files if spec.conflicts),
        refresh_enabled=refresh,
    )
