"""Reading one note section of an ELF file (the forward-compat libcuda's driver branches).

Only the ELF and section headers, the section-name table and the wanted section are read, by
offset: a compat `libcuda.so` is tens of megabytes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from ctk.errors import CtkError
from ctk.host import files

_MAGIC = b"\x7fELF"
_MAX_SECTION = 1 << 20  # a note or a name table larger than this is not what we look for


def read_note(path: Path, section: str) -> bytes | None:
    """The descriptor of the first note in section ``section``; None when absent or not ELF."""
    try:
        with files.open_regular(path) as handle:
            return _note(handle, section)
    except (CtkError, OSError, struct.error, ValueError):
        return None


def _note(handle: BinaryIO, section: str) -> bytes | None:
    ident = handle.read(64)
    if len(ident) < 52 or not ident.startswith(_MAGIC) or ident[4] not in (1, 2):
        return None
    order = "<" if ident[5] == 1 else ">"
    wide = ident[4] == 2
    if wide:
        (shoff,) = struct.unpack_from(order + "Q", ident, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", ident, 0x3A)
    else:
        (shoff,) = struct.unpack_from(order + "I", ident, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", ident, 0x2E)
    if shoff == 0 or shnum == 0 or shstrndx >= shnum:
        return None
    handle.seek(shoff)
    table = handle.read(shentsize * shnum)
    headers = [_section(table, i * shentsize, order, wide) for i in range(shnum)]
    names = _read(handle, *headers[shstrndx][1:])
    for name_offset, offset, size in headers:
        end = names.find(b"\0", name_offset)
        if names[name_offset:end].decode("ascii", "replace") == section:
            return _descriptor(_read(handle, offset, size), order)
    return None


def _section(table: bytes, at: int, order: str, wide: bool) -> tuple[int, int, int]:
    """(name offset, file offset, size) of one section header."""
    if wide:
        name, _type, _flags, _addr, offset, size = struct.unpack_from(order + "IIQQQQ", table, at)
    else:
        name, _type, _flags, _addr, offset, size = struct.unpack_from(order + "IIIIII", table, at)
    return name, offset, size


def _read(handle: BinaryIO, offset: int, size: int) -> bytes:
    if size > _MAX_SECTION:
        raise ValueError("section too large")
    handle.seek(offset)
    return handle.read(size)


def _descriptor(note: bytes, order: str) -> bytes | None:
    if len(note) < 12:
        return None
    namesz, descsz, _type = struct.unpack_from(order + "III", note, 0)
    start = 12 + (namesz + 3) // 4 * 4
    return note[start : start + descsz] if start + descsz <= len(note) else None
