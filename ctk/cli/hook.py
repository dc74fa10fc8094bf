"""`ctk hook ...`: runs the native `ctk-hook` program (replacing this process) with the same
arguments."""

from __future__ import annotations

import typer

from ctk.cli.options import new_app

app = new_app()


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def hook(ctx: typer.Context) -> None:
    """Run an OCI hook (the native `ctk-hook` program)."""
    from ctk.host import hook_program

    hook_program.exec_hook(list(ctx.args))
