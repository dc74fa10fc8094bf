"""`ctk doctor`: diagnose a GPU container node (issue 5)."""

from __future__ import annotations

import typer

from ctk.errors import UsageError


def doctor() -> None:
    """Find what is broken on a GPU container node and how to fix it."""
    raise UsageError("ctk doctor is not implemented yet")


def register(app: typer.Typer) -> None:
    """Add the doctor command to the root app."""
    app.command("doctor")(doctor)
