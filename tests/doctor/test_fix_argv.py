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


FIXES: list[Suggestion] = [
    ConfigureRuntime(runtime=Runtime.DOCKER),
    ConfigureRuntime(runtime=Runtime.CONTAINERD, set_as_default=True, enable_cdi=True),
    ConfigureRuntime(runtime=Runtime.CRIO),
    CreateCharLinks(),
    CreateDeviceNodes(),
    GenerateSpec(),
    GenerateSpec(output="/var/run/cdi/management.yaml", mode="management"),
    EnableRefresh(),
    SetToolkitConfig(settings=(("nvidia-container-runtime.mode", "cdi"),)),
    ToolkitConfigDefault(output="/etc/nvidia-container-runtime/config.toml"),
    ValidateSpec(path="/etc/cdi/nvidia.yaml"),
]


@pytest.mark.parametrize("fix", FIXES, ids=lambda f: type(f).__name__)
def test_a_remedy_under_a_root_acts_on_that_node(fix: Suggestion, tmp_path: Path) -> None:
    """`doctor --root R` prints, for each fix, the command that acts on the node under R (issue
    23, item 3): where --fix can apply it, exactly the line --fix runs (with sudo); where only
    the node itself can (a spec generated from outside would name R's paths), the node's command
    through chroot; never a bare command that, pasted in the debug pod, acts on the pod."""
    root = str(tmp_path)
    line = command_line(fix, Tool.CTK, root)
    assert line is not None
    applied = shown(fix, tmp_path) if not isinstance(fix, (EnableRefresh, ValidateSpec)) else None
    if applied is not None:
        assert line == f"sudo {applied}"
    else:  # not applied by --fix (refused, or a user's or the node's own command)
        words = line.split()
        assert root in line, line
        assert words[:3] == ["sudo", "chroot", root] or "ctk" in words[:2], line
    assert command_line(fix, Tool.CTK) == command_line(fix, Tool.CTK, "/")
    assert root not in (command_line(fix, Tool.CTK) or "")


def test_nvidia_ctk_commands_under_a_root_run_through_chroot(tmp_path: Path) -> None:
    line = command_line(ConfigureRuntime(runtime=Runtime.DOCKER), Tool.NVIDIA_CTK, str(tmp_path))
    assert line == f"sudo chroot {tmp_path} nvidia-ctk runtime configure --runtime=docker"


def test_a_spec_is_generated_on_the_node_itself(tmp_path: Path) -> None:
    assert command_line(GenerateSpec(), Tool.CTK, str(tmp_path)) == (
        f"sudo chroot {tmp_path} ctk cdi generate --output=/var/run/cdi/nvidia.yaml"
    )
    assert command_line(ValidateSpec(path="/etc/cdi/x.yaml"), Tool.CTK, str(tmp_path)) == (
        f"ctk cdi validate {tmp_path}/etc/cdi/x.yaml"
    )


def test_host_commands_in_a_container_say_so() -> None:
    """In a container the driver's, the GPUs' and /dev's commands are the host's to run."""
    from ctk.doctor.facts import NodeFacts
    from ctk.doctor.model import Where
    from ctk.doctor.run import diagnose

    note = "run the commands on the host, not in this container"
    for where, expected in ((Where.CONTAINER, True), (Where.POD, True), (Where.HOST, False)):
        [finding] = diagnose(NodeFacts(where=where), show=["driver.not-loaded"])
        assert finding.commands and finding.status.value == "fail", finding
        assert (note in finding.notes) is expected, (where, finding.notes)


def test_a_fix_calls_its_command_with_options_the_command_has() -> None:
    """`--fix` calls the command's function: an option it does not have (renamed since) is a
    bug caught here, never silently dropped (the management spec's --mode reaches generate)."""
    import inspect

    from ctk.cli import cdi
    from ctk.cli.doctor_fix import call, command_function

    generate = command_function(cdi.app, "generate")
    assert {"output", "mode"} <= set(inspect.signature(generate).parameters)
    with pytest.raises(AssertionError, match="takes no discovery_mode"):
        call(generate, output=Path("/nonexistent/x.yaml"), discovery_mode="management")
