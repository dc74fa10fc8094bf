"""`ctk runtime`: add the nvidia runtime to containerd, Docker or CRI-O, or take it out again."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from typer import Option

from ctk.cli.options import new_app
from ctk.errors import UsageError
from ctk.runtime_config.engines import (
    DEFAULT_RUNTIME_NAME,
    DEFAULT_RUNTIME_PATH,
    ENGINES,
    Runtime,
    RuntimeRequest,
)

if TYPE_CHECKING:  # the editors (tomlkit) load only when a command runs, not for --help
    from ctk.host.engine_files import Place
    from ctk.runtime_config.editor import Inputs
    from ctk.runtime_config.plan import FileChange, Plan

app = new_app(no_args_is_help=True, help="Configure container engines for the nvidia runtime.")

RuntimeOption = Annotated[
    Runtime,
    Option(
        "--runtime",
        show_default=False,
        help="The container engine to configure (default: docker).",
    ),
]
Config = Annotated[
    str | None,
    Option(
        "--config",
        help="The engine's config file (default: /etc/containerd/config.toml, "
        "/etc/docker/daemon.json, /etc/crio/crio.conf).",
    ),
]
DropIn = Annotated[
    str | None,
    Option(
        "--drop-in-config",
        help="The drop-in file to write (default: /etc/containerd/conf.d/99-nvidia.toml, "
        '/etc/crio/crio.conf.d/99-nvidia.toml); "" edits the config in place.',
    ),
]
Name = Annotated[
    str,
    Option(
        "--nvidia-runtime-name",
        show_default=False,
        help=f"Name of the runtime (default: {DEFAULT_RUNTIME_NAME}).",
    ),
]
Root = Annotated[
    str,
    Option(
        "--root",
        show_default=False,
        help="Configure the engine of the node mounted here: every path (config, drop-in, "
        "imports, the runtime binary) is as seen inside it, and records go under its "
        "/var/lib/ctk.",
    ),
]
Force = Annotated[
    bool,
    Option(
        "--force",
        help="Replace or remove an existing drop-in that ctk did not write (refused without "
        "it); the file is kept under /var/lib/ctk/runtime/, and unconfigure puts a replaced one "
        "back.",
    ),
]
Backup = Annotated[
    bool,
    Option(
        "--backup",
        help="Keep the old file as <file>.bak (in /var/lib/ctk/runtime/backup/ for a file in a "
        "*.d drop-in directory, which the engine would read; ctk's own drop-in is not backed "
        "up).",
    ),
]
DryRun = Annotated[
    bool,
    Option(
        "--dry-run",
        help="Print the resulting file(s) to stdout, as nvidia-ctk does (ctk's drop-in first); "
        "write nothing.",
    ),
]
Diff = Annotated[
    bool, Option("--diff", help="Print a unified diff of what would change; write nothing.")
]
RuntimePath = Annotated[
    str,
    Option(
        "--nvidia-runtime-path",
        "--runtime-path",
        show_default=False,
        help=f"The runtime binary the engine should run (default: {DEFAULT_RUNTIME_PATH}).",
    ),
]
SetAsDefault = Annotated[
    bool,
    Option(
        "--set-as-default",
        "--nvidia-set-as-default",
        help="Make it the engine's default runtime.",
    ),
]
EnableCdi = Annotated[
    bool,
    Option("--cdi.enabled", "--enable-cdi", "--cdi.enable", help="Enable CDI in the engine."),
]

COMPAT = "nvidia-ctk compatibility"
IGNORED_HELP = "Accepted for nvidia-ctk scripts and ignored, with a warning."
ConfigSource = Annotated[
    str | None,
    Option(
        "--config-source",
        help="nvidia-ctk compatibility: file (what ctk does: it reads the files and their "
        "imports itself); command is read as file, with a warning.",
        rich_help_panel=COMPAT,
    ),
]
ConfigMode = Annotated[
    str | None,
    Option(
        "--config-mode",
        help="nvidia-ctk compatibility: config-file (the default), or the deprecated oci-hook: "
        "an OCI hook JSON for Podman/CRI-O, printed or written to --oci-hook-path.",
        rich_help_panel=COMPAT,
    ),
]
ExecutablePath = Annotated[
    str | None, Option("--executable-path", help=IGNORED_HELP, rich_help_panel=COMPAT)
]
OciHookPath = Annotated[
    str | None,
    Option(
        "--oci-hook-path",
        help="oci-hook mode: where to write the hook JSON (default: print it).",
        rich_help_panel=COMPAT,
    ),
]


def _compat(config_source: str | None, config_mode: str | None) -> bool:
    """Check nvidia-ctk's --config-source and --config-mode: refuse or warn where ctk differs.

    True for the (deprecated) oci-hook mode.
    """
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
        sys.stderr.write(
            f"warning: --config-mode={config_mode} is deprecated (in nvidia-ctk too): writing "
            "an OCI hook; CDI does the same without one: ctk cdi generate, then ctk runtime "
            "configure --cdi.enabled\n"
        )
        return True
    if config_mode not in (None, "config-file"):
        sys.stderr.write(f"warning: unknown --config-mode {config_mode!r}; using config-file\n")
    return False


DEFAULT_HOOK_PATH = "/usr/bin/nvidia-container-runtime-hook"
RuntimeHookPath = Annotated[
    str | None,
    Option(
        "--nvidia-runtime-hook-path",
        help=f"oci-hook mode: the hook binary (default: {DEFAULT_HOOK_PATH}).",
        rich_help_panel=COMPAT,
    ),
]


def _oci_hook(output: str | None, hook_path: str, *, dry_run: bool) -> None:
    """nvidia-ctk's oci-hook mode: the prestart hook JSON, printed or written to ``output``."""
    import json
    import os

    from ctk.host import engine_files as host_engines
    from ctk.host import files

    hook = {
        "version": "1.0.0",
        "hook": {
            "path": hook_path,
            "args": ["nvidia-container-runtime-hook", "prestart"],
            "env": [f"PATH={os.environ.get('PATH', '')}"],
        },
        "when": {"always": True, "commands": [".*"]},
        "stages": ["prestart"],
    }
    if not host_engines.runtime_binary_found(hook_path):
        sys.stderr.write(
            f"warning: {hook_path} does not exist: the hook fails until NVIDIA's "
            "nvidia-container-toolkit is installed; CDI needs no hook binary: ctk cdi generate\n"
        )
    text = json.dumps(hook, indent=2) + "\n"
    if output is None or dry_run:
        sys.stdout.write(text)
        return
    path = Path(output)
    before = files.read_text(path, missing_ok=True)
    if before == text:
        sys.stdout.write(f"{path} is already written; nothing changed\n")
        return
    files.write_atomic(path, text, make_parents=True)
    sys.stdout.write(f"{'created' if before is None else 'updated'} {path}\n")


def _warn_missing_binary(runtime: Runtime, request: RuntimeRequest, place: Place) -> None:
    from ctk.host import engine_files as host_engines

    if host_engines.runtime_binary_found(request.path, place.root):
        return
    where = request.path if "/" in request.path else f"{request.path} (looked up in PATH)"
    cdi = (
        "request devices like nvidia.com/gpu=all (CDI is enabled)"
        if request.enable_cdi
        else "ctk cdi generate, --cdi.enabled, then request devices like nvidia.com/gpu=all"
    )
    sys.stderr.write(
        f"warning: {where} does not exist: {runtime} cannot start containers with the "
        f"{request.name} runtime until it does; install NVIDIA's nvidia-container-runtime "
        f"(nvidia-container-toolkit), or use CDI natively without a wrapper runtime: {cdi}\n"
    )


def _check_name(runtime: Runtime, name: str) -> None:
    if not name or any(c.isspace() or c in "/\"'" for c in name):
        raise UsageError(f"invalid runtime name {name!r}", hint="use a name like nvidia")
    if runtime is Runtime.DOCKER and name == "runc":
        raise UsageError("dockerd reserves the runtime name 'runc'", hint="use a name like nvidia")


def _apply(
    runtime: Runtime,
    plan: Plan,
    place: Place,
    *,
    dry_run: bool,
    diff: bool,
    backup: bool,
    verb: str,
) -> None:
    from ctk.runtime_config.plan import unified_diff

    for note in plan.notes:
        sys.stderr.write(f"note: {note}\n")
    for warning in plan.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    changes = plan.changes
    if diff:
        for change in changes:
            sys.stdout.write(unified_diff(change))
        if not changes:
            sys.stdout.write(f"{_nothing(runtime, verb)}\n")
        return
    if dry_run:
        _print_documents(runtime, plan, verb)
        return
    from ctk.host import engine_files as host_engines

    records = [r for change in plan.files if (r := _write(change, place, backup=backup))]
    if verb == "unconfigure":  # the folders configure made for its files, now empty
        host_engines.prune_made_dirs(place.root)
    defaults = {str(ENGINES[runtime].config_path), str(ENGINES[runtime].drop_in_path)}
    machine = records and records[0].is_relative_to(host_engines.DEFAULT_STATE_DIR)
    if machine and str(place.root) == "/" and not {c.path for c in plan.files} <= defaults:
        # a config of its own (a scratch file, another node's) whose undo record went into
        # this machine's /var/lib/ctk: say so (--root or CTK_STATE_DIR keep it elsewhere)
        sys.stderr.write(
            f"note: the undo record is {records[0]} (unconfigure reads it; --root keeps it "
            "under the config's root, $CTK_STATE_DIR elsewhere)\n"
        )
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


def _print_documents(runtime: Runtime, plan: Plan, verb: str) -> None:
    """Print each resulting document (ctk's drop-in first, as nvidia-ctk does); say which on stderr.

    Scripts run `--dry-run > new.toml`: stdout holds the documents and nothing else.
    """
    for change in sorted(plan.files, key=lambda f: not f.own):
        if change.after is None:
            if change.before is not None:
                sys.stderr.write(f"dry run: {change.path} would be removed\n")
            continue
        state = (
            "is unchanged"
            if not change.changed
            else "would be created"
            if change.before is None
            else "would be updated"
        )
        sys.stderr.write(f"dry run: {change.path} {state}:\n")
        sys.stdout.write(change.after)
    if not plan.changes:
        sys.stderr.write(f"{_nothing(runtime, verb)}\n")


def _write(change: FileChange, place: Place, *, backup: bool) -> Path | None:
    """Write ``change`` (its undo record first); the record's path where one was written."""
    from ctk.host import engine_files as host_engines
    from ctk.host import files
    from ctk.runtime_config.changes import dump_record

    path = place.host(change.path)
    root = place.root
    # The record first: if the state directory cannot be written, the config stays untouched;
    # a record of changes that did not happen is harmless (undo acts only on values ctk wrote).
    record_for = str(place.host(change.record_for)) if change.record_for else None
    record_file = host_engines.record_path(path, record_for, root)
    if change.record is not None:
        record = dump_record(change.record)
        made = files.missing_dirs(record_file.parent)
        if made:  # a scratch --root's var/lib/ctk/...: gone again after unconfigure
            host_engines.remember_made_dirs(made, root)
        files.write_atomic(
            record_file, record, mode=0o600, make_parents=True, follow_symlinks=False
        )
    if change.changed:
        # ctk's own drop-in is written afresh from the other files: nothing of the user's to keep.
        if change.taken_over and change.before is not None:
            kept = host_engines.takeover_path(path, root)
            files.write_atomic(
                kept, change.before, mode=0o600, make_parents=True, follow_symlinks=False
            )
            sys.stdout.write(
                f"backed up {path} (not written by ctk) to {kept}; unconfigure puts it back\n"
            )
        elif (backup or change.keep_before) and not change.own and change.before is not None:
            kept = host_engines.backup_path(path, root)
            files.write_atomic(
                kept, change.before, mode=0o600, make_parents=True, follow_symlinks=False
            )
            sys.stdout.write(f"backed up {path} to {kept}\n")
        if change.after is None:
            files.remove(path)
        else:
            made = files.missing_dirs(path.parent)
            if made:  # listed first, so that unconfigure removes them even after a crash
                host_engines.remember_made_dirs(made, root)
            files.write_atomic(path, change.after, make_parents=True)
    if change.restores:
        files.remove(host_engines.takeover_path(path, root))
    if change.record is not None or change.drop_record:
        files.remove(host_engines.legacy_record_path(path))
    if change.drop_record:
        files.remove(record_file)
    return record_file if change.record is not None else None


def _nothing(runtime: Runtime, verb: str) -> str:
    if verb == "configure":
        return f"{runtime} is already configured; nothing changed"
    return f"{runtime} has nothing of ctk's to remove; nothing changed"


@contextlib.contextmanager
def _lock(runtime: Runtime, config: str | None, place: Place) -> Iterator[None]:
    from ctk.host import files

    with files.locked(place.host(place.config_name(runtime, config))):
        yield None


def _gather(
    runtime: Runtime, config: str | None, drop_in: str | None, place: Place, *, sweep: bool
) -> Inputs:
    from ctk.host import engine_files as host_engines
    from ctk.host import files

    gathered = host_engines.gather(runtime, config=config, drop_in=drop_in, place=place)
    for warning in gathered.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    inputs = gathered.inputs
    if sweep and inputs.drop_in:  # temp files a killed run left where the engine reads them
        files.sweep_temp(place.host(inputs.drop_in).parent)
    return inputs


@app.command()
def configure(
    *,
    runtime: RuntimeOption = Runtime.DOCKER,
    config: Config = None,
    drop_in_config: DropIn = None,
    nvidia_runtime_name: Name = DEFAULT_RUNTIME_NAME,
    root: Root = "/",
    nvidia_runtime_path: RuntimePath = DEFAULT_RUNTIME_PATH,
    set_as_default: SetAsDefault = False,
    cdi_enabled: EnableCdi = False,
    dry_run: DryRun = False,
    diff: Diff = False,
    backup: Backup = False,
    force: Force = False,
    config_source: ConfigSource = None,
    config_mode: ConfigMode = None,
    executable_path: ExecutablePath = None,
    oci_hook_path: OciHookPath = None,
    runtime_hook_path: RuntimeHookPath = None,
) -> None:
    """Add the nvidia runtime to a container engine's config."""
    _check_name(runtime, nvidia_runtime_name)
    if _compat(config_source, config_mode):
        _oci_hook(oci_hook_path, runtime_hook_path or DEFAULT_HOOK_PATH, dry_run=dry_run or diff)
        return
    from_command = config_source is not None and "command" in config_source
    for flag, value, use in (
        (
            "--executable-path",
            executable_path,
            "with --config-source=command, which ctk reads as file"
            if from_command
            else "with --config-source=command",
        ),
        ("--oci-hook-path", oci_hook_path, "in the oci-hook config mode"),
        ("--nvidia-runtime-hook-path", runtime_hook_path, "in the oci-hook config mode"),
    ):
        if value is not None:
            sys.stderr.write(f"warning: {flag} is ignored: nvidia-ctk uses it only {use}\n")
    if "/" not in nvidia_runtime_path and nvidia_runtime_path not in ("", ".", ".."):
        # nvidia-ctk's default is the bare name: dockerd looks it up in PATH itself; for
        # containerd and CRI-O (which takes runtime_path as written) nvidia-ctk writes /usr/bin's.
        if runtime is not Runtime.DOCKER:
            resolved = f"/usr/bin/{nvidia_runtime_path}"
            sys.stderr.write(
                f"note: --nvidia-runtime-path {nvidia_runtime_path} is a bare name: writing "
                f"{resolved} for {runtime}, as nvidia-ctk does\n"
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
    from ctk.host.engine_files import Place
    from ctk.host.root import existing_root

    place = Place(existing_root("--root", root).root)
    with _lock(runtime, config, place):
        inputs = _gather(runtime, config, drop_in_config, place, sweep=not (dry_run or diff))
        from ctk.runtime_config.configure import configure as plan_configure

        plan = plan_configure(runtime, inputs, request, force=force)
        _warn_missing_binary(runtime, request, place)
        _apply(runtime, plan, place, dry_run=dry_run, diff=diff, backup=backup, verb="configure")


@app.command()
def unconfigure(
    *,
    runtime: RuntimeOption = Runtime.DOCKER,
    config: Config = None,
    drop_in_config: DropIn = None,
    nvidia_runtime_name: Name = DEFAULT_RUNTIME_NAME,
    root: Root = "/",
    dry_run: DryRun = False,
    diff: Diff = False,
    backup: Backup = False,
    force: Force = False,
) -> None:
    """Remove what `ctk runtime configure` added."""
    _check_name(runtime, nvidia_runtime_name)
    from ctk.host.engine_files import Place
    from ctk.host.root import existing_root

    place = Place(existing_root("--root", root).root)
    with _lock(runtime, config, place):
        inputs = _gather(runtime, config, drop_in_config, place, sweep=not (dry_run or diff))
        from ctk.runtime_config.configure import unconfigure as plan_unconfigure

        plan = plan_unconfigure(runtime, inputs, nvidia_runtime_name, force=force)
        _apply(runtime, plan, place, dry_run=dry_run, diff=diff, backup=backup, verb="unconfigure")
