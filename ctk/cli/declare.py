"""ctk's declarations of commands and options, and the click commands that run them.

A command module declares each option as an ``Annotated`` alias with `Option` or `Argument`,
which take `typer.Option`'s and `typer.Argument`'s parameters and only record them, and
registers its functions on a `Commands`, which takes `typer.Typer`'s. `to_click` builds the
click command from those with click alone, by the rules typer 0.19 builds it by (its
``typer.main``): running a command never imports typer. Help and usage lines are rendered here
too, by the rules of typer's plain (not rich) help: click's layout with an "Arguments" section,
an argument's name in its metavar, and typer's ``[default: ...]`` (an enum's value, a flag's
name). `tests/test_declare.py` compares both, parameter by parameter and byte for byte in
`--help` and usage errors, with the command typer builds from the same declarations
(`ctk.cli.twin`, which only the tests import). A declaration this builder does not know raises
`DeclarationError`, so a new kind of option fails in the tests rather than parse other than its
help says.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Final, NamedTuple, TypeVar, Union, get_args, get_origin

import click

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
    kind: inspect._ParameterKind
    annotation: Any
    marker: Marker | None
    """None: the `click.Context` the command is called with."""
    default: Any
    """`REQUIRED` where the signature gives none."""


REQUIRED: Final = inspect.Parameter.empty


def parameters(function: Callable[..., Any]) -> list[Parameter]:
    """The parameters of a command function, as declared."""
    found = []
    for name, param in inspect.signature(function, eval_str=True).parameters.items():
        annotation, marker = param.annotation, None
        if get_origin(annotation) is Annotated:
            annotation, *extra = get_args(annotation)
            markers = [m for m in extra if isinstance(m, Marker)]
            if len(markers) != 1:
                raise DeclarationError(f"{name}: declare one Option or Argument")
            marker = markers[0]
        elif not _is_context(annotation):
            raise DeclarationError(f"{name}: declare it with Annotated[..., Option(...)]")
        found.append(Parameter(name, param.kind, annotation, marker, param.default))
    return found


def _is_context(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, click.Context)


# What a marker may say, beyond its option names (typer's parameters, at typer's defaults).
_SHOWN: Final = {"help": None, "hidden": False, "show_default": True, "show_choices": True}
_COMMON: Final = {**_SHOWN, "metavar": None, "envvar": None, "rich_help_panel": None}
_PATHS: Final = {
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "readable": True,
}
_NUMBERS: Final = {"min": None, "max": None, "clamp": False}
_CHOICES: Final = {"case_sensitive": True}
_OPTION_ONLY: Final = {"show_envvar": True, "count": False}
_ARGUMENT_ONLY: Final = {"show_envvar": True}


def _settings(parameter: Parameter, main_type: Any) -> dict[str, Any]:
    """The marker's keyword parameters over typer's defaults; unknown ones are refused."""
    assert parameter.marker is not None
    known: dict[str, Any] = dict(_COMMON)
    known.update(_OPTION_ONLY if isinstance(parameter.marker, Option) else _ARGUMENT_ONLY)
    if main_type is Path:
        known.update(_PATHS)
    elif main_type in (int, float):
        known.update(_NUMBERS)
    elif _is_enum(main_type):
        known.update(_CHOICES)
    unknown = sorted(set(parameter.marker.kwargs) - set(known))
    if unknown:
        raise DeclarationError(f"{parameter.name}: {', '.join(unknown)} is not supported here")
    return {**known, **parameter.marker.kwargs}


def _is_enum(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Enum)


def _main_type(parameter: Parameter) -> tuple[Any, bool]:
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


def _click_type(name: str, main_type: Any, settings: Mapping[str, Any]) -> click.ParamType[Any]:
    if main_type is str:
        return click.STRING
    if main_type in (int, float):
        low, high, clamp = settings["min"], settings["max"], settings["clamp"]
        if low is None and high is None:
            return click.INT if main_type is int else click.FLOAT
        if main_type is int:
            return click.IntRange(
                None if low is None else int(low), None if high is None else int(high), clamp=clamp
            )
        return click.FloatRange(low, high, clamp=clamp)
    if main_type is bool:
        return click.BOOL
    if main_type is Path:
        return click.Path(**{key: settings[key] for key in _PATHS})
    if _is_enum(main_type):
        return DeclaredChoice(
            [member.value for member in main_type], case_sensitive=settings["case_sensitive"]
        )
    raise DeclarationError(f"{name}: the type {main_type} is not supported")


class DeclaredChoice(click.Choice[Any]):
    """The values of an enum; a member (an option's default) stands for its value, not name."""

    def normalize_choice(self, choice: Any, ctx: click.Context | None) -> str:
        return super().normalize_choice(choice.value if isinstance(choice, Enum) else choice, ctx)


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


def _convertor(main_type: Any, *, many: bool, default: Any) -> Convertor | None:
    one: Convertor | None = None
    if isinstance(main_type, type) and issubclass(main_type, Path):
        one = _to_path
    elif _is_enum(main_type):
        one = _to_member(main_type)
    return _to_list(one, default) if many else one


def _missing(param: click.Parameter, value: Any) -> bool:
    """typer's rule: None is missing too (a required option's default is None)."""
    return value is None or ((param.nargs != 1 or param.multiple) and value == ())


def _without_prefix(name: str) -> str:
    """An option's name without its dashes (``--gpu`` -> ``gpu``)."""
    first = name[:1]
    if first.isalnum():
        return name
    return name[2:] if name[1:2] == first else name[1:]


def _shown_value(param: click.Parameter, value: Any) -> str:
    """A default as help shows it: an enum's value, a two-named flag's name for it."""
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown_value(param, one) for one in value)
    if isinstance(value, Enum):
        return str(value.value)
    if inspect.isfunction(value):
        return "(dynamic)"
    if isinstance(param, click.Option) and param.is_bool_flag:
        if param.secondary_opts:
            if not param.default:
                return _without_prefix(param.secondary_opts[0])
            return _without_prefix(param.opts[0]) if param.opts else str(value)
        if not value:
            return ""  # a flag that is off says nothing
    return str(value)


def _shown_default(param: DeclaredOption | DeclaredArgument, ctx: click.Context) -> str:
    """What ``[default: ...]`` says of ``param``; empty: nothing."""
    if isinstance(param.show_default, str):
        return f"({param.show_default})"
    resilient = ctx.resilient_parsing
    ctx.resilient_parsing = True  # the default as given, not converted
    try:
        value = param.get_default(ctx, call=False)
    finally:
        ctx.resilient_parsing = resilient
    if value is None or not (param.show_default or ctx.show_default):
        return ""
    return _shown_value(param, value)


def _envvar_text(envvar: str | Sequence[str] | None) -> str | None:
    if envvar is None:
        return None
    return envvar if isinstance(envvar, str) else ", ".join(str(var) for var in envvar)


def _with_notes(text: str, notes: list[str]) -> str:
    """A parameter's help with its notes (``[env var: X; default: 1; required]``) after it."""
    if not notes:
        return text
    joined = f"[{'; '.join(notes)}]"
    return f"{text}  {joined}" if text else joined


class DeclaredOption(click.Option):
    """An option built from a declaration."""

    def value_is_missing(self, value: Any) -> bool:
        return _missing(self, value)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.hidden:
            return None
        slashed = False

        def names(opts: Sequence[str]) -> str:
            nonlocal slashed
            joined, has_slash = click.formatting.join_options(opts)
            slashed = slashed or has_slash
            if self.is_flag or self.count:
                return joined
            return f"{joined} {self.make_metavar(ctx)}"

        shown = [names(self.opts)] + ([names(self.secondary_opts)] if self.secondary_opts else [])
        notes = []
        if self.show_envvar:
            envvar = self.envvar
            if envvar is None and self.allow_from_autoenv and ctx.auto_envvar_prefix and self.name:
                envvar = f"{ctx.auto_envvar_prefix}_{self.name.upper()}"
            text = _envvar_text(envvar)
            if text is not None:
                notes.append(f"env var: {text}")
        default = _shown_default(self, ctx)
        if default:
            notes.append(f"default: {default}")
        if isinstance(self.type, click.types._NumberRangeBase):
            limits = self.type._describe_range()
            if limits:
                notes.append(limits)
        if self.required:
            notes.append("required")
        return ("; " if slashed else " / ").join(shown), _with_notes(self.help or "", notes)


class DeclaredArgument(click.Argument):
    """A positional argument built from a declaration; it keeps its help as typer's does."""

    def __init__(self, param_decls: Sequence[str], *, shown: Mapping[str, Any], **attrs: Any):
        super().__init__(param_decls, **attrs)
        self.help: str | None = shown["help"]
        self.hidden: bool = shown["hidden"]
        self.show_default: bool | str = shown["show_default"]
        self.show_choices: bool = shown["show_choices"]
        self.show_envvar: bool = shown["show_envvar"]

    def value_is_missing(self, value: Any) -> bool:
        return _missing(self, value)

    def make_metavar(self, ctx: click.Context) -> str:
        """The argument's name (``[NAME]`` when optional), then ``:`` and its type's metavar."""
        if self.metavar is not None:
            return self.metavar
        name = (self.name or "").upper()
        shown = name if self.required else f"[{name}]"
        type_metavar = self.type.get_metavar(param=self, ctx=ctx)
        if type_metavar:
            shown += f":{type_metavar}"
        return shown if self.nargs == 1 else f"{shown}..."

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.hidden:
            return None
        notes = []
        envvar = _envvar_text(self.envvar) if self.show_envvar else None
        if envvar is not None:
            notes.append(f"env var: {envvar}")
        default = _shown_default(self, ctx)
        if default:
            notes.append(f"default: {default}")
        if self.required:
            notes.append("required")
        return self.make_metavar(ctx), _with_notes(self.help or "", notes)


def click_parameter(parameter: Parameter) -> tuple[click.Parameter, Convertor | None]:
    """The click parameter of a declared one, and what turns its value into the function's."""
    assert parameter.marker is not None
    main_type, many = _main_type(parameter)
    settings = _settings(parameter, main_type)
    required = parameter.default is REQUIRED
    default = None if required else parameter.default
    click_type = _click_type(parameter.name, main_type, settings)
    convertor = _convertor(main_type, many=many, default=default)
    shared: dict[str, Any] = {
        "required": required,
        "default": default,
        "metavar": settings["metavar"],
        "envvar": settings["envvar"],
    }
    if isinstance(parameter.marker, Argument):
        if parameter.marker.args:
            raise DeclarationError(f"{parameter.name}: an argument's default goes after `=`")
        argument = DeclaredArgument(
            [parameter.name],
            shown={**_SHOWN, "show_envvar": True, **settings},
            type=click_type,
            nargs=-1 if many else None,
            **shared,
        )
        return argument, convertor
    flag = main_type is bool
    cli_name = parameter.name.lower().replace("_", "-")
    names = parameter.marker.args or (
        (f"--{cli_name}/--no-{cli_name}",) if flag else (f"--{cli_name}",)
    )
    option = DeclaredOption(
        [parameter.name, *names],
        type=None if flag else click_type,
        is_flag=True if flag else None,
        multiple=many,
        count=settings["count"],
        help=settings["help"],
        hidden=settings["hidden"],
        show_default=settings["show_default"],
        show_choices=settings["show_choices"],
        show_envvar=settings["show_envvar"],
        **shared,
    )
    return option, convertor


def _callback(function: Callable[..., Any]) -> tuple[list[click.Parameter], Callable[..., Any]]:
    """The click parameters of ``function`` and the callback that calls it with their values."""
    params: list[click.Parameter] = []
    convertors: dict[str, Convertor] = {}
    context: str | None = None
    names = []
    for parameter in parameters(function):
        names.append(parameter.name)
        if parameter.marker is None:
            context = parameter.name
            continue
        param, convertor = click_parameter(parameter)
        params.append(param)
        if convertor is not None:
            convertors[parameter.name] = convertor

    def callback(**given: Any) -> Any:
        values: dict[str, Any] = dict.fromkeys(names)  # click gives every parameter's value
        for name, value in given.items():
            values[name] = convertors[name](value) if name in convertors else value
        if context is not None:
            values[context] = click.get_current_context()
        return function(**values)

    callback.__name__ = function.__name__
    callback.__doc__ = function.__doc__
    return params, callback


_COMMAND_SETTINGS: Final = {"cls", "context_settings", "help", "add_help_option", "hidden"}
_GROUP_SETTINGS: Final = {"help", "no_args_is_help", "invoke_without_command", "name"}


def _format_parameters(
    command: click.Command, ctx: click.Context, formatter: click.HelpFormatter
) -> None:
    """The "Arguments" section (arguments that have a help line), then "Options"."""
    sections: dict[str, list[tuple[str, str]]] = {"argument": [], "option": []}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is not None and param.param_type_name in sections:
            sections[param.param_type_name].append(record)
    for title, kind in (("Arguments", "argument"), ("Options", "option")):
        if sections[kind]:
            with formatter.section(title):
                formatter.write_dl(sections[kind])


class DeclaredCommand(click.Command):
    """A command built by `to_click`: it runs, and shows its help, with click alone."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_parameters(self, ctx, formatter)


class DeclaredGroup(DeclaredCommand, click.Group):
    """A group built by `to_click`: commands in the order declared, sub-groups after them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_parameters(self, ctx, formatter)
        self.format_commands(ctx, formatter)


_CLASSES: dict[type[click.Command], type[DeclaredCommand]] = {}


def _command_class(cls: type[click.Command] | None) -> type[DeclaredCommand]:
    """`DeclaredCommand`, or ``cls`` (a `click.Command` subclass used as a mixin) on it."""
    if cls is None:
        return DeclaredCommand
    if not issubclass(cls, click.Command) or issubclass(cls, DeclaredCommand):
        raise DeclarationError(f"cls={cls.__name__}: give a click.Command subclass")
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (cls, DeclaredCommand), {})
    return _CLASSES[cls]


def _help(given: str | None, function: Callable[..., Any] | None) -> str | None:
    if given is not None:
        return inspect.cleandoc(given)
    return inspect.getdoc(function) if function is not None else None


def _command(declared: Declared) -> DeclaredCommand:
    """The command of ``declared``."""
    unknown = sorted(set(declared.settings) - _COMMAND_SETTINGS)
    if unknown:
        raise DeclarationError(f"command {declared.name}: {', '.join(unknown)} not supported")
    settings = dict(declared.settings)
    name = declared.name or declared.function.__name__.lower().replace("_", "-")
    params, callback = _callback(declared.function)
    return _command_class(settings.pop("cls", None))(
        name=name,
        callback=callback,
        params=params,
        help=_help(settings.pop("help", None), declared.function),
        **settings,
    )


def _group(
    commands: Commands, add_settings: Mapping[str, Any], path: tuple[str, ...]
) -> DeclaredGroup:
    """The group of ``commands`` (``add_settings``: the settings it was added with; ``path``:
    the names of the groups down to it, for errors)."""
    declared = commands.group_callback
    settings = {**commands.settings, **(declared.settings if declared else {}), **add_settings}
    unknown = sorted(set(settings) - _GROUP_SETTINGS)
    if unknown:
        raise DeclarationError(f"group {path}: {', '.join(unknown)} not supported")
    built: dict[str, click.Command] = {}
    for entry in commands.commands:
        command = _command(entry)
        built[command.name or ""] = command
    for group, group_settings in commands.groups:
        name = group_settings.get("name")
        if not name:
            raise DeclarationError(f"group {path}: add a group with its name")
        built[name] = _group(group, group_settings, (*path, name))
    params, callback = _callback(declared.function) if declared else ([], None)
    return DeclaredGroup(
        name=settings.get("name") or "",
        commands=built,
        invoke_without_command=settings.get("invoke_without_command", False),
        no_args_is_help=settings.get("no_args_is_help", False),
        callback=callback,
        params=params,
        help=_help(settings.get("help"), declared.function if declared else None),
    )


def to_click(commands: Commands) -> click.Command:
    """The click command of ``commands``, as typer would build it, built without typer."""
    if commands.is_group():
        return _group(commands, {}, ())
    return _command(commands.commands[0])
