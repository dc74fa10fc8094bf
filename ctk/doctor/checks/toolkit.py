"""NVIDIA Container Toolkit checks (`toolkit.*`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ctk.doctor.checks.cdi_readers import cdi_readers, cdi_routes, gpu_specs, usable_gpu_specs
from ctk.doctor.checks.engine_config import engines_in_use
from ctk.doctor.facts import LDCONFIG_CANDIDATES, TOOLKIT_CONFIG, NodeFacts
from ctk.doctor.fixes import (
    ConfigureRuntime,
    GenerateSpec,
    SetToolkitConfig,
    ToolkitConfigDefault,
)
from ctk.doctor.model import (
    HOST_ONLY,
    Evidence,
    Result,
    Severity,
    check,
    fail,
    ok,
    skip,
    unknown,
    warn,
)
from ctk.runtime_config.engines import Runtime

INSTALL_GUIDE = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
)
CDI_SUPPORT = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
)
MODES = frozenset({"auto", "legacy", "cdi", "jit-cdi", "csv"})
TOOLKIT_BINARIES = ("nvidia-container-runtime", "nvidia-ctk", "nvidia-container-cli")
TOOLKIT_PACKAGES = (
    "nvidia-container-toolkit",
    "nvidia-container-toolkit-base",
    "libnvidia-container-tools",
    "libnvidia-container1",
)
LIB_PACKAGES = ("libnvidia-container1", "libnvidia-container-tools")
UPGRADE = (
    "sudo apt-get install -y --only-upgrade nvidia-container-toolkit "
    "nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"
)
CGROUP_V2_MINIMUM = (1, 8)
# (driver branch at or above which the rule applies, minimum libnvidia-container, why)
DRIVER_RULES: tuple[tuple[int, tuple[int, int], str], ...] = (
    (530, (1, 13), "drivers that split the GSP firmware into several files"),
    (545, (1, 14), "drivers that ship libnvidia-gpucomp.so"),
)


def package_version(text: str) -> tuple[int, ...] | None:
    """`1.17.8-1` or `1.7.0~rc.1-1` -> (1, 17, 8)."""
    match = re.match(r"(?:\d+:)?(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def toolkit_version(facts: NodeFacts) -> tuple[int, ...] | None:
    """The installed toolkit version from the package database."""
    for name in TOOLKIT_PACKAGES:
        if name in facts.toolkit.packages:
            return package_version(facts.toolkit.packages[name])
    return None


def libnvidia_container_version(facts: NodeFacts) -> tuple[int, ...] | None:
    """The libnvidia-container version from the package database."""
    for name in LIB_PACKAGES:
        if name in facts.toolkit.packages:
            return package_version(facts.toolkit.packages[name])
    return None


def config_table(facts: NodeFacts, name: str) -> Mapping[str, Any]:
    """A table of the toolkit's config.toml (empty when absent or broken)."""
    data = facts.toolkit.config.data or {}
    table = data.get(name, {})
    return table if isinstance(table, Mapping) else {}


def runtime_mode(facts: NodeFacts) -> str | None:
    """`nvidia-container-runtime.mode` (default `auto`), None when the toolkit is absent."""
    if not installed(facts):
        return None
    mode = config_table(facts, "nvidia-container-runtime").get("mode", "auto")
    return mode if isinstance(mode, str) else None


def set_config(facts: NodeFacts, *settings: tuple[str, str]) -> SetToolkitConfig:
    """The fix that sets ``settings`` in the toolkit config the doctor read."""
    path = facts.toolkit.config.path
    return SetToolkitConfig(settings=settings, config=None if path == TOOLKIT_CONFIG else path)


def installed(facts: NodeFacts) -> bool:
    """Whether any toolkit binary or package is present."""
    binaries = any(name in facts.toolkit.binaries for name in TOOLKIT_BINARIES)
    packages = any(name in facts.toolkit.packages for name in TOOLKIT_PACKAGES)
    return binaries or packages


def cdi_route(facts: NodeFacts) -> str | None:
    """How GPUs reach containers without the toolkit (a node ctk set up): a valid spec of kind
    nvidia.com/gpu whose hook programs exist, in a directory that a program reading CDI specs
    reads (an engine with CDI on, CRI-O, podman); None without one."""
    found = cdi_routes(facts)
    if not found:
        return None
    readers = [f"{reader.name}: {reader.evidence.value}" for reader, _ in found]
    specs = [s for s in usable_gpu_specs(facts) if any(s in read for _, read in found)]
    hooks = sorted({hook for spec in specs for hook in spec.hook_paths})
    return f"{specs[0].path} (hooks: {', '.join(hooks) or 'none'}; {', '.join(readers)})"


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


@check(
    "toolkit.not-installed",
    severity=Severity.ERROR,
    title="the NVIDIA Container Toolkit is installed",
    remedy="Install nvidia-container-toolkit from NVIDIA's repository, then configure the engine.",
    sources=(INSTALL_GUIDE,),
    where=HOST_ONLY,
)
def not_installed(facts: NodeFacts) -> Result:
    """No toolkit binary on the node and no toolkit package."""
    if installed(facts):
        version = toolkit_version(facts)
        shown = dotted(version) if version else "version unknown"
        found = (
            ", ".join(sorted(b for b in facts.toolkit.binaries if b.startswith("nvidia")))
            or "packages only"
        )
        return ok(f"toolkit installed ({shown}): {found}")
    route = cdi_route(facts)
    if route is not None:
        return ok(f"no NVIDIA Container Toolkit; GPUs reach containers through CDI: {route}")
    usable = usable_gpu_specs(facts)
    if usable and not cdi_readers(facts) and not any(e.installed for e in facts.engines.values()):
        return skip(
            f"no container engine is installed; {usable[0].path} is ready for one that reads "
            "CDI specs, which needs no toolkit"
        )
    return fail(
        "the NVIDIA Container Toolkit is not installed: no engine can inject GPUs",
        Evidence("/usr/bin", "no nvidia-container-runtime, nvidia-ctk or nvidia-container-cli"),
        Evidence("/var/lib/dpkg/status", "no nvidia-container-toolkit package"),
        commands=("sudo apt-get install -y nvidia-container-toolkit",),
    )


@check(
    "toolkit.legacy-nvidia-docker2",
    severity=Severity.WARNING,
    title="no deprecated nvidia-docker2 packages",
    remedy="Purge nvidia-docker2 and configure Docker with the toolkit.",
    sources=("https://github.com/NVIDIA/nvidia-docker",),
    where=HOST_ONLY,
)
def legacy_nvidia_docker2(facts: NodeFacts) -> Result:
    """nvidia-docker2 / the old nvidia-container-runtime package / the wrapper script."""
    evidence = [
        Evidence("/var/lib/dpkg/status", f"{name} {facts.toolkit.packages[name]}")
        for name in ("nvidia-docker2", "nvidia-container-runtime")
        if name in facts.toolkit.packages
    ]
    if "nvidia-docker" in facts.toolkit.binaries:
        evidence.append(Evidence(facts.toolkit.binaries["nvidia-docker"], "legacy wrapper"))
    if not evidence:
        return ok("no legacy nvidia-docker packages")
    return warn(
        "the deprecated nvidia-docker2 stack is still installed (archived project; upgrades "
        "from it often lose the nvidia runtime in daemon.json)",
        *evidence,
        commands=(
            "sudo apt-get purge -y nvidia-docker2",
            "sudo apt-get install -y nvidia-container-toolkit",
            "sudo systemctl restart docker",
        ),
        fixes=(ConfigureRuntime(runtime=Runtime.DOCKER),),
    )


@check(
    "toolkit.too-old",
    severity=Severity.ERROR,
    title="libnvidia-container is recent enough for this driver and host",
    remedy="Upgrade all toolkit packages together, then restart the engine.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/615",
        "https://github.com/NVIDIA/nvidia-docker/issues/1648",
        "https://github.com/NVIDIA/nvidia-docker/issues/1447",
    ),
    where=HOST_ONLY,
)
def too_old(facts: NodeFacts) -> Result:
    """Known cut-offs: cgroup v2 needs 1.8, newer driver layouts need 1.13/1.14."""
    version = libnvidia_container_version(facts)
    if version is None:
        return skip("libnvidia-container is not installed (or its version is unknown)")
    reasons = []
    lib = facts.toolkit.packages.get("libnvidia-container1")
    tools = facts.toolkit.packages.get("libnvidia-container-tools")
    if lib and tools and package_version(lib) != package_version(tools):
        reasons.append(f"libnvidia-container1 {lib} and -tools {tools} differ")
    if facts.kernel.cgroup_version == 2 and version < CGROUP_V2_MINIMUM:
        reasons.append(f"cgroup v2 needs >= {dotted(CGROUP_V2_MINIMUM)}")
    branch = int((facts.kernel.driver_version or "0").split(".")[0] or 0)
    for driver, minimum, why in DRIVER_RULES:
        if branch >= driver and version < minimum:
            reasons.append(f"{why} need >= {dotted(minimum)}")
    if not reasons:
        return ok(f"libnvidia-container {dotted(version)}")
    return fail(
        f"libnvidia-container {dotted(version)} is too old: " + "; ".join(reasons),
        Evidence("/var/lib/dpkg/status", f"libnvidia-container {dotted(version)}"),
        Evidence("/proc/driver/nvidia/version", facts.kernel.driver_version or "no driver"),
        commands=(UPGRADE,),
    )


@check(
    "toolkit.config-invalid",
    severity=Severity.ERROR,
    title="the toolkit's config.toml parses and has valid values",
    remedy="Fix the reported line, or write a fresh default config.",
    sources=("https://github.com/NVIDIA/nvidia-container-toolkit",),
    where=HOST_ONLY,
)
def config_invalid(facts: NodeFacts) -> Result:
    """TOML errors (line, column) or an unknown `nvidia-container-runtime.mode`."""
    config = facts.toolkit.config
    if not config.exists:
        return skip(f"{config.path} does not exist (defaults apply)")
    if config.needs_root:
        return unknown(f"{config.path} is not readable without root", needs_root=True)
    if config.error is not None:
        return fail(
            f"{config.path} does not parse: {config.error}",
            Evidence(config.path, config.error),
            fixes=(ToolkitConfigDefault(output=config.path),),
        )
    mode = config_table(facts, "nvidia-container-runtime").get("mode", "auto")
    if mode not in MODES:
        return fail(
            f"{config.path}: nvidia-container-runtime.mode = {mode!r} is not one of "
            + ", ".join(sorted(MODES)),
            Evidence(config.path, f"mode = {mode!r}"),
            fixes=(set_config(facts, ("nvidia-container-runtime.mode", "auto")),),
        )
    return ok(f"{config.path} is valid (mode {mode})")


@check(
    "toolkit.ldconfig-path",
    severity=Severity.ERROR,
    title="the configured ldconfig binary exists",
    remedy="Point nvidia-container-cli.ldconfig at the host's ldconfig.",
    sources=("https://github.com/NVIDIA/nvidia-docker/issues/587",),
    depends_on=("toolkit.config-invalid",),
    where=HOST_ONLY,
)
def ldconfig_path(facts: NodeFacts) -> Result:
    """`@/sbin/ldconfig.real` on a distribution that has no such file."""
    value = config_table(facts, "nvidia-container-cli").get("ldconfig")
    if not isinstance(value, str):
        return skip("no ldconfig setting in the toolkit config")
    path = value.lstrip("@")
    if path in facts.toolkit.existing_paths:
        return ok(f"ldconfig {value} exists")
    found = next((p for p in LDCONFIG_CANDIDATES if p in facts.toolkit.existing_paths), None)
    fixes = (set_config(facts, ("nvidia-container-cli.ldconfig", f"@{found}")),) if found else ()
    notes = (
        ()
        if found
        else (
            "no ldconfig in /sbin or /usr/sbin: install the C library's ldconfig, then set "
            "nvidia-container-cli.ldconfig to @ and its path",
        )
    )
    return fail(
        f"the toolkit runs ldconfig from {path}, which does not exist: containers fail with "
        f"'ldcache error: open failed: {path}: no such file or directory'",
        Evidence(facts.toolkit.config.path, f'ldconfig = "{value}"'),
        Evidence(path, "missing"),
        fixes=fixes,
        notes=notes,
    )


@check(
    "toolkit.mode-mismatch",
    severity=Severity.WARNING,
    title="the runtime mode fits the node",
    remedy="Generate the CDI spec before using mode cdi, or go back to mode auto.",
    sources=(CDI_SUPPORT,),
    depends_on=("toolkit.config-invalid",),
    where=HOST_ONLY,
)
def mode_mismatch(facts: NodeFacts) -> Result:
    """Mode `cdi` without an nvidia.com/gpu spec fails every container start."""
    mode = runtime_mode(facts)
    if mode is None:
        return skip("the toolkit is not installed")
    has_spec = bool(gpu_specs(facts))
    if mode == "cdi" and not has_spec:
        return warn(
            "the toolkit is in mode cdi but no nvidia.com/gpu CDI spec exists: every GPU "
            "container fails with 'unresolvable CDI devices'",
            Evidence(facts.toolkit.config.path, 'mode = "cdi"'),
            Evidence(", ".join(facts.cdi.dirs), "no nvidia.com/gpu spec"),
            fixes=(GenerateSpec(),),
            notes=(
                'or leave CDI mode: set nvidia-container-runtime.mode = "auto" in '
                f"{facts.toolkit.config.path or TOOLKIT_CONFIG}",
            ),
        )
    if mode == "csv" and facts.kernel.gpus:
        return warn(
            "the toolkit is in mode csv (Tegra only) on a host with discrete GPUs",
            Evidence(facts.toolkit.config.path, 'mode = "csv"'),
            fixes=(set_config(facts, ("nvidia-container-runtime.mode", "auto")),),
        )
    return ok(f"mode {mode}")


@check(
    "toolkit.rootless-no-cgroups",
    severity=Severity.ERROR,
    title="rootless engines run the toolkit with no-cgroups",
    remedy="Set nvidia-container-cli.no-cgroups = true, or use CDI.",
    sources=(INSTALL_GUIDE, "https://github.com/NVIDIA/nvidia-container-toolkit/issues/1487"),
    depends_on=("toolkit.config-invalid",),
    where=HOST_ONLY,
)
def rootless_no_cgroups(facts: NodeFacts) -> Result:
    """`bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted`."""
    if facts.docker_rootless is None:
        return skip("no rootless engine found")
    if runtime_mode(facts) in (None, "cdi"):
        return ok("no legacy injection (toolkit absent or mode cdi)")
    if config_table(facts, "nvidia-container-cli").get("no-cgroups") is True:
        return ok("no-cgroups = true")
    return fail(
        "a rootless Docker daemon is configured but the toolkit still programs device "
        "cgroups: containers fail with 'bpf_prog_query(BPF_CGROUP_DEVICE) failed'",
        Evidence(facts.docker_rootless.config_path, "rootless Docker"),
        Evidence(facts.toolkit.config.path or TOOLKIT_CONFIG, "no-cgroups is not true"),
        fixes=(set_config(facts, ("nvidia-container-cli.no-cgroups", "true")),),
    )


@check(
    "toolkit.conflicting-oci-hook",
    severity=Severity.WARNING,
    title="no leftover OCI hook alongside CDI",
    remedy="Remove the old oci-nvidia-hook.json.",
    sources=(CDI_SUPPORT,),
    where=HOST_ONLY,
)
def conflicting_oci_hook(facts: NodeFacts) -> Result:
    """The old hook plus CDI injects the devices twice."""
    has_spec = bool(gpu_specs(facts))
    if not facts.toolkit.oci_hooks or not has_spec:
        return ok("no OCI hook competing with CDI")
    return warn(
        "an old NVIDIA OCI hook is installed next to a CDI spec: devices are injected twice",
        *(Evidence(path, "present") for path in facts.toolkit.oci_hooks),
        commands=tuple(f"sudo rm {path}" for path in facts.toolkit.oci_hooks),
    )


@check(
    "toolkit.security-outdated",
    severity=Severity.WARNING,
    title="the toolkit has the fixes for published container escapes",
    remedy="Upgrade all toolkit packages, then restart the engines.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/934",
        "https://nvidia.custhelp.com/app/answers/detail/a_id/5659",
    ),
    where=HOST_ONLY,
)
def security_outdated(facts: NodeFacts) -> Result:
    """Toolkit version below the fix of a CVE in `ctk/data/toolkit-cves.csv`."""
    version = toolkit_version(facts)
    if version is None:
        return skip("the toolkit version is unknown")
    open_cves = [a for a in facts.advisories if version < a.fixed]
    if not open_cves:
        return ok(f"toolkit {dotted(version)} has every published fix")
    return warn(
        f"toolkit {dotted(version)} is affected by "
        + ", ".join(a.cve for a in open_cves)
        + " (container escape)",
        *(
            Evidence(
                a.cve,
                f"{a.summary}; fixed in {dotted(a.fixed)}"
                + ("" if a.verified else " (fixed version from secondary reports)"),
            )
            for a in open_cves
        ),
        commands=(UPGRADE,),
        notes=("then restart the container engines you use (docker, containerd, crio)",),
    )


@check(
    "toolkit.unprivileged-envvar-accepted",
    severity=Severity.WARNING,
    title="unprivileged containers cannot take GPUs through NVIDIA_VISIBLE_DEVICES",
    remedy="Refuse the env var from unprivileged containers; allocate by volume mounts or CDI.",
    sources=("https://github.com/NVIDIA/k8s-device-plugin/issues/61",),
    depends_on=("toolkit.config-invalid",),
    where=HOST_ONLY,
)
def unprivileged_envvar_accepted(facts: NodeFacts) -> Result:
    """nvidia as default runtime + the env var accepted = any container can take every GPU."""
    if runtime_mode(facts) is None:
        return skip("the toolkit is not installed")
    data = facts.toolkit.config.data or {}
    accepted = data.get("accept-nvidia-visible-devices-envvar-when-unprivileged", True)
    defaults = [e for e in engines_in_use(facts).values() if e.default_runtime == "nvidia"]
    if accepted is not True or not defaults:
        return ok("the env var is refused, or nvidia is no engine's default runtime")
    return warn(
        "nvidia is the default runtime and unprivileged containers may set "
        "NVIDIA_VISIBLE_DEVICES: any container can take every GPU, bypassing the scheduler",
        Evidence(
            facts.toolkit.config.path or TOOLKIT_CONFIG,
            "accept-nvidia-visible-devices-envvar-when-unprivileged = true (default)",
        ),
        *(Evidence(e.config_path, "default runtime nvidia") for e in defaults),
        fixes=(
            set_config(
                facts,
                ("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),
                ("accept-nvidia-visible-devices-as-volume-mounts", "true"),
            ),
        ),
    )
