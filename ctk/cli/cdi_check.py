"""`ctk cdi validate` and `ctk cdi list`: judge CDI specs, list the devices runtimes resolve."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, TextIO

import typer
from typer import Argument, Option

from ctk.cli import render
from ctk.cli.options import Json, SpecDirOption, new_app
from ctk.errors import UsageError

if TYPE_CHECKING:
    from ctk.cdi.problems import Problem
    from ctk.cdi.registry import Registry
    from ctk.cdi.validate import SpecReport
    from ctk.host.cdi_specs import SpecDir, SpecDirs

FILES_HELP = "Spec files to check ('-' reads standard input). Default: every spec in --spec-dir."
ROOT_HELP = (
    "Read the spec directories under DIR as if it were / (e.g. a node's root file system "
    "mounted elsewhere); links never lead out of it. Paths are shown as seen inside DIR."
)

Root = Annotated[
    Path | None,
    Option("--root", metavar="DIR", help=ROOT_HELP, show_default=False, readable=False),
]


def _spec_dirs(given: Sequence[Path] | None, root: Path | None) -> list[PurePosixPath]:
    from ctk.host.cdi_specs import DEFAULT_SPEC_DIRS
    from ctk.host.root import existing_root

    if root is not None:
        existing_root("--root", root)
    if not given:  # nvidia-ctk's variable, as its cdi list reads it (comma-separated)
        from ctk.cli.compat import env_list

        given = [Path(d) for d in env_list("NVIDIA_CTK_CDI_SPEC_DIRS")]
    if not given:
        return list(DEFAULT_SPEC_DIRS)
    if root is None:
        return [PurePosixPath(Path(d).absolute()) for d in given]
    for directory in given:
        if not directory.is_absolute():
            raise UsageError(
                f"--spec-dir {directory}: give an absolute path as seen inside --root",
                hint="e.g. --root /mnt/node --spec-dir /etc/cdi",
            )
    return [PurePosixPath(d) for d in given]


def _named(given: Sequence[Path] | None) -> bool:
    """Whether the spec directories were named (flag or variable), so a missing one is news."""
    from ctk.cli.compat import env_list

    return bool(given) or bool(env_list("NVIDIA_CTK_CDI_SPEC_DIRS"))


def _read_dirs(given: Sequence[Path] | None, root: Path | None) -> SpecDirs:
    from ctk.host import cdi_specs

    return cdi_specs.read_spec_dirs(_spec_dirs(given, root), root=root)


def _dir_problems(dirs: Sequence[SpecDir], *, given: bool) -> list[tuple[str, Problem]]:
    """Problems of the spec directories worth showing: a missing default directory is normal."""
    return [
        (d.path, d.problem) for d in dirs if d.problem is not None and (given or d.problem.is_error)
    ]


def validate(
    files: Annotated[
        list[Path] | None, Argument(help=FILES_HELP, show_default=False, readable=False)
    ] = None,
    spec_dir: SpecDirOption = None,
    root: Root = None,
    as_json: Json = False,
) -> int:
    """Check CDI spec files against the CDI specification; exit 1 when any is invalid.

    FILES are spec files ('-' reads standard input); without them, every spec in the spec
    directories is checked, including conflicts between them. A spec directory that does not
    exist is skipped with a warning when named with --spec-dir, silently otherwise.
    """
    with render.json_errors(as_json):
        if files and (spec_dir or root is not None):
            option = "--spec-dir" if spec_dir else "--root"
            raise UsageError(f"give spec files or {option}, not both")
        dirs: Sequence[SpecDir] = ()
        dir_problems: list[tuple[str, Problem]] = []
        with _rare_collections():
            if files:
                entries = [SpecEntry(_validate_one(path), None) for path in files]
            else:
                found = _read_dirs(spec_dir, root)
                dirs = found.dirs
                dir_problems = _dir_problems(dirs, given=_named(spec_dir))
                entries = [
                    SpecEntry(f.report, f.priority, f.conflicts) for f in found.registry.files
                ]
        valid = all(entry.valid for entry in entries) and not any(
            problem.is_error for _, problem in dir_problems
        )
        if as_json:
            render.dump_json(_validate_json(entries, dirs, valid=valid), sys.stdout)
        else:
            _validate_text(entries, dirs, dir_problems, sys.stdout)
        return 0 if valid else 1


@contextlib.contextmanager
def _rare_collections() -> Iterator[None]:
    """Run the cyclic garbage collector less often while specs are read and judged.

    Composing a spec makes thousands of YAML nodes that live until the spec is judged and are
    then freed by reference counting; at the default threshold (700 new objects) the collector
    walks them over and over, about a tenth of the time of validating many specs.
    """
    import gc

    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 20_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def _validate_one(path: Path) -> SpecReport:
    from ctk.cdi.validate import validate_bytes
    from ctk.host.spec_files import validate_file

    if str(path) == "-":
        from ctk.host import files

        data = files.read_stream(sys.stdin.buffer, "<stdin>")
        return validate_bytes(data, "<stdin>").without_spec()
    return validate_file(path).without_spec()


def list_devices(spec_dir: SpecDirOption = None, root: Root = None, as_json: Json = False) -> int:
    """List the CDI devices that container runtimes resolve from the spec directories.

    Problems go to standard error; the valid devices are listed even when other specs are
    invalid or a spec directory is missing (exit 1 for invalid specs and unreadable directories).
    """
    with render.json_errors(as_json):
        found = _read_dirs(spec_dir, root)
        dir_problems = _dir_problems(found.dirs, given=_named(spec_dir))
        valid = found.registry.valid and not any(p.is_error for _, p in dir_problems)
        if as_json:
            render.dump_json(
                _list_json(found.registry, found.dirs, dir_problems, valid=valid), sys.stdout
            )
        else:
            _list_text(found.registry, found.dirs, dir_problems, sys.stdout, sys.stderr)
        return 0 if valid else 1


@dataclass(frozen=True, slots=True)
class SpecEntry:
    """One spec to show: its report, its priority (spec-dir mode) and its conflicts."""

    report: SpecReport
    priority: int | None
    conflicts: tuple[Problem, ...] = ()

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.report.problems + self.conflicts

    @property
    def valid(self) -> bool:
        return self.report.valid and not self.conflicts


def _where(source: str, problem: Problem) -> str:
    if problem.line is None:
        return source
    return f"{source}:{problem.line}:{problem.column}"


def _problem_text(source: str, problem: Problem) -> tuple[render.Styled, ...]:
    from ctk.cdi.problems import format_path

    style = "bold red" if problem.is_error else "yellow"
    inside = f"{format_path(problem.path)}: " if problem.path else ""
    return (
        f"{_where(source, problem)}: ",
        (problem.severity.value, style),
        f": {inside}{problem.message} [{problem.rule}]",
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _verdict_text(entry: SpecEntry) -> tuple[render.Styled, ...]:
    report = entry.report
    errors = sum(p.is_error for p in entry.problems)
    warnings = len(entry.problems) - errors
    if entry.valid:
        details = [
            f"cdiVersion {report.declared_version}",
            f"needs {report.minimum_version}",
            _plural(len(report.device_names), "device"),
        ]
        if warnings:
            details.append(_plural(warnings, "warning"))
        return f"{report.source}: ", ("valid", "bold green"), f" ({', '.join(details)})"
    counts = [_plural(errors, "error")] + ([_plural(warnings, "warning")] if warnings else [])
    return f"{report.source}: ", ("invalid", "bold red"), f" ({', '.join(counts)})"


def _validate_text(
    entries: Sequence[SpecEntry],
    dirs: Sequence[SpecDir],
    dir_problems: Sequence[tuple[str, Problem]],
    out: TextIO,
) -> None:
    printer = render.Printer(out)
    for path, problem in dir_problems:
        printer.line(*_problem_text(path, problem))
    if not entries:
        where = ", ".join(d.path for d in dirs)
        printer.line(f"no CDI spec files (*.json, *.yaml) in {where}")
        return
    for entry in entries:
        for problem in entry.problems:
            printer.line(*_problem_text(entry.report.source, problem))
        printer.line(*_verdict_text(entry))
    if len(entries) > 1:
        invalid = sum(not e.valid for e in entries)
        printer.line(
            f"{_plural(len(entries), 'spec')}: {len(entries) - invalid} valid, {invalid} invalid"
        )


def _problem_json(problem: Problem) -> dict[str, object]:
    from ctk.cdi.problems import format_path

    return {
        "severity": problem.severity.value,
        "rule": problem.rule,
        "message": problem.message,
        "path": format_path(problem.path) if problem.path else None,
        "line": problem.line,
        "column": problem.column,
    }


def _qualified(report: SpecReport) -> list[str]:
    if not report.kind:
        return []
    return [f"{report.kind}={name}" for name in report.device_names]


def _validate_json(
    entries: Sequence[SpecEntry], dirs: Sequence[SpecDir], *, valid: bool
) -> dict[str, object]:
    specs = []
    for entry in entries:
        report = entry.report
        item: dict[str, object] = {
            "path": report.source,
            "valid": entry.valid,
            "cdiVersion": report.declared_version,
            "minimumVersion": report.minimum_version,
            "kind": report.kind,
            "devices": _qualified(report),
            "problems": [_problem_json(p) for p in entry.problems],
        }
        if entry.priority is not None:
            item["priority"] = entry.priority
        specs.append(item)
    result: dict[str, object] = {"valid": valid, "specs": specs}
    if dirs:
        result["specDirs"] = [_dir_json(d) for d in dirs]
    return result


def _dir_json(directory: SpecDir) -> dict[str, object]:
    problem = directory.problem
    return {
        "path": directory.path,
        "priority": directory.priority,
        "exists": directory.exists,
        "problem": None if problem is None else _problem_json(problem),
    }


def _list_text(
    registry: Registry,
    dirs: Sequence[SpecDir],
    dir_problems: Sequence[tuple[str, Problem]],
    out: TextIO,
    err: TextIO,
) -> None:
    for device in registry.devices:
        out.write(f"{device.name}\n")
    printer = render.Printer(err)
    for path, problem in dir_problems:
        printer.line(*_problem_text(path, problem))
    if not registry.files:  # as `cdi validate` says: an empty list is not silence
        printer.line(f"no CDI spec files (*.json, *.yaml) in {', '.join(d.path for d in dirs)}")
    for spec in registry.files:
        for problem in spec.problems:
            printer.line(*_problem_text(spec.path, problem))
    skipped = sum(not spec.report.valid for spec in registry.files)
    if skipped:
        printer.line(f"{_plural(skipped, 'invalid spec')} skipped")


def _list_json(
    registry: Registry,
    dirs: Sequence[SpecDir],
    dir_problems: Sequence[tuple[str, Problem]],
    *,
    valid: bool,
) -> dict[str, object]:
    devices = [
        {
            "name": str(device.name),
            "kind": device.name.kind,
            "device": device.name.name,
            "source": device.source,
            "priority": device.priority,
        }
        for device in registry.devices
    ]
    problems = [
        (problem.is_error, {"file": path, **_problem_json(problem)})
        for path, problem in dir_problems
    ] + [
        (problem.is_error, {"file": spec.path, **_problem_json(problem)})
        for spec in registry.files
        for problem in spec.problems
    ]
    specs = [
        {"path": spec.path, "priority": spec.priority, "valid": spec.valid}
        for spec in registry.files
    ]
    return {
        "valid": valid,
        "devices": devices,
        "errors": [item for is_error, item in problems if is_error],
        "warnings": [item for is_error, item in problems if not is_error],
        "specs": specs,
        "specDirs": [_dir_json(d) for d in dirs],
    }


def register(app: typer.Typer) -> None:
    """Add validate and list to the cdi group."""
    app.command("validate")(validate)
    app.command("list")(list_devices)


app = new_app()
register(app)
