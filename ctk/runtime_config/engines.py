"""The container engines ctk configures, and the facts that differ between them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from ctk.enums import StrEnum


class Runtime(StrEnum):
    """A container engine whose config ctk edits."""

    CONTAINERD = "containerd"
    DOCKER = "docker"
    CRIO = "crio"


@dataclass(frozen=True, slots=True, kw_only=True)
class Engine:
    """Where an engine keeps its config and how it is restarted."""

    config_path: PurePosixPath
    drop_in_path: PurePosixPath | None
    restart_command: str
    config_format: str
    editor: str  # the module whose EDITOR edits this format (see ctk.runtime_config.editor)


ENGINES: Final[Mapping[Runtime, Engine]] = {
    Runtime.CONTAINERD: Engine(
        config_path=PurePosixPath("/etc/containerd/config.toml"),
        drop_in_path=PurePosixPath("/etc/containerd/conf.d/99-nvidia.toml"),
        restart_command="systemctl restart containerd",
        config_format="TOML",
        editor="ctk.runtime_config.containerd",
    ),
    Runtime.DOCKER: Engine(
        config_path=PurePosixPath("/etc/docker/daemon.json"),
        drop_in_path=None,
        restart_command="systemctl restart docker",
        config_format="JSON",
        editor="ctk.runtime_config.docker",
    ),
    Runtime.CRIO: Engine(
        config_path=PurePosixPath("/etc/crio/crio.conf"),
        drop_in_path=PurePosixPath("/etc/crio/crio.conf.d/99-nvidia.toml"),
        restart_command="systemctl restart crio",
        config_format="TOML",
        editor="ctk.runtime_config.crio",
    ),
}

DEFAULT_RUNTIME_NAME: Final = "nvidia"
CDI_SPEC_DIRS: Final = ("/etc/cdi", "/var/run/cdi")
"""The spec directories CDI readers use when their config names none, lowest priority first."""
DEFAULT_RUNTIME_PATH: Final = "/usr/bin/nvidia-container-runtime"

# The CRI plugin table that holds runtimes, per containerd config version.
CONTAINERD_CRI_PLUGIN: Final[Mapping[int, str]] = {
    1: "cri",
    2: "io.containerd.grpc.v1.cri",
    3: "io.containerd.cri.v1.runtime",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeRequest:
    """What `ctk runtime configure` is asked to add."""

    name: str = DEFAULT_RUNTIME_NAME
    path: str = DEFAULT_RUNTIME_PATH
    set_as_default: bool = False
    enable_cdi: bool = False
