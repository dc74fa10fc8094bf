"""`ctk hook ...`: the same code as the `ctk-hook` program (issue 6)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add `ctk hook`, which passes its arguments to the hook program."""

    @app.command(
        "hook",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def hook(ctx: typer.Context) -> None:
        """Run an OCI hook (the same as the `ctk-hook` program)."""
        from ctk.hook.main import main as hook_main

        raise typer.Exit(hook_main(list(ctx.args)))
