"""`--dry-run` prints the resulting documents (nvidia-ctk's habit), `--diff` the diff; warnings
for a runtime binary that is not installed and for a replaced runtime path (issue 12)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.host import engine_files as host_engines
from tests.runtime.conftest import REAL_BINARY_LOOKUP

HEADER = (
    "# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
    "# containerd 1.x replaces a whole plugin table per imported file, so this file carries\n"
    "# the CRI plugin settings of the files imported before it as well: after editing them\n"
    "# there, run `ctk runtime configure` again.\n"
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runtime", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_prints_the_resulting_daemon_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{\n  "debug": true\n}\n')
    args = ["configure", "--runtime=docker", "--config", str(config), "--dry-run"]
    code, out, err = run(capsys, *args)
    assert (code, err) == (0, f"dry run: {config} would be updated:\n")
    assert out == (
        '{\n  "debug": true,\n  "runtimes": {\n    "nvidia": {\n'
        '      "path": "/usr/bin/nvidia-container-runtime",\n      "args": []\n    }\n  }\n}\n'
    )
    assert config.read_text() == '{\n  "debug": true\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.json"]


def test_dry_run_prints_drop_in_then_top_level_like_nvidia_ctk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("version = 2\n")
    drop_in = tmp_path / "conf.d/99-nvidia.toml"
    args = ["--runtime=containerd", "--config", str(config), "--drop-in-config", str(drop_in)]
    code, out, err = run(capsys, "configure", *args, "--dry-run")
    assert (code, err) == (
        0,
        f"dry run: {drop_in} would be created:\ndry run: {config} would be updated:\n",
    )
    drop_in_text = (
        HEADER + "version = 2\n\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        'runtime_type = "io.containerd.runc.v2"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        'runtime_type = "io.containerd.runc.v2"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        'BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    )
    assert out == drop_in_text + f'version = 2\nimports = ["{drop_in}"]\n'
    assert (config.read_text(), drop_in.parent.exists()) == ("version = 2\n", False)
    # Once configured, a dry run still prints both documents, as they are.
    assert run(capsys, "configure", *args)[0] == 0
    code, out, err = run(capsys, "configure", *args, "--dry-run")
    assert (code, out) == (0, drop_in.read_text() + config.read_text())
    assert err == (
        f"dry run: {drop_in} is unchanged:\ndry run: {config} is unchanged:\n"
        "containerd is already configured; nothing changed\n"
    )
    code, out, err = run(capsys, "unconfigure", *args, "--dry-run")
    assert (code, out) == (0, "version = 2\n")
    assert err == (f"dry run: {drop_in} would be removed\ndry run: {config} would be updated:\n")


def test_missing_runtime_binary_is_a_warning_that_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host_engines, "runtime_binary_found", REAL_BINARY_LOOKUP)
    config = tmp_path / "daemon.json"
    binary = tmp_path / "bin/nvidia-container-runtime"
    args = ["configure", "--runtime=docker", "--config", str(config)]
    code, _, err = run(capsys, *args, "--nvidia-runtime-path", str(binary))
    assert (code, err) == (
        0,
        f"warning: {binary} does not exist: docker cannot start containers with the nvidia "
        "runtime until it does; install NVIDIA's nvidia-container-runtime "
        "(nvidia-container-toolkit), or use CDI natively without a wrapper runtime: ctk cdi "
        "generate, --cdi.enabled, then request devices like nvidia.com/gpu=all\n",
    )
    code, _, err = run(capsys, *args, "--nvidia-runtime-path", str(binary), "--cdi.enabled")
    assert err.endswith(
        "or use CDI natively without a wrapper runtime: request devices like nvidia.com/gpu=all "
        "(CDI is enabled)\n"
    )
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    code, _, err = run(capsys, *args, "--nvidia-runtime-path", str(binary))
    assert (code, err) == (0, "")


OPERATOR_PATH = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
WITH_OPERATOR_RUNTIME = {
    "docker": ("daemon.json", f'{{"runtimes": {{"nvidia": {{"path": "{OPERATOR_PATH}"}}}}}}\n'),
    "containerd": (
        "config.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        'runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        f'BinaryName = "{OPERATOR_PATH}"\n',
    ),
    "crio": ("crio.conf", f'[crio.runtime.runtimes.nvidia]\nruntime_path = "{OPERATOR_PATH}"\n'),
}


@pytest.mark.parametrize(
    ("runtime", "drop_in"),
    [
        pytest.param("docker", False, id="docker"),
        pytest.param("containerd", True, id="containerd-drop-in"),
        pytest.param("containerd", False, id="containerd-in-place"),
        pytest.param("crio", True, id="crio-drop-in"),
        pytest.param("crio", False, id="crio-in-place"),
    ],
)
def test_replacing_an_existing_runtime_path_is_a_warning_naming_it(
    *,
    runtime: str,
    drop_in: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, content = WITH_OPERATOR_RUNTIME[runtime]
    config = tmp_path / name
    config.write_text(content)
    where = [] if runtime == "docker" else ["--drop-in-config", ""]
    if drop_in:
        where = ["--drop-in-config", str(tmp_path / "d/99-nvidia.toml")]
    args = ["configure", f"--runtime={runtime}", "--config", str(config), *where]
    code, _, err = run(capsys, *args, "--nvidia-runtime-path", OPERATOR_PATH, "--dry-run")
    assert (code, err.startswith("warning")) == (0, False)
    code, _, err = run(capsys, *args)
    note = (
        f"note: {tmp_path / 'd/99-nvidia.toml'} carries a copy of the "
        f'[plugins."io.containerd.grpc.v1.cri"] settings of {config} (containerd 1.x replaces '
        "the whole table per imported file): after editing them, run `ctk runtime configure` "
        "again\n"
    )
    if not (drop_in and runtime == "containerd"):
        note = ""
    assert (code, err) == (
        0,
        note + f"warning: {config} sets the nvidia runtime's path to {OPERATOR_PATH}; replacing it "
        f"with /usr/bin/nvidia-container-runtime (pass --nvidia-runtime-path {OPERATOR_PATH} "
        "to keep it)\n",
    )


def test_oci_hook_mode_prints_or_writes_the_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    hook = {
        "version": "1.0.0",
        "hook": {
            "path": "/usr/bin/nvidia-container-runtime-hook",
            "args": ["nvidia-container-runtime-hook", "prestart"],
            "env": ["PATH=/usr/bin:/bin"],
        },
        "when": {"always": True, "commands": [".*"]},
        "stages": ["prestart"],
    }
    warning = (
        "warning: --config-mode=oci-hook is deprecated (in nvidia-ctk too): writing an OCI "
        "hook; CDI does the same without one: ctk cdi generate, then ctk runtime configure "
        "--cdi.enabled\n"
    )
    monkeypatch.setattr(host_engines, "runtime_binary_found", lambda *_a, **_k: True)
    code, out, err = run(capsys, "configure", "--runtime=crio", "--config-mode=oci-hook")
    assert (code, json.loads(out), err) == (0, hook, warning)
    target = tmp_path / "hooks.d/oci-nvidia-hook.json"
    code, out, err = run(
        capsys,
        "configure",
        "-runtime=crio",
        "--config-mode=oci-hook",
        "--oci-hook-path",
        str(target),
    )
    assert (code, out, err) == (0, f"created {target}\n", warning)
    assert json.loads(target.read_text()) == hook
    assert oct(os.stat(target).st_mode & 0o777) == "0o644"


def test_single_dash_long_flags_work_as_in_go(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    code, _, err = run(
        capsys, "configure", "-runtime=docker", "-config", str(config), "-set-as-default"
    )
    assert (code, err) == (0, "")
    assert json.loads(config.read_text())["default-runtime"] == "nvidia"
