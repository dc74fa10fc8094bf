"""Docker checks (`docker.*`): daemon.json, the nvidia runtime, CDI, cgroups, snap."""

from __future__ import annotations

from ctk.doctor.checks.engine_cdi import cdi_only, cdi_unusable
from ctk.doctor.checks.engine_config import (
    cdi_default_on,
    cdi_setting,
    cdi_unsupported,
    configure_fix,
    docker_cgroup_driver,
    engine_not_installed,
    nvidia_runtime_entry,
    runtime_binary_missing,
    spec_dirs,
)
from ctk.doctor.checks.toolkit import INSTALL_GUIDE, runtime_mode
from ctk.doctor.facts import NodeFacts
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
)
from ctk.runtime_config.engines import CDI_SPEC_DIRS, Runtime


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
    docker = facts.engine(Runtime.DOCKER)
    blocked = engine_not_installed(docker)
    if blocked is not None and docker.error is None:
        return blocked
    unsupported = cdi_unsupported(Runtime.DOCKER, docker)
    if docker.error is None and docker.cdi_spec_dirs is not None and unsupported is not None:
        return fail(
            f"{docker.config_path} sets cdi-spec-dirs, which {unsupported} does not know: "
            "dockerd refuses to start ('the following directives don't match any configuration "
            "option: cdi-spec-dirs')",
            Evidence(docker.config_path, unsupported),
            notes=(f'remove "cdi-spec-dirs" from {docker.config_path}, or upgrade Docker to 25+',),
        )
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
    """`unknown or invalid runtime name: nvidia` / `could not select device driver ""`; none
    needed where Docker reads a usable nvidia.com/gpu spec (`cdi_only`)."""
    docker = facts.engine(Runtime.DOCKER)
    blocked = engine_not_installed(docker)
    if blocked is not None:
        return blocked
    runtime, evidence = nvidia_runtime_entry(docker)
    if runtime is not None:
        default = docker.default_runtime or "runc"
        return ok(f"nvidia runtime configured (default runtime {default})", *evidence)
    missing = runtime_binary_missing(docker, "sudo systemctl restart docker")
    if missing is not None:
        return missing
    cdi = cdi_only(facts, Runtime.DOCKER)
    if cdi is not None:
        return cdi
    return fail(
        "Docker has no usable nvidia runtime: `docker run --runtime=nvidia` fails with "
        "'unknown or invalid runtime name: nvidia'",
        *evidence,
        *cdi_unusable(facts, Runtime.DOCKER),
        commands=("sudo systemctl restart docker",),
        fixes=(configure_fix("docker"),),
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
    runtime, evidence = nvidia_runtime_entry(rootless)
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
    severity=Severity.ERROR,
    title="Docker has CDI enabled where CDI is used",
    remedy="Enable CDI in daemon.json (features.cdi) and restart Docker.",
    sources=("https://github.com/cncf-tags/container-device-interface/issues/84",),
    depends_on=("docker.runtime-not-configured",),
    where=HOST_ONLY,
)
def docker_cdi(facts: NodeFacts) -> Result:
    """`--device nvidia.com/gpu=...` needs Docker 25+ with CDI switched on."""
    docker = facts.engine(Runtime.DOCKER)
    blocked = engine_not_installed(docker)
    if blocked is not None:
        return blocked
    if not _cdi_wanted(facts):
        return ok("CDI is not required (toolkit mode is not cdi)")
    unsupported = cdi_unsupported(Runtime.DOCKER, docker)
    # The toolkit in CDI mode means CDI requests are made: each way Docker cannot answer them
    # (too old, CDI off, no spec directory) fails every one of them, and is an error alike.
    if unsupported is not None:
        return fail(
            f"the toolkit uses CDI but {unsupported}: `--device nvidia.com/gpu=...` fails with "
            "'is not an absolute path'",
            Evidence(docker.config_path, unsupported),
            severity=Severity.ERROR,
            notes=(
                "upgrade Docker to 25 or later (28.2 reads CDI specs by default), or run GPU "
                "containers with --runtime=nvidia and NVIDIA_VISIBLE_DEVICES",
            ),
        )
    default = cdi_default_on(Runtime.DOCKER, docker)
    if docker.cdi_enabled:
        on = "CDI enabled in daemon.json"
    elif docker.cdi_enabled is None and default is not None:
        on = f"CDI enabled by default ({default}); daemon.json does not turn it off"
    else:
        return fail(
            "the toolkit uses CDI but Docker's CDI support is off: `--device nvidia.com/gpu=...` "
            "fails with 'could not select device driver \"cdi\"'",
            Evidence(docker.config_path, cdi_setting(Runtime.DOCKER, docker)),
            severity=Severity.ERROR,
            commands=("sudo systemctl restart docker",),
            fixes=(configure_fix("docker", enable_cdi=True),),
        )
    if not spec_dirs(docker):
        listed = ", ".join(f'"{d}"' for d in docker.cdi_spec_dirs or ())
        return fail(
            "Docker's CDI support is on but cdi-spec-dirs names no directory: "
            "`--device nvidia.com/gpu=...` fails with 'CDI device injection failed: no CDI "
            "specification directories specified'",
            Evidence(docker.config_path, cdi_setting(Runtime.DOCKER, docker)),
            Evidence(docker.config_path, f"cdi-spec-dirs = [{listed}]"),
            commands=("sudo systemctl restart docker",),
            severity=Severity.ERROR,
            notes=(
                f'remove "cdi-spec-dirs" from {docker.config_path} (dockerd then reads '
                f"{' and '.join(CDI_SPEC_DIRS)}) or list the directories that hold the spec",
            ),
        )
    return ok(on)


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
    docker = facts.engine(Runtime.DOCKER)
    blocked = engine_not_installed(docker)
    if blocked is not None:
        return blocked
    driver = docker_cgroup_driver(facts)
    source = "exec-opts" if docker.cgroup_driver else "default"
    return ok(
        f"cgroup driver {driver} ({source}), cgroup v{facts.kernel.cgroup_version}",
        Evidence(docker.config_path, f"native.cgroupdriver={driver} ({source})"),
    )
