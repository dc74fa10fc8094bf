"""`ctk system`: node setup tasks (issue 6)."""

from __future__ import annotations

import typer

from ctk.errors import UsageError

app = typer.Typer(no_args_is_help=True, help="Prepare the node: device nodes and /dev/char links.")


@app.command("create-dev-char-symlinks")
def create_dev_char_symlinks() -> None:
    """Create /dev/char links for the NVIDIA device nodes."""
    raise UsageError("ctk system create-dev-char-symlinks is not implemented yet")
