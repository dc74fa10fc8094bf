"""`ctk runtime`: configure container engines (issue 4)."""

from __future__ import annotations

import typer

from ctk.errors import UsageError

app = typer.Typer(no_args_is_help=True, help="Configure container engines for the nvidia runtime.")


@app.command()
def configure() -> None:
    """Add the nvidia runtime to a container engine's config."""
    raise UsageError("ctk runtime configure is not implemented yet")


@app.command()
def unconfigure() -> None:
    """Remove what `ctk runtime configure` added."""
    raise UsageError("ctk runtime unconfigure is not implemented yet")
