"""`ctk doctor --fix`: apply typed fixes by calling the functions the ctk commands call.

No argv is replayed through the CLI: a fix value goes straight to the command's function, with
every option the value does not set at the command's own default. Under `--root R` the paths
are the node's, resolved inside R (`HostRoot`), and undo records go to R's state directory, so
a later `ctk runtime unconfigure` on the node finds them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Final

from ctk.doctor.fixes import (
    APPLIABLE,
    REFUSED,
    ConfigureRuntime,
    CreateCharLinks,
    CreateDeviceNodes,
    Fix,
    GenerateSpec,
    SetToolkitConfig,
    Suggestion,
    ToolkitConfigDefault,
    argv_under,
)
from ctk.doctor.model import Finding, Status

if TYPE_CHECKING:
    import typer


def planned(findings: Sequence[Finding]) -> list[tuple[Fix, list[str]]]:
    """Each distinct fix ctk applies itself or refuses to, of failing or warning findings, with
    their ids."""
    plan: dict[Suggestion, list[str]] = {}
    for finding in findings:
        if finding.status not in (Status.FAIL, Status.WARN):
            continue
        for fix in finding.fixes:
            if isinstance(fix, (*APPLIABLE, *REFUSED)):
                plan.setdefault(fix, []).append(finding.check)
    return [(fix, ids) for fix, ids in plan.items() if isinstance(fix, (*APPLIABLE, *REFUSED))]


def not_applied(fix: Fix) -> str:
    """Why ``fix`` is listed but not applied (`shown` gave no command line)."""
    if isinstance(fix, ToolkitConfigDefault):
        return (
            f"(not applied by --fix: a default config would replace {fix.output}, which does "
            "not parse, and lose every setting in it; fix the reported line, or run the command "
            "shown above yourself)"
        )
    return "(run it on the node itself: not possible under --root)"


def shown(fix: Fix, root: Path) -> str | None:
    """The ctk command line ``fix`` amounts to on the node under ``root`` (the one its remedy
    prints, `argv_under`); None: not there."""
    if isinstance(fix, REFUSED) or not applies_under(fix, root):
        return None
    args = argv_under(fix, str(root))
    return None if args is None else shlex.join(["ctk", *args])


def applies_under(fix: Fix, root: Path) -> bool:
    """A spec generated under --root would name host paths with the root's prefix."""
    return str(root) == "/" or not isinstance(fix, GenerateSpec)


def apply(fix: Fix, root: Path) -> None:
    """Apply ``fix`` to the node under ``root`` (raises `CtkError` as the command would)."""
    from ctk.host.root import HostRoot

    host = HostRoot(root)
    under = str(root) != "/"
    match fix:
        case ConfigureRuntime():
            from ctk.cli import runtime
            from ctk.runtime_config.engines import ENGINES, Runtime

            config = host.path(fix.config or ENGINES[fix.runtime].config_path) if under else None
            in_place = under and fix.runtime is not Runtime.DOCKER
            with _state_dir(host.path("/var/lib/ctk") if under else None):
                call(
                    runtime.configure,
                    runtime=fix.runtime,
                    config=None if config is None else str(config),
                    drop_in_config="" if in_place else None,
                    set_as_default=fix.set_as_default,
                    cdi_enabled=fix.enable_cdi,
                )
        case CreateCharLinks():
            from ctk.cli import system

            call(
                system.create_dev_char_symlinks,
                dev_char_path=host.path("/dev/char"),
                driver_root=root,
            )
        case CreateDeviceNodes():
            from ctk.cli import system

            call(system.create_device_nodes, driver_root=root, control_devices=True)
        case GenerateSpec():
            _generate(Path(fix.output), fix.mode)
        case SetToolkitConfig():
            from ctk.toolkit_config import DEFAULT_PATH

            read = fix.config or DEFAULT_PATH  # the file the doctor read, as seen on the node
            _set_toolkit_config(host.path(read) if under else Path(read), fix)
        case _:  # not appliable: planned() never hands these over
            raise AssertionError(fix)


def _set_toolkit_config(path: Path, fix: SetToolkitConfig) -> None:
    """`ctk config --in-place --set ...`: a config that does not parse is refused, unchanged."""
    from ctk.cli import config

    sets = [f"{key}={value}" for key, value in fix.settings]
    call(config.config, ctx=NO_SUBCOMMAND, config_file=path, sets=sets, in_place=True)


NO_SUBCOMMAND: Final = SimpleNamespace(invoked_subcommand=None)
"""The `typer.Context` `ctk config` is called with when run without a sub-command."""


def _generate(output: Path, mode: str | None = None) -> None:
    from ctk.cli import cdi
    from ctk.cli.cdi_generate import DiscoveryMode

    extra = {} if mode is None else {"mode": DiscoveryMode(mode)}
    call(command_function(cdi.app, "generate"), output=output, **extra)


def command_function(app: typer.Typer, name: str) -> Callable[..., Any]:
    """The function behind the sub-command ``name`` of ``app``."""
    for command in app.registered_commands:
        if command.name == name and command.callback is not None:
            return command.callback
    raise AssertionError(f"no command {name}")  # a renamed command: the tests say so


def call(command: Callable[..., Any], **given: Any) -> Any:
    """Call a command function with ``given`` and every other option at its declared default."""
    import inspect

    parameters = inspect.signature(command).parameters
    unknown = sorted(set(given) - set(parameters))
    assert not unknown, f"{command.__name__} takes no {', '.join(unknown)}"  # a renamed option
    kwargs = {}
    for parameter in parameters.values():
        if parameter.name in given:
            kwargs[parameter.name] = given[parameter.name]
        elif parameter.default is inspect.Parameter.empty:
            raise AssertionError(f"{parameter.name} has no default: give it")
        else:
            kwargs[parameter.name] = parameter.default
    return command(**kwargs)


@contextlib.contextmanager
def _state_dir(path: Path | None) -> Iterator[None]:
    """Undo records of a `--root` run belong to that node's state directory."""
    if path is None:
        yield
        return
    from ctk.host.engine_files import STATE_DIR_ENV

    old = os.environ.get(STATE_DIR_ENV)
    os.environ[STATE_DIR_ENV] = str(path)
    try:
        yield
    finally:
        if old is None:
            del os.environ[STATE_DIR_ENV]
        else:
            os.environ[STATE_DIR_ENV] = old
