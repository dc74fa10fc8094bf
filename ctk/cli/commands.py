"""Assembles the typer application from one module per command group."""

from __future__ import annotations

import click
import typer

from ctk import __version__
from ctk.cli import agent, cdi, doctor, hook, install, runtime, system


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ctk {__version__}")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(
        False, "--version", "-V", "-v", callback=_version, is_eager=True, help="Show the version."
    ),
    debug: bool = typer.Option(
        False, "--debug", "-d", help="Show the traceback of an unexpected error."
    ),
) -> None:
    """ctk: CDI specs, container runtime configuration and diagnosis for GPU nodes."""


def build_app() -> click.Command:
    """Return the click command behind `ctk`."""
    # Plain click help: typer's rich help imports rich's renderer (about 80 ms of `ctk --help`),
    # and its plain mode still escapes "[default: ...]" for rich, leaving a stray backslash.
    typer.core.HAS_RICH = False
    app = typer.Typer(
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    app.add_typer(cdi.app, name="cdi")
    app.add_typer(runtime.app, name="runtime")
    doctor.register(app)
    app.add_typer(system.app, name="system")
    hook.register(app)
    install.register(app)
    agent.register(app)
    return typer.main.get_command(app)
