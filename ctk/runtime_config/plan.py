"""The file changes a runtime command decided on, and their unified diff."""

from __future__ import annotations

from dataclasses import dataclass

from ctk.runtime_config.changes import Change


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's old and new text (None: missing / to be deleted) and the record to keep."""

    path: str
    before: str | None
    after: str | None
    record: tuple[Change, ...] | None = None  # the record to write (None: leave it as it is)
    drop_record: bool = False  # remove the record (unconfigure took everything back)
    own: bool = False  # ctk's own drop-in: written afresh, never backed up
    record_for: str | None = None  # the drop-in whose import the record is about (per pair)
    taken_over: bool = False  # replaces a user's file (--force): kept for unconfigure, always
    restores: bool = False  # puts back the user's file a --force configure took over
    keep_before: bool = False  # deletes a user's file (--force): backed up, always

    @property
    def changed(self) -> bool:
        """Whether writing this would change the file."""
        return self.before != self.after


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything one command would change, plus what to tell the user."""

    files: tuple[FileChange, ...]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def changes(self) -> tuple[FileChange, ...]:
        """The files that really change."""
        return tuple(f for f in self.files if f.changed)


def unified_diff(change: FileChange) -> str:
    """The `diff -u` of one file change (/dev/null for a created or deleted file)."""
    import difflib  # only --diff needs it

    old = _lines(change.before)
    new = _lines(change.after)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile=change.path if change.before is not None else "/dev/null",
        tofile=change.path if change.after is not None else "/dev/null",
    )
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)
