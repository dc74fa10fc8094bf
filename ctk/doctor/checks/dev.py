"""Device node checks (`dev.*`): `/dev/nvidia*`, `/dev/char` links, MIG capability nodes."""

from __future__ import annotations

from ctk.doctor.checks.mig import regenerate
from ctk.doctor.facts import DevFacts, EngineFacts, NodeFacts, NvmlAnswer
from ctk.doctor.fixes import CreateCharLinks, CreateDeviceNodes
from ctk.doctor.model import (
    HOST_ONLY,
    Evidence,
    Result,
    Severity,
    Where,
    check,
    fail,
    ok,
    skip,
    unknown,
    warn,
)
from ctk.node.dev import expected_nodes as node_rule
from ctk.node.nvml import MigMode, NvmlReturn
from ctk.runtime_config.engines import Runtime

NVIDIA_MAJOR = 195
TOOLKIT_TROUBLESHOOTING = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html"
)
JIT_CDI_VERSION = (1, 18)


def expected_nodes(facts: NodeFacts) -> dict[str, tuple[int, int]]:
    """Device node path -> (major, minor) the loaded driver implies."""
    minors = [gpu.minor for gpu in facts.kernel.gpus]
    if facts.where is not Where.HOST:  # a container gets only the GPUs it asked for
        minors = [minor for minor in minors if f"/dev/nvidia{minor}" in facts.dev.entries()]
    majors = facts.kernel.char_majors or {"nvidia-frontend": NVIDIA_MAJOR}  # /proc/devices unread
    return {str(node.path): (node.major, node.minor) for node in node_rule(majors, minors)}


def _describe(dev: DevFacts, path: str) -> str:
    node = dev.nodes.get(path)
    if node is not None:
        return f"char {node.major}:{node.minor}"
    return "not a character device" if path in dev.not_char else "missing"


@check(
    "dev.nodes-missing",
    severity=Severity.ERROR,
    title="/dev/nvidia* device nodes exist with the right numbers",
    remedy="Create the device nodes (system create-device-nodes, or nvidia-modprobe).",
    sources=(TOOLKIT_TROUBLESHOOTING,),
    depends_on=("driver.not-loaded", "container.no-gpu-attached"),
)
def nodes_missing(facts: NodeFacts) -> Result:
    """Each enumerated GPU needs `/dev/nvidiaN` (195:N), plus nvidiactl and nvidia-uvm."""
    wanted = expected_nodes(facts)
    bad = []
    for path, (major, minor) in sorted(wanted.items()):
        node = facts.dev.nodes.get(path)
        if node is None or (node.major, node.minor) != (major, minor):
            bad.append(Evidence(path, f"{_describe(facts.dev, path)} (want char {major}:{minor})"))
    if not bad:
        return ok(f"{len(wanted)} device nodes present")
    return fail(
        f"{len(bad)} NVIDIA device node(s) missing or wrong: " + ", ".join(e.source for e in bad),
        *bad,
        fixes=(CreateDeviceNodes(),),
        notes=("or let the driver create them: sudo nvidia-modprobe -c0 -u",),
    )


@check(
    "dev.permission-denied",
    severity=Severity.ERROR,
    title="the current user can open /dev/nvidia*",
    remedy="Add the user to the device group, or restore DeviceFileMode 0666.",
    sources=(
        TOOLKIT_TROUBLESHOOTING,
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/115",
    ),
    depends_on=("dev.nodes-missing",),
)
def permission_denied(facts: NodeFacts) -> Result:
    """`os.access(R_OK|W_OK)` on the control and GPU nodes; NVML code 4."""
    paths = ["/dev/nvidiactl"] + [f"/dev/nvidia{g.minor}" for g in facts.kernel.gpus]
    denied = [p for p in paths if p in facts.dev.nodes and p in facts.dev.inaccessible]
    nvml_denied = (
        isinstance(facts.nvml, NvmlAnswer) and facts.nvml.error_code == NvmlReturn.NO_PERMISSION
    )
    if not denied and not nvml_denied:
        return ok("the device nodes are readable and writable")
    evidence = [Evidence(p, f"mode {facts.dev.nodes[p].file_mode:04o}, no access") for p in denied]
    mode = facts.kernel.params.get("DeviceFileMode")
    if mode is not None and mode.isdigit():
        evidence.append(Evidence("/proc/driver/nvidia/params", f"DeviceFileMode {int(mode):04o}"))
    if nvml_denied:
        evidence.append(Evidence("NVML", "nvmlInit: Insufficient Permissions (4)"))
    return fail(
        "the current user cannot open the NVIDIA device nodes",
        *evidence,
        notes=(
            "add the user to the device nodes' group (sudo usermod -aG GROUP USER)",
            "or set `options nvidia NVreg_DeviceFileMode=0666` in /etc/modprobe.d/nvidia.conf "
            "and reload the module",
        ),
    )


def _cgroup_engines(facts: NodeFacts) -> list[EngineFacts]:
    """Docker, and containerd where its CRI config applies (`engines_in_use`, as containerd's
    checks see it: under Docker alone, Docker's runtime options apply, not containerd's)."""
    from ctk.doctor.checks.engine_config import engines_in_use

    used = engines_in_use(facts)
    return [used[r] for r in (Runtime.DOCKER, Runtime.CONTAINERD) if r in used]


def _systemd_cgroups(facts: NodeFacts) -> list[Evidence]:
    from ctk.doctor.checks.engine_config import docker_cgroup_driver, engines_in_use

    found = []
    used = engines_in_use(facts)
    docker = used.get(Runtime.DOCKER)
    if docker is not None and not docker.needs_root and docker_cgroup_driver(facts) == "systemd":
        found.append(Evidence(docker.config_path or "docker", "cgroup driver systemd"))
    containerd = used.get(Runtime.CONTAINERD)
    if containerd is None:
        return found
    for name, runtime in sorted(containerd.runtimes.items()):
        if runtime.systemd_cgroup:
            found.append(Evidence(containerd.config_path, f"{name}: SystemdCgroup = true"))
    return found


def _legacy_injection(facts: NodeFacts) -> Evidence | None:
    from ctk.doctor.checks.toolkit import runtime_mode, toolkit_version

    mode = runtime_mode(facts)
    version = toolkit_version(facts)
    if mode == "legacy":
        return Evidence("nvidia-container-runtime.mode", "legacy")
    if mode == "auto" and version is not None and version < JIT_CDI_VERSION:
        shown = ".".join(map(str, version))
        return Evidence("toolkit", f"{shown} resolves mode auto to legacy")
    gpus_flag = (
        facts.engine(Runtime.DOCKER).installed
        and "nvidia-container-runtime-hook" in facts.toolkit.binaries
    )
    if gpus_flag and mode in ("auto", "legacy"):
        return Evidence("docker --gpus", "injects devices through nvidia-container-runtime-hook")
    return None


@check(
    "dev.char-symlinks-missing",
    severity=Severity.WARNING,
    title="/dev/char links exist where the systemd cgroup driver needs them",
    remedy="Use CDI, or create the /dev/char links now and on every driver load.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/48",
        "https://github.com/NVIDIA/nvidia-docker/issues/1730",
        TOOLKIT_TROUBLESHOOTING,
    ),
    depends_on=("dev.nodes-missing",),
    where=HOST_ONLY,
)
def char_symlinks_missing(facts: NodeFacts) -> Result:
    """systemd cgroups + legacy injection + no `/dev/char` links = NVML Unknown Error later."""
    systemd = _systemd_cgroups(facts)
    # an engine config only root can read may ask for the systemd driver: look on, unsure
    engines = _cgroup_engines(facts)
    unread = [e.root_only or e.config_path for e in engines if e.installed and e.needs_root]
    if not systemd and not unread:
        return ok("no engine uses the systemd cgroup driver")
    legacy = _legacy_injection(facts)
    if legacy is None:
        return ok("devices are injected through CDI (part of the container spec)")
    missing = []
    for path, (major, minor) in sorted(expected_nodes(facts).items()):
        if path in facts.dev.entries() and facts.dev.char_links.get(f"{major}:{minor}") != path:
            missing.append(f"/dev/char/{major}:{minor}")
    if not missing:
        return ok("the /dev/char links for the NVIDIA devices exist")
    if not systemd:
        return unknown(
            f"{len(missing)} /dev/char link(s) are missing, and whether the systemd cgroup driver "
            f"needs them is unknown: {unread[0]} is not readable without root",
            needs_root=True,
        )
    return warn(
        "containers will lose GPU access after `systemctl daemon-reload` "
        "(NVML: Unknown Error): the systemd cgroup driver rebuilds device rules from "
        f"/dev/char and {len(missing)} NVIDIA link(s) are missing",
        *systemd,
        legacy,
        Evidence("/dev/char", "missing " + ", ".join(missing)),
        fixes=(CreateCharLinks(),),
        notes=(
            "keep them: a udev rule that creates them on driver load, or inject devices "
            'through CDI (nvidia-container-runtime.mode = "cdi")',
        ),
    )


@check(
    "dev.selinux-blocks",
    severity=Severity.WARNING,
    title="SELinux does not block GPU devices in containers",
    remedy="Run GPU containers with --security-opt=label=disable or a policy allowing the devices.",
    sources=(TOOLKIT_TROUBLESHOOTING,),
    where=HOST_ONLY,
)
def selinux_blocks(facts: NodeFacts) -> Result:
    """SELinux enforcing turns device access into `Insufficient Permissions`."""
    if not facts.kernel.selinux_enforcing:
        return ok("SELinux is not enforcing")
    return warn(
        "SELinux is enforcing: containers without a device-allowing label get "
        "'Insufficient Permissions' from NVML",
        Evidence("/sys/fs/selinux/enforce", "1"),
        notes=(
            "run GPU containers with --security-opt=label=disable, or load a policy that "
            "allows the NVIDIA devices",
        ),
    )


def _mig_enabled(facts: NodeFacts) -> bool | None:
    if not isinstance(facts.nvml, NvmlAnswer) or facts.nvml.error_code is not None:
        return None
    return any(gpu.mig_mode is MigMode.ENABLED for gpu in facts.nvml.gpus)


@check(
    "dev.mig-cap-nodes-missing",
    severity=Severity.ERROR,
    title="MIG capability device nodes exist",
    remedy="Create the /dev/nvidia-caps nodes (sudo nvidia-smi does), then regenerate CDI.",
    sources=(
        "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",
        "https://github.com/NVIDIA/mig-parted/issues/82",
    ),
    depends_on=(
        "dev.nodes-missing",
        "dev.permission-denied",
        "driver.library-mismatch",
        "lib.nvml-not-found",
        "gpu.lost",
    ),
    where=HOST_ONLY,
)
def mig_cap_nodes_missing(facts: NodeFacts) -> Result:
    """Each existing GI/CI capability needs `/dev/nvidia-caps/nvidia-cap<minor>`."""
    enabled = _mig_enabled(facts)
    if enabled is None and not facts.dev.mig_caps:
        return unknown("MIG mode unknown without NVML")
    if not enabled and not facts.dev.mig_caps:
        return skip("MIG is not enabled")
    caps_major = facts.kernel.char_majors.get("nvidia-caps")
    wanted = {"config", "monitor"} | set(facts.dev.mig_caps)
    missing = []
    for name in sorted(wanted):
        minor = facts.dev.mig_minors.get(name)
        if minor is None:
            continue
        path = f"/dev/nvidia-caps/nvidia-cap{minor}"
        node = facts.dev.nodes.get(path)
        if node is None or node.major != caps_major or node.minor != minor:
            missing.append(Evidence(path, f"{name}: {_describe(facts.dev, path)}"))
    if not missing:
        return ok(f"{len(wanted)} MIG capability nodes present")
    return fail(
        f"{len(missing)} MIG capability device node(s) missing: containers cannot use "
        "their MIG devices",
        *missing,
        commands=("sudo nvidia-smi mig -lgi",),
        fixes=(regenerate(facts),),
    )
