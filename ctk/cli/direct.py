"""Run a declared command straight from its command line, without click, where that is certain.

Importing click costs a ctk command more than its own work (about 2.5 times a bare Python
start). The command lines that units, scripts and people run — `ctk cdi generate --output F`,
`ctk runtime configure --runtime=containerd --set-as-default`, `ctk cdi validate F` — use long
options (``--name value``, ``--name=value``), flags and positional values. `plan` reads exactly
those, from the same declarations click's command is built from (`ctk.cli.declare`), converting
values as click's types do. Anything else it leaves to click, which reads it or says what is
wrong, so every error reads the same: help, a short option, ``--``, an unknown, repeated or
misspelled option, a value click would refuse, a variable that would set an option, a command
that takes click's context or settings, or a counted option. `tests/test_declare.py`
checks that every command line `plan` reads gives the function what click gives it.
"""

from __future__ import annotations

import errno
import importlib
import os
import re
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ctk.cli.compat import GlobalOptions, set_global_options
from ctk.cli.declare import (
    REQUIRED,
    Argument,
    Commands,
    Declared,
    Parameter,
    is_enum,
    parameters,
    settings_of,
    value_convertor,
    value_type,
)
from ctk.cli.groups import GROUPS

ROOT_FLAGS = {"--quiet": "NVIDIA_CTK_QUIET"}
"""The root's flags (`ctk.cli.commands.build_app`) and the variables that would set them."""
ROOT_VALUES = {"--config": "NVIDIA_CTK_CONFIG"}
"""The root's options with a value, and their variables."""
COMPLETION_VARIABLE = "_CTK_COMPLETE"
"""click's shell-completion request for the program `ctk`."""

_DIRECT_SETTINGS = frozenset({"help", "hidden", "go_flags"})
"""Command settings that do not change how a command line is read (`go_flags` adds spellings
this module never accepts: ``--flag=true`` and ``-name``)."""
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


class Call(NamedTuple):
    """A command to run: its function, the values it is called with, the root's options."""

    function: Callable[..., Any]
    values: dict[str, Any]
    options: GlobalOptions


class _Unsure(Exception):
    """This command line is click's to read."""


def plan(args: Sequence[str], environ: Mapping[str, str]) -> Call | None:
    """The call that ``args`` (after `ctk`) stands for, or None when click must read them."""
    try:
        return _plan(list(args), environ)
    except _Unsure:
        return None


def _plan(rest: list[str], environ: Mapping[str, str]) -> Call:
    if COMPLETION_VARIABLE in environ:
        raise _Unsure
    quiet, config = _root_options(rest, environ)
    if not rest:
        raise _Unsure
    group = next((g for g in GROUPS if g.name == rest[0]), None)
    if group is None:
        raise _Unsure
    del rest[0]
    if group.commands:
        module = next((c.module for c in group.commands if rest and c.name == rest[0]), None)
        if module is None:
            raise _Unsure
        declared = _declared(importlib.import_module(module).app, rest.pop(0), listed=True)
    else:
        declared = _declared(importlib.import_module(group.module).app, group.command)
    values = _read(declared, rest, environ)
    return Call(declared.function, values, GlobalOptions(quiet=quiet, config=config))


def _root_options(rest: list[str], environ: Mapping[str, str]) -> tuple[bool, str | None]:
    """Take the root's options (before the group) off ``rest``."""
    if any(var in environ for var in (*ROOT_FLAGS.values(), *ROOT_VALUES.values())):
        raise _Unsure
    given: dict[str, str | None] = {}
    while rest and rest[0].startswith("-"):
        name, eq, value = rest.pop(0).partition("=")
        if name in given:
            raise _Unsure
        if name in ROOT_FLAGS and not eq:
            given[name] = None
        elif name in ROOT_VALUES:
            given[name] = value if eq else _next_value(rest)
        else:
            raise _Unsure
    return "--quiet" in given, given.get("--config")


def _declared(app: Commands, name: str | None, *, listed: bool = False) -> Declared:
    """The command ``name`` of a module's ``app`` (its only command when ``name`` is None).

    As `ctk.cli.commands` takes it: a group's own options and callback are not run for a
    command the table names, and a module of one command gives it under the listed name only.
    """
    if not app.is_group():
        only = app.commands[0]
        if name is None or (listed and command_name(only) == name):
            return only
        raise _Unsure
    found = [d for d in app.commands if command_name(d) == name]
    if name is None or len(found) != 1:
        raise _Unsure
    return found[0]


def command_name(declared: Declared) -> str:
    """The name a declared command is called by (its function's name, dashed, by default)."""
    return declared.name or declared.function.__name__.lower().replace("_", "-")


class _Option(NamedTuple):
    parameter: Parameter
    flag: bool | None
    """The value this name gives a flag; None: the name takes a value."""


def read(
    declared: Declared, args: Sequence[str], environ: Mapping[str, str]
) -> dict[str, Any] | None:
    """The values ``declared.function`` is called with for ``args`` (after the command's name),
    as click gives them; None where click must read ``args``."""
    try:
        return _read(declared, args, environ)
    except _Unsure:
        return None


def _read(declared: Declared, args: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any]:
    if set(declared.settings) - _DIRECT_SETTINGS:
        raise _Unsure
    params = parameters(declared.function)
    options, arguments = _table(params)
    given: dict[str, list[Any]] = {}
    positional: list[str] = []
    tokens = list(args)
    while tokens:
        token = tokens.pop(0)
        if not token.startswith("-") or token == "-":
            positional.append(token)
            continue
        name, eq, value = token.partition("=")
        option = options.get(name)
        if option is None or not name.startswith("--"):
            raise _Unsure
        if option.flag is not None:
            if eq:
                raise _Unsure
            given.setdefault(option.parameter.name, []).append(option.flag)
        else:
            given.setdefault(option.parameter.name, []).append(value if eq else _next_value(tokens))
    values: dict[str, Any] = {}
    for parameter in params:
        if isinstance(parameter.marker, Argument):
            continue
        values[parameter.name] = _option_value(parameter, given.get(parameter.name), environ)
    values.update(_argument_values(arguments, positional, environ))
    return {parameter.name: values[parameter.name] for parameter in params}


def _next_value(tokens: list[str]) -> str:
    """The value after an option's name (whatever it looks like, as click takes it)."""
    if not tokens:
        raise _Unsure  # click says the option needs a value
    return tokens.pop(0)


def _table(params: list[Parameter]) -> tuple[dict[str, _Option], list[Parameter]]:
    """Each option name with what it gives, and the arguments in order."""
    options: dict[str, _Option] = {}
    arguments: list[Parameter] = []
    for parameter in params:
        if parameter.marker is None:  # the command wants click's context
            raise _Unsure
        main_type, _ = value_type(parameter)
        if isinstance(parameter.marker, Argument):
            arguments.append(parameter)
            continue
        if settings_of(parameter, main_type)["count"]:
            raise _Unsure
        flag = main_type is bool
        if flag and not isinstance(parameter.default, bool):
            raise _Unsure  # click's versions read a flag without a default differently
        cli_name = parameter.name.lower().replace("_", "-")
        default_names = (f"--{cli_name}/--no-{cli_name}",) if flag else (f"--{cli_name}",)
        for declaration in parameter.marker.args or default_names:
            first, second = _split_names(declaration) if flag else (declaration, "")
            for name, value in ((first, True), (second, False)):
                if not name:
                    continue
                if not name.startswith("-"):
                    raise _Unsure  # another prefix (``/name``): click reads such tokens
                if flag and not second and parameter.default:
                    raise _Unsure  # a one-named flag that is on: click versions differ
                options[name] = _Option(parameter, value if flag else None)
    return options, arguments


def _split_names(declaration: str) -> tuple[str, str]:
    """A flag's declaration as click splits it: ``--x/--no-x`` (``;`` after a ``/`` prefix)."""
    separator = ";" if declaration[:1] == "/" else "/"
    first, found, second = declaration.partition(separator)
    return (first.rstrip(), second.lstrip()) if found else (declaration, "")


def _option_value(parameter: Parameter, given: list[Any] | None, environ: Mapping[str, str]) -> Any:
    main_type, many = value_type(parameter)
    settings = settings_of(parameter, main_type)
    if given is not None and len(given) > 1 and not many:
        raise _Unsure  # click takes the last; a repeated option is most often a mistake
    if given is None:
        return _default(parameter, main_type, many, settings, environ)
    if main_type is bool:
        value: Any = given[0]
    elif many:
        value = tuple(_convert(main_type, settings, raw) for raw in given)
    else:
        value = _convert(main_type, settings, given[0])
    return _finish(parameter, main_type, many, value)


def _argument_values(
    arguments: list[Parameter], positional: list[str], environ: Mapping[str, str]
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for index, parameter in enumerate(arguments):
        main_type, many = value_type(parameter)
        settings = settings_of(parameter, main_type)
        if many and index != len(arguments) - 1:
            raise _Unsure  # click fills a list argument before others from the end
        if many:
            taken, positional = positional, []
            value: Any = tuple(_convert(main_type, settings, raw) for raw in taken)
            if not taken:
                value = _default(parameter, main_type, many, settings, environ)
            else:
                value = _finish(parameter, main_type, many, value)
        elif positional:
            value = _finish(
                parameter, main_type, many, _convert(main_type, settings, positional.pop(0))
            )
        else:
            value = _default(parameter, main_type, many, settings, environ)
        values[parameter.name] = value
    if positional:
        raise _Unsure  # extra arguments: click says so
    return values


def _default(
    parameter: Parameter,
    main_type: Any,
    many: bool,
    settings: Mapping[str, Any],
    environ: Mapping[str, str],
) -> Any:
    """The value of a parameter the command line does not give: its default, as click makes it."""
    envvar = settings["envvar"]
    for var in [envvar] if isinstance(envvar, str) else envvar or []:
        if var in environ:
            raise _Unsure
    default = parameter.default
    if default is REQUIRED or callable(default):
        raise _Unsure  # missing (click says so) or made when asked
    if main_type is bool:
        value: Any = default
    elif default is None:
        value = () if many else None
    elif many:
        value = tuple(_convert(main_type, settings, item) for item in default)
    else:
        value = _convert(main_type, settings, default)
    return _finish(parameter, main_type, many, value)


def _finish(parameter: Parameter, main_type: Any, many: bool, value: Any) -> Any:
    """``value`` as click hands it over, turned into what the function takes."""
    convert = value_convertor(main_type, many=many, default=_declared_default(parameter))
    return convert(value) if convert is not None else value


def _declared_default(parameter: Parameter) -> Any:
    return None if parameter.default is REQUIRED else parameter.default


def _convert(main_type: Any, settings: Mapping[str, Any], raw: Any) -> Any:
    """One value as click's type for ``main_type`` converts it; `_Unsure` where click might
    refuse it or read it otherwise."""
    if main_type is str:
        return str(raw)
    if main_type in (int, float):
        pattern = _INTEGER if main_type is int else _DECIMAL
        if not (isinstance(raw, main_type) or (isinstance(raw, str) and pattern.fullmatch(raw))):
            raise _Unsure
        number = main_type(raw)
        low, high = settings["min"], settings["max"]
        if (low is not None and number < low) or (high is not None and number > high):
            raise _Unsure  # refused, or clamped: click's to say
        return number
    if main_type is Path:
        return _path(settings, raw)
    if is_enum(main_type):
        choices = [str(member.value) for member in main_type]
        text = str(raw.value) if is_enum(type(raw)) else raw
        if text not in choices:
            raise _Unsure
        return text
    raise _Unsure  # a type declared after this was written: click's to read


def _path(settings: Mapping[str, Any], raw: Any) -> Any:
    """click.Path's checks; the value itself is handed over as given."""
    try:
        found = os.stat(raw)
    except (OSError, ValueError):
        if settings["exists"]:
            raise _Unsure from None
        return raw
    is_dir = stat.S_ISDIR(found.st_mode)
    refused = (
        (not settings["file_okay"] and stat.S_ISREG(found.st_mode))
        or (not settings["dir_okay"] and is_dir)
        or (settings["readable"] and not os.access(raw, os.R_OK))
        or (settings["writable"] and not os.access(raw, os.W_OK))
    )
    if refused:
        raise _Unsure
    return raw


def run(call: Call) -> int:
    """Run ``call`` as click runs a command (standalone_mode off) and return its exit code.

    As click's ``main`` does: an interrupt or end of input aborts (one empty line, then
    `ctk.cli.app` says "aborted"), a closed pipe ends quietly with 1, click's ``Exit`` (which
    command functions raise for their exit code) is that code.
    """
    set_global_options(call.options)
    try:
        result = call.function(**call.values)
    except (EOFError, KeyboardInterrupt) as exc:
        sys.stderr.write("\n")
        raise Aborted from exc
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _quiet_closed_pipe()
        return 1
    except Exception as exc:
        code = _exit_code(exc)
        if code is None:
            raise
        return code
    return result if isinstance(result, int) else 0


class Aborted(Exception):
    """The command was interrupted (Ctrl-C) or met the end of its input."""


def _exit_code(exc: Exception) -> int | None:
    """The code of click's ``Exit`` (only a command that imported click can raise it)."""
    click = sys.modules.get("click")
    if click is not None and isinstance(exc, click.exceptions.Exit):
        return int(exc.exit_code)
    return None


def _quiet_closed_pipe() -> None:
    """Point standard output at /dev/null so that Python's last flush does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
