"""What `ctk install` puts on a node, decided from facts (pure: no I/O).

The native hook goes to ``<prefix>/libexec/ctk/ctk-hook``, outside any Python environment, so
that a CDI spec naming it survives Python upgrades and runs where there is no Python; the
systemd units and the udev rule (package data, `ctk/data/units/`) go to /etc with `@CTK@`
replaced by the ctk program that ran the install. A manifest next to the hook records what was
written (sha256) and which folders were made, so that `ctk uninstall` removes exactly that.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from ctk.errors import CtkError

HOOK_NAME = "ctk-hook"
DEFAULT_PREFIX = PurePosixPath("/usr/local")
#: package data file -> the folder it is installed into
UNIT_FOLDERS: Mapping[str, PurePosixPath] = {
    "ctk-cdi-refresh.service": PurePosixPath("/etc/systemd/system"),
    "ctk-cdi-refresh.path": PurePosixPath("/etc/systemd/system"),
    "ctk-dev-char-symlinks.service": PurePosixPath("/etc/systemd/system"),
    "71-ctk-dev-char.rules": PurePosixPath("/etc/udev/rules.d"),
}
PLACEHOLDER = "@CTK@"
MANIFEST_VERSION = 1


@dataclass(frozen=True, slots=True)
class InstallFile:
    """One file `ctk install` writes: where (as on the node), what, with which mode."""

    path: PurePosixPath
    content: bytes
    mode: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True, slots=True)
class Manifest:
    """What an install wrote: files with their sha256, and the folders it made (deepest first)."""

    files: tuple[tuple[PurePosixPath, str], ...] = ()
    folders: tuple[PurePosixPath, ...] = ()


def hook_path(prefix: PurePosixPath) -> PurePosixPath:
    """Where the installed native hook lives (what CDI specs name)."""
    return prefix / "libexec" / "ctk" / HOOK_NAME


def manifest_path(prefix: PurePosixPath) -> PurePosixPath:
    return prefix / "libexec" / "ctk" / "install-manifest.json"


def install_plan(
    *, prefix: PurePosixPath, ctk_program: str, hook: bytes, units: Mapping[str, str]
) -> tuple[InstallFile, ...]:
    """The files of an install: the hook, then the units and the rule naming ``ctk_program``."""
    if not prefix.is_absolute():
        raise CtkError(f"--prefix {prefix}: must be an absolute path")
    if not ctk_program.startswith("/") or any(c.isspace() for c in ctk_program):
        raise CtkError(
            f"{ctk_program}: the ctk program the units run must be an absolute path without spaces",
            hint="run ctk install through the installed `ctk` command, or pass --ctk PATH",
        )
    files = [InstallFile(hook_path(prefix), hook, 0o755)]
    for name, folder in UNIT_FOLDERS.items():
        text = units[name].replace(PLACEHOLDER, ctk_program)
        files.append(InstallFile(folder / name, text.encode(), 0o644))
    return tuple(files)


def render_manifest(manifest: Manifest) -> str:
    return (
        json.dumps(
            {
                "version": MANIFEST_VERSION,
                "files": [{"path": str(p), "sha256": s} for p, s in manifest.files],
                "folders": [str(p) for p in manifest.folders],
            },
            indent=2,
        )
        + "\n"
    )


def parse_manifest(text: str, where: str) -> Manifest:
    """The manifest in ``text``; CtkError when it is not one ``render_manifest`` wrote."""
    try:
        data = json.loads(text)
        files = tuple(
            (PurePosixPath(entry["path"]), str(entry["sha256"])) for entry in data["files"]
        )
        folders = tuple(PurePosixPath(p) for p in data["folders"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CtkError(
            f"{where}: not a ctk install manifest", hint="remove the installed files by hand"
        ) from exc
    if any(not p.is_absolute() or ".." in p.parts for p, _ in files) or any(
        not p.is_absolute() or ".." in p.parts for p in folders
    ):
        raise CtkError(f"{where}: names a path that is not absolute; refusing to use it")
    return Manifest(files, folders)


def merged(
    old: Manifest, files: tuple[InstallFile, ...], made: tuple[PurePosixPath, ...]
) -> Manifest:
    """The manifest after an install: this install's files, and every folder any install made."""
    folders = tuple(dict.fromkeys((*made, *old.folders)))
    ordered = tuple(sorted(folders, key=lambda p: len(p.parts), reverse=True))
    return Manifest(tuple((f.path, f.sha256) for f in files), ordered)
