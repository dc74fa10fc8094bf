"""The `ctk` command tree: one table of command groups, each imported only when it runs.

Every group is a module of `ctk.cli` that defines ``app``, a `typer.Typer` (a group of commands,
or a single command such as `doctor`). The root is a plain click group that knows the groups by
name and one-line help from `GROUPS` alone, so `ctk --help` imports no group and `ctk runtime
configure` imports the runtime group only: no doctor code, no CDI code, no typer for `--help`
of the root.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Final

import click

from ctk import __version__


@dataclass(frozen=True, slots=True)
class CommandGroup:
    """A group of commands: its name on the command line, its module, its one-line help."""

    name: str
    module: str
    summary: str
    command: str | None = None
    """The command to take from a module whose ``app`` holds several (install, uninstall)."""


GROUPS: Final = (
    CommandGroup("cdi", "ctk.cli.cdi", "Generate, validate and list CDI specs."),
    CommandGroup(
        "runtime", "ctk.cli.runtime", "Configure container engines for the nvidia runtime."
    ),
    CommandGroup(
        "doctor", "ctk.cli.doctor", "Find what is broken on a GPU container node and how to fix it."
    ),
    CommandGroup("system", "ctk.cli.system", "Prepare the node: device nodes and /dev/char links."),
    CommandGroup("hook", "ctk.cli.hook", "Run an OCI hook (the native `ctk-hook` program)."),
    CommandGroup(
        "install",
        "ctk.cli.install",
        "Install the native hook, the systemd units and the udev rule (idempotent).",
        command="install",
    ),
    CommandGroup(
        "uninstall",
        "ctk.cli.install",
        "Remove what `ctk install` wrote (files changed since are kept).",
        command="uninstall",
    ),
    CommandGroup(
        "agent",
        "ctk.cli.agent",
        "Keep this node's engine, CDI spec and readiness right (the DaemonSet's agent).",
    ),
    CommandGroup(
        "config",
        "ctk.cli.config",
        "Show or edit the NVIDIA Container Toolkit's config.toml (nvidia-ctk config).",
    ),
    CommandGroup(
        "info", "ctk.cli.info", "Show ctk's version and the files and programs it would use here."
    ),
)
"""Add a command group here (and nowhere else): a module of ctk.cli with a typer ``app``."""


def load_group(group: CommandGroup) -> click.Command:
    """Import ``group``'s module and return its click command (typer is imported here)."""
    import typer.core
    import typer.main

    # Plain click help: typer's rich help imports rich's renderer (about 80 ms of `--help`), and
    # its plain mode still escapes "[default: ...]" for rich, leaving a stray backslash.
    typer.core.HAS_RICH = False
    app = importlib.import_module(group.module).app
    app._add_completion = False  # as before, when the groups hung off one root app
    app.pretty_exceptions_enable = False
    app.rich_markup_mode = None
    command = typer.main.get_command(app)
    if group.command is not None:
        assert isinstance(command, click.Group)
        command = command.commands[group.command]
    command.name = group.name
    return command


class LazyCommands(MutableMapping[str, click.Command]):
    """The root's commands by name: a group's module is imported when its command is looked up.

    Code that walks the tree the click way (``group.commands.get(name)``, ``.items()``) works
    unchanged; only what it touches is loaded.
    """

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            group = next((g for g in GROUPS if g.name == name), None)
            if group is None:
                raise KeyError(name)
            self._loaded[name] = load_group(group)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        names = [g.name for g in GROUPS]
        return iter(names + [n for n in self._loaded if n not in names])

    def __len__(self) -> int:
        return len(list(iter(self)))


class LazyGroup(click.Group):
    """The root group: lists the groups of `GROUPS` and imports only the one that runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the table's order, not sorted

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(g.name, g.summary) for g in GROUPS])


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        click.echo(f"ctk {__version__}")
        ctx.exit(0)


def _root(quiet: bool, config: str | None) -> None:
    from ctk.cli.compat import GlobalOptions

    click.get_current_context().obj = GlobalOptions(quiet=quiet, config=config)


def build_app() -> click.Command:
    """Return the click command behind `ctk`."""
    return LazyGroup(
        name="ctk",
        commands=LazyCommands(),
        help="ctk: CDI specs, container runtime configuration and diagnosis for GPU nodes.",
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        params=[
            click.Option(
                ["--version", "-V", "-v"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_version,
                help="Show the version.",
            ),
            click.Option(
                ["--debug", "-d"],
                is_flag=True,
                expose_value=False,
                help="Show the traceback of an unexpected error.",
            ),
            click.Option(
                ["--quiet"],
                is_flag=True,
                envvar="NVIDIA_CTK_QUIET",
                help="Only errors and warnings on stderr.",
            ),
            click.Option(
                ["--config"],
                envvar="NVIDIA_CTK_CONFIG",
                help="The toolkit's config.toml (nvidia-ctk's): cdi generate takes its driver "
                "root from nvidia-container-cli.root.",
            ),
        ],
        callback=_root,
    )
