"""`ctk cdi validate` and `ctk cdi list` (issue 2)."""

from __future__ import annotations

import typer

from ctk.errors import UsageError


def register(app: typer.Typer) -> None:
    """Add validate and list to the cdi group."""

    @app.command("validate")
    def validate() -> None:
        """Check CDI spec files against the CDI specification."""
        raise UsageError("ctk cdi validate is not implemented yet")

    @app.command("list")
    def list_devices() -> None:
        """List the CDI devices that the spec directories offer."""
        raise UsageError("ctk cdi list is not implemented yet")
