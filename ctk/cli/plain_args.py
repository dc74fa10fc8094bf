"""A plain command line read from a command's declarations, as click reads it, or not at all.

`read` gives the values a declared command's function is called with for its arguments: long
options (``--name value``, ``--name=value``), flags and positional values, converted as click's
types convert them. For anything else it returns None and click reads the line (see
`ctk.cli.direct`, which runs what `read` gives, and `tests/test_declare.py`, which checks every
line `read` reads against click).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ctk.cli.declare import (
    REQUIRED,
    Argument,
    Declared,
    Parameter,
    is_enum,
    parameters,
    settings_of,
    value_convertor,
    value_type,
)

_DIRECT_SETTINGS = frozenset({"help", "hidden", "go_flags"})
"""Command settings that do not change how a command line is read (`go_flags` adds spellings
this module never accepts: ``--flag=true`` and ``-name``)."""
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


class _NotPlain(Exception):
    """This command line is click's to read (`read` says None)."""


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
    except _NotPlain:
        return None


def _read(declared: Declared, args: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any]:
    if set(declared.settings) - _DIRECT_SETTINGS:
        raise _NotPlain
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
            raise _NotPlain
        if option.flag is not None:
            if eq:
                raise _NotPlain
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
        raise _NotPlain  # click says the option needs a value
    return tokens.pop(0)


def _table(params: list[Parameter]) -> tuple[dict[str, _Option], list[Parameter]]:
    """Each option name with what it gives, and the arguments in order."""
    options: dict[str, _Option] = {}
    arguments: list[Parameter] = []
    for parameter in params:
        if parameter.marker is None:  # the command wants click's context
            raise _NotPlain
        main_type, _ = value_type(parameter)
        if isinstance(parameter.marker, Argument):
            arguments.append(parameter)
            continue
        if settings_of(parameter, main_type)["count"]:
            raise _NotPlain
        flag = main_type is bool
        if flag and not isinstance(parameter.default, bool):
            raise _NotPlain  # click's versions read a flag without a default differently
        for declaration in parameter.option_declarations(flag):
            first, second = _split_names(declaration) if flag else (declaration, "")
            for name, value in ((first, True), (second, False)):
                if not name:
                    continue
                if not name.startswith("-"):
                    raise _NotPlain  # another prefix (``/name``): click reads such tokens
                if flag and not second and parameter.default:
                    raise _NotPlain  # a one-named flag that is on: click versions differ
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
        raise _NotPlain  # click takes the last; a repeated option is most often a mistake
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
            raise _NotPlain  # click fills a list argument before others from the end
        if not positional:
            values[parameter.name] = _default(parameter, main_type, many, settings, environ)
            continue
        taken = positional if many else positional[:1]
        positional = positional[len(taken) :]
        converted = tuple(_convert(main_type, settings, raw) for raw in taken)
        values[parameter.name] = _finish(
            parameter, main_type, many, converted if many else converted[0]
        )
    if positional:
        raise _NotPlain  # extra arguments: click says so
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
            raise _NotPlain
    default = parameter.default
    if default is REQUIRED or callable(default):
        raise _NotPlain  # missing (click says so) or made when asked
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
    convert = value_convertor(main_type, many=many, default=parameter.given_default)
    return convert(value) if convert is not None else value


def _convert(main_type: Any, settings: Mapping[str, Any], raw: Any) -> Any:
    """One value as click's type for ``main_type`` converts it; `_NotPlain` where click might
    refuse it or read it otherwise."""
    if main_type is str:
        return str(raw)
    if main_type in (int, float):
        pattern = _INTEGER if main_type is int else _DECIMAL
        if not (isinstance(raw, main_type) or (isinstance(raw, str) and pattern.fullmatch(raw))):
            raise _NotPlain
        number = main_type(raw)
        low, high = settings["min"], settings["max"]
        if (low is not None and number < low) or (high is not None and number > high):
            raise _NotPlain  # refused, or clamped: click's to say
        return number
    if main_type is Path:
        return _path(settings, raw)
    if is_enum(main_type):
        choices = [str(member.value) for member in main_type]
        text = str(raw.value) if is_enum(type(raw)) else raw
        if text not in choices:
            raise _NotPlain
        return text
    raise _NotPlain  # a type declared after this was written: click's to read


def _path(settings: Mapping[str, Any], raw: Any) -> Any:
    """click.Path's checks; the value itself is handed over as given."""
    try:
        found = os.stat(raw)
    except (OSError, ValueError):
        if settings["exists"]:
            raise _NotPlain from None
        return raw
    is_dir = stat.S_ISDIR(found.st_mode)
    refused = (
        (not settings["file_okay"] and stat.S_ISREG(found.st_mode))
        or (not settings["dir_okay"] and is_dir)
        or (settings["readable"] and not os.access(raw, os.R_OK))
        or (settings["writable"] and not os.access(raw, os.W_OK))
    )
    if refused:
        raise _NotPlain
    return raw
