"""`ctk install` / `ctk uninstall` on a node (or a node tree under --root): read what is there,
write what the plan (`ctk.install`) says, and remove only what the manifest says was written."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ctk.errors import CtkError
from ctk.host import files
from ctk.host.root import HostRoot
from ctk.install import (
    UNIT_FOLDERS,
    InstallFile,
    Manifest,
    Step,
    install_step,
    manifest_path,
    merged,
    parse_manifest,
    refusal,
    render_manifest,
)

UNITS_DIR = Path(__file__).resolve().parents[1] / "data" / "units"


def unit_templates() -> dict[str, str]:
    """The systemd units and udev rule shipped as package data, with `@CTK@` placeholders."""
    return {name: files.read_text(UNITS_DIR / name) for name in UNIT_FOLDERS}


@dataclass(frozen=True, slots=True)
class InstallOutcome:
    """What an install or uninstall did: paths as on the node."""

    written: tuple[InstallFile, ...] = ()
    unchanged: tuple[InstallFile, ...] = ()
    removed: tuple[PurePosixPath, ...] = ()
    kept: tuple[PurePosixPath, ...] = ()  # changed since the install: left alone
    manifest: PurePosixPath | None = None
    left: tuple[InstallFile, ...] = ()  # already there, not ctk's: left alone, not owned
    backups: tuple[PurePosixPath, ...] = ()  # foreign files replaced (--force), kept as .bak
    restored: tuple[PurePosixPath, ...] = ()  # those put back by uninstall


def _on_node(root: Path, path: PurePosixPath) -> Path:
    """Where ``path`` (as on the node) is here: under ``root``, its symlinks resolved inside it."""
    return HostRoot(root).path(path)


def shown(root: Path, path: PurePosixPath) -> str:
    """``path`` (as on the node) as the user finds it here: under --root when there is one."""
    return str(path) if str(root) == "/" else str(_on_node(root, path))


def _missing_folders(root: Path, folder: PurePosixPath) -> list[PurePosixPath]:
    missing = []
    for candidate in (folder, *folder.parents):
        if os.path.lexists(_on_node(root, candidate)):
            break
        missing.append(candidate)
    return missing


def _read_manifest(root: Path, prefix: PurePosixPath) -> Manifest | None:
    path = _on_node(root, manifest_path(prefix))
    text = files.read_text(path, missing_ok=True)
    return None if text is None else parse_manifest(text, str(path))


def _current(path: Path) -> tuple[str, int] | None:
    """The sha256 and mode of the file at ``path`` (None: nothing there)."""
    content = files.read_bytes(path, missing_ok=True, limit=64 << 20)
    if content is None:
        return None
    return hashlib.sha256(content).hexdigest(), os.stat(path).st_mode & 0o7777


def install(
    root: Path, prefix: PurePosixPath, plan: tuple[InstallFile, ...], *, force: bool = False
) -> InstallOutcome:
    """Write the plan's files that differ; record them (and the folders made) in the manifest.

    A file in the way that the manifest does not name as ctk's is refused (`CtkError`, nothing
    written) unless ``force``, which keeps it as ``<file>.bak``; one that already holds what ctk
    would write is left, and not recorded (`ctk.install.install_step`)."""
    old = _read_manifest(root, prefix) or Manifest()
    steps = [
        (item, install_step(item, _current(_on_node(root, item.path)), old, force=force))
        for item in plan
    ]
    refused = tuple(item.path for item, step in steps if step is Step.REFUSE)
    if refused:
        raise refusal(refused, tuple(shown(root, p) for p in refused))
    written, unchanged, left, made = [], [], [], []
    displaced: list[tuple[PurePosixPath, PurePosixPath]] = []  # (file, its backup)
    for item, step in steps:
        if step is Step.KEEP:
            unchanged.append(item)
            continue
        if step is Step.LEAVE:
            left.append(item)
            continue
        target = _on_node(root, item.path)
        made.extend(_missing_folders(root, item.path.parent))
        backup = files.write_atomic(
            target, item.content, mode=item.mode, make_parents=True, backup=step is Step.REPLACE
        )
        os.chmod(files.write_target(target), item.mode)  # a file there before kept its own
        if backup is not None:
            displaced.append((item.path, item.path.with_name(backup.name)))
        written.append(item)
    owned = tuple(item for item, step in steps if step is not Step.LEAVE)
    manifest_file = manifest_path(prefix)
    target = _on_node(root, manifest_file)
    if not owned and not old.folders and not os.path.lexists(target):
        return InstallOutcome(left=tuple(left))  # nothing of ctk's here: no manifest either
    made.extend(_missing_folders(root, manifest_file.parent))
    text = render_manifest(merged(old, owned, tuple(made), tuple(displaced)))
    if files.read_text(target, missing_ok=True) != text:
        files.write_atomic(target, text, mode=0o644, make_parents=True)
    return InstallOutcome(
        tuple(written),
        tuple(unchanged),
        manifest=manifest_file,
        left=tuple(left),
        backups=tuple(kept_as for _, kept_as in displaced),
    )


def uninstall(root: Path, prefix: PurePosixPath) -> InstallOutcome | None:
    """Remove the files the manifest names that are as the install wrote them, put back the
    foreign files an install replaced (from their .bak), then remove the manifest and the folders
    the installs made (when empty). None when nothing is installed there."""
    manifest = _read_manifest(root, prefix)
    if manifest is None:
        return None
    removed, kept, restored = [], [], []
    backups = dict(manifest.backups)
    for path, sha256 in manifest.files:
        target = _on_node(root, path)
        current = files.read_bytes(target, missing_ok=True, limit=64 << 20)
        if current is not None and hashlib.sha256(current).hexdigest() != sha256:
            kept.append(path)  # changed since: its backup, if any, stays where it is
            continue
        if current is not None:
            files.remove(target)
            removed.append(path)
        backup = backups.get(path)
        if backup is not None and _restore(root, backup, path):
            restored.append(path)
    files.remove(_on_node(root, manifest_path(prefix)))
    for folder in manifest.folders:  # deepest first; one that is not empty stays
        try:
            _on_node(root, folder).rmdir()
        except OSError:
            continue
    return InstallOutcome(
        removed=tuple(removed),
        kept=tuple(kept),
        manifest=manifest_path(prefix),
        restored=tuple(restored),
    )


def _restore(root: Path, backup: PurePosixPath, path: PurePosixPath) -> bool:
    """Move the regular file ``backup`` back to ``path`` (where nothing is now); False when
    there is no such backup any more or something else took the path."""
    source, target = _on_node(root, backup), _on_node(root, path)
    if not source.is_file() or source.is_symlink() or os.path.lexists(target):
        return False
    try:
        os.rename(source, target)
    except OSError as exc:
        raise CtkError(
            f"{source}: cannot put it back at {target}: {exc.strerror}",
            hint=f"move it back by hand: mv {source} {target}",
        ) from exc
    return True
