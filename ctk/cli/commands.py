"""The `ctk` command tree: one table of command groups, each imported only when it runs.

Every group is a module of `ctk.cli` that defines ``app``, a `ctk.cli.declare.Commands` (a group
of commands, or a single command such as `doctor`), which builds its click command without
typer. The root is a plain click group that knows the groups by name and one-line help from
`GROUPS` alone, so `ctk --help` imports no group. A group whose
commands are listed in its `CommandGroup.commands` is a plain click group too: its `--help`
imports neither typer nor a command module, and `ctk cdi validate` imports the module of
`validate` only (no generate code, no doctor code, no runtime code).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping, Sequence

import click

from ctk import __version__
from ctk.cli.groups import GROUPS, CommandGroup, Subcommand

__all__ = ["GROUPS", "CommandGroup", "Subcommand", "build_app", "load_group"]


def _module_command(module: str) -> click.Command:
    """Import ``module`` and return the click command of its ``app`` (no typer: declare.py)."""
    from ctk.cli.click_build import to_click

    return to_click(importlib.import_module(module).app)


def load_group(group: CommandGroup, *, lazy: bool = True) -> click.Command:
    """The click command of ``group``; ``lazy=False`` builds it whole from the group's module."""
    if group.commands and lazy:
        return LazySubgroup(
            name=group.name,
            commands=LazyCommands(
                [(c.name, c.summary) for c in group.commands], _CommandLoader(group.commands)
            ),
            help=group.summary,
            no_args_is_help=True,
        )
    command = _module_command(group.module)
    if group.command is not None:
        assert isinstance(command, click.Group)
        command = command.commands[group.command]
    command.name = group.name
    return command


class _CommandLoader:
    """Loads a group's commands a module at a time (a module's commands are built together)."""

    def __init__(self, commands: Sequence[Subcommand]) -> None:
        self._modules = {c.name: c.module for c in commands}
        self._loaded: dict[str, dict[str, click.Command]] = {}

    def __call__(self, name: str) -> click.Command:
        module = self._modules[name]  # KeyError: no such command
        if module not in self._loaded:
            command = _module_command(module)
            self._loaded[module] = (
                dict(command.commands)
                if isinstance(command, click.Group)
                else {command.name or name: command}
            )
        command = self._loaded[module][name]
        command.name = name
        return command


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name: a command's module is imported when the command is looked up.

    Code that walks the tree the click way (``group.commands.get(name)``, ``.items()``) works
    unchanged; only what it touches is loaded.
    """

    def __init__(
        self, listed: Sequence[tuple[str, str]], load: Callable[[str], click.Command]
    ) -> None:
        self.listed = tuple(listed)
        """(name, summary) of each command, in `--help` order."""
        self._load = load
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in (n for n, _ in self.listed):
                raise KeyError(name)
            self._loaded[name] = self._load(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        names = [n for n, _ in self.listed]
        return iter(names + [n for n in self._loaded if n not in names])

    def __len__(self) -> int:
        return len(list(iter(self)))


class LazyGroup(click.Group):
    """A group that lists its commands from a table and imports only the one that runs."""

    commands: LazyCommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the table's order, not sorted

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl(list(self.commands.listed))


class LazySubgroup(LazyGroup):
    """A group under the root: its listing is shortened to the terminal as click's own is."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = self.commands.listed
        limit = formatter.width - 6 - max(len(name) for name, _ in listed)
        with formatter.section("Commands"):
            formatter.write_dl(
                [(name, click.utils.make_default_short_help(s, limit)) for name, s in listed]
            )


def _load_root_group(name: str) -> click.Command:
    return load_group(next(g for g in GROUPS if g.name == name))


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        click.echo(f"ctk {__version__}")
        ctx.exit(0)


def _root(quiet: bool, config: str | None) -> None:
    from ctk.cli.compat import GlobalOptions, set_global_options

    set_global_options(GlobalOptions(quiet=quiet, config=config))


def build_app() -> click.Command:
    """Return the click command behind `ctk`."""
    return LazyGroup(
        name="ctk",
        commands=LazyCommands([(g.name, g.summary) for g in GROUPS], _load_root_group),
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
