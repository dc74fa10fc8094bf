"""The benchmark suite: whole-process medians of ctk's commands next to bare `python -c pass`.

Run from anywhere: `python benchmarks/run.py [--runs N] [--output docs/PERFORMANCE.md]`.

ctk is installed (copied, byte-compiled, console scripts written with pip's template) into a
temporary virtual environment that sees the running interpreter's packages through a `.pth`
file, so `ctk` is measured as an installed program, from the same environment as the
`python -c pass` baseline; `ctk-hook` is the native program, copied out as `ctk install` does. The
commands are timed round-robin (one run of each, N times) so that load from other processes
spreads evenly, and each figure is the median. Commands not implemented yet are reported as
"not available". `bench_validate.py` lends its spec generator; `bench_generate.py`, when
present, is run and its own table is quoted.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from ctk import toml_compat as tomllib

REPO = Path(__file__).resolve().parent.parent
TYPER = "python -c 'import typer'"
"""What every command but `ctk --version` pays first (issue 20: help is this and a table)."""
BENCH = REPO / "benchmarks"


@dataclass
class Case:
    """One command line to time; ``target`` is the allowed multiple of `python -c pass`."""

    name: str
    argv: list[str]
    stdin: str | None = None
    target: float | None = None
    note: str = ""
    samples: list[float] = field(default_factory=list)
    cpu_samples: list[float] = field(default_factory=list)  # user + system time of the process
    unavailable: str | None = None
    max_runs: int | None = None  # for commands that take seconds
    env: dict[str, str] | None = None
    relative_to: str | None = None  # ``target`` is a multiple of this case's median instead
    limit_s: float | None = None  # an absolute limit on the median, in seconds

    def wanted(self, runs: int) -> bool:
        """Whether this case still needs a sample."""
        limit = runs if self.max_runs is None else min(runs, self.max_runs)
        return self.unavailable is None and len(self.samples) < limit


SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from {module} import {func}
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit({func}())
"""  # the console-script template pip writes (distlib's), so start-up matches an install


def install(tmp: Path, tree: Path = REPO) -> Path:
    """Install ctk into a fresh venv under ``tmp`` and return the venv's bin directory.

    The package is copied into the venv's site-packages and byte-compiled, and its
    `[project.scripts]` are written with pip's template: what `pip install .` produces, without
    needing a build backend (or the network) at benchmark time.
    """
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin/python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # the venv sees the dependencies of the interpreter running this script
    (purelib / "_ctk_bench_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    shutil.copytree(tree / "ctk", purelib / "ctk", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([str(python), "-m", "compileall", "-q", str(purelib / "ctk")], check=True)
    scripts = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["scripts"]
    for name, entry in scripts.items():
        module, func = entry.split(":")
        script = venv / "bin" / name
        script.write_text(SCRIPT.format(python=python, module=module, func=func))
        script.chmod(0o755)
    return venv / "bin"


def hook_bundle(tmp: Path, name: str = "bundle") -> str:
    """A bundle for `ctk-hook create-symlinks`; returns the OCI state for stdin."""
    bundle = tmp / name
    (bundle / "rootfs/usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (bundle / "config.json").write_text(json.dumps({"root": {"path": "rootfs"}}))
    return json.dumps({"ociVersion": "1.0.2", "id": "bench", "bundle": str(bundle)})


def native_hook(tmp: Path) -> Path:
    """The native ctk-hook (built from native/ when the checkout has no fresh one), copied out
    of the package as `ctk install` does."""
    spec = importlib.util.spec_from_file_location("ctk_build_hook", REPO / "native/build_hook.py")
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    built = REPO / "ctk/_bin/ctk-hook"
    if not built.exists() or built.stat().st_mtime < builder.newest_source():
        builder.build(built)
    installed = tmp / "libexec/ctk/ctk-hook"
    installed.parent.mkdir(parents=True)
    shutil.copy2(built, installed)
    return installed


def ldcache_case(tmp: Path, hook: Path) -> Case:
    """`ctk-hook update-ldcache` on a folder of 20 shared libraries (distinct sonames)."""
    name = "ctk-hook update-ldcache (20 libraries)"
    note = "ldconfig itself runs inside; issue 9: <= 0.5x"
    gcc = shutil.which("gcc")
    if gcc is None or os.geteuid() != 0 or not os.path.exists("/sbin/ldconfig"):
        case = Case(name, [], note=note)
        case.unavailable = "needs gcc, root (chroot) and a static /sbin/ldconfig"
        return case
    state = hook_bundle(tmp, "ldcache-bundle")
    folder = tmp / "ldcache-bundle/rootfs/usr/lib/bench"
    folder.mkdir(parents=True)
    source = tmp / "lib.c"
    source.write_text("int ctk_bench(void) { return 1; }\n")
    for index in range(20):
        soname = f"libctkbench{index}.so.1"
        subprocess.run(
            [gcc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(folder / f"{soname}.0"),
             str(source)],
            check=True,
        )  # fmt: skip
    argv = [str(hook), "update-ldcache", "--folder", "/usr/lib/bench"]
    return Case(name, argv, stdin=state, target=0.5, note=note)


def ldconfig_floor_case(tmp: Path) -> Case:
    """ldconfig alone on the update-ldcache bundle, chrooted (what the hook cannot go below)."""
    name = "ldconfig alone, chrooted into that bundle"
    rootfs = tmp / "ldcache-bundle/rootfs"
    chroot = shutil.which("chroot")
    if chroot is None or not (rootfs / "usr/lib/bench").is_dir():
        case = Case(name, [])
        case.unavailable = "needs the update-ldcache bundle and chroot"
        return case
    shutil.copy("/sbin/ldconfig", rootfs / ".bench-ldconfig")
    argv = [chroot, str(rootfs), "/.bench-ldconfig", "-C", "/etc/ld.so.cache", "/usr/lib/bench"]
    return Case(name, argv, note="the floor for update-ldcache (chroot(1) adds its own start)")


def load_bench(name: str) -> ModuleType | None:
    """Import ``benchmarks/<name>.py`` (another helper's), or None when it is not there."""
    path = BENCH / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"ctk_bench_{name}", path)
    if not path.exists() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate_cases(tmp: Path, bin_dir: Path, python: str) -> list[Case]:
    """1,000 specs from bench_validate's generator: validate them, merely parse them, and (with
    `CTK_BENCH_GO_VALIDATE`, see bench_validate.py) validate them with the reference Go library."""
    bench = load_bench("bench_validate")
    spec_text: Callable[[int], str] | None = getattr(bench, "spec_text", None)
    if spec_text is None:
        missing = Case("ctk cdi validate (1,000 specs)", [])
        missing.unavailable = "benchmarks/bench_validate.py (its spec generator) is not here yet"
        return [missing]
    specs = tmp / "specs"
    specs.mkdir()
    files = []
    for index in range(1000):
        path = specs / f"nvidia-{index:04d}.yaml"
        path.write_text(spec_text(index), encoding="utf-8")
        files.append(str(path))
    parse = (
        "import sys, yaml\nfor f in sys.argv[1:]:\n"
        "    with open(f, 'rb') as s: yaml.load(s, Loader=yaml.CSafeLoader)\n"
    )
    go = Case(
        "reference Go library validate (1,000 specs)",
        [],
        max_runs=5,
        note="tags.cncf.io/container-device-interface; see bench_validate.py",
    )
    if program := os.environ.get("CTK_BENCH_GO_VALIDATE"):
        go.argv = [program, *files]
    else:
        go.unavailable = "set CTK_BENCH_GO_VALIDATE to a program built with the Go library"
    return [
        Case("yaml CSafeLoader parse (1,000 specs)", [python, "-c", parse, *files],
             note="the floor for validate (issue 2: validate <= 2x this)", max_runs=5),
        Case("ctk cdi validate (1,000 specs)", [str(bin_dir / "ctk"), "cdi", "validate", *files],
             max_runs=5, target=2.0, relative_to="yaml CSafeLoader parse (1,000 specs)"),
        go,
    ]  # fmt: skip


def _judge(
    case: Case, median: float, ratio: float, medians: dict[str, float]
) -> tuple[str, str, str] | None:
    """(target, verdict, note) for a case that has a target, else None."""
    if case.limit_s is not None:
        verdict = "ok" if median < case.limit_s else "MISSED"
        return f"< {case.limit_s:g} s", verdict, case.note
    if case.target is None:
        return None
    if case.relative_to is not None:
        relative = median / medians[case.relative_to]
        verdict = "ok" if relative <= case.target else "MISSED"
        note = f"{relative:.2f}x {case.relative_to}"
        return f"<= {case.target:g}x that", verdict, note
    return f"<= {case.target:g}x", "ok" if ratio <= case.target else "MISSED", case.note


def doctor_case(bin_dir: Path, tmp: Path, stack: contextlib.ExitStack) -> Case:
    """`ctk doctor` on the doctor tests' healthy node, built as those tests build it."""
    case = Case("ctk doctor (healthy fixture node)", [], note="issue 5: under 1 s", limit_s=1.0)
    if not (REPO / "tests/nodes.py").exists():
        case.unavailable = "tests/nodes.py (the fixture node loader) is not here"
        return case
    try:
        sys.path.insert(0, str(REPO))
        from tests.fake_nvml import TOPOLOGY_ENV, build_library  # type: ignore[import-not-found]
        from tests.nodes import materialised  # type: ignore[import-not-found]

        library = build_library(tmp / "fake-nvml")
        node = stack.enter_context(materialised("healthy", tmp / "doctor", library))
    except Exception as exc:  # another helper's code: report, do not crash the suite
        case.unavailable = short(f"cannot build the healthy node: {type(exc).__name__}: {exc}")
        return case
    case.argv = [str(bin_dir / "ctk"), "doctor", "--root", str(node.root)]
    case.env = {**os.environ, TOPOLOGY_ENV: str(node.topology)}
    return case


PROFILED = (
    "ctk --version",
    "ctk --help",
    "ctk runtime --help",
    "ctk runtime configure --dry-run (docker)",
    "ctk cdi validate (one spec)",
)
GROUP_HELP = ("cdi", "runtime", "doctor", "system")


def startup_cases(bin_dir: Path, tmp: Path) -> list[Case]:
    """Issue 13's start-up targets: every group's help, configure, validate and generate."""
    ctk = str(bin_dir / "ctk")
    (tmp / "config.toml").write_text("version = 2\n")
    (tmp / "daemon.json").write_text('{\n    "log-driver": "local"\n}\n')
    spec = REPO / "tests/fixtures/expected/workstation.yaml"
    configure = [ctk, "runtime", "configure", "--dry-run", "--runtime"]
    state = {**os.environ, "CTK_STATE_DIR": str(tmp / "state")}
    own = "budget: `import typer` + its own imports (see below)"
    return [
        Case("ctk --help", [ctk, "--help"], target=1.15, relative_to=TYPER),
        *(Case(f"ctk {g} --help", [ctk, g, "--help"], target=1.15, relative_to=TYPER)
          for g in GROUP_HELP),
        Case("ctk runtime configure --dry-run (containerd)",
             [*configure, "containerd", "--config", str(tmp / "config.toml"),
              "--drop-in-config", ""], env=state, note=own),
        Case("ctk runtime configure --dry-run (docker)",
             [*configure, "docker", "--config", str(tmp / "daemon.json")], env=state,
             note=f"no tomlkit; {own}"),
        Case("ctk cdi validate (one spec)", [ctk, "cdi", "validate", str(spec)], note=own),
    ]  # fmt: skip


def generate_cases(bin_dir: Path, tmp: Path) -> list[Case]:
    """Whole-process `cdi generate` on synthetic nodes of 1 and 64 GPUs (bench_generate's)."""
    bench = load_bench("bench_generate")
    make_node = getattr(bench, "make_node", None)
    cases = [
        Case(
            "ctk cdi generate --mode management (1 GPU)",
            [],
            note="no pynvml; budget: `import typer` + its own imports",
        ),
        Case("ctk cdi generate (nvml, 1 GPU)", []),
        Case("ctk cdi generate (nvml, 64 GPUs)", [], max_runs=10),
    ]
    if make_node is None or os.geteuid() != 0:
        for case in cases:
            case.unavailable = "needs root and benchmarks/bench_generate.py (its node builder)"
        return cases
    from tests.fake_nvml import TOPOLOGY_ENV, build_library

    library = build_library(tmp / "generate-lib")
    for case, (gpus, mode) in zip(
        cases, ((1, "management"), (1, "nvml"), (64, "nvml")), strict=True
    ):
        root = make_node(tmp / f"generate-{gpus}-{mode}", library, gpus, 0)
        case.env = {**os.environ, TOPOLOGY_ENV: os.environ[TOPOLOGY_ENV]}
        case.argv = [str(bin_dir / "ctk"), "cdi", "generate", "--mode", mode,
                     "--driver-root", str(root), "--dev-root", str(root),
                     "--hook-path", "/usr/bin/nvidia-cdi-hook",
                     "--output", str(tmp / f"generate-{gpus}-{mode}.yaml")]  # fmt: skip
    return cases


BEFORE = "before: "


def before_cases(tmp: Path, tree: Path) -> list[Case]:
    """The start-up cases of another checkout (e.g. main before a change), timed in the same
    rounds as this one's, so that the before/after ratios share one baseline and one load."""
    where = tmp / "before"
    where.mkdir()
    bin_dir = install(where, tree)
    cases = [
        Case("ctk --version", [str(bin_dir / "ctk"), "--version"], target=3.0),
        *startup_cases(bin_dir, where),
        *generate_cases(bin_dir, where),
    ]
    for case in cases:
        case.name = BEFORE + case.name
    return cases


def beside_twins(cases: list[Case], before: list[Case]) -> list[Case]:
    """``cases`` with each before-case right after its twin, so both run at the same moment of
    every round (a case's place in the round shifts its time on a loaded machine)."""
    twins = {case.name.removeprefix(BEFORE): case for case in before}
    return [c for case in cases for c in (case, twins.get(case.name)) if c is not None]


def checkout_name(tree: Path) -> str:
    """The commit ``tree`` has checked out (its path when it is no git checkout)."""
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else str(tree)


def before_after(cases: list[Case], baseline: float, tree: str) -> list[str]:
    """The section comparing the start-up of ``tree`` (the `before_cases`) with this checkout."""
    medians = {c.name: statistics.median(c.samples) for c in cases if c.samples}
    cpu = {c.name: statistics.median(c.cpu_samples) for c in cases if c.cpu_samples}
    cpu_base = cpu[cases[0].name]
    lines = [
        "",
        "## Start-up before and after",
        "",
        f"The same start-up cases of commit {tree}, each run right after its twin in every round; "
        "ratios to the same `python -c pass`, of wall time and of CPU time (user + system, which "
        "waiting for a CPU on a loaded machine does not inflate).",
        "",
        "| command | before (wall) | after (wall) | before (CPU) | after (CPU) | target |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        if case.name.startswith(BEFORE) or BEFORE + case.name not in medians:
            continue
        name = case.name
        after = "—" if name not in medians else f"{medians[name] / baseline:.2f}x"
        after_cpu = "—" if name not in cpu else f"{cpu[name] / cpu_base:.2f}x"
        target = "" if case.target is None else f"<= {case.target:g}x"
        if case.target is not None and case.relative_to is not None:
            target += f" {case.relative_to}"
        lines.append(
            f"| {name} | {medians[BEFORE + name] / baseline:.2f}x | {after} "
            f"| {cpu[BEFORE + name] / cpu_base:.2f}x | {after_cpu} | {target} |"
        )
    return lines


def generate_slope(medians: dict[str, float]) -> str:
    """The whole-process cost of one more GPU, from the 1- and 64-GPU generate runs."""
    one, many = (
        medians.get("ctk cdi generate (nvml, 1 GPU)"),
        medians.get("ctk cdi generate (nvml, 64 GPUs)"),
    )
    if one is None or many is None:
        return "not available (needs root and gcc for the synthetic nodes)"
    slope = (many - one) / 63 * 1000
    return f"{slope:.2f} ms per GPU ({one * 1000:.0f} ms for 1 GPU, {many * 1000:.0f} ms for 64)"


def fault_figures() -> str:
    """Run the hostile-input table (tests/faults) and list its slowest and biggest cases."""
    with tempfile.TemporaryDirectory(prefix="ctk-faults-") as name:
        report = Path(name) / "faults.jsonl"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "tests/faults/test_hostile_inputs.py"],
            cwd=REPO, env={**os.environ, "CTK_FAULTS_REPORT": str(report)},
            capture_output=True, check=False,
        )  # fmt: skip
        if not report.exists():
            return "not available: tests/faults/test_hostile_inputs.py wrote no report\n"
        rows = [json.loads(line) for line in report.read_text().splitlines()]
    held = sum(not r["problems"] for r in rows)
    lines = [
        f"{len(rows)} cases tried, {held} held every promise, {len(rows) - held} still fail "
        "(strict xfails in tests/faults/cases.py, by issue item and owner).",
        "",
        "| case | exit | seconds | peak RSS MB | problems |",
        "|---|---:|---:|---:|---|",
    ]
    slowest = sorted(rows, key=lambda r: -r["seconds"])[:6]
    biggest = sorted(rows, key=lambda r: -r["peak_rss_mb"])[:6]
    for row in slowest + [r for r in biggest if r not in slowest]:
        problems = short("; ".join(row["problems"]), 80) or "held"
        lines.append(
            f"| {row['case']} | {row['code']} | {row['seconds']:.2f} | "
            f"{row['peak_rss_mb']:.0f} | {problems} |"
        )
    return "\n".join(lines) + "\n"


def short(text: str, limit: int = 120) -> str:
    """One table-safe line of at most ``limit`` characters."""
    text = text.replace("|", "/")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def time_round_robin(cases: list[Case], runs: int) -> None:
    """Run every available case once per round, ``runs`` rounds (after one warm-up round)."""
    for round_index in range(runs + 1):
        for case in cases:
            if not case.wanted(runs):
                continue
            start = time.perf_counter()
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                result = subprocess.run(
                    case.argv,
                    input=case.stdin,
                    capture_output=True,
                    text=True,
                    env=case.env,
                    check=False,
                )
            except OSError as exc:  # a program this tree does not install
                case.unavailable = short(f"cannot run {case.argv[0]}: {exc.strerror}")
                continue
            elapsed = time.perf_counter() - start
            now = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime
            if result.returncode not in (0, 1) or "not implemented" in result.stderr:
                last = (result.stderr.strip().splitlines() or ["no output"])[-1]
                case.unavailable = short(f"exit {result.returncode}: {last}")
            elif round_index > 0:
                case.samples.append(elapsed)
                case.cpu_samples.append(cpu)


def bench_table(name: str) -> str:
    """The output of ``benchmarks/<name>.py``, run as its author meant, or why there is none."""
    path = BENCH / f"{name}.py"
    if not path.exists():
        return f"not available: benchmarks/{name}.py is not here yet\n"
    result = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, cwd=REPO, check=False
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return short(f"not available: {name}.py exited {result.returncode}: {last}") + "\n"
    return result.stdout


def import_profile(python: str, argv: list[str], stdin: str | None) -> str:
    """The costliest top-level imports of one run (`python -X importtime`), cumulative."""
    result = subprocess.run(
        [python, "-X", "importtime", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            rows.append((int(parts[1]), parts[2].strip()))
    top = sorted(rows, reverse=True)[:8]
    return ", ".join(f"`{name}` {micros / 1000:.1f} ms" for micros, name in top)


def render(
    cases: list[Case],
    baseline: float,
    runs: int,
    generate: str,
    imports: dict[str, str],
    *,
    faults: str | None = None,
    agent: str | None = None,
    before: str | None = None,
) -> str:
    """The Markdown page."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Performance",
        "",
        "Written by `python benchmarks/run.py` (do not edit by hand; rerun it). "
        f"Measured {when} on {platform.machine()} with {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; whole-process wall time, median of {runs} runs "
        "(5 for the commands that take seconds), "
        "commands timed round-robin. `ctk` is installed in a temporary venv "
        "(package copied and byte-compiled, console scripts written with pip's template); "
        "`ctk-hook` is the native program (native/, Go, static), copied out as `ctk install` "
        "does; the baseline is that venv's `python -c pass`. `CPU x` is the same ratio of "
        "CPU time (user + system of the process and its children): on a shared, loaded machine "
        "it moves far less from run to run than wall time. Verdicts are on wall time.",
        "",
        "| command | median | x `python -c pass` | CPU x | target | verdict | note |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    medians = {c.name: statistics.median(c.samples) for c in cases if c.samples}
    cpu_base = statistics.median(cases[0].cpu_samples)
    for case in cases:
        if case.name.startswith(BEFORE):
            continue
        if case.unavailable:
            lines.append(f"| {case.name} | — | — | — | — | not available | {case.unavailable} |")
            continue
        median = statistics.median(case.samples)
        ratio = median / baseline
        target, verdict, note = _judge(case, median, ratio, medians) or ("", "", case.note)
        cpu = statistics.median(case.cpu_samples) / cpu_base
        lines.append(
            f"| {case.name} | {median * 1000:.1f} ms | {ratio:.2f} | {cpu:.2f} | {target} "
            f"| {verdict} | {note} |"
        )
    if before is not None:
        lines += before_after(cases, baseline, before)
    lines += ["", "## Where start-up goes (`python -X importtime`, top-level imports)", ""]
    lines += [f"- {name}: {profile}" for name, profile in imports.items()]
    lines += [
        "",
        "## Per-GPU slope of `ctk cdi generate` (whole process)",
        "",
        generate_slope(medians),
    ]
    if faults is not None:
        lines += ["", "## Fault-injection suite (`tests/faults`): slowest and biggest cases", ""]
        lines.append(faults.rstrip())
    lines += [
        "",
        "## `ctk cdi generate` (from `benchmarks/bench_generate.py`)",
        "",
        "```",
        generate.rstrip(),
        "```",
        "",
    ]
    if agent is not None:
        lines += ["## `ctk agent` (from `benchmarks/bench_agent.py`)", "", agent.rstrip(), ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=30, help="timed runs per command (at most 5 for slow ones)"
    )
    parser.add_argument("--output", type=Path, default=REPO / "docs/PERFORMANCE.md")
    parser.add_argument(
        "--tree",
        type=Path,
        default=REPO,
        help="measure the ctk of this checkout (e.g. an older one)",
    )
    parser.add_argument(
        "--faults", action="store_true", help="also run tests/faults and list its slowest cases"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="also time the start-up cases of this checkout (e.g. a worktree of main before a "
        "change) in the same rounds, for a before/after table",
    )
    args = parser.parse_args()
    # The measured programs import ctk from their venvs only (a PYTHONPATH=checkout would make
    # every venv run that checkout); this process imports the fixture builders from REPO.
    os.environ.pop("PYTHONPATH", None)
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(prefix="ctk-bench-") as name, contextlib.ExitStack() as stack:
        tmp = Path(name)
        bin_dir = install(tmp, args.tree)
        python = str(bin_dir / "python")
        hook = native_hook(tmp)
        link = "--link=libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so"
        cases = [
            Case("python -c pass", [python, "-c", "pass"], note="the baseline"),
            Case(TYPER, [python, "-c", "import typer"],
                 note="typer's own start: what every command but --version pays first"),
            Case("ctk --version", [str(bin_dir / "ctk"), "--version"], target=3.0),
            *startup_cases(bin_dir, tmp),
            *generate_cases(bin_dir, tmp),
            Case("ctk-hook create-symlinks (state on stdin)", [str(hook), "create-symlinks", link],
                 stdin=hook_bundle(tmp), target=0.5,
                 note="what every container start pays; native (issue 9: <= 0.5x)"),
            ldcache_case(tmp, hook),
            ldconfig_floor_case(tmp),
            Case("ctk-hook --help", [str(hook), "--help"], note="native"),
            *validate_cases(tmp, bin_dir, python),
            doctor_case(bin_dir, tmp, stack),
        ]  # fmt: skip
        if args.before:
            cases = beside_twins(cases, before_cases(tmp, args.before))
        time_round_robin(cases, args.runs)
        imports = {
            case.name: import_profile(python, case.argv, case.stdin)
            for case in cases
            if case.name in PROFILED
            if not case.unavailable
        }
    baseline = statistics.median(cases[0].samples)
    faults = fault_figures() if args.faults else None
    page = render(
        cases,
        baseline,
        args.runs,
        bench_table("bench_generate"),
        imports,
        faults=faults,
        agent=bench_table("bench_agent"),
        before=None if args.before is None else checkout_name(args.before),
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page, encoding="utf-8")
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
