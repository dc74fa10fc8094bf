"""typer's build of ctk's declared commands: the reference the tests compare ctk's own with.

The commands that run, and their help, are built by `ctk.cli.declare.to_click` without typer;
this builds the same declarations into a typer app (each marker becomes the `typer.Option` or
`typer.Argument` it records) and lets typer make the click command, with the settings ctk always
used: plain click help (no rich), no completion options, no pretty tracebacks.
`tests/test_declare.py` compares both builds; nothing in `ctk` imports this module (a test
says so), so no command loads typer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import click
import typer
import typer.core
import typer.main
from typer.core import TyperCommand, TyperGroup

from ctk.cli.click_build import GoBoolFlags, no_positional_section
from ctk.cli.declare import (
    REQUIRED,
    Argument,
    Commands,
    Declared,
    Marker,
    parameters,
)

_CLASSES: dict[type[click.Command], type[TyperCommand]] = {}


class TwinCommand(TyperCommand):
    """typer's command as on click 8.4: click 8.5 adds a "Positional arguments" section of its
    own, which typer 0.19 predates (its "Arguments" section is part of the options')."""

    format_arguments = no_positional_section


class TwinGroup(TyperGroup):
    """typer's group as on click 8.4 (see `TwinCommand`)."""

    format_arguments = no_positional_section


def to_typer(commands: Commands) -> click.Command:
    """The click command typer builds from ``commands``."""
    # Plain click help: typer's rich help imports rich's renderer (about 80 ms of `--help`), and
    # its plain mode still escapes "[default: ...]" for rich, leaving a stray backslash.
    typer.core.HAS_RICH = False
    app = _app(commands)
    app._add_completion = False  # as when the groups hung off one root app
    app.pretty_exceptions_enable = False
    app.rich_markup_mode = None
    command = typer.main.get_command(app)
    _keep_argument_help(commands, command)
    return command


def _keep_argument_help(commands: Commands, command: click.Command) -> None:
    """Give typer's arguments back the help they were declared with.

    click 8.5 gave `click.Argument` a ``help`` of its own, whose ``__init__`` clears the one
    `typer.core.TyperArgument` sets before calling it: typer 0.19 on click 8.5 shows no help
    for arguments. ctk shows it on every click; the reference must too.
    """
    if not commands.is_group():
        _argument_help(commands.commands[0], command)
        return
    assert isinstance(command, click.Group)
    if commands.group_callback is not None:
        _argument_help(commands.group_callback, command)
    for declared in commands.commands:
        name = declared.name or declared.function.__name__.lower().replace("_", "-")
        _argument_help(declared, command.commands[name])
    for group, settings in commands.groups:
        _keep_argument_help(group, command.commands[settings["name"]])


def _argument_help(declared: Declared, command: click.Command) -> None:
    built = {param.name: param for param in command.params}
    for parameter in parameters(declared.function):
        if isinstance(parameter.marker, Argument):
            built[parameter.name].help = parameter.marker.kwargs.get("help")  # type: ignore[attr-defined]


def _app(commands: Commands) -> typer.Typer:
    app = typer.Typer(**{"cls": TwinGroup, **commands.settings})
    if commands.group_callback is not None:
        app.callback(**commands.group_callback.settings)(_function(commands.group_callback))
    for declared in commands.commands:
        settings = dict(declared.settings)
        if settings.pop("go_flags", False):
            settings["cls"] = GoBoolFlags
        settings["cls"] = _typer_class(settings["cls"]) if "cls" in settings else TwinCommand
        app.command(declared.name, **settings)(_function(declared))
    for group, group_settings in commands.groups:
        app.add_typer(_app(group), **group_settings)
    return app


def _typer_class(cls: type[click.Command]) -> type[TyperCommand]:
    """``cls`` (a `click.Command` subclass used as a mixin) on typer's command class."""
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (cls, TwinCommand), {})
    return _CLASSES[cls]


def _function(declared: Declared) -> Callable[..., Any]:
    """A function typer reads as it reads ``declared.function``, with typer's own markers."""
    function = declared.function
    signature = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY
            if p.keyword_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if p.default is REQUIRED else p.default,
            annotation=p.annotation
            if p.marker is None
            else Annotated[p.annotation, _marker(p.marker)],
        )
        for p in parameters(function)
    ]

    def call(**values: Any) -> Any:
        return function(**values)

    call.__name__ = function.__name__
    call.__qualname__ = function.__qualname__
    call.__doc__ = function.__doc__
    call.__module__ = function.__module__
    call.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    call.__annotations__ = {}  # the signature's annotations are the ones typer reads
    return call


def _marker(marker: Marker) -> Any:
    if isinstance(marker, Argument):
        return typer.Argument(*marker.args, **marker.kwargs)
    return typer.Option(*marker.args, **marker.kwargs)
