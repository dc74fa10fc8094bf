"""typer's build of ctk's declared commands: it renders their `--help` and usage lines.

The commands that run are built by `ctk.cli.declare.to_click` without typer; this builds the
same declarations into a typer app (each marker becomes the `typer.Option` or `typer.Argument`
it records) and lets typer make the click command, with the settings ctk always used: plain
click help (no rich), no completion options, no pretty tracebacks. It is imported only to show
help or a usage error, and by the tests that compare both builds.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import click
import typer
import typer.core
import typer.main
from typer.core import TyperCommand

from ctk.cli.declare import Argument, Commands, Declared, Marker, parameters

_CLASSES: dict[type[click.Command], type[TyperCommand]] = {}


def to_typer(commands: Commands) -> click.Command:
    """The click command typer builds from ``commands``."""
    # Plain click help: typer's rich help imports rich's renderer (about 80 ms of `--help`), and
    # its plain mode still escapes "[default: ...]" for rich, leaving a stray backslash.
    typer.core.HAS_RICH = False
    app = _app(commands)
    app._add_completion = False  # as when the groups hung off one root app
    app.pretty_exceptions_enable = False
    app.rich_markup_mode = None
    return typer.main.get_command(app)


def twin(commands: Commands, path: tuple[str, ...]) -> click.Command:
    """typer's command at ``path`` (names of sub-commands) of ``commands``.

    Built afresh for each rendering: click keeps a command's help option once made, from the
    context it was first shown in, and the twin must show the option of the context at hand.
    """
    command = to_typer(commands)
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _app(commands: Commands) -> typer.Typer:
    app = typer.Typer(**commands.settings)
    if commands.group_callback is not None:
        app.callback(**commands.group_callback.settings)(_function(commands.group_callback))
    for declared in commands.commands:
        settings = dict(declared.settings)
        if "cls" in settings:
            settings["cls"] = _typer_class(settings["cls"])
        app.command(declared.name, **settings)(_function(declared))
    for group, group_settings in commands.groups:
        app.add_typer(_app(group), **group_settings)
    return app


def _typer_class(cls: type[click.Command]) -> type[TyperCommand]:
    """``cls`` (a `click.Command` subclass used as a mixin) on typer's command class."""
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (cls, TyperCommand), {})
    return _CLASSES[cls]


def _function(declared: Declared) -> Callable[..., Any]:
    """A function typer reads as it reads ``declared.function``, with typer's own markers."""
    function = declared.function
    signature = [
        inspect.Parameter(
            p.name,
            p.kind,
            default=p.default,
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
