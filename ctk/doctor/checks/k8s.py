"""Kubernetes checks (`k8s.*`): RuntimeClasses, allocatable GPUs, pods' GPU access."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ctk.doctor.checks.container import gpu_nodes
from ctk.doctor.checks.driver import visible_devices
from ctk.doctor.checks.engine_cdi import plugin_strategies
from ctk.doctor.checks.engine_config import configure_fix, nvidia_runtime_entry
from ctk.doctor.checks.installers import Remedy, containerd_change
from ctk.doctor.checks.mig import kube
from ctk.doctor.facts import GPU_DRIVER, DraApi, NodeFacts, offers_through_dra
from ctk.doctor.fixes import SetToolkitConfig
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
from ctk.runtime_config.engines import Runtime


@check(
    "k8s.unrequested-gpu-access",
    severity=Severity.WARNING,
    title="the pod sees GPUs only if it requested them",
    remedy="Set NVIDIA_VISIBLE_DEVICES=void in pods without GPU limits; refuse it node-wide.",
    sources=(
        "https://github.com/NVIDIA/k8s-device-plugin/issues/61",
        "https://github.com/NVIDIA/gpu-operator/issues/421",
    ),
    where=frozenset({Where.POD}),
)
def unrequested_gpu_access(facts: NodeFacts) -> Result:
    """`NVIDIA_VISIBLE_DEVICES=all` in the image plus nvidia as default runtime = every GPU."""
    gpus = gpu_nodes(facts)
    if not gpus:
        return ok("the pod sees no GPU")
    pod = facts.kubernetes.get("pod") if isinstance(facts.kubernetes, Mapping) else None
    if isinstance(pod, Mapping) and pod.get("limits"):
        limits = ", ".join(f"{k}={v}" for k, v in sorted(pod["limits"].items()))
        return ok(f"the pod requested {limits}")
    if facts.container.allocation_markers or visible_devices(facts) != "all":
        return ok("GPUs were allocated by the device plugin")
    return warn(
        f"the pod sees {len(gpus)} GPU(s) through NVIDIA_VISIBLE_DEVICES=all without a device "
        "plugin allocation: it bypasses the scheduler",
        Evidence("NVIDIA_VISIBLE_DEVICES", "all"),
        Evidence("/dev", ", ".join(gpus)),
        Evidence("/var/run/nvidia-container-devices", "no allocation markers"),
        *(
            (Evidence("pod spec", "no nvidia.com/gpu or mig-* limit"),)
            if isinstance(pod, Mapping)
            else ()
        ),
        fixes=(
            SetToolkitConfig(
                settings=(("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),)
            ),
        ),
        notes=("set env NVIDIA_VISIBLE_DEVICES=void in pods without nvidia.com/gpu limits",),
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
    engines = [
        e
        for e in (facts.engine(Runtime.CONTAINERD), facts.engine(Runtime.CRIO))
        if e.installed and not e.error
    ]
    if not engines:
        return skip("no containerd or CRI-O config to compare with")
    if any(nvidia_runtime_entry(engine)[0] is not None for engine in engines):
        return ok("a RuntimeClass has handler nvidia and the runtime defines it")
    first = engines[0]
    if first.engine == Runtime.CRIO:
        remedy = Remedy(
            fixes=(configure_fix(Runtime.CRIO),), commands=("sudo systemctl restart crio",)
        )
    else:
        remedy = containerd_change(facts, "add the nvidia runtime")
    return fail(
        "a RuntimeClass sends pods to handler nvidia, which this node's runtime does not "
        "define: they fail with 'no runtime for \"nvidia\" is configured'",
        Evidence("RuntimeClasses", "handler nvidia"),
        *(nvidia_runtime_entry(engine)[1][0] for engine in engines),
        commands=remedy.commands,
        fixes=remedy.fixes,
        notes=remedy.notes,
    )


def dra_gpus(facts: NodeFacts, node: Mapping[str, Any]) -> Result | None:
    """How a node that hands out its GPUs through DRA offers them (its GPUs in gpu.nvidia.com
    ResourceSlices, not in `status.allocatable`); None: the node shows no DRA driver."""
    api = node.get("dra")
    devices = api.gpu_devices() if isinstance(api, DraApi) else ()
    if devices:
        return ok(
            f"the node hands out its GPUs through DRA: {len(devices)} device(s) in "
            f"ResourceSlices of {GPU_DRIVER}"
        )
    if offers_through_dra(facts, node):
        return skip(
            f"the node hands out GPUs through DRA ({GPU_DRIVER}): dra.slices-missing judges "
            "whether it publishes them"
        )
    return None


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
    """GPUs on the node, none in `status.allocatable` and none in DRA ResourceSlices: GPU pods
    stay Pending."""
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
    through_dra = dra_gpus(facts, node)
    if through_dra is not None:
        return through_dra
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


DEVICE_LIST_STRATEGIES: Final = frozenset({"envvar", "volume-mounts", "cdi-annotations", "cdi-cri"})
"""The list strategies the device plugin takes (api/config/v1 of k8s-device-plugin); any other
name makes it exit at start with 'invalid strategy: <name>'."""


@check(
    "k8s.device-list-strategy-invalid",
    severity=Severity.ERROR,
    title="the device plugin's DEVICE_LIST_STRATEGY names strategies it knows",
    remedy="Set DEVICE_LIST_STRATEGY to envvar, volume-mounts, cdi-annotations and/or cdi-cri.",
    sources=(K8S_DEVICE_PLUGIN,),
    where=HOST_ONLY,
)
def device_list_strategy_invalid(facts: NodeFacts) -> Result:
    """An unknown name (a typo, `cdi` for `cdi-cri`) or none: the plugin does not start."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    raw = node.get("device_list_strategy")
    if not isinstance(raw, str):
        return skip("no device plugin on this node sets DEVICE_LIST_STRATEGY")
    given = plugin_strategies(facts)
    known = ", ".join(sorted(DEVICE_LIST_STRATEGIES))
    evidence = Evidence("device plugin", f"DEVICE_LIST_STRATEGY={raw}")
    if not given:
        return fail(
            "the device plugin's DEVICE_LIST_STRATEGY names no strategy: it exits at start "
            "('no device list strategy specified') and the node offers no GPUs",
            evidence,
            notes=(f"name one or more of {known}, comma-separated",),
        )
    wrong = sorted(given - DEVICE_LIST_STRATEGIES)
    if wrong:
        return fail(
            f"the device plugin's DEVICE_LIST_STRATEGY names {', '.join(wrong)}, which it does "
            f"not know: it exits at start with 'invalid strategy: {wrong[0]}' and the node "
            "offers no GPUs",
            evidence,
            notes=(f"the strategies are {known} (comma-separated, several allowed)",),
        )
    return ok(f"DEVICE_LIST_STRATEGY={','.join(sorted(given))}")
