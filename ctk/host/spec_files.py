"""Reading one CDI spec file from the host: a file named to `cdi validate`, or one found in a
spec directory (`ctk.host.cdi_specs`).

Only regular files are read: a named pipe called `x.yaml` would block a reader forever, so it is
reported, not opened. `cdi validate FILE` imports this module alone, not the directory scan
(whose records it would define and never make).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ctk.cdi.problems import Problem
from ctk.cdi.validate import SpecReport, validate_bytes
from ctk.host import files


def read_spec_file(path: Path) -> tuple[bytes | None, str | None]:
    """The bytes of a regular file, or why there are none (never blocks on a FIFO or device)."""
    try:
        if os.path.isdir(path):
            return None, "is a directory; to check the specs in it, pass it with --spec-dir"
        return files.read_bytes(path), None
    except files.UnreadableFile as exc:
        cause = exc.__cause__
        return None, os_reason(cause) if isinstance(cause, OSError) else exc.reason


def os_reason(exc: OSError, action: str = "read") -> str:
    """Why ``exc`` stopped the ``action`` of a spec file or directory, in a few words."""
    reason = f"cannot {action}: {exc.strerror or exc}"
    if exc.errno == errno.ENOTDIR:
        reason += " (a part of the path is a file)"
    return reason


def validate_file(path: Path) -> SpecReport:
    """Validate one spec file named on the command line; an unreadable file is a problem too."""
    data, error = read_spec_file(path)
    if data is None:
        problem = Problem("read.error", error or "cannot read")
        return SpecReport(str(path), None, (problem,), None)
    return validate_bytes(data, str(path))
