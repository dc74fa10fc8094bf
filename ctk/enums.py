"""`StrEnum` on every supported Python (the standard library has it from 3.11 on)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - exercised by CI's Python 3.10 run
    from enum import Enum

    class StrEnum(str, Enum):
        """Members are strings, and print and format as their value (as 3.11's StrEnum)."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)


__all__ = ["StrEnum"]
