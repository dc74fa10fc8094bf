"""`ctk runtime`: add the nvidia runtime to containerd, Docker or CRI-O, or take it out again."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click
import typer
from typer.core import TyperCommand

from ctk.errors import UsageError
from ctk.runtime_config.engines import (
    DEFAULT_RUNTIME_NAME,
    DEFAULT_RUNTIME_PATH,
    ENGINES,
    Runtime,
    RuntimeRequest,
)

if TYPE_CHECKING:  # the editors (tomlkit) load only when a command runs, not for --help
    from ctk.host.engines import ContainerdFiles
    from ctk.runtime_config.changes import Change
    from ctk.runtime_config.configure import Inputs
    from ctk.runtime_config.plan import FileChange, Plan

# Go's strconv.ParseBool, which urfave/cli (nvidia-ctk) uses for `--flag=value`.
GO_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
GO_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})


class _GoBoolFlags(TyperCommand):
    """A command that also takes `--flag=true|false` for its boolean flags, as nvidia-ctk does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        flags = {
            opt
            for param in self.params
            if isinstance(param, click.Option) and param.is_flag
            for opt in param.opts
        }
        out: list[str] = []
        for index, arg in enumerate(args):
            if arg == "--":
                out.extend(args[index:])
                break
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


app = typer.Typer(no_args_is_help=True, help="Configure container engines for the nvidia runtime.")

RUNTIME = typer.Option(
    Runtime.DOCKER,
    "--runtime",
    show_default=False,
    help="The container engine to configure (default: docker).",
)
CONFIG = typer.Option(
    None,
    "--config",
    help="The engine's config file (default: /etc/containerd/config.toml, "
    "/etc/docker/daemon.json, /etc/crio/crio.conf).",
)
DROP_IN = typer.Option(
    None,
    "--drop-in-config",
    help="The drop-in file to write (default: /etc/containerd/conf.d/99-nvidia.toml, "
    '/etc/crio/crio.conf.d/99-nvidia.toml); "" edits the config in place.',
)
NAME = typer.Option(
    DEFAULT_RUNTIME_NAME,
    "--nvidia-runtime-name",
    show_default=False,
    help=f"Name of the runtime (default: {DEFAULT_RUNTIME_NAME}).",
)

FORCE = typer.Option(
    False,
    "--force",
    help="Replace or remove an existing drop-in that ctk did not write (refused without it); "
    "the file is kept under /var/lib/ctk/runtime/, and unconfigure puts a replaced one back.",
)
BACKUP_HELP = (
    "Keep the old file as <file>.bak (in /var/lib/ctk/runtime/backup/ for a file in a *.d "
    "drop-in directory, which the engine would read; ctk's own drop-in is not backed up)."
)

COMPAT = "nvidia-ctk compatibility"
IGNORED_HELP = "Accepted for nvidia-ctk scripts and ignored, with a warning."


def _compat(config_source: str | None, config_mode: str | None) -> None:
    """Check nvidia-ctk's --config-source and --config-mode: refuse or warn where ctk differs."""
    if config_source is not None:
        sources = [s.strip() for s in config_source.split(",")]
        bad = [s for s in sources if s not in ("file", "command")]
        if bad:
            raise UsageError(
                f"invalid --config-source {bad[0]!r}", hint="use file (or command, read as file)"
            )
        if "command" in sources:
            sys.stderr.write(
                "warning: --config-source=command is read as file: ctk reads the config files "
                "and everything they import itself, as containerd and CRI-O merge them\n"
            )
    if config_mode in ("oci-hook", "hook"):
        raise UsageError(
            f"ctk does not write OCI hook configs (--config-mode={config_mode}, deprecated in "
            "nvidia-ctk)",
            hint="use CDI instead: ctk cdi generate, then ctk runtime configure --cdi.enabled",
        )
    if config_mode not in (None, "config-file"):
        sys.stderr.write(f"warning: unknown --config-mode {config_mode!r}; using config-file\n")


def _check_name(runtime: Runtime, name: str) -> None:
    if not name or any(c.isspace() or c in "/\"'" for c in name):
        raise UsageError(f"invalid runtime name {name!r}", hint="use a name like nvidia")
    if runtime is Runtime.DOCKER and name == "runc":
        raise UsageError("dockerd reserves the runtime name 'runc'", hint="use a name like nvidia")


def _gather(runtime: Runtime, config: str | None, drop_in: str | None) -> Inputs:
    from ctk.host import engines as host_engines
    from ctk.host import files
    from ctk.runtime_config.changes import load_record
    from ctk.runtime_config.configure import Inputs, uses_drop_in

    engine = ENGINES[runtime]
    config_path = Path(config) if config else Path(engine.config_path)
    config_path = Path(Path.cwd(), config_path) if not config_path.is_absolute() else config_path
    if drop_in is None:
        drop_in = str(engine.drop_in_path) if engine.drop_in_path else ""
    elif drop_in and engine.drop_in_path is None:
        raise UsageError(f"{runtime} has no drop-in configs", hint="drop --drop-in-config")
    if drop_in and not drop_in.startswith("/"):
        raise UsageError(f"--drop-in-config must be an absolute path, not {drop_in!r}")
    if drop_in and _same_file(Path(drop_in), config_path):
        raise UsageError(
            f"--drop-in-config {drop_in} is the config file itself",
            hint='pass --drop-in-config "" to edit the config in place',
        )
    text = files.read_text(config_path, missing_ok=True)
    if runtime is Runtime.CONTAINERD:
        host_engines.refuse_managed_config(config_path, text)

    def record_of(drop_in: str | None) -> tuple[tuple[Change, ...], bool]:
        record_file = host_engines.record_path(config_path, drop_in)
        record_text = files.read_text(record_file, missing_ok=True)
        if record_text is None:  # written beside the config by earlier versions
            record_file = host_engines.legacy_record_path(config_path)
            record_text = files.read_text(record_file, missing_ok=True)
        nested_null = runtime is Runtime.DOCKER
        return load_record(str(record_file), record_text, nested_null=nested_null), (
            record_text is not None
        )

    record, recorded = record_of(None)
    inputs = Inputs(
        config=str(config_path),
        config_text=text,
        record=record,
        recorded=recorded,
    )
    if not drop_in:
        return _with_imports(runtime, inputs, config_path)
    drop_in_text = files.read_text(Path(drop_in), missing_ok=True)
    taken_over = files.read_text(host_engines.takeover_path(Path(drop_in)), missing_ok=True)
    with_drop_in = Inputs(
        config=str(config_path),
        config_text=text,
        record=record,
        recorded=recorded,
        drop_in=drop_in,
        drop_in_text=drop_in_text,
    )
    if not uses_drop_in(runtime, with_drop_in):
        return Inputs(
            config=str(config_path),
            config_text=text,
            record=record,
            recorded=recorded,
            drop_in=drop_in,
        )
    if runtime is Runtime.CONTAINERD:
        found = _containerd_imports(config_path, text, drop_in)
        before, after = found.before, found.after
        record, recorded = record_of(drop_in)
    else:
        crio_before, crio_after = host_engines.crio_drop_ins(Path(drop_in))
        before, after = tuple(crio_before), tuple(crio_after)
    return Inputs(
        config=str(config_path),
        config_text=text,
        record=record,
        recorded=recorded,
        drop_in=drop_in,
        drop_in_text=drop_in_text,
        taken_over=taken_over,
        before=before,
        after=after,
    )


def _containerd_imports(config: Path, text: str | None, drop_in: str | None) -> ContainerdFiles:
    from ctk.host import engines as host_engines

    found = host_engines.containerd_imports(config, text or "", drop_in)
    for name in found.missing:
        sys.stderr.write(f"warning: containerd is told to import {name}, which does not exist\n")
    return found


def _with_imports(runtime: Runtime, inputs: Inputs, config: Path) -> Inputs:
    """In-place containerd (v2+): the files the config imports, all read after it."""
    from ctk.runtime_config import containerd

    text = inputs.config_text
    if (
        runtime is not Runtime.CONTAINERD
        or not text
        or containerd.version_of(str(config), text) == 1
    ):
        return inputs
    found = _containerd_imports(config, text, None)
    return replace(inputs, after=found.after)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # one is missing (or unreadable): compare the names
        return a.absolute() == b.absolute()


def _apply(runtime: Runtime, plan: Plan, *, dry_run: bool, backup: bool, verb: str) -> None:
    from ctk.runtime_config.plan import unified_diff

    for note in plan.notes:
        sys.stderr.write(f"note: {note}\n")
    for warning in plan.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    changes = plan.changes
    if dry_run:
        for change in changes:
            sys.stdout.write(unified_diff(change))
        if not changes:
            sys.stdout.write(f"{_nothing(runtime, verb)}\n")
        return
    for change in plan.files:
        _write(change, backup=backup)
    if not changes:
        sys.stdout.write(f"{_nothing(runtime, verb)}\n")
        return
    for change in changes:
        what = (
            "restored"
            if change.restores
            else "removed"
            if change.after is None
            else "created"
            if change.before is None
            else ("updated")
        )
        sys.stdout.write(f"{what} {change.path}\n")
    sys.stdout.write(f"Restart {runtime} to apply the change: {ENGINES[runtime].restart_command}\n")


def _write(change: FileChange, *, backup: bool) -> None:
    from ctk.host import engines as host_engines
    from ctk.host import files
    from ctk.runtime_config.changes import dump_record

    path = Path(change.path)
    # The record first: if the state directory cannot be written, the config stays untouched;
    # a record of changes that did not happen is harmless (undo acts only on values ctk wrote).
    record_file = host_engines.record_path(path, change.record_for)
    if change.record is not None:
        record = dump_record(change.record)
        files.write_atomic(
            record_file, record, mode=0o600, make_parents=True, follow_symlinks=False
        )
    if change.changed:
        # ctk's own drop-in is written afresh from the other files: nothing of the user's to keep.
        if change.taken_over and change.before is not None:
            kept = host_engines.takeover_path(path)
            files.write_atomic(
                kept, change.before, mode=0o600, make_parents=True, follow_symlinks=False
            )
            sys.stdout.write(
                f"backed up {path} (not written by ctk) to {kept}; unconfigure puts it back\n"
            )
        elif (backup or change.keep_before) and not change.own and change.before is not None:
            kept = host_engines.backup_path(path)
            files.write_atomic(
                kept, change.before, mode=0o600, make_parents=True, follow_symlinks=False
            )
            sys.stdout.write(f"backed up {path} to {kept}\n")
        if change.after is None:
            files.remove(path)
        else:
            files.write_atomic(path, change.after, make_parents=True)
    if change.restores:
        files.remove(host_engines.takeover_path(path))
    if change.record is not None or change.drop_record:
        files.remove(host_engines.legacy_record_path(path))
    if change.drop_record:
        files.remove(record_file)


def _nothing(runtime: Runtime, verb: str) -> str:
    if verb == "configure":
        return f"{runtime} is already configured; nothing changed"
    return f"{runtime} has nothing of ctk's to remove; nothing changed"


@contextlib.contextmanager
def _lock(runtime: Runtime, config: str | None) -> Iterator[None]:
    from ctk.host import files

    path = Path(config) if config else Path(ENGINES[runtime].config_path)
    with files.locked(path.absolute()):
        yield None


@app.command(cls=_GoBoolFlags)
def configure(
    *,
    runtime: Runtime = RUNTIME,
    config: str | None = CONFIG,
    drop_in_config: str | None = DROP_IN,
    nvidia_runtime_name: str = NAME,
    nvidia_runtime_path: str = typer.Option(
        DEFAULT_RUNTIME_PATH,
        "--nvidia-runtime-path",
        "--runtime-path",
        show_default=False,
        help=f"The runtime binary the engine should run (default: {DEFAULT_RUNTIME_PATH}).",
    ),
    set_as_default: bool = typer.Option(
        False,
        "--set-as-default",
        "--nvidia-set-as-default",
        help="Make it the engine's default runtime.",
    ),
    cdi_enabled: bool = typer.Option(
        False, "--cdi.enabled", "--enable-cdi", "--cdi.enable", help="Enable CDI in the engine."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print a unified diff of what would change; write nothing."
    ),
    backup: bool = typer.Option(False, "--backup", help=BACKUP_HELP),
    force: bool = FORCE,
    config_source: str | None = typer.Option(
        None,
        "--config-source",
        help="nvidia-ctk compatibility: file (what ctk does: it reads the files and their "
        "imports itself); command is read as file, with a warning.",
        rich_help_panel=COMPAT,
    ),
    config_mode: str | None = typer.Option(
        None,
        "--config-mode",
        help="nvidia-ctk compatibility: config-file only; the deprecated oci-hook mode is "
        "refused (use CDI).",
        rich_help_panel=COMPAT,
    ),
    executable_path: str | None = typer.Option(
        None, "--executable-path", help=IGNORED_HELP, rich_help_panel=COMPAT
    ),
    oci_hook_path: str | None = typer.Option(
        None, "--oci-hook-path", help=IGNORED_HELP, rich_help_panel=COMPAT
    ),
    runtime_hook_path: str | None = typer.Option(
        None, "--nvidia-runtime-hook-path", help=IGNORED_HELP, rich_help_panel=COMPAT
    ),
) -> None:
    """Add the nvidia runtime to a container engine's config."""
    _check_name(runtime, nvidia_runtime_name)
    _compat(config_source, config_mode)
    for flag, value, use in (
        ("--executable-path", executable_path, "with --config-source=command"),
        ("--oci-hook-path", oci_hook_path, "in the oci-hook config mode"),
        ("--nvidia-runtime-hook-path", runtime_hook_path, "in the oci-hook config mode"),
    ):
        if value is not None:
            sys.stderr.write(f"warning: {flag} is ignored: nvidia-ctk uses it only {use}\n")
    if "/" not in nvidia_runtime_path and nvidia_runtime_path not in ("", ".", ".."):
        # nvidia-ctk's default is the bare name: dockerd looks it up in PATH itself, containerd
        # and CRI-O need an absolute path, which nvidia-ctk takes from /usr/bin.
        if runtime is not Runtime.DOCKER:
            resolved = f"/usr/bin/{nvidia_runtime_path}"
            sys.stderr.write(
                f"note: --nvidia-runtime-path {nvidia_runtime_path} is a bare name; {runtime} "
                f"needs an absolute path: using {resolved}\n"
            )
            nvidia_runtime_path = resolved
    elif not nvidia_runtime_path.startswith("/"):
        raise UsageError(
            f"--nvidia-runtime-path must be absolute, not {nvidia_runtime_path!r}",
            hint=f"for example {DEFAULT_RUNTIME_PATH}",
        )
    request = RuntimeRequest(
        name=nvidia_runtime_name,
        path=nvidia_runtime_path,
        set_as_default=set_as_default,
        enable_cdi=cdi_enabled,
    )
    with _lock(runtime, config):
        inputs = _gather(runtime, config, drop_in_config)
        from ctk.runtime_config.configure import configure as plan_configure

        plan = plan_configure(runtime, inputs, request, force=force)
        _apply(runtime, plan, dry_run=dry_run, backup=backup, verb="configure")


@app.command(cls=_GoBoolFlags)
def unconfigure(
    *,
    runtime: Runtime = RUNTIME,
    config: str | None = CONFIG,
    drop_in_config: str | None = DROP_IN,
    nvidia_runtime_name: str = NAME,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print a unified diff of what would change; write nothing."
    ),
    backup: bool = typer.Option(False, "--backup", help=BACKUP_HELP),
    force: bool = FORCE,
) -> None:
    """Remove what `ctk runtime configure` added."""
    _check_name(runtime, nvidia_runtime_name)
    with _lock(runtime, config):
        inputs = _gather(runtime, config, drop_in_config)
        from ctk.runtime_config.configure import unconfigure as plan_unconfigure

        plan = plan_unconfigure(runtime, inputs, nvidia_runtime_name, force=force)
        _apply(runtime, plan, dry_run=dry_run, backup=backup, verb="unconfigure")
