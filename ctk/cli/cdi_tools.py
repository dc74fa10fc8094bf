"""`ctk cdi transform root`, `ctk cdi inject` and `ctk cdi diff`: specs and OCI specs in, out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer import Argument, Option

from ctk.cdi.transform import RelativeTo
from ctk.cli import render
from ctk.cli.options import new_app
from ctk.errors import CtkError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctk.cdi.inject import HostDevice
    from ctk.cdi.options import SpecFormat

transform_app = new_app(no_args_is_help=True, help="Transform a CDI spec (nvidia-ctk's).")


def _read_input(path: str, what: str) -> tuple[bytes, str]:
    """The bytes of ``path`` ('-' is standard input) and the name to show for it."""
    from ctk.host import files

    if path == "-":
        return files.read_stream(sys.stdin.buffer, "<stdin>"), "<stdin>"
    return files.read_bytes(Path(path)), path


def _spec(path: str) -> tuple[dict[str, object], str]:
    """A spec file's data ('-' is standard input); `CtkError` unless it is a valid spec."""
    from ctk.cdi.validate import validate_bytes

    data, source = _read_input(path, "spec")
    report = validate_bytes(data, source)
    if not report.valid or report.spec is None:
        first = next((p for p in report.problems if p.is_error), None)
        reason = f": {first.message} [{first.rule}]" if first else ""
        raise CtkError(
            f"{source}: not a valid CDI spec{reason}", hint=f"see ctk cdi validate {path}"
        )
    return dict(report.spec), source


def _format_of(path: str | None, given: str | None) -> SpecFormat:
    from ctk.cdi.options import SpecFormat
    from ctk.errors import UsageError

    if given:
        try:
            return SpecFormat(given.lower())
        except ValueError:
            choices = ", ".join(f.value for f in SpecFormat)
            raise UsageError(
                f"--format {given}: not a spec format", hint=f"use {choices}"
            ) from None
    if path and path.endswith(".json"):
        return SpecFormat.JSON
    return SpecFormat.YAML


@transform_app.command("root")
def transform_root(
    *,
    from_root: Annotated[str, Option("--from", help="The root to move paths from.")] = "/",
    to_root: Annotated[str, Option("--to", help="The root to move paths to.")] = "/",
    relative_to: Annotated[
        RelativeTo,
        Option(
            "--relative-to",
            help="Move host paths (hostPath, hook programs) or container paths.",
        ),
    ] = RelativeTo.HOST,
    input_path: Annotated[
        str, Option("--input", help="The spec to read ('-': standard input).")
    ] = "-",
    output: Annotated[
        str | None, Option("--output", help="Write here [default: standard output].")
    ] = None,
    spec_format: Annotated[
        str | None, Option("--format", help="yaml or json [default: from the file name].")
    ] = None,
) -> None:
    """Move a spec's host or container paths from one root to another (a driver container)."""
    from ctk.cdi.serialize import render_data
    from ctk.cdi.transform import transform_root as transform
    from ctk.errors import UsageError
    from ctk.host import files

    for option, root in (("--from", from_root), ("--to", to_root)):
        if not root.startswith("/"):  # a relative root makes relative host paths: no spec
            raise UsageError(
                f"{option} {root!r}: a root must be an absolute path",
                hint="a spec's paths are absolute; pass the root as one, e.g. /run/nvidia/driver",
            )
    fmt = _format_of(output or (input_path if input_path != "-" else None), spec_format)
    if output:
        files.require_parent(Path(output), "--output")
    spec, _ = _spec(input_path)
    moved = transform(spec, from_root=from_root, to_root=to_root, relative_to=relative_to)
    text = render_data(moved, fmt)
    if not output:
        sys.stdout.write(text)
        return
    files.write_atomic(Path(output), text, mode=0o644)


def _host_devices(paths: list[str]) -> Mapping[str, HostDevice]:
    """The type and numbers of each host path that is a device node (gathered for inject)."""
    import os
    import stat

    from ctk.cdi.inject import HostDevice

    found = {}
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        kinds = {stat.S_ISCHR: "c", stat.S_ISBLK: "b", stat.S_ISFIFO: "p"}
        kind = next((k for test, k in kinds.items() if test(info.st_mode)), None)
        if kind is not None:
            rdev = info.st_rdev
            found[path] = HostDevice(kind, os.major(rdev), os.minor(rdev))
    return found


def inject(
    *,
    devices: Annotated[
        list[str],
        Option(
            "--device",
            "-d",
            help="A CDI device, vendor/class=name (repeatable).",
            show_default=False,
        ),
    ],
    spec_dirs: Annotated[
        list[Path] | None,
        Option(
            "--spec-dir",
            help="A CDI spec directory, lowest priority first [default: /etc/cdi, /var/run/cdi].",
            show_default=False,
            readable=False,
        ),
    ] = None,
    input_path: Annotated[
        str, Option("--input", help="The OCI runtime spec ('-': standard input).")
    ] = "-",
    replace_existing_env: Annotated[
        bool,
        Option(
            "--replace-existing-env",
            help="A variable the spec sets replaces the config's own entry (Podman 4.3 keeps "
            "both; other runtimes replace it).",
        ),
    ] = False,
) -> None:
    """Print an OCI runtime spec (config.json) with CDI devices applied, as a CDI runtime does.

    Shows what a container would get (env, device nodes and their cgroup rules, mounts, hooks)
    without starting one: `ctk cdi inject --device nvidia.com/gpu=0 < config.json`.
    """
    from ctk.cdi.inject import MalformedOciSpec, apply_edits, merge_edits, needed_host_paths
    from ctk.host.cdi_specs import DEFAULT_SPEC_DIRS, load_spec_dirs

    data, source = _read_input(input_path, "OCI spec")
    try:
        oci = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CtkError(f"{source}: not a JSON OCI runtime spec: {exc}") from exc
    if not isinstance(oci, dict):
        raise CtkError(f"{source}: an OCI runtime spec is a JSON object")
    # a relative --spec-dir is the working directory's, as for `cdi list` (never under /)
    registry = load_spec_dirs([d.absolute() for d in spec_dirs or []] or list(DEFAULT_SPEC_DIRS))
    unresolved = [d for d in devices if registry.device(d) is None]
    if unresolved:
        raise CtkError(
            f"unresolvable CDI devices {', '.join(unresolved)}: "
            + "; ".join(registry.unresolved_reason(d) for d in unresolved),
            hint="ctk cdi list shows the devices of the spec directories",
        )
    reports = {f.path: f.report for f in registry.files}
    blocks: list[Mapping[str, object]] = []
    seen: set[str] = set()
    for name in devices:
        device = registry.device(name)
        assert device is not None
        spec = reports[device.source].spec or {}
        if device.source not in seen:
            seen.add(device.source)
            blocks.append(_edits(spec))
        entry = next(d for d in _items(spec.get("devices")) if d.get("name") == device.name.name)
        blocks.append(_edits(entry))
    edits = merge_edits(blocks)
    hosts = _host_devices(needed_host_paths(edits))
    try:
        result = apply_edits(oci, edits, hosts, replace_existing_env=replace_existing_env)
    except MalformedOciSpec as exc:
        raise CtkError(f"{source}: {exc.message}", hint=exc.hint) from exc
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _items(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _edits(holder: Mapping[str, object]) -> Mapping[str, object]:
    edits = holder.get("containerEdits")
    return edits if isinstance(edits, dict) else {}


def diff(
    old: Annotated[str, Argument(help="The old spec file ('-': standard input).")],
    new: Annotated[str, Argument(help="The new spec file.")],
    *,
    as_json: Annotated[bool, Option("--json", help="Print the differences as JSON.")] = False,
) -> None:
    """Show what differs between two CDI specs; exit 0 when they are the same, 1 when not.

    Devices added, removed and changed; per device and for the common edits the env, device
    nodes, hooks and mounts added, removed or changed; kind, cdiVersion and driver version.
    """
    with render.json_errors(as_json):
        from ctk.cdi.diff import diff_json, diff_lines, diff_specs
        from ctk.errors import UsageError

        if old == new == "-":  # standard input can be read once
            raise UsageError(
                "cdi diff - -: standard input cannot be both specs", hint="name a file for one"
            )
        found = diff_specs(_spec(old)[0], _spec(new)[0])
        if as_json:
            json.dump(diff_json(found), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            for line in diff_lines(found) or ["same"]:
                sys.stdout.write(line + "\n")
        if not found.same:
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add transform, inject and diff to the cdi group."""
    app.add_typer(transform_app, name="transform")
    app.command("inject")(inject)
    app.command("diff")(diff)


app = new_app()
register(app)
