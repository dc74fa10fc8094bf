"""nvidia-ctk spellings: `--flag=true|false` (urfave/cli) and a bare --runtime-path (QA3 #6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctk.cli.app import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runtime", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param(["--set-as-default=false"], {}, id="false"),
        pytest.param(["--nvidia-set-as-default=true"], {"default-runtime": "nvidia"}, id="true"),
        pytest.param(
            ["--set-as-default=1", "--cdi.enabled=0"], {"default-runtime": "nvidia"}, id="1-0"
        ),
        pytest.param(["--cdi.enabled=T"], {"features": {"cdi": True}}, id="cdi-T"),
        pytest.param(["--enable-cdi=FALSE", "--dry-run=false"], {}, id="cdi-FALSE"),
    ],
)
def test_bool_flags_take_go_bool_values(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    expected: dict[str, object],
) -> None:
    config = tmp_path / "daemon.json"
    assert run(capsys, "configure", "--runtime", "docker", "--config", str(config), *flags)[0] == 0
    runtimes = {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}
    assert json.loads(config.read_text()) == {"runtimes": runtimes, **expected}


def test_bad_bool_value_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    args = ("configure", "--runtime", "docker", "--config", str(config), "--set-as-default=yes")
    assert run(capsys, *args) == (
        2,
        "",
        "error: invalid value 'yes' for --set-as-default\nhint: use true or false (or 1 / 0)\n",
    )
    assert not config.exists()


@pytest.mark.parametrize(
    ("runtime", "name", "written", "note"),
    [
        pytest.param("docker", "daemon.json", "nvidia-container-runtime", "", id="docker"),
        pytest.param(
            "containerd",
            "config.toml",
            "/usr/bin/nvidia-container-runtime",
            "note: --nvidia-runtime-path nvidia-container-runtime is a bare name: writing "
            "/usr/bin/nvidia-container-runtime for containerd, as nvidia-ctk does\n",
            id="containerd",
        ),
        pytest.param(
            "crio",
            "crio.conf",
            "/usr/bin/nvidia-container-runtime",
            "note: --nvidia-runtime-path nvidia-container-runtime is a bare name: writing "
            "/usr/bin/nvidia-container-runtime for crio, as nvidia-ctk does\n",
            id="crio",
        ),
    ],
)
def test_bare_runtime_path_is_resolved_as_nvidia_ctk_does(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    runtime: str,
    name: str,
    written: str,
    note: str,
) -> None:
    config = tmp_path / name
    args = ["configure", "--runtime", runtime, "--config", str(config)]
    args += ["--runtime-path", "nvidia-container-runtime"]
    args += ["--drop-in-config", ""] if runtime != "docker" else []
    code, _, err = run(capsys, *args)
    assert (code, err) == (0, note)
    assert f'"{written}"' in config.read_text()


# --- every documented runtime configure line: accepted (issue 12's done-when) -----------------

IGNORED_EXECUTABLE = (
    "warning: --executable-path is ignored: nvidia-ctk uses it only with --config-source=command"
)
IGNORED_EXECUTABLE_COMMAND = IGNORED_EXECUTABLE + ", which ctk reads as file"
READ_AS_FILE = (
    "warning: --config-source=command is read as file: ctk reads the config files and everything "
    "they import itself, as containerd and CRI-O merge them"
)
OCI_HOOK = (
    "warning: --config-mode={} is deprecated (in nvidia-ctk too): writing an OCI hook; CDI does "
    "the same without one: ctk cdi generate, then ctk runtime configure --cdi.enabled"
)
RUNTIME_LINES = [  # (argv after `runtime configure`, the warnings it gives)
    ("--config {tmp}/daemon.json", []),
    ("--runtime=docker --config={tmp}/daemon.json --set-as-default --cdi.enabled", []),
    ("--runtime docker --config {tmp}/daemon.json --nvidia-set-as-default --enable-cdi", []),
    ("--runtime docker --config {tmp}/daemon.json --cdi.enable --dry-run", []),
    ("--runtime docker --config {tmp}/daemon.json --nvidia-runtime-name nvidia-x", []),
    ("--runtime docker --config {tmp}/daemon.json --config-source file", []),
    ("--runtime docker --config {tmp}/daemon.json --config-mode config-file", []),
    (
        "--runtime docker --config {tmp}/daemon.json --executable-path /usr/bin/dockerd",
        [IGNORED_EXECUTABLE],
    ),
    ("--runtime docker --config {tmp}/daemon.json --config-source command", [READ_AS_FILE]),
    (
        "--runtime docker --config {tmp}/daemon.json --config-mode bogus",
        ["warning: unknown --config-mode 'bogus'; using config-file"],
    ),
    ("--runtime containerd --config {tmp}/config.toml --drop-in-config {drop_in}", []),
    (
        "--runtime containerd --config {tmp}/config.toml "
        "--drop-in-config {tmp}/conf.d/99-nvidia.toml --set-as-default --cdi.enabled",
        [],
    ),
    ("--runtime containerd --config {tmp}/config.toml --drop-in-config=", []),
    (
        "--runtime containerd --config {tmp}/config.toml --drop-in-config {drop_in} "
        "--config-source command --executable-path /usr/bin/containerd --dry-run",
        [READ_AS_FILE, IGNORED_EXECUTABLE_COMMAND],
    ),
    (
        "--runtime containerd --config {tmp}/config.toml --drop-in-config {drop_in} "
        "--nvidia-runtime-hook-path /usr/bin/nvidia-container-runtime-hook",
        [
            "warning: --nvidia-runtime-hook-path is ignored: nvidia-ctk uses it only in the "
            "oci-hook config mode"
        ],
    ),
    (
        "--runtime crio --config {tmp}/crio.conf --drop-in-config {tmp}/crio.conf.d/99-nvidia.toml",
        [],
    ),
    ("--runtime crio --config {tmp}/crio.conf --drop-in-config=", []),
    (
        "--runtime crio --config-mode oci-hook --oci-hook-path {tmp}/hooks.d/oci-nvidia-hook.json "
        "--nvidia-runtime-hook-path {runtime}",
        [OCI_HOOK.format("oci-hook")],
    ),
    (
        "--runtime crio --config-mode hook --oci-hook-path {tmp}/hooks.d/oci-nvidia-hook.json "
        "--nvidia-runtime-hook-path {runtime}",
        [OCI_HOOK.format("hook")],
    ),
]


@pytest.mark.parametrize(("args", "warnings"), [pytest.param(a, w, id=a) for a, w in RUNTIME_LINES])
def test_every_documented_configure_line_is_accepted(
    args: str, warnings: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each flag and value of nvidia-ctk 1.20's `runtime configure` (NVIDIA-CTK-REFERENCE.md),
    on files under tmp_path: exit 0, and the warnings listed are the only ones. The runtime path
    is an existing program, so no line warns that it is missing; every line names its files
    (the default drop-ins are the machine's own /etc/containerd/conf.d and /etc/crio)."""
    runtime = tmp_path / "bin" / "nvidia-container-runtime"
    runtime.parent.mkdir()
    runtime.write_text("#!/bin/sh\n")
    runtime.chmod(0o755)
    drop_in = tmp_path / "conf.d" / "99-nvidia.toml"
    argv = args.format(tmp=tmp_path, runtime=runtime, drop_in=drop_in).split()
    engine_files = "--drop-in-config" in args or "oci-hook-path" in args
    assert engine_files or not ("containerd" in args or "crio" in args)
    if "oci-hook-path" not in args:
        argv += ["--nvidia-runtime-path", str(runtime)]
    code, _, err = run(capsys, "configure", *argv)
    assert (code, [line for line in err.splitlines() if line.startswith("warning:")]) == (
        0,
        warnings,
    )
