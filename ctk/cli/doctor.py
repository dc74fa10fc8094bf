"""`ctk doctor`: diagnose a GPU container node, name the root cause, give the exact fix."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer import Option

from ctk import __version__
from ctk.cli import render
from ctk.cli.options import new_app
from ctk.doctor.groups import Group
from ctk.errors import CtkError, UsageError

if TYPE_CHECKING:  # the facts' 50 classes load when the doctor runs, not for --help
    from ctk.doctor.facts import CudaNeed, NodeFacts
    from ctk.doctor.model import Finding

SCHEMA_ID = "ctk.doctor/v1"

Root = Annotated[
    str, Option("--root", help="Diagnose the host filesystem mounted here (e.g. /host).")
]
ENV_HINT = "KEY=VALUE lines, or `docker inspect IMAGE` output"
Json = Annotated[
    bool, Option("--json", help="Print one versioned JSON document (see docs/doctor.md).")
]
ListChecks = Annotated[bool, Option("--list", help="List every check with a one-line description.")]
Checks = Annotated[list[str], Option("--check", help="Show only this check (repeatable).")]
Groups = Annotated[list[Group], Option("--group", help="Show only this layer (repeatable).")]
Verbose = Annotated[
    bool,
    Option("--verbose", "-v", help="Details for every check, not only problems."),
]
Strict = Annotated[bool, Option("--strict", help="Also fail (exit 1) on warnings and unknowns.")]
ApplyFixes = Annotated[
    bool, Option("--fix", help="Apply the fixes ctk implements, after confirmation.")
]
Yes = Annotated[bool, Option("--yes", "-y", help="Do not ask before applying --fix.")]
CudaVersion = Annotated[
    str | None,
    Option("--cuda-version", help="Check the driver against this CUDA version."),
]
ImageEnv = Annotated[
    Path | None,
    Option(
        "--image-env",
        help="An image's environment to check CUDA against: KEY=VALUE lines or docker "
        "inspect's JSON list of Config.Env.",
    ),
]
Image = Annotated[
    str | None,
    Option(
        "--image",
        help="Check CUDA against this image's environment: oci:DIR[:TAG], "
        "oci-archive:FILE[:TAG], or an image docker, podman or containerd (k8s.io) has locally.",
    ),
]
NvmlTimeout = Annotated[float, Option("--nvml-timeout", help="Seconds to wait for NVML.", min=0.1)]
Npd = Annotated[
    bool,
    Option(
        "--npd",
        help="node-problem-detector custom plugin: exit 0 ok, 1 problem, 2 unknown; one line of "
        "at most 80 characters naming the root cause.",
    ),
]


def doctor(
    *,
    root_arg: Root = "/",
    as_json: Json = False,
    list_checks: ListChecks = False,
    check: Checks = [],  # noqa: B006 (typer's default for a repeatable option; never mutated)
    group: Groups = [],  # noqa: B006
    verbose: Verbose = False,
    strict: Strict = False,
    fix: ApplyFixes = False,
    yes: Yes = False,
    cuda_version: CudaVersion = None,
    image_env: ImageEnv = None,
    image: Image = None,
    nvml_timeout: NvmlTimeout = 5.0,
    npd: Npd = False,
) -> None:
    """Find what is broken on a GPU container node and how to fix it."""
    from ctk.doctor.model import REGISTRY
    from ctk.doctor.run import select

    if list_checks:
        _print_list(as_json=as_json)
        raise typer.Exit(0)
    with render.json_errors(as_json):
        unknown_ids = [c for c in check if c not in REGISTRY]
        if unknown_ids:
            raise UsageError(
                f"unknown check id: {', '.join(unknown_ids)}", hint="`ctk doctor --list` lists them"
            )
        if fix and as_json:
            raise UsageError("--fix and --json cannot be combined", hint="run --fix without --json")
        root = _root(root_arg)
        need: CudaNeed | None
        if image is not None:
            from ctk.cli.doctor_image import image_need

            need = image_need(image, cuda_version=cuda_version, image_env=image_env)
        else:
            need = _cuda_need(cuda_version, image_env)
        shown = select(ids=check, groups=[g.value for g in group])
        facts, findings, timings = _diagnose(root, need, shown, nvml_timeout)
        if npd:
            from ctk.agent.outlets import npd_report

            code, line = npd_report(findings)
            sys.stdout.write(line + "\n")
            raise typer.Exit(code)
        from ctk.doctor.run import summarize

        summary = summarize(findings, strict=strict)
        if as_json:
            render.dump_json(to_json(facts, findings, timings, strict=strict), sys.stdout)
            raise typer.Exit(summary.exit_code)
        from ctk.cli import doctor_render

        doctor_render.report(facts, findings, verbose=verbose, strict=strict)
        if fix:
            code = _fix(root, need, shown, findings, yes=yes, nvml_timeout=nvml_timeout)
            raise typer.Exit(code)
        raise typer.Exit(summary.exit_code)


def _diagnose(
    root: Path, need: CudaNeed | None, shown: Sequence[str], nvml_timeout: float
) -> tuple[NodeFacts, tuple[Finding, ...], tuple[Any, ...]]:
    from ctk.doctor.run import diagnose
    from ctk.host.facts import gather

    facts, timings = gather(root, cuda_need=need, nvml_timeout=nvml_timeout)
    return facts, diagnose(facts, show=shown), timings


def _root(text: str) -> Path:
    """The --root directory (the error every root option gives when it is not one)."""
    from ctk.host.root import existing_root

    return existing_root("--root", text).root


def _cuda_need(cuda_version: str | None, image_env: Path | None) -> CudaNeed | None:
    import re

    from ctk.doctor.cuda import need_from_env
    from ctk.doctor.facts import CudaNeed

    if cuda_version is not None and image_env is not None:
        raise UsageError("--cuda-version and --image-env cannot be combined")
    if cuda_version is not None:
        if not re.fullmatch(r"\d+(\.\d+){0,2}", cuda_version):
            raise UsageError(
                f"--cuda-version {cuda_version!r} is not a version", hint="e.g. --cuda-version 12.4"
            )
        return CudaNeed(source="--cuda-version", requirements=(f"cuda>={cuda_version}",))
    if image_env is None:
        return None
    from ctk.host import files

    if not image_env.exists():
        raise UsageError(f"--image-env {image_env}: no such file", hint=ENV_HINT)
    if image_env.is_dir():
        raise UsageError(f"--image-env {image_env}: is a directory", hint=ENV_HINT)
    if not image_env.is_file():  # a FIFO would block, a device never ends
        raise UsageError(f"--image-env {image_env}: not a regular file", hint=ENV_HINT)
    text = files.read_text(image_env) or ""
    try:
        env = parse_env_file(text)
    except CtkError as exc:
        raise CtkError(f"{image_env}: {exc.message}", hint=ENV_HINT) from exc
    need = need_from_env(env, str(image_env))
    if need is None:
        raise CtkError(
            f"{image_env}: no NVIDIA_REQUIRE_* or CUDA_VERSION line",
            hint="e.g. `docker image inspect IMAGE --format '{{json .Config.Env}}' > env`",
        )
    return need


def _json_env(text: str) -> list[str]:
    """The KEY=VALUE strings of `docker inspect IMAGE` (a list of objects with Config.Env), one
    such object, or the bare `.Config.Env` list."""
    import json

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CtkError(f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise CtkError("not valid JSON: nested too deeply to read") from exc
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        data = data[0]  # `docker inspect` prints a list, one object per image
    if isinstance(data, dict):
        config = data.get("Config") or data.get("config") or {}
        data = config.get("Env") if isinstance(config, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
        raise CtkError("not `docker inspect` output or a JSON list of KEY=VALUE strings")
    return data


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines (`export`, quotes, comments), or `docker inspect`'s JSON (`_json_env`)."""
    env = {}
    lines = text.splitlines()
    if text.lstrip().startswith(("[", "{")):
        lines = _json_env(text)
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if sep and key:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            env[key.strip()] = value
    return env


def _print_list(*, as_json: bool) -> None:
    import ctk.doctor.run  # noqa: F401  (fills the registry)
    from ctk.doctor.model import REGISTRY, checks_in_order

    checks = checks_in_order(REGISTRY)
    if as_json:
        listing = [
            {
                "id": c.id,
                "group": c.group.value,
                "severity": c.severity.value,
                "title": c.title,
                "remedy": c.remedy,
                "sources": list(c.sources),
                "depends_on": list(c.depends_on),
                "where": sorted(w.value for w in c.where),
            }
            for c in checks
        ]
        render.dump_json(listing, sys.stdout)
        return
    width = max(len(c.id) for c in checks)
    for item in checks:
        sys.stdout.write(f"{item.id:<{width}}  {item.severity.value:<7}  {item.title}\n")


def to_json(
    facts: NodeFacts, findings: Sequence[Finding], timings: Sequence[Any], *, strict: bool = False
) -> dict[str, Any]:
    """The `ctk.doctor/v1` document (docs/doctor.md, ctk/schemas/doctor-v1.json)."""
    from ctk.doctor.run import summarize

    summary = summarize(findings, strict=strict)
    return {
        "schema": SCHEMA_ID,
        "ctk_version": __version__,
        "context": {
            "where": facts.where.value,
            "root": facts.root,
            "is_root": facts.is_root,
            "cuda_requirement": facts.cuda_need.source if facts.cuda_need else None,
            "host_mount": facts.host_mount,
        },
        "checks": [_finding_json(f) for f in findings],
        "summary": {
            **summary.counts,
            "root_cause": summary.root_cause,
            "needs_root": summary.needs_root,
            "exit_code": summary.exit_code,
        },
        "timings": [
            {"step": t.step, "seconds": round(t.seconds, 4), "timed_out": t.timed_out}
            for t in timings
        ],
    }


def _finding_json(finding: Finding) -> dict[str, Any]:
    from ctk.doctor.fixes import APPLIABLE

    return {
        "id": finding.check,
        "group": finding.group.value,
        "status": finding.status.value,
        "severity": finding.severity.value,
        "title": finding.title,
        "summary": finding.summary,
        "evidence": [{"source": e.source, "value": e.value} for e in finding.evidence],
        "remedy": (
            {
                "text": finding.remedy,
                "commands": list(finding.commands),
                "notes": list(finding.notes),
                "fixable": any(isinstance(fix, APPLIABLE) for fix in finding.fixes),
            }
            if finding.remedy is not None
            else None
        ),
        "sources": list(finding.sources),
        "blocked_by": list(finding.blocked_by),
    }


# --- --fix --------------------------------------------------------------------------------


def _fix(
    root: Path,
    need: CudaNeed | None,
    shown: Sequence[str],
    findings: Sequence[Finding],
    *,
    yes: bool,
    nvml_timeout: float,
) -> int:
    from ctk.cli import doctor_fix
    from ctk.doctor.fixes import describe
    from ctk.doctor.run import summarize

    plan = doctor_fix.planned(findings)
    out = sys.stdout
    if not plan:
        out.write("\nNothing that ctk can fix by itself; apply the commands shown above.\n")
        return summarize(findings).exit_code
    todo = []
    out.write("\nctk can fix these findings itself:\n")
    for fix, ids in plan:
        line = doctor_fix.shown(fix, root)
        out.write(f"  {describe(fix)} ({', '.join(ids)})\n")
        out.write(f"    {line or doctor_fix.not_applied(fix)}\n")
        if line is not None:
            todo.append((fix, line))
    if not todo:
        return summarize(findings).exit_code
    if not yes and not typer.confirm("Apply these fixes?", default=False):
        out.write("Nothing changed.\n")
        return summarize(findings).exit_code
    for fix, line in todo:
        out.write(f"$ {line}\n")
        out.flush()
        try:
            doctor_fix.apply(fix, root)
        except CtkError as exc:
            out.write(f"fix failed: {exc.message}; stopping\n")
            return 1
    affected = sorted({i for _, ids in plan for i in ids})
    _, after, _ = _diagnose(root, need, shown, nvml_timeout)
    return _after_fixes(findings, after, affected)


def _after_fixes(
    findings: Sequence[Finding], after: Sequence[Finding], affected: Sequence[str]
) -> int:
    """Say what the fixes changed, and what the checks they unblocked find now; the exit code."""
    from ctk.cli import doctor_fix
    from ctk.doctor.run import summarize

    out = sys.stdout
    before = {f.check: f for f in findings}
    out.write("\nAfter the fixes:\n")
    for finding in after:
        if finding.check in affected:
            was = before[finding.check].status.value
            out.write(f"  {finding.check}: {was} -> {finding.status.value}  {finding.summary}\n")
    # Checks the fixed ones had blocked (depends_on) run now and may find more: say so, or the
    # exit code would be unexplained.
    surfaced = [
        f
        for f in after
        if f.check not in affected and f.is_problem and not before[f.check].is_problem
    ]
    if surfaced:
        out.write("Now found (the fixed checks had blocked them):\n")
        for finding in surfaced:
            was = before[finding.check].status.value
            out.write(f"  {finding.check}: {was} -> {finding.status.value}  {finding.summary}\n")
        if doctor_fix.planned(surfaced):
            out.write("ctk can fix these too: run ctk doctor --fix again\n")
    stuck = [f for f in after if f.check in affected and f.is_problem]
    if stuck:
        states = ", ".join(f"{f.check} still {f.status.value}" for f in stuck)
        out.write(f"the fixes did not take: {states}\n")
        return 1
    return summarize(after).exit_code


app = new_app()
app.command("doctor")(doctor)
