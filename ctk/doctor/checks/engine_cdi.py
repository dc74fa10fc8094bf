"""What the docker, containerd and crio runtime checks decide about an engine that has no nvidia
runtime but gives containers GPUs through CDI (registers no check)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ctk.doctor.checks.cdi_readers import engine_cdi_route, engine_reader
from ctk.doctor.checks.engine_config import configure_fix, major_minor, nvidia_runtime_entry
from ctk.doctor.checks.toolkit import installed
from ctk.doctor.facts import NodeFacts
from ctk.doctor.model import Evidence, Result, Severity, ok, warn
from ctk.runtime_config.engines import Runtime


@dataclass(frozen=True, slots=True)
class CdiRequests:
    """How an engine's containers ask for GPUs through CDI, and who needs the nvidia runtime."""

    engine: str
    request: str
    without: str


_PODS = (
    "a device plugin or DRA driver handing out CDI devices",
    "NVIDIA_VISIBLE_DEVICES and runtimeClassName nvidia get no GPU",
)
CDI_REQUESTS: Final[Mapping[Runtime, CdiRequests]] = {
    Runtime.DOCKER: CdiRequests(
        "Docker",
        "docker run --device nvidia.com/gpu=...",
        "`docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
    ),
    Runtime.CONTAINERD: CdiRequests("containerd", *_PODS),
    Runtime.CRIO: CdiRequests("CRI-O", *_PODS),
}


CDI_STRATEGIES: Final = frozenset({"cdi-cri", "cdi-annotations"})
"""The device plugin's `deviceListStrategy` values that hand GPUs to pods as CDI devices (the
engine injects them); `envvar` and `volume-mounts` leave the injection to the nvidia runtime."""


def plugin_strategies(facts: NodeFacts) -> frozenset[str]:
    """The device plugin's list strategies on this node (it takes a comma-separated list, e.g.
    `cdi-annotations,cdi-cri`); empty where no Kubernetes facts name one. Every check reads
    DEVICE_LIST_STRATEGY through this, never as one whole string."""
    found = (
        facts.kubernetes.get("device_list_strategy")
        if isinstance(facts.kubernetes, Mapping)
        else None
    )
    if not isinstance(found, str):
        return frozenset()
    return frozenset(s.strip() for s in found.split(",") if s.strip())


GPUS_THROUGH_CDI_SINCE: Final = (29, 2)
"""The first dockerd whose `--gpus` goes through CDI: with nvidia-cdi-hook on its PATH, a GPU
request becomes `nvidia.com/gpu=<id>` CDI devices, and only where those fail the
nvidia-container-runtime-hook (moby 86f122a, "Map nvidia --gpus request to CDI device
requests", docker-v29.2.0)."""


def gpus_through_cdi(facts: NodeFacts) -> Evidence | None:
    """Why Docker's `--gpus` is a CDI request on this node (None: it is not, or unknown)."""
    docker = facts.engine(Runtime.DOCKER)
    hook = facts.toolkit.binaries.get("nvidia-cdi-hook")
    version = major_minor(docker.version)
    if hook is None or version is None or version < GPUS_THROUGH_CDI_SINCE:
        return None
    return Evidence(hook, f"docker {docker.version}: --gpus asks for nvidia.com/gpu CDI devices")


def cdi_only(facts: NodeFacts, runtime: Runtime) -> Result | None:
    """The result of an engine's runtime check where the engine names no nvidia runtime but reads
    a usable nvidia.com/gpu spec (`engine_cdi_route`); None where the check fails as before.

    ok where someone chose CDI: the engine's own setting switched it on (a default that came
    with an upgrade asked for nothing), the device plugin hands out CDI devices, or there is no
    NVIDIA Container Toolkit whose runtime could be added. Elsewhere (CRI-O, which always reads
    specs; Docker 28.2+ and containerd 2.x by default) a warning of severity info: CDI requests
    get GPUs, the rest gets none, and nothing says which the node's users make. A device plugin
    that hands out GPUs only as NVIDIA_VISIBLE_DEVICES or mounts needs the nvidia runtime: None.
    A RuntimeClass with handler nvidia is k8s.runtimeclass-handler-missing's finding.
    """
    route = engine_cdi_route(facts, runtime)
    strategies = plugin_strategies(facts)
    if route is None or (strategies and not strategies & CDI_STRATEGIES):
        return None
    reader, specs = route
    engine = facts.engine(runtime)
    asked = CDI_REQUESTS[runtime]
    evidence = (
        *nvidia_runtime_entry(engine)[1],
        reader.evidence,
        *(Evidence(s.path, f"nvidia.com/gpu spec {engine.engine} reads") for s in specs),
    )
    chosen = []
    gpus = gpus_through_cdi(facts) if runtime is Runtime.DOCKER else None
    if gpus is not None:  # `docker run --gpus`, the usual GPU request, is one of them
        chosen.append(gpus)
    if strategies & CDI_STRATEGIES:
        chosen.append(
            Evidence("device plugin", "deviceListStrategy=" + ",".join(sorted(strategies)))
        )
    if not installed(facts):
        chosen.append(Evidence("/usr/bin", "no NVIDIA Container Toolkit: CDI is the only route"))
    if reader.switched_on or chosen:
        request = f"{asked.request} or --gpus" if gpus is not None else asked.request
        return ok(
            f"no nvidia runtime: GPUs reach containers through CDI ({request}) from "
            f"{specs[0].path}",
            *evidence,
            *chosen,
        )
    return warn(
        f"{asked.engine} has no nvidia runtime: only CDI requests ({asked.request}) get GPUs "
        f"from {specs[0].path}; {asked.without}",
        *evidence,
        commands=(f"sudo systemctl restart {runtime}",),
        fixes=(configure_fix(runtime),),
        severity=Severity.INFO,
        notes=("nothing to do where every GPU request on this node is a CDI request",),
    )


def cdi_unusable(facts: NodeFacts, runtime: Runtime) -> tuple[Evidence, ...]:
    """Evidence for an engine's runtime check that fails although the engine reads CDI specs:
    the directories it reads, none of which holds a usable nvidia.com/gpu spec."""
    reader = engine_reader(facts, runtime)
    if reader is None or engine_cdi_route(facts, runtime) is not None:
        return ()
    dirs = ", ".join(reader.dirs) or "no directory"
    return (
        Evidence(
            reader.evidence.source,
            f"{reader.evidence.value}, reading {dirs}: no usable nvidia.com/gpu spec there",
        ),
    )
