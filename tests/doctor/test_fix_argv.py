"""Typed fixes: one value renders the command line a person sees and the one `--fix` runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctk.cli.doctor_fix import shown
from ctk.doctor.fixes import (
    ConfigureRuntime,
    CreateCharLinks,
    CreateDeviceNodes,
    EnableRefresh,
    GenerateSpec,
    SetToolkitConfig,
    Suggestion,
    Tool,
    ToolkitConfigDefault,
    ValidateSpec,
    command_line,
)
from ctk.runtime_config.engines import Runtime


def test_config_symlink_is_resolved_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "etc/docker").mkdir(parents=True)
    (tmp_path / "srv").mkdir()
    # an absolute link means the node's /srv, never this machine's
    os.symlink("/srv/daemon.json", tmp_path / "etc/docker/daemon.json")
    line = shown(ConfigureRuntime(runtime=Runtime.DOCKER), tmp_path)
    assert line == f"ctk runtime configure --runtime=docker --config={tmp_path}/srv/daemon.json"


def test_containerd_is_edited_in_place_under_a_root(tmp_path: Path) -> None:
    line = shown(ConfigureRuntime(runtime=Runtime.CONTAINERD, set_as_default=True), tmp_path)
    assert line == (
        "ctk runtime configure --runtime=containerd --set-as-default "
        f"--config={tmp_path}/etc/containerd/config.toml --drop-in-config="
    )


def test_dev_char_links_under_a_root(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    os.symlink("/run/char", tmp_path / "dev/char")
    assert shown(CreateCharLinks(), tmp_path) == (
        f"ctk system create-dev-char-symlinks --root={tmp_path} --dev-char-path={tmp_path}/run/char"
    )


def test_no_root_keeps_the_command() -> None:
    fix = ConfigureRuntime(runtime=Runtime.DOCKER)
    assert shown(fix, Path("/")) == "ctk runtime configure --runtime=docker"


def test_a_spec_is_not_generated_under_a_root(tmp_path: Path) -> None:
    assert shown(GenerateSpec(output="/etc/cdi/nvidia.yaml"), tmp_path) is None


@pytest.mark.parametrize(
    ("fix", "ctk", "nvidia_ctk"),
    [
        pytest.param(
            ConfigureRuntime(runtime=Runtime.CRIO, enable_cdi=True),
            "sudo ctk runtime configure --runtime=crio --cdi.enabled",
            "sudo nvidia-ctk runtime configure --runtime=crio --cdi.enabled",
            id="configure",
        ),
        pytest.param(
            ConfigureRuntime(
                runtime=Runtime.DOCKER, config="/home/a b/.config/docker/daemon.json", user=True
            ),
            "ctk runtime configure --runtime=docker "
            "'--config=/home/a b/.config/docker/daemon.json'",
            "nvidia-ctk runtime configure --runtime=docker "
            "'--config=/home/a b/.config/docker/daemon.json'",
            id="rootless-quoted",
        ),
        pytest.param(
            CreateCharLinks(),
            "sudo ctk system create-dev-char-symlinks",
            "sudo nvidia-ctk system create-dev-char-symlinks --create-all",
            id="char-links",
        ),
        pytest.param(
            CreateDeviceNodes(),
            "sudo ctk system create-device-nodes --control-devices",
            "sudo nvidia-ctk system create-device-nodes --control-devices --load-kernel-modules",
            id="device-nodes",
        ),
        pytest.param(
            GenerateSpec(output="/etc/cdi/nvidia.yaml"),
            "sudo ctk cdi generate --output=/etc/cdi/nvidia.yaml",
            "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
            id="generate-the-same-path",
        ),
        pytest.param(
            EnableRefresh(),
            "sudo systemctl enable --now ctk-cdi-refresh.path",
            "sudo systemctl enable --now nvidia-cdi-refresh.path",
            id="refresh-unit",
        ),
        pytest.param(
            ValidateSpec(path="/etc/cdi/x.yaml"),
            "ctk cdi validate /etc/cdi/x.yaml",
            None,
            id="validate-ctk-only",
        ),
        pytest.param(
            SetToolkitConfig(settings=(("nvidia-container-runtime.mode", "auto"),)),
            "sudo ctk config --in-place --set nvidia-container-runtime.mode=auto",
            "sudo nvidia-ctk config --in-place --set nvidia-container-runtime.mode=auto",
            id="toolkit-config",
        ),
        pytest.param(
            SetToolkitConfig(
                settings=(("nvidia-container-cli.no-cgroups", "true"),),
                config="/opt/nvidia/toolkit/config.toml",
            ),
            "sudo ctk config --in-place --set nvidia-container-cli.no-cgroups=true "
            "--config=/opt/nvidia/toolkit/config.toml",
            "sudo nvidia-ctk config --in-place --set nvidia-container-cli.no-cgroups=true "
            "--config=/opt/nvidia/toolkit/config.toml",
            id="toolkit-config-named",
        ),
        pytest.param(
            ToolkitConfigDefault(output="/etc/nvidia-container-runtime/config.toml"),
            "sudo ctk config default --output=/etc/nvidia-container-runtime/config.toml",
            "sudo nvidia-ctk config default --output=/etc/nvidia-container-runtime/config.toml",
            id="toolkit-config-default",
        ),
    ],
)
def test_command_line_per_tool(fix: Suggestion, ctk: str, nvidia_ctk: str | None) -> None:
    assert (command_line(fix, Tool.CTK), command_line(fix, Tool.NVIDIA_CTK)) == (ctk, nvidia_ctk)
