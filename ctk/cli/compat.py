"""nvidia-ctk's command-line habits that ctk accepts, so its scripts, units and udev rules work.

- `help` / `h` as a command at any level: `ctk help`, `ctk cdi help`, `ctk help cdi generate`.
- Boolean flags with a value, as Go's flag packages take them: `--no-all-device=true`,
  `--dry-run=false` (Go's spellings: 1, t, T, true, TRUE, True and the same for false).
- Long options with one dash, as urfave/cli takes them: `-dry-run`, `-config=F`.
- Environment variables: list values separated by commas, as nvidia-ctk splits them; a
  variable applies only when its flag is not given (a flag beats its variable).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from ctk.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from typer._click import Command  # typer's own click, for annotations only

# Go's strconv.ParseBool, which urfave/cli (nvidia-ctk) uses for flags and variables
GO_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
GO_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})
HELP_WORDS = frozenset({"help", "h"})


def parse_bool(value: str, where: str) -> bool:
    """A boolean as nvidia-ctk reads one (Go's strconv.ParseBool)."""
    word = value.strip()
    if word in GO_TRUE:
        return True
    if word in GO_FALSE:
        return False
    raise UsageError(f"invalid value {value!r} for {where}", hint="use true or false (or 1 / 0)")


def env_flag(name: str) -> bool:
    """Whether the boolean variable ``name`` is set to true (unset or empty: false)."""
    value = os.environ.get(name, "")
    return parse_bool(value, name) if value.strip() else False


def env_list(*names: str) -> list[str]:
    """The comma-separated values of the first of ``names`` that is set and not empty."""
    for name in names:
        value = os.environ.get(name, "")
        if value.strip():
            return [item.strip() for item in value.split(",") if item.strip()]
    return []


def env_value(*names: str) -> str | None:
    """The value of the first of ``names`` that is set and not empty."""
    return next((os.environ[n] for n in names if os.environ.get(n, "").strip()), None)


def warn(message: str) -> None:
    """One line on standard error for an nvidia-ctk option ctk takes but treats otherwise."""
    sys.stderr.write(f"warning: {message}\n")


def subcommands(command: Command) -> MutableMapping[str, Command] | None:
    """A group's commands by name (None: ``command`` is not a group)."""
    commands = getattr(command, "commands", None)
    return commands if isinstance(commands, MutableMapping) else None


def _options(command: Command) -> Iterator[Any]:
    return (p for p in command.params if getattr(p, "param_type_name", "") == "option")


def _bool_flag(command: Command, name: str) -> Any:
    """The boolean flag of ``command`` that ``name`` names (its on or its off name), or None."""
    for param in _options(command):
        if param.is_flag and not param.count and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _takes_value(command: Command, arg: str) -> bool:
    """Whether ``arg`` is an option of ``command`` whose value is the next argument."""
    if not arg.startswith("-") or "=" in arg:
        return False
    return any(not p.is_flag and not p.count and arg in p.opts for p in _options(command))


def _long_names(command: Command) -> set[str]:
    return {
        name
        for param in _options(command)
        for name in (*param.opts, *param.secondary_opts)
        if name.startswith("--")
    }


def _go_option(command: Command, arg: str) -> str:
    """``-name`` or ``-name=value`` as ``--name...`` where ``--name`` is an option of
    ``command`` (urfave/cli, nvidia-ctk's reader, takes one dash or two); else ``arg``."""
    if arg.startswith("--") or len(arg.partition("=")[0]) <= 2:
        return arg
    return "-" + arg if "-" + arg.partition("=")[0] in _long_names(command) else arg


def normalize(command: Command, args: Sequence[str]) -> list[str]:
    """``args`` with nvidia-ctk's spellings turned into ctk's (see the module docstring).

    Only option names and the `help` word are rewritten: a word that is the value of the option
    before it is passed on as it is, whatever it looks like, as Go's flag package (and click)
    take the next word as an option's value.
    """
    out: list[str] = []
    current = command
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            return [*out, arg, *rest]
        if _takes_value(current, out[-1] if out else ""):
            out.append(arg)  # the value of the option before it, never a command or an option
            continue
        if not arg.startswith("-"):
            group = subcommands(current)
            sub = None if group is None else group.get(arg)
            if sub is None and arg in HELP_WORDS and group is not None:
                # `help [command...]`: the help of the named command, or of this group
                return [*out, *(a for a in rest if not a.startswith("-")), "--help"]
            current = sub or current
            out.append(arg)
            continue
        arg = _go_option(current, arg)
        name, has_value, value = arg.partition("=")
        flag = _bool_flag(current, name) if has_value and name.startswith("--") else None
        if flag is None:
            out.append(arg)
            continue
        on = parse_bool(value, name) == (name in flag.opts)  # --no-x=true: x off
        if on:
            out.append(flag.opts[0])
        elif flag.secondary_opts:
            out.append(flag.secondary_opts[0])
        # off for a flag without a --no- form is its default: nothing to pass
    return out


class GlobalOptions:
    """nvidia-ctk's global options given before the command (`ctk --quiet cdi generate`)."""

    __slots__ = ("config", "debug", "quiet")

    def __init__(
        self, *, quiet: bool = False, config: str | None = None, debug: bool = False
    ) -> None:
        self.quiet = quiet
        self.config = config
        self.debug = debug


_CURRENT: dict[str, GlobalOptions] = {}
"""The global options of the command line being run, under "options"."""


def set_global_options(given: GlobalOptions) -> None:
    """Record the global options of the command line being run (the root's options)."""
    _CURRENT["options"] = given


def global_options() -> GlobalOptions:
    """The global options of the running command line (defaults before one has set them)."""
    return _CURRENT.get("options") or GlobalOptions()


def info(message: str) -> None:
    """A progress line on standard error, left out with --quiet."""
    if not global_options().quiet:
        sys.stderr.write(message + "\n")
