"""`ctk cdi generate` and `ctk cdi refresh` (issue 3)."""

from __future__ import annotations

import typer

from ctk.errors import UsageError


def register(app: typer.Typer) -> None:
    """Add generate to the cdi group."""

    @app.command("generate")
    def generate() -> None:
        """Write a CDI spec for every GPU and MIG device of this node."""
        raise UsageError("ctk cdi generate is not implemented yet")
