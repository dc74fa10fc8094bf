"""Walking ctk's command tree in tests, as typer builds it (typer carries its own click, so the
tests name no click class: a group is a command that resolves sub-commands)."""

from __future__ import annotations

from typing import Any

import typer
import typer.core

Command = Any
"""A command typer built (its click classes are typer's own: `typer._click`)."""


def is_group(command: Command) -> bool:
    """Whether ``command`` is a group of commands."""
    return callable(getattr(command, "resolve_command", None))


def is_option(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "option"


def is_usage_error(exc: BaseException) -> bool:
    """Whether ``exc`` is typer's usage error (bad command line: exit 2)."""
    return isinstance(exc, typer.TyperException) and getattr(exc, "exit_code", 1) == 2


def context(command: Command, *, width: int | None = None, parent: Any = None) -> Any:
    """A context for ``command`` (under a root named `ctk`) without parsing a command line."""
    if parent is None:
        root = typer.core.TyperGroup(name="ctk")
        parent = root.context_class(root, info_name="ctk")
    return command.context_class(
        command, info_name=command.name, parent=parent, terminal_width=width
    )


def walk(command: Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Command]]:
    """Every command under ``command`` (itself first) with the names that lead to it."""
    found = [(path, command)]
    if is_group(command):
        for name in list(command.commands):
            found += walk(command.commands[name], (*path, name))
    return found


def leaves(command: Command) -> list[tuple[tuple[str, ...], Command]]:
    """The commands under ``command`` that are not groups."""
    return [(path, c) for path, c in walk(command) if not is_group(c)]
