"""The one error type that ctk shows to users."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs several ms: `ctk --version` must not import it
if TYPE_CHECKING:
    from typing import ClassVar


class CtkError(Exception):
    """A problem the user can act on: a message, an optional hint, an exit code."""

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(CtkError):
    """The command line itself is wrong (exit 2)."""

    exit_code: ClassVar[int] = 2
