"""Run a declared command straight from its command line, without click, where that is certain.

Importing click costs a ctk command more than its own work (about 2.5 times a bare Python
start). The command lines that units, scripts and people run — `ctk cdi generate --output F`,
`ctk runtime configure --runtime=containerd --set-as-default`, `ctk cdi validate F` — use long
options (``--name value``, ``--name=value``), flags and positional values. `plan` reads exactly
those, from the same declarations click's command is built from (`ctk.cli.declare`), converting
values as click's types do (`ctk.cli.plain_args`, loaded only once a command is found, so that
`--help` and the other lines click reads pay nothing for it). Anything else it leaves to click,
which reads it or says what is wrong, so every error reads the same: help, a short option,
``--``, an unknown, repeated or misspelled option, a value click would refuse, a variable that
would set an option, a command that takes click's context or settings, or a counted option.
`tests/test_declare.py` checks that every command line `plan` reads gives the function what
click gives it.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ctk.cli.compat import GlobalOptions, set_global_options
from ctk.cli.groups import GROUPS

if TYPE_CHECKING:
    from ctk.cli.declare import Commands, Declared

ROOT_FLAGS = {"--quiet": "NVIDIA_CTK_QUIET"}
"""The root's flags (`ctk.cli.commands.build_app`) and the variables that would set them."""
ROOT_VALUES = {"--config": "NVIDIA_CTK_CONFIG"}
"""The root's options with a value, and their variables."""
COMPLETION_VARIABLE = "_CTK_COMPLETE"
"""click's shell-completion request for the program `ctk`."""
_CLICKS_OWN = frozenset({"--help", "-h", "--"})
"""Words only click reads (the root's help names hold for every command)."""


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
    if COMPLETION_VARIABLE in environ or any(a in _CLICKS_OWN for a in rest):
        raise _Unsure  # before any command module is imported: help costs nothing more
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
    from ctk.cli.plain_args import read  # the command's module has loaded its declarations

    values = read(declared, rest, environ)
    if values is None:
        raise _Unsure
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
            if not eq and not rest:
                raise _Unsure  # click says --config needs a value
            given[name] = value if eq else rest.pop(0)
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
        if name is None or (listed and only.command_name == name):
            return only
        raise _Unsure
    found = [d for d in app.commands if d.command_name == name]
    if name is None or len(found) != 1:
        raise _Unsure
    return found[0]


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
