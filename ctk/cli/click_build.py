"""The click commands of ctk's declarations (`ctk.cli.declare`), built as typer 0.19 builds them.

`to_click` builds the click command of a `Commands` from click alone, by typer's rules (its
``typer.main``); help and usage lines are rendered here too, by the rules of typer's plain
(not rich) help: click's layout with an "Arguments" section, an argument's name in its metavar,
and typer's ``[default: ...]`` (an enum's value, a flag's name). `tests/test_declare.py`
compares both, parameter by parameter and byte for byte in `--help` and usage errors, with the
command typer builds from the same declarations (`ctk.cli.twin`, which only the tests import).
A declaration this builder does not know raises `DeclarationError`, so a new kind of option
fails in the tests rather than parse other than its help says.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import click

from ctk.cli.compat import GO_FALSE, GO_TRUE
from ctk.cli.declare import (
    COMMAND_SETTINGS,
    GROUP_SETTINGS,
    PATH_SETTINGS,
    REQUIRED,
    SHOWN_SETTINGS,
    Argument,
    Commands,
    Convertor,
    DeclarationError,
    Declared,
    Parameter,
    is_enum,
    parameters,
    settings_of,
    value_convertor,
    value_type,
)
from ctk.errors import UsageError


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
        return click.Path(**{key: settings[key] for key in PATH_SETTINGS})
    if is_enum(main_type):
        return DeclaredChoice(
            [member.value for member in main_type], case_sensitive=settings["case_sensitive"]
        )
    raise DeclarationError(f"{name}: the type {main_type} is not supported")


class DeclaredChoice(click.Choice[Any]):
    """The values of an enum; a member (an option's default) stands for its value, not name."""

    def normalize_choice(self, choice: Any, ctx: click.Context | None) -> str:
        return super().normalize_choice(choice.value if isinstance(choice, Enum) else choice, ctx)


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
    main_type, many = value_type(parameter)
    settings = settings_of(parameter, main_type)
    required = parameter.default is REQUIRED
    default = parameter.given_default
    click_type = _click_type(parameter.name, main_type, settings)
    convertor = value_convertor(main_type, many=many, default=default)
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
            shown={**SHOWN_SETTINGS, "show_envvar": True, **settings},
            type=click_type,
            nargs=-1 if many else None,
            **shared,
        )
        return argument, convertor
    flag = main_type is bool
    names = parameter.option_declarations(flag)
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
    callback.__wrapped__ = function  # type: ignore[attr-defined]  # what it calls, for tests
    return params, callback


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


def no_positional_section(
    command: click.Command, ctx: click.Context, formatter: click.HelpFormatter
) -> None:
    """Nothing: the arguments are listed in the "Arguments" section before the options.

    click 8.5 adds ``format_arguments`` (a "Positional arguments" section of arguments that
    have a help), which would list them twice; click 8.4 has no such method.
    """


class DeclaredCommand(click.Command):
    """A command built by `to_click`: it runs, and shows its help, with click alone."""

    format_arguments = no_positional_section

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


class GoBoolFlags(click.Command):
    """A command that also takes nvidia-ctk's spellings: ``--flag=true|false`` for its boolean
    flags (Go's strconv.ParseBool words) and ``-name`` for ``--name``, as urfave/cli does.

    A declaration asks for it with ``go_flags=True``; it is mixed into the command that runs
    and into typer's twin the tests compare it with (`ctk.cli.twin`). On a command line with
    neither spelling it changes nothing, which `ctk.cli.direct` relies on.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = [p for p in self.params if isinstance(p, click.Option)]
        flags = {opt for param in options if param.is_flag for opt in param.opts}
        long_names = {opt for param in options for opt in param.opts if opt.startswith("--")}
        out: list[str] = []
        for index, given in enumerate(args):
            if given == "--":
                out.extend(args[index:])
                break
            go_long = given[:1] == "-" and "-" + given.partition("=")[0] in long_names
            arg = "-" + given if go_long else given
            flag, eq, value = arg.partition("=")
            if not eq or flag not in flags:
                out.append(arg)
            elif value in GO_TRUE:
                out.append(flag)
            elif value not in GO_FALSE:
                raise UsageError(
                    f"invalid value {value!r} for {flag}", hint="use true or false (or 1 / 0)"
                )
        return super().parse_args(ctx, out)


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
    unknown = sorted(set(declared.settings) - COMMAND_SETTINGS)
    if unknown:
        raise DeclarationError(f"command {declared.name}: {', '.join(unknown)} not supported")
    settings = dict(declared.settings)
    name = declared.command_name
    params, callback = _callback(declared.function)
    cls = settings.pop("cls", None)
    if settings.pop("go_flags", False):
        if cls is not None:
            raise DeclarationError(f"command {name}: give cls or go_flags, not both")
        cls = GoBoolFlags
    return _command_class(cls)(
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
    unknown = sorted(set(settings) - GROUP_SETTINGS)
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
