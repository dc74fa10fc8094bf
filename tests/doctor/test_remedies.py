"""Every command a remedy shows runs as written: ctk's parse with ctk's own CLI parser.

Over every fixture node and every hand-built check case: no prose, no `#` comment, no
placeholder in `remedy.commands` (prose goes to `remedy.notes`); a ctk command line names a real
command with real options; nvidia-ctk's use the commands and options nvidia-ctk 1.20 has; where
ctk is installed no nvidia-ctk command or unit is suggested (the NVIDIA runtime's config.toml
too: `ctk config` edits it).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import typer

from ctk.cli.app import main
from ctk.cli.commands import build_app
from tests.cli_tree import is_group
from tests.doctor.test_checks import CASES, run
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import DOCTOR_NODES, FakeNode, load_spec, names

PROGRAMS = frozenset(
    {
        "ctk",
        "nvidia-ctk",
        "systemctl",
        "apt-get",
        "modprobe",
        "nvidia-modprobe",
        "dmesg",
        "grep",
        "nvidia-smi",
        "fuser",
        "kill",
        "reboot",
        "ldconfig",
        "update-initramfs",
        "mokutil",
        "printf",
        "tee",
        "rm",
        "snap",
        "dkms",
        "dockerd",
        "containerd",
        "kubectl",
    }
)
NVIDIA_CTK = {
    ("runtime", "configure"): {"--runtime", "--set-as-default", "--cdi.enabled", "--config"},
    ("system", "create-dev-char-symlinks"): {"--create-all"},
    ("system", "create-device-nodes"): {"--control-devices", "--load-kernel-modules"},
    ("cdi", "generate"): {"--output"},
    ("config", "--in-place"): {"--set", "--in-place", "--config"},
    ("config", "default"): {"--output"},
}
SEPARATORS = ("|", "&&", ";")


def parse_ctk(args: list[str]) -> str:
    """The ctk command ``args`` names, parsed by ctk's typer app (raises on any bad option)."""
    command: Any = build_app()
    ctx = command.make_context("ctk", list(args))
    path = []
    while is_group(command):
        given = [*ctx._protected_args, *ctx.args]
        if not given and command.invoke_without_command:  # `ctk config --set ...`
            break
        name, sub, rest = command.resolve_command(ctx, given)
        assert sub is not None and name is not None
        path.append(name)
        ctx = sub.make_context(name, rest, parent=ctx)
        command = sub
    return " ".join(path)


def _segments(line: str) -> list[list[str]]:
    words = shlex.split(line)
    segments: list[list[str]] = [[]]
    for word in words:
        if word in SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(word)
    return segments


def problems(line: str, *, ctk_installed: bool) -> list[str]:
    """What makes ``line`` not a runnable command line (empty: it runs as written)."""
    found = []
    for segment in _segments(line):
        if any(w.startswith("#") or "<" in w or ">" in w or w == "..." for w in segment):
            found.append(f"prose, a comment or a placeholder in {line!r}")
            continue
        words = segment[1:] if segment[:1] == ["sudo"] else segment
        if words[:1] == ["chroot"]:  # on the node under --root, from outside it
            if len(words) < 3 or not words[1].startswith("/"):
                found.append(f"chroot without a root and a command: {line!r}")
                continue
            words = words[2:]
        if not words or words[0] not in PROGRAMS:
            found.append(f"not a known program: {line!r}")
        elif words[0] == "ctk":
            try:
                parse_ctk(words[1:])
            except typer.TyperException as exc:
                found.append(f"ctk cannot parse {line!r}: {exc.format_message()}")
        elif words[0] == "nvidia-ctk":
            key = (words[1], words[2])
            flags = {w.split("=", 1)[0] for w in words[3:] if w.startswith("--")}
            if key not in NVIDIA_CTK or not flags <= NVIDIA_CTK[key]:
                found.append(f"not an nvidia-ctk 1.20 command: {line!r}")
            elif ctk_installed:
                found.append(f"nvidia-ctk suggested where ctk is installed: {line!r}")
        if ctk_installed and "nvidia-cdi-refresh" in line:
            found.append(f"nvidia-ctk's unit suggested where ctk is installed: {line!r}")
    return found


def _host(name: str) -> bool:
    return "environ" not in load_spec(name)


@pytest.mark.parametrize("node", [n for n in names(DOCTOR_NODES) if n != "base"])
def test_every_remedy_command_runs_as_written(
    node: str,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = fake_node(node)
    main(["doctor", "--json", "--root", str(built.root)])
    ctk_installed = (built.root / "usr/bin/ctk").exists()
    document = json.loads(capsys.readouterr().out)
    lines = [line for c in document["checks"] if c["remedy"] for line in c["remedy"]["commands"]]
    assert [p for line in lines for p in problems(line, ctk_installed=ctk_installed)] == []
    if node == "nvidia-ctk-only":  # the rule above is not idle: nvidia-ctk's own commands
        assert lines == [
            f"sudo chroot {built.root} nvidia-ctk runtime configure --runtime=docker",
            "sudo systemctl restart docker",
        ]


def case_remedy_problems(cases: Sequence[Any]) -> list[str]:
    """What keeps the remedies of hand-built cases (check id, facts, expected) from running as
    written (empty: they all run)."""
    from ctk.doctor.fixes import command_line

    lines = []
    for param in cases:
        check_id, facts, _ = param.values
        result = run(check_id, facts)
        lines += [*result.commands, *(command_line(f) or "" for f in result.fixes)]
    return [p for line in lines if line for p in problems(line, ctk_installed=True)]


def test_every_hand_built_case_remedy_runs_as_written() -> None:
    assert case_remedy_problems(CASES) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("sudo ctk runtime configure --runtime=docker", [], id="ctk-ok"),
        pytest.param(
            "sudo ctk runtime configure --runtme=docker",
            [
                "ctk cannot parse 'sudo ctk runtime configure --runtme=docker': No such option: "
                "--runtme (Possible options: --runtime, --runtime-path)"
            ],
            id="ctk-typo",
        ),
        pytest.param(
            "sudo rm /etc/cdi/b.yaml   # keeps a.yaml",
            ["prose, a comment or a placeholder in 'sudo rm /etc/cdi/b.yaml   # keeps a.yaml'"],
            id="comment",
        ),
        pytest.param(
            "set SystemdCgroup = true under the options",
            ["not a known program: 'set SystemdCgroup = true under the options'"],
            id="prose",
        ),
        pytest.param(
            "sudo nvidia-ctk system create-dev-char-symlinks --create-all",
            [
                "nvidia-ctk suggested where ctk is installed: "
                "'sudo nvidia-ctk system create-dev-char-symlinks --create-all'"
            ],
            id="nvidia-ctk-where-ctk-is",
        ),
    ],
)
def test_the_command_rule_catches(line: str, expected: list[str]) -> None:
    assert problems(line, ctk_installed=True) == expected


def test_checks_write_no_ctk_command_by_hand() -> None:
    """A ctk or nvidia-ctk command comes from a fix value (`ctk.doctor.fixes`), never a string in
    a check, so what is suggested and what `--fix` applies cannot drift apart."""
    import ast

    checks = Path(__file__).resolve().parents[2] / "ctk" / "doctor" / "checks"
    written = [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for path in sorted(checks.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.removeprefix("sudo ").startswith(("ctk ", "nvidia-ctk "))
    ]
    assert written == []
