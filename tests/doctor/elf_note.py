"""A minimal ELF64 file with one note section: stands in for the forward-compat libcuda.

The catalog (6.5.9) asks for generated files rather than NVIDIA binaries: an ELF header, a
section-name table and one SHT_NOTE section, which is all `ctk.host.elf` reads.
"""

from __future__ import annotations

import struct

FWD_SECTION = ".note.cuda.fwd_compatibility"
OWNER = b"NVIDIA Corporation"


def _pad(data: bytes, to: int = 4) -> bytes:
    return data + b"\0" * (-len(data) % to)


def elf_with_note(payload: bytes, section: str = FWD_SECTION, owner: bytes = OWNER) -> bytes:
    """An ELF64 little-endian shared object whose ``section`` holds one note with ``payload``."""
    names = b"\0.shstrtab\0" + section.encode() + b"\0"
    note = struct.pack("<III", len(owner) + 1, len(payload), 1) + _pad(owner + b"\0")
    note += _pad(payload)
    names_at = 64
    note_at = names_at + len(_pad(names))
    headers_at = note_at + len(_pad(note, 8))
    ident = _MAGIC_IDENT
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, headers_at, 0, 64, 0, 0, 64, 3, 1
    )
    section_headers = bytes(64)
    section_headers += struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)
    section_headers += struct.pack("<IIQQQQIIQQ", 11, 7, 0, 0, note_at, len(note), 0, 0, 4, 0)
    return header + _pad(names) + _pad(note, 8) + section_headers


_MAGIC_IDENT = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
