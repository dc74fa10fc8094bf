"""What the container engine checks (`docker`, `containerd`, `crio` modules) share."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from ctk.doctor.checks.installers import restart_operator_toolkit
from ctk.doctor.facts import EngineFacts, NodeFacts, RuntimeEntry
from ctk.doctor.fixes import ConfigureRuntime
from ctk.doctor.model import (
    Evidence,
    Result,
    fail,
    skip,
    unknown,
)
from ctk.runtime_config.engines import CDI_SPEC_DIRS, Runtime


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
    where = runtime.source or where  # a drop-in that defines it, where one does
    if runtime.binary and not runtime.binary_exists:
        return None, [Evidence(where, f"nvidia runtime binary {runtime.binary} is missing")]
    return runtime, [Evidence(where, f"nvidia -> {runtime.binary or 'default binary'}")]


OPERATOR_TOOLKIT_DIR: Final = "/usr/local/nvidia/toolkit/"
"""Where the GPU Operator's toolkit DaemonSet installs the runtime on the host."""


def runtime_binary_missing(
    engine: EngineFacts, restart: str, *, facts: NodeFacts | None = None
) -> Result | None:
    """The fail result when the engine names an nvidia runtime whose binary is gone.

    A binary of the GPU Operator's (`/usr/local/nvidia/toolkit/`) comes back when its toolkit
    DaemonSet runs again, which also restarts the engine; a package's from the package."""
    runtime = engine.runtimes.get("nvidia")
    if runtime is None or not runtime.binary or runtime.binary_exists:
        return None
    where = runtime.source or engine.config_path or engine.engine
    summary = (
        f"{where} names the nvidia runtime {runtime.binary}, which does not exist: GPU "
        "containers fail to start"
    )
    evidence = Evidence(where, f"nvidia -> {runtime.binary} (missing)")
    if runtime.binary.startswith(OPERATOR_TOOLKIT_DIR):
        node = facts.kubernetes if facts is not None else None
        return fail(
            summary,
            evidence,
            commands=(restart_operator_toolkit(node if isinstance(node, Mapping) else None),),
            notes=(
                "the GPU Operator's toolkit DaemonSet installs it: look at its pod on this node "
                "(kubectl get pods -o wide) and its log",
            ),
        )
    return fail(
        summary,
        evidence,
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


CDI_DEFAULT_SINCE: Final[Mapping[Runtime, tuple[int, int]]] = {
    Runtime.DOCKER: (28, 2),
    Runtime.CONTAINERD: (2, 0),
}
"""The first release of each engine that reads CDI specs unless its config turns CDI off:
dockerd 28.2.0 (a `features.cdi` that is absent counts as on), containerd 2.0.0 (its CRI plugin's
`enable_cdi` defaults to true; 1.7 and older default to false). CRI-O always reads them."""

CDI_SINCE: Final[Mapping[Runtime, tuple[int, int]]] = {
    Runtime.DOCKER: (25, 0),
    Runtime.CONTAINERD: (1, 7),
}
"""The first release of each engine with CDI support at all. Measured on the real daemons
(tests/doctor/test_engine_facts_real.py): dockerd 20.10 takes `features.cdi` silently and does
nothing with it (its client refuses `--device vendor.com/class=name`: 'is not an absolute path'),
and refuses to start on a daemon.json with `cdi-spec-dirs` ('the following directives don't match
any configuration option'); containerd 1.6 accepts `enable_cdi` and ignores it. CRI-O: every
release ctk supports reads CDI specs."""

CONFIG_SETTING: Final[Mapping[Runtime, str | None]] = {
    Runtime.DOCKER: "features.cdi",
    Runtime.CONTAINERD: "enable_cdi",
    Runtime.CRIO: None,
}
"""The config setting that turns an engine's CDI support on; None: it always reads CDI specs."""


def major_minor(version: str | None) -> tuple[int, int] | None:
    """An engine version's major and minor (None: no version, or not one)."""
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return None if match is None else (int(match[1]), int(match[2]))


def cdi_default_on(runtime: Runtime, engine: EngineFacts) -> str | None:
    """Why this engine's version reads CDI specs when its config does not say (None: it does not,
    or its version is unknown). containerd's config version 3 exists only from containerd 2.0."""
    since = CDI_DEFAULT_SINCE.get(runtime)
    if since is None:
        return None
    first = ".".join(map(str, since))
    release = major_minor(engine.version)
    if release is not None:
        if release < since:
            return None
        return f"{engine.engine} {engine.version}: CDI on by default since {first}"
    if runtime is Runtime.CONTAINERD and engine.config_version == 3:
        return f"config version 3 (containerd 2.x): CDI on by default since {first}"
    return None


def cdi_unsupported(runtime: Runtime, engine: EngineFacts) -> str | None:
    """Why this engine's version cannot read CDI specs whatever its config says (None: it can,
    or its version is unknown)."""
    since = CDI_SINCE.get(runtime)
    release = major_minor(engine.version)
    if since is None or release is None or release >= since:
        return None
    first = ".".join(map(str, since))
    return f"{engine.engine} {engine.version} has no CDI support (it came in {first})"


def cdi_on(runtime: Runtime, engine: EngineFacts) -> bool:
    """Whether the engine reads CDI specs: its config's setting, else its version's default;
    never where its version has no CDI support; always for an engine without a setting (CRI-O)."""
    if CONFIG_SETTING[runtime] is None:
        return True
    if cdi_unsupported(runtime, engine) is not None:
        return False
    if engine.cdi_enabled is not None:
        return engine.cdi_enabled
    return cdi_default_on(runtime, engine) is not None


def cdi_setting(runtime: Runtime, engine: EngineFacts) -> str:
    """The evidence for `cdi_on`: the config's setting, or the version's default."""
    setting = CONFIG_SETTING[runtime]
    if setting is None:
        return f"{engine.engine} always reads CDI specs"
    unsupported = cdi_unsupported(runtime, engine)
    if unsupported is not None:
        return unsupported
    if engine.cdi_enabled is not None:
        return f"{setting} = {str(engine.cdi_enabled).lower()}"
    return cdi_default_on(runtime, engine) or f"{setting} not set"


def spec_dirs(engine: EngineFacts) -> tuple[str, ...]:
    """The directories the engine reads CDI spec files from (whether it reads any: `cdi_on`):
    the config's list where set, else the defaults; an entry "" names no directory.

    A list that is set replaces the defaults, and an empty one (or one of "" only) names no
    directory at all: CDI device requests then fail. Measured on every engine, the same
    (tests/doctor/test_engine_facts_real.py, test_cri_facts_real.py): dockerd 26 and 28 ('no CDI
    specification directories specified'), containerd 1.7 and 2.1 and CRI-O 1.36 ('unresolvable
    CDI devices' for a spec in /etc/cdi or /var/run/cdi, while their CRI status lists
    `cdiSpecDirs: []`)."""
    dirs = engine.cdi_spec_dirs
    if dirs is None:
        release = major_minor(engine.version)
        user = release is not None and release >= USER_CDI_DIRS_SINCE
        return (*CDI_SPEC_DIRS, *(engine.user_cdi_dirs if user else ()))
    return tuple(d for d in dirs if d)


USER_CDI_DIRS_SINCE: Final = (29, 2)
"""The first dockerd that reads a rootless daemon's own CDI directories ($XDG_CONFIG_HOME/cdi,
$XDG_RUNTIME_DIR/cdi) after the defaults (moby cd4397b, in docker-v29.2.0); before, a rootless
dockerd reads /etc/cdi and /var/run/cdi only."""
