"""Each command imports only what it uses (issue 13): `python -X importtime` lists the modules a
run loads, and every command has modules it must not load. The start-up *time* targets live in
`benchmarks/run.py` (no timed tests); this keeps their cause, the import set, from creeping back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from ctk.cli.app import main; sys.exit(main(sys.argv[1:]))"
SPEC = REPO / "tests/fixtures/expected/workstation.yaml"
HEAVY = ("typer", "click", "rich", "tomlkit", "yaml", "jsonschema", "pynvml")
NOT_DOCTOR = ("ctk.doctor", "ctk.cli.doctor", "ctk.host.facts")
NOT_CDI = ("ctk.cdi.generate", "ctk.cdi.discover", "ctk.cli.cdi_generate", "ctk.cli.cdi")
NOT_RUNTIME = ("ctk.runtime_config", "ctk.cli.runtime")


def _xfail(item: str, owner: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"issue 13 {item} ({owner})")


BUDGET = [
    pytest.param(["--version"], (*HEAVY, "ctk.cli.commands"), id="version"),
    pytest.param(["--help"], ("typer", "rich", *NOT_DOCTOR, *NOT_CDI, *NOT_RUNTIME), id="help"),
    pytest.param(["runtime", "--help"], ("rich", *NOT_DOCTOR, *NOT_CDI), id="runtime-help"),
    pytest.param(["cdi", "--help"], ("rich", "pynvml", *NOT_DOCTOR, *NOT_RUNTIME), id="cdi-help"),
    pytest.param(
        ["doctor", "--help"], ("rich", "pynvml", *NOT_CDI, *NOT_RUNTIME), id="doctor-help"
    ),
    pytest.param(["system", "--help"], ("rich", *NOT_DOCTOR, *NOT_RUNTIME), id="system-help"),
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
        ("rich", "yaml", "pynvml", "jsonschema", *NOT_DOCTOR, *NOT_CDI),
        id="runtime-configure-containerd",
    ),
    pytest.param(
        ["runtime", "configure", "--runtime", "docker", "--config", "{tmp}/d.json", "--dry-run"],
        ("rich", "yaml", "pynvml", "jsonschema", *NOT_DOCTOR, *NOT_CDI),
        id="runtime-configure-docker",
    ),
    pytest.param(
        ["runtime", "configure", "--runtime", "docker", "--config", "{tmp}/d.json", "--dry-run"],
        ("tomlkit",),
        id="runtime-configure-docker-no-tomlkit",
    ),
    pytest.param(
        ["cdi", "validate", "--json", str(SPEC)],
        ("rich", "tomlkit", "pynvml", *NOT_DOCTOR, *NOT_RUNTIME),
        id="cdi-validate-json",
    ),
    pytest.param(
        ["cdi", "validate", str(SPEC)],
        ("ctk.cli.cdi_generate", "ctk.cdi.generate"),
        id="cdi-validate-no-generate",
        marks=_xfail("part 5: cdi group loads generate for validate", "cdi"),
    ),
    pytest.param(
        ["system", "create-dev-char-symlinks", "--driver-root", "{tmp}", "--dry-run"],
        ("rich", "tomlkit", "yaml", "pynvml", *NOT_DOCTOR, *NOT_CDI, *NOT_RUNTIME),
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
    loaded = _loaded([a.replace("{tmp}", str(tmp_path)) for a in argv], tmp_path)
    assert "ctk" in loaded  # the parse found the imports at all
    over = sorted(m for m in loaded if any(m == b or m.startswith(b + ".") for b in banned))
    assert over == []


def test_root_help_matches_each_group() -> None:
    """`ctk --help` lists the groups from GROUPS without importing them: the summaries there
    must be the first line of each group's own help."""
    from ctk.cli.commands import GROUPS, load_group

    shown = {g.name: g.summary for g in GROUPS}
    actual = {g.name: (load_group(g).help or "").strip().splitlines()[0] for g in GROUPS}
    assert shown == actual


def test_groups_have_no_completion_options() -> None:
    """ctk installs no shell completion: no group grows typer's --install-completion."""
    from ctk.cli.commands import GROUPS, load_group

    names = {
        g.name: sorted(o for p in load_group(g).params for o in p.opts if "completion" in o)
        for g in GROUPS
    }
    assert names == {g.name: [] for g in GROUPS}
