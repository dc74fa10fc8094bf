"""ctk's declarations of commands and options: what a command module says, and nothing else.

A command module declares each option as an ``Annotated`` alias with `Option` or `Argument`,
which take `typer.Option`'s and `typer.Argument`'s parameters and only record them, and
registers its functions on a `Commands`, which takes `typer.Typer`'s. Two things read these
declarations: `ctk.cli.click_build.to_click`, which builds the click command by the rules typer
0.19 builds it by (and renders help and usage errors), and `ctk.cli.direct`, which runs a
command straight from a command line it is sure to read as click would, without importing
click. This module imports neither click nor typer. `tests/test_declare.py` compares the click
build with typer's (`ctk.cli.twin`) and the direct reading with click's.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Final, NamedTuple, TypeVar, Union, get_args, get_origin

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])
Convertor = Callable[[Any], Any]


class DeclarationError(Exception):
    """A declaration `to_click` does not build (a bug in a command module: tests catch it)."""


class Marker:
    """What an ``Annotated`` parameter declares: typer's parameters, recorded as given."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: str, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


class Option(Marker):
    """An option, ``Option("--name", "-n", help=...)``: `typer.Option`'s parameters."""


class Argument(Marker):
    """A positional argument, ``Argument(help=...)``: `typer.Argument`'s keyword parameters."""


class Declared(NamedTuple):
    """A function registered as a command (or a group's callback) with its settings."""

    function: Callable[..., Any]
    name: str | None
    settings: Mapping[str, Any]

    @property
    def command_name(self) -> str:
        """The name the command is called by: the one given, or its function's, dashed."""
        return self.name or self.function.__name__.lower().replace("_", "-")


class Commands:
    """A group of commands as a module declares it: the part of `typer.Typer` ctk uses.

    ``Commands(help=..., no_args_is_help=...)``, ``@commands.command(name, cls=..., ...)``,
    ``@commands.callback(invoke_without_command=...)`` and ``add_group(other, name=...)`` take
    the settings `typer.Typer`, its ``command``, ``callback`` and ``add_typer`` take.
    """

    def __init__(self, **settings: Any) -> None:
        self.settings: Mapping[str, Any] = settings
        self.commands: list[Declared] = []
        self.groups: list[tuple[Commands, Mapping[str, Any]]] = []
        self.group_callback: Declared | None = None

    def command(self, name: str | None = None, **settings: Any) -> Callable[[FunctionT], FunctionT]:
        """Register the decorated function as a command."""

        def register(function: FunctionT) -> FunctionT:
            self.commands.append(Declared(function, name, settings))
            return function

        return register

    def callback(self, **settings: Any) -> Callable[[FunctionT], FunctionT]:
        """Register the decorated function as the group's own callback (its options)."""

        def register(function: FunctionT) -> FunctionT:
            self.group_callback = Declared(function, None, settings)
            return function

        return register

    def add_group(self, group: Commands, **settings: Any) -> None:
        """Add ``group`` as a sub-group (``name=...``)."""
        self.groups.append((group, settings))

    def is_group(self) -> bool:
        """Whether this builds a group; one command and nothing else builds that command."""
        return bool(self.group_callback or self.groups or len(self.commands) != 1)


class Parameter(NamedTuple):
    """A parameter of a command function, its ``Annotated`` marker taken off."""

    name: str
    keyword_only: bool
    """Whether it comes after ``*`` (positional-or-keyword otherwise: no other kind is taken)."""
    annotation: Any
    marker: Marker | None
    """None: the `click.Context` the command is called with."""
    default: Any
    """`REQUIRED` where the signature gives none."""

    @property
    def given_default(self) -> Any:
        """The default click is given (and convertors know): None where there is none."""
        return None if self.default is REQUIRED else self.default

    def option_declarations(self, flag: bool) -> tuple[str, ...]:
        """An option's names as declared, or typer's: ``--name`` (``--name/--no-name`` for a
        flag) from the parameter's name, dashed."""
        if self.marker is not None and self.marker.args:
            return self.marker.args
        cli_name = self.name.lower().replace("_", "-")
        return (f"--{cli_name}/--no-{cli_name}",) if flag else (f"--{cli_name}",)


class _Required:
    """The default of a parameter that has none."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()

_VARIABLE = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS


def parameters(function: Callable[..., Any]) -> list[Parameter]:
    """The parameters of a command function, as declared (what `inspect.signature` with
    ``eval_str=True`` gives, read from the function's code object: `inspect` costs a command's
    start more than this)."""
    while hasattr(function, "__wrapped__"):  # functools.wraps, as inspect.signature follows it
        function = function.__wrapped__
    code = function.__code__
    if code.co_flags & _VARIABLE or code.co_posonlyargcount:
        raise DeclarationError(f"{function.__name__}: *args, **kwargs and / are not supported")
    count = code.co_argcount + code.co_kwonlyargcount
    positional = function.__defaults__ or ()
    first_default = code.co_argcount - len(positional)
    keyword = function.__kwdefaults__ or {}
    annotations = function.__annotations__
    found = []
    for index, name in enumerate(code.co_varnames[:count]):
        keyword_only = index >= code.co_argcount
        if keyword_only:
            default = keyword.get(name, REQUIRED)
        else:
            default = positional[index - first_default] if index >= first_default else REQUIRED
        annotation = annotations.get(name)
        if isinstance(annotation, str):  # `from __future__ import annotations`
            # the annotation's source text, evaluated as inspect.signature(eval_str=True) does
            annotation = eval(annotation, function.__globals__)
        marker = None
        if get_origin(annotation) is Annotated:
            annotation, *extra = get_args(annotation)
            markers = [m for m in extra if isinstance(m, Marker)]
            if len(markers) != 1:
                raise DeclarationError(f"{name}: declare one Option or Argument")
            marker = markers[0]
        elif not _is_context(annotation):
            raise DeclarationError(f"{name}: declare it with Annotated[..., Option(...)]")
        found.append(Parameter(name, keyword_only, annotation, marker, default))
    return found


def _is_context(annotation: Any) -> bool:
    """Whether ``annotation`` is `click.Context` (only a module that imports click can say so)."""
    click = sys.modules.get("click")
    return (
        click is not None and isinstance(annotation, type) and issubclass(annotation, click.Context)
    )


# What a marker may say, beyond its option names (typer's parameters, at typer's defaults).
SHOWN_SETTINGS: Final = {"help": None, "hidden": False, "show_default": True, "show_choices": True}
_COMMON: Final = {**SHOWN_SETTINGS, "metavar": None, "envvar": None, "rich_help_panel": None}
PATH_SETTINGS: Final = {
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "readable": True,
}
_NUMBERS: Final = {"min": None, "max": None, "clamp": False}
CHOICE_SETTINGS: Final = {"case_sensitive": True}
_OPTION_ONLY: Final = {"show_envvar": True, "count": False}
_ARGUMENT_ONLY: Final = {"show_envvar": True}


def settings_of(parameter: Parameter, main_type: Any) -> dict[str, Any]:
    """The marker's keyword parameters over typer's defaults; unknown ones are refused."""
    assert parameter.marker is not None
    known: dict[str, Any] = dict(_COMMON)
    known.update(_OPTION_ONLY if isinstance(parameter.marker, Option) else _ARGUMENT_ONLY)
    if main_type is Path:
        known.update(PATH_SETTINGS)
    elif main_type in (int, float):
        known.update(_NUMBERS)
    elif is_enum(main_type):
        known.update(CHOICE_SETTINGS)
    unknown = sorted(set(parameter.marker.kwargs) - set(known))
    if unknown:
        raise DeclarationError(f"{parameter.name}: {', '.join(unknown)} is not supported here")
    return {**known, **parameter.marker.kwargs}


def is_enum(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Enum)


def value_type(parameter: Parameter) -> tuple[Any, bool]:
    """The type of one value, and whether the parameter takes a list of them."""
    annotation = parameter.annotation
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        others = [a for a in get_args(annotation) if a is not type(None)]
        if len(others) != 1:
            raise DeclarationError(f"{parameter.name}: a union of types is not supported")
        annotation = others[0]
        origin = get_origin(annotation)
    if origin is list:
        (annotation,) = get_args(annotation)
        if get_origin(annotation) is not None or annotation is bool:
            raise DeclarationError(f"{parameter.name}: a list of {annotation} is not supported")
        return annotation, True
    if origin is not None:
        raise DeclarationError(f"{parameter.name}: {parameter.annotation} is not supported")
    return annotation, False


def _to_path(value: Any) -> Path | None:
    if value is None:
        return None
    return value if isinstance(value, Path) else Path(value)


def _to_member(enum: type[Enum]) -> Convertor:
    members = {str(member.value): member for member in enum}

    def convert(value: Any) -> Enum | None:
        return None if value is None else members.get(str(value))

    return convert


def _to_list(one: Convertor | None, default: Any) -> Convertor:
    """A repeated option's values as a list; none given and no default list: None."""

    def convert(value: Sequence[Any] | None) -> list[Any] | None:
        if value is None or (default is None and not value):
            return None
        return [one(v) for v in value] if one else list(value)

    return convert


def value_convertor(main_type: Any, *, many: bool, default: Any) -> Convertor | None:
    one: Convertor | None = None
    if isinstance(main_type, type) and issubclass(main_type, Path):
        one = _to_path
    elif is_enum(main_type):
        one = _to_member(main_type)
    return _to_list(one, default) if many else one


COMMAND_SETTINGS: Final = {
    "cls",
    "go_flags",
    "context_settings",
    "help",
    "add_help_option",
    "hidden",
}
GROUP_SETTINGS: Final = {"help", "no_args_is_help", "invoke_without_command", "name"}
