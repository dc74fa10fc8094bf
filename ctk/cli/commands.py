"""The `ctk` command tree: typer's, with each command's module imported when that command runs.

click's lazy-group pattern ("Lazily Loading Subcommands" in click's documentation), handed to
typer as ``cls=``: the root, and each group whose commands `ctk.cli.groups` lists, is a
`LazyGroup` that knows its commands' names and one-line help from that table. A command's
module is imported when the command is looked up to run (or for its own `--help`); listing a
group's commands in its help imports nothing. So `ctk --help` and `ctk cdi --help` import no
command module, and `ctk cdi validate` imports the module of `validate` only (no generate, doctor
or runtime code).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
import typer.main
from typer import Option

from ctk import __version__
from ctk.cli.compat import subcommands
from ctk.cli.groups import GROUPS, CommandGroup, Subcommand
from ctk.cli.options import markup_mode

if TYPE_CHECKING:  # typer's own click (typer >= 0.26 carries it): for annotations only
    from typer._click import Command, Context, HelpFormatter
    from typer._click.formatting import HelpFormatter as _Formatter
else:
    _Formatter = typer.Context.formatter_class

__all__ = ["GROUPS", "CommandGroup", "LazyGroup", "Subcommand", "build_app", "load_group"]

ROOT_HELP = "ctk: CDI specs, container runtime configuration and diagnosis for GPU nodes."


class NarrowFormatter(_Formatter):
    """click's help layout, whose option column gives way on a narrow terminal: under 80
    columns it takes at most a quarter of the width (click's default is 30), so that the help
    column keeps room for a whole variable name (NVIDIA_CTK_CDI_GENERATE_OUTPUT_FORMAT) rather
    than breaking it mid-word."""

    def write_dl(
        self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        if self.width < 80:
            col_max = min(col_max, max(12, self.width // 4))
        super().write_dl(rows, col_max=col_max, col_spacing=col_spacing)


class CtkContext(typer.Context):
    """typer's context, with help laid out by `NarrowFormatter`."""

    formatter_class = NarrowFormatter


def _with_ctk_context(command: Command) -> Command:
    """``command`` and the commands typer built under it, made to run in a `CtkContext` (a lazy
    group sets its own: its commands are not built yet)."""
    command.context_class = CtkContext
    commands = subcommands(command)
    if commands is not None and not isinstance(commands, LazyCommands):
        for sub in commands.values():
            _with_ctk_context(sub)
    return command


def module_command(module: str) -> Command:
    """The command typer builds from the ``app`` of ``module`` (imported here)."""
    return _with_ctk_context(typer.main.get_command(importlib.import_module(module).app))


def load_group(group: CommandGroup, *, lazy: bool = True) -> Command:
    """The command of ``group``; ``lazy=False`` builds it whole from the group's module."""
    if group.commands and lazy:
        return LazyGroup(
            name=group.name,
            help=group.summary,
            no_args_is_help=True,
            rich_markup_mode=markup_mode(),
            listed=[(c.name, c.summary) for c in group.commands],
            load=_CommandLoader(group.commands),
        )
    command = module_command(group.module)
    if group.command is not None:
        commands = subcommands(command)
        assert commands is not None, f"{group.module}: no group of commands"
        command = commands[group.command]
    command.name = group.name
    return command


class _CommandLoader:
    """Loads a group's commands a module at a time (a module's commands are built together)."""

    def __init__(self, commands: Sequence[Subcommand]) -> None:
        self._modules = {c.name: c.module for c in commands}
        self._loaded: dict[str, MutableMapping[str, Command]] = {}

    def __call__(self, name: str) -> Command:
        module = self._modules[name]  # KeyError: no such command
        if module not in self._loaded:
            command = module_command(module)
            self._loaded[module] = subcommands(command) or {command.name or name: command}
        command = self._loaded[module][name]
        command.name = name
        return command


class LazyCommands(MutableMapping[str, "Command"]):
    """A group's commands by name: a command's module is imported when the command is looked up.

    While the group's help is written (`listing`), a command not yet loaded is stood for by a
    command that has only its name and its one-line help from the table.
    """

    def __init__(self, listed: Sequence[tuple[str, str]], load: Callable[[str], Command]) -> None:
        self.listed = tuple(listed)
        """(name, summary) of each command, in `--help` order."""
        self._load = load
        self._loaded: dict[str, Command] = {}
        self.listing = False

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded:
            summary = next((s for n, s in self.listed if n == name), None)
            if summary is None:
                raise KeyError(name)
            if self.listing:
                return typer.core.TyperCommand(name=name, help=summary)
            self._loaded[name] = self._load(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        names = [n for n, _ in self.listed]
        return iter(names + [n for n in self._loaded if n not in names])

    def __len__(self) -> int:
        return len(list(iter(self)))


class LazyGroup(typer.core.TyperGroup):
    """A typer group whose commands come from a table and load when looked up (`LazyCommands`):
    ``listed``, the (name, summary) of each command, and ``load``, a name to its command."""

    def __init__(
        self,
        *,
        listed: Sequence[tuple[str, str]],
        load: Callable[[str], Command],
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        self.commands: LazyCommands = LazyCommands(listed, load)
        self.context_class = CtkContext

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self.commands.listing = True  # the listing shows the table: no module is imported
        try:
            super().format_help(ctx, formatter)
        finally:
            self.commands.listing = False


def _load_root_group(name: str) -> Command:
    return load_group(next(g for g in GROUPS if g.name == name))


class RootGroup(LazyGroup):
    """`ctk` itself, which typer builds (``typer.Typer(cls=RootGroup)``): the groups of
    `ctk.cli.groups.GROUPS`."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(
            listed=[(g.name, g.summary) for g in GROUPS], load=_load_root_group, **settings
        )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ctk {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[
        bool,
        Option("--version", "-V", "-v", is_eager=True, callback=_version, help="Show the version."),
    ] = False,
    debug: Annotated[
        bool, Option("--debug", "-d", help="Show the traceback of an unexpected error.")
    ] = False,
    quiet: Annotated[
        bool,
        Option("--quiet", envvar="NVIDIA_CTK_QUIET", help="Only errors and warnings on stderr."),
    ] = False,
    config: Annotated[
        str | None,
        Option(
            "--config",
            envvar="NVIDIA_CTK_CONFIG",
            help="The toolkit's config.toml (nvidia-ctk's): cdi generate takes its driver root "
            "from nvidia-container-cli.root.",
        ),
    ] = None,
) -> None:
    from ctk.cli.compat import GlobalOptions, set_global_options

    set_global_options(GlobalOptions(quiet=quiet, config=config, debug=debug))


def build_app() -> Command:
    """Return the command behind `ctk`."""
    root = typer.Typer(
        name="ctk",
        cls=RootGroup,
        help=ROOT_HELP,
        no_args_is_help=True,
        rich_markup_mode=markup_mode(),
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root)
    return typer.main.get_command(root)
