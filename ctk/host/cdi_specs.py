"""Reading CDI spec directories and spec files from the host (the gather step of cdi validate/list).

A spec directory is scanned as CDI runtimes scan it: only `*.json` and `*.yaml` files directly in
it (no subdirectories), in name order; a directory that does not exist is simply empty. Paths go
through `HostRoot`, so `--root` never leads out of the root; reports name the paths as seen
inside the root.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from ctk.cdi.problems import Problem
from ctk.cdi.registry import Registry, SpecSource, build_registry
from ctk.cdi.validate import SpecReport, validate_bytes
from ctk.errors import CtkError
from ctk.host.root import HostRoot, PathEscapeError

DEFAULT_SPEC_DIRS: Final = (PurePosixPath("/etc/cdi"), PurePosixPath("/var/run/cdi"))
"""Where CDI runtimes (containerd, CRI-O, Docker, Podman) look, lowest priority first."""

SPEC_SUFFIXES: Final = (".json", ".yaml")


@dataclass(frozen=True, slots=True)
class SpecDir:
    """A spec directory as asked for, and whether it exists."""

    path: str
    priority: int
    exists: bool


def _read(path: Path) -> tuple[bytes | None, str | None]:
    try:
        return path.read_bytes(), None
    except IsADirectoryError:
        return None, "is a directory; to check the specs in it, pass it with --spec-dir"
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"


def scan_spec_dir(directory: PurePosixPath, priority: int, *, root: HostRoot) -> list[SpecSource]:
    """The spec files directly in ``directory`` (as seen inside ``root``), in name order."""
    host_dir = root.path(directory)
    try:
        entries = sorted(os.scandir(host_dir), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    except NotADirectoryError as exc:
        raise CtkError(
            f"{directory}: not a directory", hint="--spec-dir takes a directory of CDI specs"
        ) from exc
    except OSError as exc:
        raise CtkError(f"{directory}: cannot list: {exc.strerror or exc}") from exc
    sources = []
    for entry in entries:
        if not entry.name.endswith(SPEC_SUFFIXES):
            continue
        shown = str(directory / entry.name)
        try:
            if entry.is_dir():
                continue
            data, error = _read(root.path(directory / entry.name))
        except PathEscapeError as exc:
            data, error = None, exc.message
        sources.append(SpecSource(shown, priority, data, error))
    return sources


def spec_dirs(dirs: Sequence[PurePosixPath], *, root: HostRoot) -> list[SpecDir]:
    """The directories with their priority (position in ``dirs``) and whether they exist."""
    return [SpecDir(str(d), p, root.path(d).is_dir()) for p, d in enumerate(dirs)]


def load_spec_dirs(
    dirs: Sequence[str | os.PathLike[str]] = DEFAULT_SPEC_DIRS, *, root: Path | None = None
) -> Registry:
    """Read and resolve every spec in ``dirs`` (lowest priority first) under ``root``."""
    host = HostRoot(root or Path("/"))
    sources: list[SpecSource] = []
    for priority, directory in enumerate(dirs):
        sources.extend(scan_spec_dir(PurePosixPath(os.fspath(directory)), priority, root=host))
    return build_registry(sources)


def validate_file(path: Path) -> SpecReport:
    """Validate one spec file named on the command line; an unreadable file is a problem too."""
    data, error = _read(path)
    if data is None:
        problem = Problem("read.error", error or "cannot read")
        return SpecReport(str(path), None, (problem,), None)
    return validate_bytes(data, str(path))
