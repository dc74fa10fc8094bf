"""Reading CDI spec directories and spec files from the host (the gather step of cdi validate/list).

A spec directory is scanned as CDI runtimes scan it: only `*.json` and `*.yaml` files directly in
it (no subdirectories), in name order; a directory that does not exist is simply empty (CDI
runtimes ignore it). A directory that cannot be listed is reported without hiding the others.
Only regular files are read: a named pipe called `x.yaml` would block a reader forever, so it is
reported, not opened. Paths go through `HostRoot`, so `--root` never leads out of the root;
reports name the paths as seen inside the root. One spec file named on the command line is read
by `ctk.host.spec_files`, which `cdi validate FILE` imports without this module's records.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final

from ctk.cdi.problems import Problem, ProblemSeverity
from ctk.errors import CtkError
from ctk.host.spec_files import os_reason, read_spec_file

if TYPE_CHECKING:  # both serve directories only: `cdi validate FILE` imports neither
    from ctk.cdi.registry import Registry, SpecSource
    from ctk.host.root import HostRoot

DEFAULT_SPEC_DIRS: Final = (PurePosixPath("/etc/cdi"), PurePosixPath("/var/run/cdi"))
"""Where CDI runtimes (containerd, CRI-O, Docker, Podman) look, lowest priority first."""

SPEC_SUFFIXES: Final = (".json", ".yaml")


@dataclass(frozen=True, slots=True)
class SpecDir:
    """A spec directory as asked for, whether it exists, and why it could not be read."""

    path: str
    priority: int
    exists: bool
    problem: Problem | None = None
    """``spec-dir.missing`` (a warning) or ``spec-dir.unreadable`` (an error)."""


@dataclass(frozen=True, slots=True)
class SpecDirs:
    """What reading the spec directories gave: the registry and each directory's state."""

    registry: Registry
    dirs: tuple[SpecDir, ...]

    @property
    def valid(self) -> bool:
        """Whether every spec is valid and every directory could be listed (missing is fine)."""
        return self.registry.valid and not any(
            d.problem is not None and d.problem.is_error for d in self.dirs
        )


def _exists(root: HostRoot, directory: PurePosixPath) -> bool:
    """Whether ``directory`` exists; a parent that denies entry leaves it unknown (False)."""
    try:
        return root.exists(directory)
    except (OSError, CtkError):
        return False


def scan_spec_dir(
    directory: PurePosixPath, priority: int, *, root: HostRoot
) -> tuple[list[SpecSource], SpecDir]:
    """The spec files directly in ``directory`` (as seen inside ``root``), in name order."""
    from ctk.cdi.registry import SpecSource

    shown_dir = str(directory)
    try:
        entries = sorted(os.scandir(root.path(directory)), key=lambda e: e.name)
    except FileNotFoundError:
        reason = "spec directory does not exist; CDI runtimes skip it"
        missing = Problem("spec-dir.missing", reason, severity=ProblemSeverity.WARNING)
        return [], SpecDir(shown_dir, priority, False, missing)
    except CtkError as exc:  # a link that leads out of the root, or cannot be read
        return [], SpecDir(shown_dir, priority, False, Problem("spec-dir.unreadable", exc.message))
    except OSError as exc:
        exists = _exists(root, directory)
        is_file = exc.errno == errno.ENOTDIR and exists
        reason = "is a file, not a directory" if is_file else os_reason(exc, "be listed")
        problem = Problem("spec-dir.unreadable", f"spec directory {reason}")
        return [], SpecDir(shown_dir, priority, exists, problem)
    sources = []
    for entry in entries:
        if not entry.name.endswith(SPEC_SUFFIXES):
            continue
        shown = str(directory / entry.name)
        try:
            if entry.is_dir(follow_symlinks=False):
                continue  # a runtime's directory walk skips subdirectories
            data: bytes | None
            error: str | None
            if entry.is_dir():  # but reads a link, and fails on one to a directory
                data, error = None, "is a link to a directory, not a spec file"
            else:
                data, error = read_spec_file(root.path(directory / entry.name))
        except CtkError as exc:  # a link that leads out of the root, or cannot be read
            data, error = None, exc.message
        except OSError as exc:  # a link loop, or a link into a directory that denies entry
            data, error = None, os_reason(exc)
        sources.append(SpecSource(shown, priority, data, error))
    return sources, SpecDir(shown_dir, priority, True)


def read_spec_dirs(
    dirs: Sequence[str | os.PathLike[str]] = DEFAULT_SPEC_DIRS, *, root: Path | None = None
) -> SpecDirs:
    """Read and resolve every spec in ``dirs`` (lowest priority first) under ``root``.

    A directory that is missing or cannot be listed is noted in ``dirs`` and the others are read.
    """
    from ctk.cdi.registry import build_registry
    from ctk.host.root import HostRoot

    host = HostRoot(root or Path("/"))
    sources: list[SpecSource] = []
    found: list[SpecDir] = []
    for priority, directory in enumerate(dirs):
        scanned, spec_dir = scan_spec_dir(PurePosixPath(os.fspath(directory)), priority, root=host)
        sources.extend(scanned)
        found.append(spec_dir)
    return SpecDirs(build_registry(sources), tuple(found))


def load_spec_dirs(
    dirs: Sequence[str | os.PathLike[str]] = DEFAULT_SPEC_DIRS, *, root: Path | None = None
) -> Registry:
    """Like `read_spec_dirs`, but a directory that cannot be listed raises `CtkError`."""
    result = read_spec_dirs(dirs, root=root)
    for spec_dir in result.dirs:
        if spec_dir.problem is not None and spec_dir.problem.is_error:
            raise CtkError(f"{spec_dir.path}: {spec_dir.problem.message}")
    return result.registry
