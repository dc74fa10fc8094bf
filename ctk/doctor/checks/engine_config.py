"""What the container engine checks (`docker`, `containerd`, `crio` modules) share."""

from __future__ import annotations

from ctk.doctor.facts import EngineFacts, NodeFacts, RuntimeEntry
from ctk.doctor.fixes import ConfigureRuntime
from ctk.doctor.model import (
    Evidence,
    Result,
    fail,
    skip,
    unknown,
)
from ctk.runtime_config.engines import Runtime


def configure_fix(
    engine: str, *, set_as_default: bool = False, enable_cdi: bool = False
) -> ConfigureRuntime:
    return ConfigureRuntime(
        runtime=Runtime(engine), set_as_default=set_as_default, enable_cdi=enable_cdi
    )


def engine_not_installed(engine: EngineFacts) -> Result | None:
    if not engine.installed:
        return skip(f"{engine.engine} is not installed")
    if engine.needs_root:
        path = engine.root_only or engine.config_path
        return unknown(f"{path} is not readable without root", needs_root=True)
    if engine.error is not None:
        return skip(f"{engine.config_path} does not parse (see its config check)")
    return None


def nvidia_runtime_entry(engine: EngineFacts) -> tuple[RuntimeEntry | None, list[Evidence]]:
    runtime = engine.runtimes.get("nvidia")
    where = engine.config_path or engine.engine
    if runtime is None:
        names = ", ".join(sorted(engine.runtimes)) or "none"
        return None, [Evidence(where, f"runtimes: {names} (no nvidia)")]
    if runtime.binary and not runtime.binary_exists:
        return None, [Evidence(where, f"nvidia runtime binary {runtime.binary} is missing")]
    return runtime, [Evidence(where, f"nvidia -> {runtime.binary or 'default binary'}")]


def runtime_binary_missing(engine: EngineFacts, restart: str) -> Result | None:
    """The fail result when the engine names an nvidia runtime whose binary is gone."""
    runtime = engine.runtimes.get("nvidia")
    if runtime is None or not runtime.binary or runtime.binary_exists:
        return None
    return fail(
        f"{engine.config_path or engine.engine} names the nvidia runtime {runtime.binary}, which "
        "does not exist: GPU containers fail to start",
        Evidence(engine.config_path or engine.engine, f"nvidia -> {runtime.binary} (missing)"),
        commands=("sudo apt-get install -y nvidia-container-toolkit", restart),
        notes=("or point the runtime at the binary's real path",),
    )


def docker_cgroup_driver(facts: NodeFacts) -> str:
    """Docker's cgroup driver: `exec-opts`, else systemd on cgroup v2 + systemd, else cgroupfs."""
    configured = facts.engine(Runtime.DOCKER).cgroup_driver
    if configured:
        return configured
    if facts.kernel.cgroup_version == 2 and facts.kernel.systemd_init:
        return "systemd"
    return "cgroupfs"


def containerd_unused(facts: NodeFacts) -> Result | None:
    """Skip containerd's GPU checks where it only serves Docker (CRI off, or no Kubernetes)."""
    containerd = facts.engine(Runtime.CONTAINERD)
    if not containerd.installed:
        return skip("containerd is not installed")
    if containerd.cri_disabled:
        return skip("containerd's CRI plugin is disabled: it only serves Docker")
    if (
        facts.engine(Runtime.DOCKER).installed
        and not facts.kubelet
        and containerd.managed_by is None
    ):
        return skip("containerd serves Docker here (no kubelet): see the docker checks")
    return None


def engines_in_use(facts: NodeFacts) -> dict[Runtime, EngineFacts]:
    """The installed engines whose own config decides how their containers run: containerd only
    where its CRI plugin serves (`containerd_unused`), not where it runs Docker's containers."""
    return {
        runtime: engine
        for runtime, engine in facts.engines.items()
        if engine.installed
        and not (runtime is Runtime.CONTAINERD and containerd_unused(facts) is not None)
    }
