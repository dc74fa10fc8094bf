"""What `ctk cdi validate` and `ctk cdi list` report: problems with a rule id and a position."""

from __future__ import annotations

from dataclasses import dataclass

from ctk.enums import StrEnum


class ProblemSeverity(StrEnum):
    """How bad a problem is: an error makes a spec invalid, a warning does not."""

    ERROR = "error"
    WARNING = "warning"


Path = tuple[str | int, ...]
"""Where in a spec: keys and list indexes from the top, e.g. ``("devices", 0, "name")``."""


def format_path(path: Path) -> str:
    """``("devices", 0, "name")`` -> ``devices[0].name``; the empty path is ``(document)``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "(document)"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a spec file; ``line`` and ``column`` are 1-based when known."""

    rule: str
    message: str
    path: Path = ()
    line: int | None = None
    column: int | None = None
    severity: ProblemSeverity = ProblemSeverity.ERROR

    @property
    def is_error(self) -> bool:
        """Whether this problem makes the spec invalid."""
        return self.severity is ProblemSeverity.ERROR
