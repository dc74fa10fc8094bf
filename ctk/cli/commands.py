"""Assembles the typer application from one module per command group."""

from __future__ import annotations

import click
import typer

from ctk import __version__
from ctk.cli import agent, cdi, config, doctor, hook, info, install, runtime, system


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
    quiet: bool = typer.Option(
        False, "--quiet", envvar="NVIDIA_CTK_QUIET", help="Only errors and warnings on stderr."
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        envvar="NVIDIA_CTK_CONFIG",
        help="The toolkit's config.toml (nvidia-ctk's): cdi generate takes its driver root "
        "from nvidia-container-cli.root.",
    ),
) -> None:
    """ctk: CDI specs, container runtime configuration and diagnosis for GPU nodes."""
    from ctk.cli.compat import GlobalOptions

    click.get_current_context().obj = GlobalOptions(quiet=quiet, config=config)


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
    app.add_typer(config.app, name="config")
    info.register(app)
    return typer.main.get_command(app)
