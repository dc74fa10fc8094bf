"""What `ctk install` puts on a node, decided from facts (pure: no I/O).

The native hook goes to ``<prefix>/libexec/ctk/ctk-hook``, outside any Python environment, so
that a CDI spec naming it survives Python upgrades and runs where there is no Python; the
systemd units and the udev rule (package data, `ctk/data/units/`) go to /etc with `@CTK@`
replaced by the ctk program that ran the install. A manifest next to the hook records what was
written (sha256) and which folders were made, so that `ctk uninstall` removes exactly that.

Ownership comes from the manifest, never from bytes: a file at one of those paths that the
manifest does not list with its current sha256 (copied there by hand, another package's, or
changed since ctk wrote it) is not ctk's. Install replaces such a file only with ``--force``,
keeping it as ``<file>.bak``; one that already holds what ctk would write is left as it is and
stays out of the manifest, so `ctk uninstall` (and `ctk agent --uninstall`) never removes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from ctk.enums import StrEnum
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
    backups: tuple[tuple[PurePosixPath, PurePosixPath], ...] = ()
    """(file, its backup): the foreign files an install replaced (--force), put back by
    uninstall."""


class Step(StrEnum):
    """What an install does with one file of its plan."""

    WRITE = "write"  # missing, or ctk's own (the manifest says so) with other bytes or mode
    KEEP = "keep"  # ctk's own, already as the plan says
    LEAVE = "leave"  # not ctk's, but already what ctk would write: left alone, not owned
    REFUSE = "refuse"  # not ctk's and different: replaced only with --force
    REPLACE = "replace"  # not ctk's, --force: kept as <file>.bak, then written and owned


def install_step(
    item: InstallFile,
    current: tuple[str, int] | None,
    recorded: Manifest,
    *,
    force: bool,
) -> Step:
    """The step for ``item``, given what is at its path (``current``: sha256 and mode, None when
    nothing is there) and the manifest of the installs before (``recorded``)."""
    if current is None:
        return Step.WRITE
    ours = (item.path, current[0]) in recorded.files
    if ours:
        return Step.KEEP if current == (item.sha256, item.mode) else Step.WRITE
    if force:
        return Step.REPLACE
    return Step.LEAVE if current == (item.sha256, item.mode) else Step.REFUSE


class ForeignFile(CtkError):
    """Files in the way that ctk did not write (the agent, which has no --force, keeps them)."""


def refusal(paths: tuple[PurePosixPath, ...], shown: tuple[str, ...]) -> ForeignFile:
    """The error for files in the way that ctk did not write (``shown``: where they are here)."""
    them = "it as it is" if len(paths) == 1 else "them as they are"
    return ForeignFile(
        f"{', '.join(shown)}: not written by ctk (no install manifest lists {them} now); "
        "nothing was written",
        hint="move it away, or pass --force to replace it (the old file is kept as <file>.bak)",
    )


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
                **(
                    {"backups": [{"path": str(p), "backup": str(b)} for p, b in manifest.backups]}
                    if manifest.backups
                    else {}
                ),
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
        backups = tuple(
            (PurePosixPath(entry["path"]), PurePosixPath(entry["backup"]))
            for entry in data.get("backups", [])
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CtkError(
            f"{where}: not a ctk install manifest", hint="remove the installed files by hand"
        ) from exc
    named = [*(p for p, _ in files), *folders, *(p for pair in backups for p in pair)]
    if any(not p.is_absolute() or ".." in p.parts for p in named):
        raise CtkError(f"{where}: names a path that is not absolute; refusing to use it")
    return Manifest(files, folders, backups)


def merged(
    old: Manifest,
    owned: tuple[InstallFile, ...],
    made: tuple[PurePosixPath, ...],
    backups: tuple[tuple[PurePosixPath, PurePosixPath], ...] = (),
) -> Manifest:
    """The manifest after an install: the files it owns now (written, or ctk's and kept), every
    folder any install made, and every foreign file an install replaced (the first backup of a
    file is the one uninstall puts back)."""
    folders = tuple(dict.fromkeys((*made, *old.folders)))
    ordered = tuple(sorted(folders, key=lambda p: len(p.parts), reverse=True))
    owned_paths = {f.path for f in owned}
    first: dict[PurePosixPath, PurePosixPath] = {}
    for path, backup in (*old.backups, *backups):
        if path in owned_paths:
            first.setdefault(path, backup)
    return Manifest(tuple((f.path, f.sha256) for f in owned), ordered, tuple(first.items()))
