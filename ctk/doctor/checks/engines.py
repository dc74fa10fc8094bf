"""Container engine checks (`docker.*`, `containerd.*`, `crio.*`)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from ctk.doctor.checks.mig import kube
from ctk.doctor.checks.toolkit import INSTALL_GUIDE, runtime_mode
from ctk.doctor.facts import EngineFacts, NodeFacts, RuntimeEntry, Unavailable
from ctk.doctor.fixes import ConfigureRuntime
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
from ctk.errors import CtkError
from ctk.runtime_config import imports as containerd_imports
from ctk.runtime_config.engines import Runtime

CONTAINERD_DROP_IN_DIR = "/etc/containerd/conf.d"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"


def _configure(
    engine: str, *, set_as_default: bool = False, enable_cdi: bool = False
) -> ConfigureRuntime:
    return ConfigureRuntime(
        runtime=Runtime(engine), set_as_default=set_as_default, enable_cdi=enable_cdi
    )


def _not_installed(engine: EngineFacts) -> Result | None:
    if not engine.installed:
        return skip(f"{engine.engine} is not installed")
    if engine.needs_root:
        path = engine.root_only or engine.config_path
        return unknown(f"{path} is not readable without root", needs_root=True)
    if engine.error is not None:
        return skip(f"{engine.config_path} does not parse (see its config check)")
    return None


def _nvidia_runtime(engine: EngineFacts) -> tuple[RuntimeEntry | None, list[Evidence]]:
    runtime = engine.runtimes.get("nvidia")
    where = engine.config_path or engine.engine
    if runtime is None:
        names = ", ".join(sorted(engine.runtimes)) or "none"
        return None, [Evidence(where, f"runtimes: {names} (no nvidia)")]
    if runtime.binary and not runtime.binary_exists:
        return None, [Evidence(where, f"nvidia runtime binary {runtime.binary} is missing")]
    return runtime, [Evidence(where, f"nvidia -> {runtime.binary or 'default binary'}")]


def _binary_missing(engine: EngineFacts, restart: str) -> Result | None:
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


def _toml_bool(value: bool | None) -> str:
    return "true" if value else "false"


def containerd_unused(facts: NodeFacts) -> Result | None:
    """Skip containerd's GPU checks where it only serves Docker (CRI off, or no Kubernetes)."""
    containerd = facts.containerd
    if not containerd.installed:
        return skip("containerd is not installed")
    if containerd.cri_disabled:
        return skip("containerd's CRI plugin is disabled: it only serves Docker")
    if facts.docker.installed and not facts.kubelet and containerd.managed_by is None:
        return skip("containerd serves Docker here (no kubelet): see the docker checks")
    return None


def docker_cgroup_driver(facts: NodeFacts) -> str:
    """Docker's cgroup driver: `exec-opts`, else systemd on cgroup v2 + systemd, else cgroupfs."""
    if facts.docker.cgroup_driver:
        return facts.docker.cgroup_driver
    if facts.kernel.cgroup_version == 2 and facts.kernel.systemd_init:
        return "systemd"
    return "cgroupfs"


@check(
    "docker.daemon-json-invalid",
    severity=Severity.ERROR,
    title="/etc/docker/daemon.json parses",
    remedy="Fix the reported line; dockerd refuses to start with a broken daemon.json.",
    sources=("https://docs.docker.com/engine/daemon/",),
    where=HOST_ONLY,
)
def daemon_json_invalid(facts: NodeFacts) -> Result:
    """Trailing commas and friends: dockerd will not start."""
    docker = facts.docker
    blocked = _not_installed(docker)
    if blocked is not None and docker.error is None:
        return blocked
    if docker.error is None:
        state = "valid" if docker.config_exists else "absent (defaults apply)"
        return ok(f"{docker.config_path} {state}")
    return fail(
        f"{docker.config_path} does not parse: {docker.error}",
        Evidence(docker.config_path, docker.error),
        commands=(f"sudo dockerd --validate --config-file {docker.config_path}",),
    )


@check(
    "docker.snap",
    severity=Severity.ERROR,
    title="Docker is not the snap package",
    remedy="Remove the Docker snap and install Docker Engine from Docker's repository.",
    sources=(
        "https://github.com/canonical/docker-snap/issues/148",
        "https://github.com/NVIDIA/nvidia-docker/issues/1637",
    ),
    where=HOST_ONLY,
)
def docker_snap(facts: NodeFacts) -> Result:
    """Snap confinement hides the host's driver libraries and the toolkit."""
    if not facts.docker_snap:
        return ok("Docker is not a snap")
    return fail(
        "Docker is installed as a snap: its confinement hides the host driver libraries and "
        "the NVIDIA runtime",
        Evidence("/snap/bin/docker", "present"),
        commands=("sudo snap remove docker",),
        notes=("then install Docker Engine from Docker's repository (download.docker.com)",),
    )


@check(
    "docker.runtime-not-configured",
    severity=Severity.ERROR,
    title="Docker has the nvidia runtime",
    remedy="Add the nvidia runtime to daemon.json and restart Docker.",
    sources=(
        "https://github.com/NVIDIA/nvidia-docker/issues/1243",
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/522",
        INSTALL_GUIDE,
    ),
    depends_on=("toolkit.not-installed", "docker.daemon-json-invalid", "docker.snap"),
    where=HOST_ONLY,
)
def docker_runtime(facts: NodeFacts) -> Result:
    """`unknown or invalid runtime name: nvidia` / `could not select device driver ""`."""
    blocked = _not_installed(facts.docker)
    if blocked is not None:
        return blocked
    runtime, evidence = _nvidia_runtime(facts.docker)
    if runtime is not None:
        default = facts.docker.default_runtime or "runc"
        return ok(f"nvidia runtime configured (default runtime {default})", *evidence)
    missing = _binary_missing(facts.docker, "sudo systemctl restart docker")
    if missing is not None:
        return missing
    if facts.docker.cdi_enabled:
        # CDI-only Docker (25+): `--device nvidia.com/gpu=...` needs no nvidia runtime; the spec
        # itself is cdi.spec-missing's business (Docker's CDI counts as a consumer there)
        return ok(
            "no nvidia runtime, but CDI is enabled: GPUs come with --device nvidia.com/gpu=...",
            Evidence(facts.docker.config_path, "features.cdi = true"),
        )
    return fail(
        "Docker has no usable nvidia runtime: `docker run --runtime=nvidia` fails with "
        "'unknown or invalid runtime name: nvidia'",
        *evidence,
        commands=("sudo systemctl restart docker",),
        fixes=(_configure("docker"),),
    )


@check(
    "docker.rootless-config",
    severity=Severity.ERROR,
    title="rootless Docker's own daemon.json has the nvidia runtime",
    remedy="Configure the user's daemon.json and restart the user's Docker.",
    sources=(INSTALL_GUIDE,),
    depends_on=("toolkit.not-installed",),
    where=HOST_ONLY,
)
def rootless_config(facts: NodeFacts) -> Result:
    """The system-wide daemon.json does not apply to rootless daemons."""
    rootless = facts.docker_rootless
    if rootless is None:
        return skip("no rootless Docker found")
    runtime, evidence = _nvidia_runtime(rootless)
    if runtime is not None and rootless.error is None:
        return ok("rootless daemon.json has the nvidia runtime", *evidence)
    if rootless.error is not None:
        evidence = [Evidence(rootless.config_path, rootless.error)]
    return fail(
        f"rootless Docker reads {rootless.config_path}, which has no nvidia runtime",
        *evidence,
        commands=("systemctl --user restart docker",),
        fixes=(ConfigureRuntime(runtime=Runtime.DOCKER, config=rootless.config_path, user=True),),
    )


def _cdi_wanted(facts: NodeFacts) -> bool:
    return runtime_mode(facts) == "cdi"


@check(
    "docker.cdi-not-enabled",
    severity=Severity.WARNING,
    title="Docker has CDI enabled where CDI is used",
    remedy="Enable CDI in daemon.json (features.cdi) and restart Docker.",
    sources=("https://github.com/cncf-tags/container-device-interface/issues/84",),
    depends_on=("docker.runtime-not-configured",),
    where=HOST_ONLY,
)
def docker_cdi(facts: NodeFacts) -> Result:
    """`--device nvidia.com/gpu=...` needs Docker 25+ with CDI switched on."""
    blocked = _not_installed(facts.docker)
    if blocked is not None:
        return blocked
    if not _cdi_wanted(facts):
        return ok("CDI is not required (toolkit mode is not cdi)")
    if facts.docker.cdi_enabled:
        return ok("CDI enabled in daemon.json")
    return warn(
        "the toolkit uses CDI but Docker's CDI support is off: `--device nvidia.com/gpu=...` "
        "fails with 'could not select device driver \"cdi\"'",
        Evidence(facts.docker.config_path, "features.cdi not true"),
        commands=("sudo systemctl restart docker",),
        fixes=(_configure("docker", enable_cdi=True),),
    )


@check(
    "docker.cgroup-driver",
    severity=Severity.INFO,
    title="Docker's cgroup driver",
    remedy="Informational: the systemd driver needs /dev/char links or CDI.",
    sources=("https://github.com/NVIDIA/nvidia-container-toolkit/issues/48",),
    depends_on=("docker.daemon-json-invalid",),
    where=HOST_ONLY,
)
def docker_cgroup(facts: NodeFacts) -> Result:
    """Reports the cgroup driver and cgroup version."""
    blocked = _not_installed(facts.docker)
    if blocked is not None:
        return blocked
    driver = docker_cgroup_driver(facts)
    source = "exec-opts" if facts.docker.cgroup_driver else "default"
    return ok(
        f"cgroup driver {driver} ({source}), cgroup v{facts.kernel.cgroup_version}",
        Evidence(facts.docker.config_path, f"native.cgroupdriver={driver} ({source})"),
    )


def _imported(config: str, entries: tuple[str, ...], path: str) -> bool:
    """Whether containerd loads ``path`` through ``entries`` (Go's glob: `*` stops at `/`)."""
    try:
        return containerd_imports.imported(config, entries, path)
    except CtkError:  # a malformed pattern: containerd refuses to start, and loads nothing
        return False


@check(
    "containerd.drop-in-not-imported",
    severity=Severity.ERROR,
    title="containerd imports the NVIDIA drop-in",
    remedy="Add the conf.d glob to imports in config.toml (or rerun runtime configure).",
    sources=("https://github.com/NVIDIA/nvidia-container-toolkit/blob/main/CHANGELOG.md",),
    where=HOST_ONLY,
)
def drop_in_not_imported(facts: NodeFacts) -> Result:
    """A regenerated config.toml lost its `imports`, and the drop-in silently vanished.

    A finding on any node with containerd, also where it serves only Docker: someone wrote the
    drop-in for containerd, which never reads it (an error where a kubelet relies on containerd).
    """
    containerd = facts.containerd
    if not containerd.installed:
        return skip("containerd is not installed")
    if containerd.needs_root:
        path = containerd.root_only or containerd.config_path
        return unknown(
            f"{path} is not readable without root: containerd's imports are unknown",
            needs_root=True,
        )
    if containerd.error is not None:
        # unparseable: its imports are unknown, and the parse error (reported by
        # containerd.runtime-not-configured) is the root cause, with no fix to offer here
        return skip(
            f"{containerd.config_path} does not parse (see containerd.runtime-not-configured)"
        )
    if not containerd.drop_ins:
        return skip("no containerd drop-in files")
    orphans = [
        path
        for path in containerd.drop_ins
        if not _imported(containerd.config_path, containerd.imports, path)
    ]
    if not orphans:
        return ok(f"{len(containerd.drop_ins)} drop-in(s) imported")
    imports = ", ".join(containerd.imports) or "none"
    summary = (
        f"containerd ignores {', '.join(orphans)}: {containerd.config_path} does not import it"
    )
    evidence = (
        Evidence(containerd.config_path, f"imports: {imports}"),
        *(Evidence(path, "exists, not imported") for path in orphans),
    )
    commands = ("sudo systemctl restart containerd",)
    fixes = (_configure("containerd"),)
    if facts.kubelet:  # the kubelet's pods need what the drop-in says
        return fail(summary, *evidence, commands=commands, fixes=fixes)
    return warn(summary, *evidence, commands=commands, fixes=fixes, severity=Severity.WARNING)


@check(
    "containerd.runtime-not-configured",
    severity=Severity.ERROR,
    title="containerd has the nvidia runtime",
    remedy="Add the nvidia runtime to containerd's config and restart containerd.",
    sources=(
        "https://github.com/NVIDIA/gpu-operator/issues/413",
        "https://github.com/NVIDIA/k8s-device-plugin/issues/479",
    ),
    depends_on=("toolkit.not-installed",),
    where=HOST_ONLY,
)
def containerd_runtime(facts: NodeFacts) -> Result:
    """`no runtime for "nvidia" is configured`."""
    containerd = facts.containerd
    blocked = containerd_unused(facts) or _not_installed(containerd)
    if blocked is not None and containerd.error is None:
        return blocked
    if containerd.error is not None:
        return fail(
            f"{containerd.config_path} does not parse: {containerd.error}",
            Evidence(containerd.config_path, containerd.error),
            commands=(f"containerd --config {containerd.config_path} config dump",),
        )
    runtime, evidence = _nvidia_runtime(containerd)
    if runtime is not None:
        default = containerd.default_runtime or "runc"
        return ok(f"nvidia runtime configured (default runtime {default})", *evidence)
    missing = _binary_missing(containerd, "sudo systemctl restart containerd")
    if missing is not None:
        return missing
    return fail(
        "containerd has no usable nvidia runtime: pods fail with "
        "'no runtime for \"nvidia\" is configured'",
        *evidence,
        commands=("sudo systemctl restart containerd",),
        fixes=(_configure("containerd"),),
    )


@check(
    "containerd.systemd-cgroup-mismatch",
    severity=Severity.ERROR,
    title="the nvidia runtime uses the same cgroup driver as runc",
    remedy="Make nvidia's SystemdCgroup match runc's and kubelet's cgroup driver; restart.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/28",
        "https://github.com/k3s-io/k3s/issues/8470",
    ),
    depends_on=("containerd.runtime-not-configured",),
    where=HOST_ONLY,
)
def systemd_cgroup_mismatch(facts: NodeFacts) -> Result:
    """nvidia's SystemdCgroup differs from runc's, or from kubelet's cgroupDriver."""
    containerd = facts.containerd
    unused = containerd_unused(facts)
    if unused is not None:
        return unused
    nvidia = containerd.runtimes.get("nvidia")
    if nvidia is None:
        return skip("no nvidia runtime configured")
    want: list[Evidence] = []
    runc = containerd.runtimes.get("runc")
    if runc is not None and bool(runc.systemd_cgroup) != bool(nvidia.systemd_cgroup):
        want.append(
            Evidence(
                containerd.config_path, f"runc SystemdCgroup = {_toml_bool(runc.systemd_cgroup)}"
            )
        )
    kubelet = facts.kubelet_cgroup_driver
    if isinstance(kubelet, str) and (kubelet == "systemd") != bool(nvidia.systemd_cgroup):
        want.append(Evidence(KUBELET_CONFIG, f"cgroupDriver: {kubelet}"))
    nvidia_says = Evidence(
        containerd.config_path, f"nvidia SystemdCgroup = {_toml_bool(nvidia.systemd_cgroup)}"
    )
    if not want:
        if isinstance(kubelet, Unavailable) and runc is None:
            return unknown(
                f"kubelet's cgroup driver: {kubelet.reason}", needs_root=kubelet.needs_root
            )
        return ok(
            f"nvidia agrees with runc/kubelet: SystemdCgroup = {_toml_bool(nvidia.systemd_cgroup)}"
        )
    target = "false" if nvidia.systemd_cgroup else "true"
    commands: tuple[str, ...] = ("sudo systemctl restart containerd",)
    notes = (f"set SystemdCgroup = {target} under the nvidia runtime's options",)
    if any(e.source == KUBELET_CONFIG for e in want):
        commands = ("sudo systemctl restart containerd kubelet",)
        notes = (
            "make kubelet and containerd agree: cgroupDriver: systemd in "
            f"{KUBELET_CONFIG} (recommended under systemd), or SystemdCgroup = false for runc "
            "and nvidia",
        )
    return fail(
        "the nvidia runtime's SystemdCgroup differs from "
        + " and ".join("runc's" if e.source != KUBELET_CONFIG else "kubelet's" for e in want)
        + ": pods fail with 'expected cgroupsPath to be of format \"slice:prefix:name\"' or "
        "land in the wrong hierarchy",
        nvidia_says,
        *want,
        commands=commands,
        notes=notes,
    )


@check(
    "containerd.not-default-no-runtimeclass",
    severity=Severity.ERROR,
    title="Kubernetes pods can reach the nvidia runtime",
    remedy="Make nvidia the default runtime, or create a RuntimeClass with handler nvidia.",
    sources=("https://github.com/NVIDIA/k8s-device-plugin",),
    depends_on=("containerd.runtime-not-configured",),
    where=HOST_ONLY,
)
def not_default_no_runtimeclass(facts: NodeFacts) -> Result:
    """Neither default runtime nor a RuntimeClass: GPU pods run under runc."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    containerd = facts.containerd
    if containerd.default_runtime == "nvidia":
        return ok("nvidia is containerd's default runtime")
    handlers = set(node.get("runtimeclass_handlers", ()))
    if "nvidia" in handlers:
        return ok("a RuntimeClass has handler nvidia")
    return fail(
        "nvidia is neither containerd's default runtime nor the handler of a RuntimeClass: "
        "GPU pods run under runc and see no GPU",
        Evidence(containerd.config_path, f"default_runtime_name = {containerd.default_runtime}"),
        Evidence("RuntimeClasses", ", ".join(sorted(handlers)) or "none"),
        commands=("sudo systemctl restart containerd",),
        fixes=(_configure("containerd", set_as_default=True),),
        notes=("or create a RuntimeClass named nvidia with handler nvidia",),
    )


@check(
    "containerd.cdi-disabled",
    severity=Severity.WARNING,
    title="containerd's CDI support is on where CDI is used",
    remedy="Enable CDI in containerd's CRI plugin (containerd 1.7+), restart containerd.",
    sources=("https://github.com/kubernetes-sigs/kind/pull/3530",),
    depends_on=("containerd.runtime-not-configured",),
    where=HOST_ONLY,
)
def containerd_cdi(facts: NodeFacts) -> Result:
    """`cdi_spec_dirs` configured (or cdi-cri requested) but `enable_cdi` off."""
    containerd = facts.containerd
    unused = containerd_unused(facts)
    if unused is not None:
        return unused
    wanted = bool(containerd.cdi_spec_dirs) or bool(
        isinstance(facts.kubernetes, Mapping)
        and facts.kubernetes.get("device_list_strategy") == "cdi-cri"
    )
    if not wanted:
        return ok("native CDI is not requested")
    if containerd.cdi_enabled:
        return ok("enable_cdi = true")
    return warn(
        "containerd is set up for CDI (cdi_spec_dirs) but enable_cdi is not true",
        Evidence(containerd.config_path, "enable_cdi not true"),
        commands=("sudo systemctl restart containerd",),
        fixes=(_configure("containerd", enable_cdi=True),),
    )


@check(
    "containerd.managed-config",
    severity=Severity.INFO,
    title="containerd's config is not regenerated by a distribution",
    remedy="Edit config.toml.tmpl (k3s/RKE2) instead of config.toml; restart k3s.",
    sources=("https://docs.k3s.io/advanced",),
    where=HOST_ONLY,
)
def managed_config(facts: NodeFacts) -> Result:
    """k3s/RKE2 rewrite config.toml at every start."""
    managed = facts.containerd.managed_by
    if managed is None:
        return ok("containerd's config is not managed by k3s/RKE2")
    return warn(
        f"containerd's config is generated by {managed} at every start: edits to config.toml "
        "are lost",
        Evidence(facts.containerd.config_path, f"managed by {managed}"),
        commands=(f"sudo systemctl restart {managed}",),
        notes=(
            f"put custom settings in {posixpath.dirname(facts.containerd.config_path)}"
            "/config.toml.tmpl",
        ),
    )


@check(
    "crio.runtime-not-configured",
    severity=Severity.ERROR,
    title="CRI-O has the nvidia runtime",
    remedy="Add the nvidia runtime to CRI-O's configuration and restart CRI-O.",
    sources=(INSTALL_GUIDE,),
    depends_on=("toolkit.not-installed",),
    where=HOST_ONLY,
)
def crio_runtime(facts: NodeFacts) -> Result:
    """No `[crio.runtime.runtimes.nvidia]` and no OCI hook."""
    crio = facts.crio
    blocked = _not_installed(crio)
    if blocked is not None and crio.error is None:
        return blocked
    if crio.error is not None:
        return fail(
            f"{crio.config_path} does not parse: {crio.error}",
            Evidence(crio.config_path, crio.error),
        )
    runtime, evidence = _nvidia_runtime(crio)
    if runtime is not None:
        return ok("nvidia runtime configured", *evidence)
    missing = _binary_missing(crio, "sudo systemctl restart crio")
    if missing is not None:
        return missing
    if facts.toolkit.oci_hooks:
        return ok("the (deprecated) NVIDIA OCI hook is installed")
    return fail(
        "CRI-O has no usable nvidia runtime",
        *evidence,
        commands=("sudo systemctl restart crio",),
        fixes=(_configure("crio"),),
    )


K8S_DEVICE_PLUGIN = "https://github.com/NVIDIA/k8s-device-plugin"


@check(
    "k8s.runtimeclass-handler-missing",
    severity=Severity.ERROR,
    title="the node's runtime has the handler of the nvidia RuntimeClass",
    remedy="Add the nvidia runtime to the node's container runtime (containerd or CRI-O).",
    sources=("https://github.com/NVIDIA/gpu-operator/issues/413",),
    where=HOST_ONLY,
)
def runtimeclass_handler_missing(facts: NodeFacts) -> Result:
    """A RuntimeClass with handler nvidia, but neither containerd nor CRI-O defines it."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    if "nvidia" not in node.get("runtimeclass_handlers", ()):
        return skip("no RuntimeClass has handler nvidia")
    engines = [e for e in (facts.containerd, facts.crio) if e.installed and not e.error]
    if not engines:
        return skip("no containerd or CRI-O config to compare with")
    if any(_nvidia_runtime(engine)[0] is not None for engine in engines):
        return ok("a RuntimeClass has handler nvidia and the runtime defines it")
    first = engines[0]
    return fail(
        "a RuntimeClass sends pods to handler nvidia, which this node's runtime does not "
        "define: they fail with 'no runtime for \"nvidia\" is configured'",
        Evidence("RuntimeClasses", "handler nvidia"),
        *(_nvidia_runtime(engine)[1][0] for engine in engines),
        commands=(f"sudo systemctl restart {_service(first)}",),
        fixes=(_configure(_service(first)),),
    )


def _service(engine: EngineFacts) -> str:
    return "crio" if engine.engine == "crio" else "containerd"


@check(
    "k8s.gpu-not-allocatable",
    severity=Severity.ERROR,
    title="the node offers its GPUs to the scheduler (allocatable nvidia.com/gpu or mig-*)",
    remedy="Check the device plugin's pod and logs on this node (NVML errors, no devices).",
    sources=(K8S_DEVICE_PLUGIN, "https://github.com/NVIDIA/k8s-device-plugin/issues/479"),
    depends_on=("driver.not-loaded", "lib.nvml-not-found", "gpu.lost"),
    where=HOST_ONLY,
)
def gpu_not_allocatable(facts: NodeFacts) -> Result:
    """GPUs on the node, none in `status.allocatable`: GPU pods stay Pending."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    if "allocatable" not in node:
        return unknown("the API server did not return this node (no node name, or no access)")
    gpus = len(facts.kernel.gpus)
    if not gpus:
        return skip("the node has no GPU")
    offered = {k: v for k, v in node["allocatable"].items() if v not in ("0", "")}
    if offered:
        listed = ", ".join(f"{k}={v}" for k, v in sorted(offered.items()))
        return ok(f"allocatable: {listed}")
    return fail(
        f"the node has {gpus} GPU(s) but offers none to the scheduler: GPU pods stay Pending "
        "with 'Insufficient nvidia.com/gpu'",
        Evidence(f"node {node.get('node', '')}", "allocatable: no nvidia.com/gpu or mig-*"),
        Evidence("/proc/driver/nvidia/gpus", f"{gpus} GPU(s)"),
        notes=(
            "look at the device plugin pod on this node and its log (NVML errors, "
            "'No devices found', a MIG strategy error)",
        ),
    )
