"""The dynamic loader's view of a root: its /etc/ld.so.cache, and where a library is.

Read by `cdi generate` (driver libraries, NVML's library under a driver root) and by `doctor`
(where the loader finds the driver). Its own module, so that `ctk.host.nvml` and
`ctk.host.driver` need not import each other.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

from ctk.errors import CtkError
from ctk.host import files
from ctk.host.root import HostRoot, PathEscapeError

# Where drivers put their libraries (as nvidia-ctk searches them), before the ld.so.cache.
LIBRARY_DIRS = (
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu/nvidia/current",
    "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/lib64",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu/nvidia/current",
    "/lib/aarch64-linux-gnu/nvidia/current",
)
LD_CACHE_MAGIC = b"glibc-ld.so.cache1.1"


def read_ld_cache(root: HostRoot) -> tuple[tuple[str, str], ...]:
    """The (library name, path) entries of the root's /etc/ld.so.cache (new format)."""
    try:
        data = files.read_bytes(root.path("/etc/ld.so.cache"), limit=files.LD_CACHE_LIMIT)
    except (CtkError, PathEscapeError):
        return ()
    return parse_ld_cache(data)


def parse_ld_cache(data: bytes) -> tuple[tuple[str, str], ...]:
    """The (library name, absolute path) entries of an ld.so.cache's new-format part.

    A damaged cache (bad offsets, cut short, garbage) gives no entries, never an exception:
    the standard library directories still apply, and a library found nowhere is reported
    as not found.
    """
    base = data.find(LD_CACHE_MAGIC)
    if base < 0 or len(data) < base + 48:
        return ()
    (count,) = struct.unpack_from("<I", data, base + 20)
    if count > (len(data) - base - 48) // 24:
        return ()  # more entries than the file holds
    entries = []
    for i in range(count):
        _flags, key, value = struct.unpack_from("<iII", data, base + 48 + 24 * i)
        name, path = _cstring(data, base + key), _cstring(data, base + value)
        if name is None or path is None:
            return ()
        if name and path.startswith("/"):
            entries.append((name, path))
    return tuple(entries)


def _cstring(data: bytes, offset: int) -> str | None:
    """The NUL-terminated UTF-8 string at ``offset``, or None when there is none."""
    end = data.find(b"\0", offset)
    if offset >= len(data) or end < 0:
        return None
    try:
        return data[offset:end].decode()
    except UnicodeDecodeError:
        return None


def find_library(driver_root: Path, name: str, search: Iterable[str] = ()) -> Path | None:
    """Where library ``name`` (e.g. libnvidia-ml.so.1) is on this machine, under the root."""
    root = HostRoot(driver_root)
    candidates = [f"{d}/{name}" for d in (*search, *LIBRARY_DIRS)]
    candidates += [path for key, path in read_ld_cache(root) if key == name]
    for candidate in candidates:
        try:
            path = root.path(candidate)
        except PathEscapeError:
            continue
        if path.is_file():
            return path
    return None
