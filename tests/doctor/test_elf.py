"""`ctk.host.elf.read_note` on generated ELF files (the forward-compat libcuda's note)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.host.elf import read_note
from tests.doctor.elf_note import FWD_SECTION, elf_with_note

PAYLOAD = b'{"format":1,"CUDA version":"12.9","driver":[535,550,560,565,570,575]}'


@pytest.mark.parametrize(
    ("data", "section", "expected"),
    [
        pytest.param(elf_with_note(PAYLOAD), FWD_SECTION, PAYLOAD, id="note"),
        pytest.param(elf_with_note(PAYLOAD), ".note.other", None, id="no-such-section"),
        pytest.param(elf_with_note(PAYLOAD)[:100], FWD_SECTION, None, id="truncated"),
        pytest.param(b"not an ELF file at all" * 4, FWD_SECTION, None, id="not-elf"),
        pytest.param(b"", FWD_SECTION, None, id="empty"),
    ],
)
def test_read_note(tmp_path: Path, data: bytes, section: str, expected: bytes | None) -> None:
    path = tmp_path / "libcuda.so.575.57.08"
    path.write_bytes(data)
    assert read_note(path, section) == expected


def test_missing_file_is_none(tmp_path: Path) -> None:
    assert read_note(tmp_path / "absent", FWD_SECTION) is None
