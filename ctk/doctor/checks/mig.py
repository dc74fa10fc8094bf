"""MIG checks (`mig.*`): "MIG devices invisible"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctk.doctor.checks.cdi_readers import GPU_KIND, gpu_specs, spec_to_keep
from ctk.doctor.expected import expected_devices
from ctk.doctor.facts import NodeFacts, NvmlAnswer, Unavailable, offers_through_dra
from ctk.doctor.fixes import DEFAULT_SPEC, GenerateSpec
from ctk.doctor.model import (
    HOST_ONLY,
    INSIDE,
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
from ctk.node.nvml import Gpu, MigMode

MIG_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/"


def spec_output(facts: NodeFacts) -> str:
    """Where regenerating writes: the node's generated nvidia.com/gpu spec, the same path (a
    second spec elsewhere would shadow or clash with it); the default where there is none."""
    paths = [spec.path for spec in gpu_specs(facts)]
    return spec_to_keep(paths) if paths else DEFAULT_SPEC


def regenerate(facts: NodeFacts) -> GenerateSpec:
    """The fix that rewrites the node's spec for its current devices."""
    return GenerateSpec(output=spec_output(facts))


def nvml_answer(facts: NodeFacts) -> NvmlAnswer | Result:
    """NVML's answer, or the `unknown` result a check returns without NVML."""
    nvml = facts.nvml
    if isinstance(nvml, Unavailable):
        return unknown(f"NVML facts unavailable: {nvml.reason}", needs_root=nvml.needs_root)
    if nvml.error_code is not None:
        return unknown(f"NVML failed: {nvml.error} ({nvml.error_code})")
    return nvml


def nvml_gpus(facts: NodeFacts) -> tuple[Gpu, ...] | Result:
    """NVML's GPUs, or the `unknown` result a check returns without NVML."""
    nvml = nvml_answer(facts)
    return nvml if isinstance(nvml, Result) else nvml.gpus


def _mig_gpus(facts: NodeFacts) -> tuple[Gpu, ...] | Result:
    gpus = nvml_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    enabled = tuple(g for g in gpus if g.mig_mode is MigMode.ENABLED)
    return enabled if enabled else skip("MIG is not enabled on any GPU")


@check(
    "mig.mode-pending",
    severity=Severity.WARNING,
    title="no MIG mode change is pending",
    remedy="Stop the GPU's clients and reset it (or reboot) so the MIG mode change takes effect.",
    sources=(MIG_GUIDE, "https://github.com/NVIDIA/gpu-operator/issues/1845"),
    depends_on=(
        "driver.not-loaded",
        "driver.library-mismatch",
        "lib.nvml-not-found",
        "gpu.lost",
        "dev.permission-denied",
    ),
    where=HOST_ONLY,
)
def mode_pending(facts: NodeFacts) -> Result:
    """`nvmlDeviceGetMigMode` current != pending."""
    nvml = nvml_answer(facts)
    if isinstance(nvml, Result):
        return nvml
    gpus = nvml.health_by_gpu
    if gpus and all(g.mig_pending is None for g in gpus):
        return skip("no GPU supports MIG")
    pending = [g for g in gpus if g.mig_pending is not None and g.mig_pending != g.mig_current]
    if not pending:
        return ok("no MIG mode change pending")
    return warn(
        f"MIG mode change pending on GPU {', '.join(str(g.index) for g in pending)}: "
        "it takes effect after a GPU reset or reboot",
        *(
            Evidence(f"NVML GPU {g.index}", f"MIG current {g.mig_current}, pending {g.mig_pending}")
            for g in pending
        ),
        commands=(
            "sudo systemctl stop nvidia-persistenced nvidia-dcgm",
            *(f"sudo nvidia-smi -i {g.index} -r" for g in pending),
        ),
    )


@check(
    "mig.enabled-without-instances",
    severity=Severity.ERROR,
    title="MIG-enabled GPUs have MIG devices",
    remedy="Create GPU and compute instances (nvidia-smi mig or mig-parted).",
    sources=(MIG_GUIDE, "https://github.com/NVIDIA/k8s-device-plugin/issues/225"),
    depends_on=(
        "driver.not-loaded",
        "driver.library-mismatch",
        "lib.nvml-not-found",
        "gpu.lost",
        "dev.permission-denied",
    ),
    where=HOST_ONLY,
)
def enabled_without_instances(facts: NodeFacts) -> Result:
    """MIG on, no GPU instance: the GPU offers nothing to CUDA or containers."""
    gpus = _mig_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    empty = [g for g in gpus if not g.migs]
    if not empty:
        count = sum(len(g.migs) for g in gpus)
        return ok(f"{count} MIG device(s) on {len(gpus)} MIG-enabled GPU(s)")
    return fail(
        f"MIG is enabled on GPU {', '.join(str(g.index) for g in empty)} but no GPU instance "
        "exists: the GPU is unusable until instances are created (they do not survive reboot)",
        *(Evidence(f"NVML GPU {g.index}", f"{g.name}: MIG on, 0 MIG devices") for g in empty),
        commands=("sudo nvidia-smi mig -lgip",),
        notes=(
            *(
                f"create instances on GPU {g.index}: sudo nvidia-smi mig -i {g.index} -cgi "
                "PROFILES -C (profiles as listed)"
                for g in empty
            ),
            "keep a layout across reboots with nvidia-mig-parted apply",
        ),
    )


def spec_device_names(facts: NodeFacts, kind: str = GPU_KIND) -> set[str]:
    """All device names of ``kind`` in the CDI specs on disk."""
    return {name for spec in facts.cdi.specs if spec.kind == kind for name in spec.devices}


@check(
    "mig.not-in-cdi-spec",
    severity=Severity.ERROR,
    title="every MIG device is in the CDI spec",
    remedy="Regenerate the CDI spec after every MIG change.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/1828",
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html",
    ),
    depends_on=("driver.library-mismatch", "mig.enabled-without-instances"),
    where=HOST_ONLY,
)
def not_in_cdi_spec(facts: NodeFacts) -> Result:
    """MIG devices exist, the spec lacks `<gpu>:<mig>` / `MIG-<uuid>` entries."""
    gpus = _mig_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    names = spec_device_names(facts)
    if not names:
        return skip("no nvidia.com/gpu CDI spec (see cdi.spec-missing)")
    expected = expected_devices(facts)
    migs = () if expected is None else tuple(d for d in expected if d.is_mig)
    missing = [
        f"{device.index_name} ({device.uuid})"
        for device in migs
        if not any(name in names for name in device.names)
    ]
    if not missing:
        return ok("every MIG device has a CDI entry")
    spec_paths = sorted(spec.path for spec in gpu_specs(facts))
    return fail(
        f"{len(missing)} MIG device(s) are not in the CDI spec: requests for them fail with "
        "'unresolvable CDI devices' (the refresh unit does not run on MIG changes)",
        Evidence("NVML", "MIG devices " + ", ".join(missing)),
        *(Evidence(path, "no entry for them") for path in spec_paths),
        fixes=(regenerate(facts),),
    )


@check(
    "mig.whole-gpu-in-container",
    severity=Severity.WARNING,
    title="the container got a MIG device, not a MIG-enabled parent GPU",
    remedy="Request a MIG device (MIG-<uuid>, <gpu>:<mig>, or nvidia.com/mig-<profile>).",
    sources=(MIG_GUIDE,),
    depends_on=("driver.not-loaded", "driver.library-mismatch", "lib.nvml-not-found", "gpu.lost"),
    where=INSIDE,
)
def whole_gpu_in_container(facts: NodeFacts) -> Result:
    """A visible MIG-enabled parent without MIG handles gives CUDA no device."""
    gpus = _mig_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    parents = [g for g in gpus if not g.migs]
    if not parents:
        return ok("the container sees MIG devices")
    return warn(
        "the container sees MIG-enabled GPU(s) without MIG devices: CUDA finds no usable device",
        *(
            Evidence(f"NVML GPU {g.index}", f"{g.uuid}: MIG enabled, no MIG device")
            for g in parents
        ),
        notes=("request a MIG device: NVIDIA_VISIBLE_DEVICES=MIG-<uuid> or nvidia.com/mig-*",),
    )


def kube(facts: NodeFacts) -> Mapping[str, Any] | Result:
    """The Kubernetes facts, or the result of a check that needs them when there are none."""
    found = facts.kubernetes
    if found is None:
        return skip("no Kubernetes node facts (not a Kubernetes node or no kubeconfig)")
    if isinstance(found, Unavailable):
        return unknown(f"Kubernetes facts unavailable: {found.reason}", needs_root=found.needs_root)
    return found


@check(
    "mig.strategy-mismatch",
    severity=Severity.ERROR,
    title="the MIG strategy fits the node's MIG layout",
    remedy="Switch the device plugin to the mixed strategy, or make the layout uniform.",
    sources=("https://github.com/NVIDIA/gpu-operator/issues/460",),
    depends_on=("driver.not-loaded", "driver.library-mismatch", "lib.nvml-not-found", "gpu.lost"),
    where=HOST_ONLY,
)
def strategy_mismatch(facts: NodeFacts) -> Result:
    """`single` needs every GPU MIG-enabled with one profile."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    gpus = nvml_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    labels = node.get("labels", {})
    strategy = node.get("mig_strategy") or labels.get("nvidia.com/mig.strategy")
    source = "device plugin MIG_STRATEGY" if node.get("mig_strategy") else "node label"
    if strategy != "single":
        return ok(f"the MIG strategy is {strategy or 'not set'}, not 'single'")
    profiles = {m.profile for g in gpus for m in g.migs}
    enabled = [g.mig_mode is MigMode.ENABLED for g in gpus]
    mixed = any(enabled) and not all(enabled)
    if len(profiles) <= 1 and not mixed:
        return ok("uniform MIG layout under the single strategy")
    return fail(
        "MIG strategy 'single' with a mixed layout: the device plugin advertises nothing",
        Evidence(
            "node label nvidia.com/mig.strategy" if source == "node label" else source, "single"
        ),
        Evidence("NVML", "profiles " + ", ".join(sorted(profiles)) if profiles else "MIG mixed"),
        notes=("switch the device plugin to the mixed strategy (Helm: --set mig.strategy=mixed)",),
    )


@check(
    "mig.device-plugin-stale",
    severity=Severity.WARNING,
    title="the node advertises the current MIG layout",
    remedy="Restart the device plugin after every MIG change.",
    sources=("https://github.com/NVIDIA/k8s-device-plugin/issues/992",),
    depends_on=("driver.not-loaded", "driver.library-mismatch", "lib.nvml-not-found", "gpu.lost"),
    where=HOST_ONLY,
)
def device_plugin_stale(facts: NodeFacts) -> Result:
    """Allocatable `nvidia.com/mig-*` counts differ from NVML's layout."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    gpus = nvml_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    if offers_through_dra(facts, node):
        return skip("the node hands out its GPUs through DRA (see dra.slices-mismatch)")
    allocatable = node.get("allocatable", {})
    layout: dict[str, int] = {}
    for gpu in gpus:
        for mig in gpu.migs:
            key = f"nvidia.com/mig-{mig.profile}"
            layout[key] = layout.get(key, 0) + 1
    advertised = {k: int(v) for k, v in allocatable.items() if k.startswith("nvidia.com/mig-")}
    if advertised == layout:
        return ok("allocatable MIG resources match NVML")
    return warn(
        "the node advertises a MIG layout that differs from the GPUs' current one",
        Evidence("node allocatable", str(dict(sorted(advertised.items())))),
        Evidence("NVML", str(dict(sorted(layout.items())))),
        notes=("restart the device plugin's DaemonSet (kubectl rollout restart)",),
    )
