"""Each command imports only what it uses (issue 13): `python -X importtime` lists the modules a
run loads, and every command has modules it must not load. The start-up *time* targets live in
`benchmarks/run.py` (no timed tests); this keeps their cause, the import set, from creeping back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from ctk.cli.commands import GROUPS, CommandGroup, load_group
from tests.cli_tree import context, is_group
from tests.fake_nvml import materialise

REPO = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from ctk.cli.app import main; sys.exit(main(sys.argv[1:]))"
SPEC = REPO / "tests/fixtures/expected/workstation.yaml"
HEAVY = ("typer", "click", "rich", "tomlkit", "yaml", "jsonschema", "pynvml")
NOT_DOCTOR = ("ctk.doctor", "ctk.cli.doctor", "ctk.host.facts")
NOT_CDI = ("ctk.cdi.generate", "ctk.cdi.discover", "ctk.cli.cdi_generate", "ctk.cli.cdi")
NOT_RUNTIME = ("ctk.runtime_config", "ctk.cli.runtime")
CDI_COMMANDS = ("ctk.cli.cdi_check", "ctk.cli.cdi_generate", "ctk.cli.cdi_tools", "ctk.cdi")
# typer carries its own click: a separate click would be a second, different one
NO_CLICK = ("click", "pydantic")  # nor pydantic, which typer 0.29 would convert values with


BUDGET = [
    pytest.param(["--version"], (*HEAVY, "ctk.cli.commands"), id="version"),
    pytest.param(["-d", "-v"], (*HEAVY, "ctk.cli.commands"), id="debug-version"),
    pytest.param(
        ["--help"],
        ("click", "rich", *NOT_DOCTOR, *NOT_CDI, *NOT_RUNTIME),
        id="help",
    ),
    # a group's --help lists its commands from GROUPS: no typer, no command module
    pytest.param(
        ["runtime", "--help"],
        ("click", "rich", *NOT_DOCTOR, *NOT_CDI, *NOT_RUNTIME),
        id="runtime-help",
    ),
    pytest.param(
        ["cdi", "--help"],
        (
            "click",
            "rich",
            "yaml",
            *NOT_DOCTOR,
            *NOT_RUNTIME,
            *CDI_COMMANDS,
        ),
        id="cdi-help",
    ),
    pytest.param(
        ["doctor", "--help"],
        (
            *("click", "rich", "pynvml", "yaml", "ctk.doctor.facts", "ctk.host"),
            *(*NOT_CDI, *NOT_RUNTIME),
            *("ctk.doctor.model",),  # --group's choices: ctk.doctor.groups
        ),
        id="doctor-help",
    ),
    pytest.param(
        ["system", "--help"],
        ("click", "rich", *NOT_DOCTOR, *NOT_RUNTIME, "ctk.cli.system"),
        id="system-help",
    ),
    pytest.param(
        [
            "runtime",
            "configure",
            "--runtime",
            "containerd",
            "--config",
            "{tmp}/c.toml",
            "--dry-run",
        ],
        ("rich", "yaml", "pynvml", "jsonschema", *NOT_DOCTOR, *NOT_CDI, *NO_CLICK),
        id="runtime-configure-containerd",
    ),
    pytest.param(
        ["runtime", "configure", "--runtime", "docker", "--config", "{tmp}/d.json", "--dry-run"],
        ("rich", "yaml", "pynvml", "jsonschema", *NOT_DOCTOR, *NOT_CDI, *NO_CLICK),
        id="runtime-configure-docker",
    ),
    pytest.param(
        ["runtime", "configure", "--runtime", "docker", "--config", "{tmp}/d.json", "--dry-run"],
        (
            "tomlkit",
            "tomllib",
            "tomli",
            "ctk.toml_compat",
            "hashlib",
            "ctk.runtime_config.tomledit",
        ),
        id="runtime-configure-docker-no-toml",
    ),
    pytest.param(
        ["cdi", "validate", "--json", str(SPEC)],
        ("rich", "tomlkit", "pynvml", *NOT_DOCTOR, *NOT_RUNTIME, *NO_CLICK),
        id="cdi-validate-json",
    ),
    pytest.param(
        ["cdi", "validate", str(SPEC)],  # plain text (not a terminal): no rich
        (
            "rich",
            "tomlkit",
            "pynvml",
            "ctk.cli.cdi_generate",
            "ctk.cdi.generate",
            "ctk.cli.cdi_tools",
            "ctk.cdi.registry",  # built for spec directories only
            "ctk.host.root",  # so is the HostRoot they are read through
            "ctk.host.cdi_specs",  # and their records (SpecDir, SpecDirs): the file is spec_files'
            "decimal",  # only for a float where an integer goes
            *NO_CLICK,
        ),
        id="cdi-validate-no-generate",
    ),
    pytest.param(  # a whole run on a fixture node (the spec goes to stdout)
        [
            "cdi",
            "generate",
            "--mode",
            "management",
            "--driver-root",
            "{node}",
            "--output",
            "",
            "--hook-path",
            "/usr/bin/nvidia-cdi-hook",
        ],
        (
            *("rich", "tomlkit", "pynvml", "jsonschema", *NOT_DOCTOR, *NOT_RUNTIME),
            *("ctk.cli.cdi_check", "ctk.cdi.registry", "decimal"),
            "pkgutil",  # the packaged schema is read by ctk's own loader
            # parts of the node model management mode never makes: NVML's GPUs, MIG devices and
            # health, the /dev nodes a driver implies, the other discovery modes' facts
            *("ctk.node.nvml", "ctk.node.dev", "ctk.node.classes"),
            "ctk.host.driver_numbers",  # /proc/devices, GPU information files: system, doctor
            *NO_CLICK,
        ),
        id="cdi-generate-management",
    ),
    pytest.param(
        ["system", "create-dev-char-symlinks", "--driver-root", "{tmp}", "--dry-run"],
        (
            *("rich", "tomlkit", "yaml", "pynvml"),
            *(*NOT_DOCTOR, *NOT_CDI, *NOT_RUNTIME, *NO_CLICK),  # the udev rule runs it
        ),
        id="system-dev-char",
    ),
]


def _loaded(argv: list[str], cwd: Path) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "CTK_STATE_DIR": str(cwd / "state")},
        timeout=60,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", result.stderr, re.M))


@pytest.mark.parametrize(("argv", "banned"), BUDGET)
def test_import_budget(argv: list[str], banned: tuple[str, ...], tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text("version = 2\n")
    (tmp_path / "d.json").write_text("{}\n")
    if "{node}" in argv:
        node = materialise("workstation", tmp_path / "node", None).root
        argv = [a.replace("{node}", str(node)) for a in argv]
    loaded = _loaded([a.replace("{tmp}", str(tmp_path)) for a in argv], tmp_path)
    assert "ctk" in loaded  # the parse found the imports at all
    over = sorted(m for m in loaded if any(m == b or m.startswith(b + ".") for b in banned))
    assert over == []


def _help_lines() -> list[list[str]]:
    """`--help` of the root, of every group and command; no arguments where that shows help.
    Not `ctk hook`'s: it hands all its arguments to the native hook, which replaces ctk."""
    lines: list[list[str]] = [["--help"], []]
    for group in (g for g in GROUPS if g.name != "hook"):
        found = [([group.name], load_group(group, lazy=False))]
        while found:
            path, command = found.pop()
            lines.append([*path, "--help"])
            if is_group(command):
                command = cast(Any, command)
                lines += [path] if command.no_args_is_help else []
                found += [([*path, name], c) for name, c in command.commands.items()]
    return lines


PIPED_HELP = """
import contextlib, io, json, sys
from ctk.cli.app import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) in (0, 2), argv
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "click"))
with open(sys.argv[2], "w") as out:  # `ctk hook --help` is the native hook's, on fd 1
    json.dump(loaded, out)
"""


def test_piped_help_loads_no_rich(tmp_path: Path) -> None:
    """Every help ctk shows, written to a pipe, is typer's plain help: no rich (nor a click of
    its own), in one process."""
    lines = _help_lines()
    assert ["doctor", "--help"] in lines and ["cdi", "generate", "--help"] in lines
    result = subprocess.run(
        [sys.executable, "-c", PIPED_HELP, json.dumps(lines), tmp_path / "loaded.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "CTK_STATE_DIR": str(tmp_path / "state")},
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert json.loads((tmp_path / "loaded.json").read_text()) == []


def test_root_help_matches_each_group() -> None:
    """`ctk --help` lists the groups from GROUPS without importing them: the summaries there
    must be the first line of each group's own help."""
    shown = {g.name: g.summary for g in GROUPS}
    actual = {
        g.name: (load_group(g, lazy=False).help or "").strip().splitlines()[0] for g in GROUPS
    }
    assert shown == actual


@pytest.mark.parametrize("width", [40, 80, 200])
@pytest.mark.parametrize("group", [g for g in GROUPS if g.commands], ids=lambda g: g.name)
def test_lazy_group_help_is_the_whole_group_help(group: CommandGroup, width: int) -> None:
    """A group listed from its `CommandGroup.commands` shows the help the whole group would."""
    lazy, whole = load_group(group), load_group(group, lazy=False)
    assert lazy.get_help(_context(lazy, width)) == whole.get_help(_context(whole, width))
    assert list(lazy.commands) == list(whole.commands)  # type: ignore[attr-defined]


def _context(command: Any, width: int) -> Any:
    return context(command, width=width)


def test_groups_have_no_completion_options() -> None:
    """ctk installs no shell completion: no group grows typer's --install-completion."""
    names = {
        g.name: sorted(o for p in load_group(g).params for o in p.opts if "completion" in o)
        for g in GROUPS
    }
    assert names == {g.name: [] for g in GROUPS}
