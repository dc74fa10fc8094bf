"""`ctk hook ...`: the same code as the `ctk-hook` program (issue 6)."""

from __future__ import annotations

import typer

app = typer.Typer()


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def hook(ctx: typer.Context) -> None:
    """Run an OCI hook (the same as the `ctk-hook` program)."""
    from ctk.hook.main import main as hook_main

    raise typer.Exit(hook_main(list(ctx.args)))
