"""Dynamic Resource Allocation checks (`dra.*`): nodes that hand out GPUs through the NVIDIA DRA
driver (github.com/NVIDIA/k8s-dra-driver-gpu, drivers `gpu.nvidia.com` and
`compute-domain.nvidia.com`), bottom-up: the API, the kubelet plugin, its ResourceSlices against
NVML, DeviceClasses and claims, the engine resolving the plugin's per-claim CDI specs, the classic
device plugin advertising the same GPUs, and a compute domain's IMEX channels and daemon.

The driver's behaviour the checks rely on, from its source: the kubelet plugin registers
`<kubelet>/plugins_registry/<driver>-reg.sock` (`<driver>-<uid>-reg.sock` with rolling updates)
and keeps `<kubelet>/plugins/<driver>/`; it publishes one pool per node (named after the node)
with a device per full GPU (`gpu-<minor>`, attribute `type` gpu) or, for a GPU in MIG mode, per
MIG device (`type` mig, `parentUUID`), each with its `uuid`; it writes a transient CDI spec per
prepared claim into `CDI_ROOT` (/var/run/cdi), kind `k8s.<driver>/claim`, file
`k8s.<driver>-claim_<claim uid>.yaml`; its chart's DeviceClasses select
`device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'` (and
`'mig'`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any, Final

from ctk.doctor.checks.cdi_readers import dra_plugin_spec, engine_reader
from ctk.doctor.checks.engine_config import cdi_setting, cdi_unsupported, engines_in_use, spec_dirs
from ctk.doctor.checks.installers import Remedy, containerd_change, gpu_operator
from ctk.doctor.checks.mig import kube
from ctk.doctor.expected import expected_devices
from ctk.doctor.facts import (
    COMPUTE_DOMAIN_DRIVER,
    DRA_DRIVERS,
    GPU_DEVICE_TYPES,
    GPU_DRIVER,
    DeviceClass,
    DraApi,
    DraDevice,
    DraPod,
    NodeFacts,
    NvmlAnswer,
    ResourceSlice,
)
from ctk.doctor.fixes import ValidateSpec
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
from ctk.node.nvml import MigMode
from ctk.runtime_config.engines import Runtime

DRA_DRIVER: Final = "https://github.com/NVIDIA/k8s-dra-driver-gpu"
DRA_DOCS: Final = (
    "https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/"
)
PLUGIN_CDI_ROOT: Final = "/var/run/cdi"
"""Where the kubelet plugins write their claims' CDI specs (`CDI_ROOT` of the chart, and the
plugins' `defaultCDIRoot`)."""
PLUGIN_CONTAINERS: Final = {GPU_DRIVER: "gpus", COMPUTE_DOMAIN_DRIVER: "compute-domains"}
DOMAIN_LABEL: Final = "resource.nvidia.com/computeDomain"
IMEX_MAJOR: Final = "nvidia-caps-imex-channels"
RELEASES: Final = {"v1": "Kubernetes 1.34 or later", "v1beta2": "1.33", "v1beta1": "1.32"}
DRA_ORDER: Final = ("driver.not-loaded", "lib.nvml-not-found", "gpu.lost")


# --- the node's view --------------------------------------------------------------------------


def _api(node: Mapping[str, Any]) -> DraApi | None:
    found = node.get("dra")
    return found if isinstance(found, DraApi) else None


def _plugin_pods(node: Mapping[str, Any], driver: str) -> tuple[DraPod, ...] | None:
    """The driver's kubelet plugin pods on this node; None where the pods could not be listed."""
    pods = node.get("dra_pods")
    if not isinstance(pods, tuple):
        return None
    return tuple(p for p in pods if isinstance(p, DraPod) and driver in p.drivers)


def _slices(api: DraApi | None, driver: str) -> tuple[ResourceSlice, ...]:
    return tuple(s for s in (api.slices or ()) if s.driver == driver) if api else ()


def _signs(facts: NodeFacts, node: Mapping[str, Any] | None, driver: str) -> list[Evidence]:
    """What shows ``driver``'s kubelet plugin on this node (none: the node does not use it): its
    registration socket, its pod, its ResourceSlices; its plugin directory only where the pods
    on the node are not known (an uninstalled driver leaves the directory behind)."""
    found = []
    pods_known = node is not None and isinstance(node.get("dra_pods"), tuple)
    if driver in facts.dra.registered:
        found.append(Evidence(facts.dra.registered[driver], "registration socket"))
    elif driver in facts.dra.plugin_dirs and not pods_known:
        found.append(Evidence(facts.dra.plugin_dirs[driver], "plugin directory"))
    if node is not None:
        found += [
            Evidence("pods on this node", f"{p.namespace}/{p.name} ({driver} kubelet plugin)")
            for p in _plugin_pods(node, driver) or ()
        ]
        slices = _slices(_api(node), driver)
        if slices:
            found.append(Evidence("ResourceSlices", _slice_names(slices)))
        labels = node.get("labels")
        if (
            driver == COMPUTE_DOMAIN_DRIVER
            and isinstance(labels, Mapping)
            and labels.get(DOMAIN_LABEL)
        ):
            found.append(Evidence("node labels", f"{DOMAIN_LABEL}={labels[DOMAIN_LABEL]}"))
    return found


def _slice_names(slices: tuple[ResourceSlice, ...]) -> str:
    return ", ".join(
        f"{s.name} (pool {s.pool}, generation {s.generation}, {len(s.devices)} devices)"
        for s in slices
    )


def _dra_node(
    facts: NodeFacts, driver: str = GPU_DRIVER
) -> tuple[Mapping[str, Any], DraApi] | Result:
    """The Kubernetes facts and the DRA view of a node that uses ``driver``; else the result of
    a check that needs them (skip: no sign of the driver; unknown: the API said nothing)."""
    node = kube(facts)
    if isinstance(node, Result):
        return node if _signs(facts, None, driver) else skip(f"no {driver} kubelet plugin here")
    if not _signs(facts, node, driver):
        return skip(f"no {driver} kubelet plugin on this node (no registration, pod or slice)")
    api = _api(node)
    if api is None:
        return unknown("the API server did not return this node (no node name, or no access)")
    return node, api


def _gpu_devices(slices: tuple[ResourceSlice, ...]) -> tuple[DraDevice, ...]:
    return tuple(d for s in slices for d in s.devices if d.type in GPU_DEVICE_TYPES)


def _current(slices: tuple[ResourceSlice, ...]) -> tuple[ResourceSlice, ...]:
    """The slices the scheduler uses: each pool's newest generation."""
    newest: dict[str, int] = {}
    for s in slices:
        newest[s.pool] = max(newest.get(s.pool, s.generation), s.generation)
    return tuple(s for s in slices if s.generation == newest[s.pool])


def _plugin_logs(node: Mapping[str, Any], driver: str) -> tuple[str, ...]:
    """`kubectl logs` of the driver's kubelet plugin pods on this node."""
    container = PLUGIN_CONTAINERS[driver]
    return tuple(
        f"kubectl -n {p.namespace} logs {p.name} -c {container}"
        for p in _plugin_pods(node, driver) or ()
    )


def _plugin_restarts(node: Mapping[str, Any], driver: str) -> tuple[str, ...]:
    """Deleting the driver's kubelet plugin pods on this node: the DaemonSet makes new ones,
    which enumerate the GPUs and publish their slices again."""
    return tuple(
        f"kubectl -n {p.namespace} delete pod {p.name}" for p in _plugin_pods(node, driver) or ()
    )


# --- the API --------------------------------------------------------------------------------


@check(
    "dra.api-not-served",
    severity=Severity.ERROR,
    title="the API server serves resource.k8s.io (Dynamic Resource Allocation)",
    remedy="Use Kubernetes 1.34+ (DRA GA), or enable DRA on 1.32-1.33 (feature gate, API).",
    sources=(DRA_DOCS, DRA_DRIVER),
    where=HOST_ONLY,
)
def api_not_served(facts: NodeFacts) -> Result:
    """A DRA driver on the node, but no `resource.k8s.io` v1/v1beta2/v1beta1 in the API."""
    node = kube(facts)
    known = node if not isinstance(node, Result) else None
    uses_gpus = bool(_signs(facts, known, GPU_DRIVER))
    found = _dra_node(facts, GPU_DRIVER if uses_gpus else COMPUTE_DOMAIN_DRIVER)
    if isinstance(found, Result):
        return found
    _, api = found
    usable = [v for v in api.versions if v in RELEASES]
    if usable:
        version = usable[0]
        return ok(f"resource.k8s.io/{version} is served ({RELEASES[version]})")
    served = ", ".join(f"resource.k8s.io/{v}" for v in api.versions) or "not served"
    return fail(
        "the API server does not serve resource.k8s.io v1, v1beta2 or v1beta1: the NVIDIA DRA "
        "driver can publish no devices and pods' ResourceClaims are never allocated",
        Evidence("/apis/resource.k8s.io", served),
        notes=(
            "DRA is on by default from Kubernetes 1.34 (resource.k8s.io/v1); on 1.32 and 1.33 "
            "enable the DynamicResourceAllocation feature gate on the API server, scheduler, "
            "controller manager and kubelets and serve the API (--runtime-config="
            "resource.k8s.io/v1beta1=true, 1.33: v1beta2); the driver needs 1.32 or later",
        ),
    )


# --- the kubelet plugin ---------------------------------------------------------------------


@check(
    "dra.plugin-not-registered",
    severity=Severity.ERROR,
    title="the NVIDIA DRA driver's kubelet plugin is registered with this node's kubelet",
    remedy="Look at the kubelet plugin pod's log; it registers plugins_registry/<driver>-reg.sock.",
    sources=(DRA_DRIVER,),
    depends_on=("dra.api-not-served",),
    where=HOST_ONLY,
)
def plugin_not_registered(facts: NodeFacts) -> Result:
    """The driver's pod, directory or slices here, but no registration socket: the kubelet does
    not know the driver, and pods with its claims fail ('DRA driver ... is not registered')."""
    node = kube(facts)
    known = node if not isinstance(node, Result) else None
    unregistered = [
        driver
        for driver in DRA_DRIVERS
        if driver not in facts.dra.registered and _signs(facts, known, driver)
    ]
    if not unregistered:
        registered = ", ".join(sorted(facts.dra.registered))
        return ok(f"registered: {registered}") if registered else skip("no NVIDIA DRA driver here")
    registry = posixpath.join(facts.dra.kubelet_dir, "plugins_registry")
    evidence = [Evidence(registry, f"no {d}-reg.sock") for d in unregistered]
    for driver in unregistered:
        evidence += _signs(facts, known, driver)
    commands = tuple(c for d in unregistered for c in _plugin_logs(known or {}, d))
    return fail(
        f"{', '.join(unregistered)} has no registration socket in {registry}: the kubelet "
        "does not know the driver, and pods with its claims fail to start ('DRA driver "
        f"{unregistered[0]} is not registered')",
        *evidence,
        commands=commands,
        notes=(
            "the kubelet plugin registers at start; its log says why it did not (NVML, the "
            "driver root, the CDI root); the DaemonSet must mount "
            f"{registry} and {facts.dra.kubelet_dir}/plugins from the host",
        ),
    )


@check(
    "dra.plugin-not-running",
    severity=Severity.ERROR,
    title="the NVIDIA DRA driver's kubelet plugin pod runs on this node",
    remedy="Look at the plugin pod's events and log (kubectl describe / logs).",
    sources=(DRA_DRIVER,),
    depends_on=("dra.api-not-served",),
    where=HOST_ONLY,
)
def plugin_not_running(facts: NodeFacts) -> Result:
    """Its pod not Running and Ready; or a registration socket left by a plugin no pod runs."""
    node = kube(facts)
    if isinstance(node, Result):
        here = any(_signs(facts, None, d) for d in DRA_DRIVERS)
        return node if here else skip("no NVIDIA DRA driver here")
    drivers = [d for d in DRA_DRIVERS if _signs(facts, node, d)]
    if not drivers:
        return skip("no NVIDIA DRA driver on this node")
    down: list[DraPod] = []
    orphaned: list[str] = []
    for driver in drivers:
        pods = _plugin_pods(node, driver)
        if pods is None:
            return unknown("the pods on this node could not be listed")
        down += [p for p in pods if p.phase != "Running" or not p.ready]
        if not pods and driver in facts.dra.registered:
            orphaned.append(driver)
    if down:
        pod = down[0]
        return fail(
            f"the DRA kubelet plugin pod {pod.namespace}/{pod.name} is {pod.phase or 'unknown'}"
            f"{'' if pod.ready else ', not ready'}: claims on this node are not prepared and "
            "their pods stay in ContainerCreating",
            *(
                Evidence(f"pod {p.namespace}/{p.name}", f"phase {p.phase}, ready {p.ready}")
                for p in down
            ),
            commands=tuple(
                line
                for p in down
                for line in (
                    f"kubectl -n {p.namespace} describe pod {p.name}",
                    *(
                        f"kubectl -n {p.namespace} logs {p.name} -c {PLUGIN_CONTAINERS[d]}"
                        for d in p.drivers
                    ),
                )
            ),
        )
    if orphaned:
        return fail(
            f"{', '.join(orphaned)} is registered but no pod of its kubelet plugin runs on this "
            "node: the socket is left from a plugin that is gone, and claims fail to prepare",
            *(Evidence(facts.dra.registered[d], "registration socket") for d in orphaned),
            Evidence("pods on this node", "no DRA kubelet plugin pod"),
            notes=(
                "the DaemonSet of the driver's kubelet plugin has no pod here: check its "
                "nodeSelector and tolerations, or remove the socket of an uninstalled driver",
            ),
        )
    return ok("the kubelet plugin pods run and are ready")


# --- ResourceSlices -----------------------------------------------------------------------


@check(
    "dra.slices-missing",
    severity=Severity.ERROR,
    title="the node publishes ResourceSlices for the NVIDIA DRA drivers",
    remedy="Restart the kubelet plugin pod on this node; its log says why it publishes nothing.",
    sources=(DRA_DRIVER,),
    depends_on=("dra.api-not-served", "dra.plugin-not-registered", "dra.plugin-not-running"),
    where=HOST_ONLY,
)
def slices_missing(facts: NodeFacts) -> Result:
    """A registered plugin with no ResourceSlice of this node: nothing can be allocated here."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    node, api = found
    if api.slices is None:
        return unknown("the API server refused to list this node's ResourceSlices")
    slices = _slices(api, GPU_DRIVER)
    if _gpu_devices(slices):
        return ok(f"{len(_gpu_devices(slices))} GPU device(s) in {_slice_names(slices)}")
    return fail(
        f"the node publishes no ResourceSlice with GPUs for {GPU_DRIVER}: claims for its GPUs "
        "stay unallocated ('cannot allocate all claims')",
        Evidence("ResourceSlices", _slice_names(slices) or f"none for node {node.get('node')}"),
        *_signs(facts, node, GPU_DRIVER),
        commands=_plugin_restarts(node, GPU_DRIVER),
        notes=("the plugin publishes its slices at start: a new pod republishes them",),
    )


@check(
    "dra.slices-stale",
    severity=Severity.ERROR,
    title="the node's ResourceSlices are current (complete pool, the loaded driver)",
    remedy="Restart the kubelet plugin pod on this node so that it republishes its slices.",
    sources=(DRA_DRIVER, DRA_DOCS),
    depends_on=("dra.slices-missing",),
    where=HOST_ONLY,
)
def slices_stale(facts: NodeFacts) -> Result:
    """An incomplete pool (fewer slices of the newest generation than `resourceSliceCount`) is
    not allocated from; devices published for another driver version than the one loaded name
    libraries that are gone; slices of older generations are leftovers."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    node, api = found
    slices = _slices(api, GPU_DRIVER)
    if not slices:
        return skip("no ResourceSlice of this node")
    current = _current(slices)
    incomplete = sorted(
        {s.pool for s in current if sum(c.pool == s.pool for c in current) < s.slice_count}
    )
    nvml = facts.nvml
    loaded = nvml.found.driver_version if isinstance(nvml, NvmlAnswer) and nvml.found else None
    versions = sorted({d.driver_version for d in _gpu_devices(current) if d.driver_version})
    other = [v for v in versions if loaded and _numbers(v) != _numbers(loaded)]
    commands = _plugin_restarts(node, GPU_DRIVER)
    if incomplete:
        pool = incomplete[0]
        count = max(s.slice_count for s in current if s.pool == pool)
        have = sum(s.pool == pool for s in current)
        return fail(
            f"pool {pool} of {GPU_DRIVER} is incomplete ({have} of {count} slices of its "
            "newest generation): the scheduler allocates nothing from it",
            Evidence("ResourceSlices", _slice_names(slices)),
            commands=commands,
        )
    if other:
        return fail(
            f"the ResourceSlices advertise driver {', '.join(other)} but {loaded} is loaded: "
            "the kubelet plugin predates the driver upgrade, and the CDI specs it writes name "
            "the old driver's files",
            Evidence("ResourceSlices", f"driverVersion {', '.join(versions)}"),
            Evidence("NVML", f"driver {loaded}"),
            commands=commands,
        )
    old = [s for s in slices if s not in current]
    if old:
        return warn(
            f"{len(old)} ResourceSlice(s) of an older generation are left over: "
            + ", ".join(s.name for s in old),
            Evidence("ResourceSlices", _slice_names(slices)),
            severity=Severity.WARNING,
            commands=commands,
        )
    return ok(f"pool {', '.join(sorted({s.pool for s in current}))} complete, generation current")


def _numbers(version: str) -> tuple[int, ...]:
    """A driver version's numbers: the plugin publishes it as semver (535.104.5 for NVML's
    535.104.05)."""
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _parents(facts: NodeFacts) -> dict[str, str]:
    """MIG device UUID -> its GPU's UUID, for the GPUs in MIG mode."""
    nvml = facts.nvml
    if not isinstance(nvml, NvmlAnswer):
        return {}
    return {
        mig.uuid: gpu.uuid
        for gpu in nvml.gpus
        if gpu.mig_mode is MigMode.ENABLED
        for mig in gpu.migs
    }


@check(
    "dra.slices-mismatch",
    severity=Severity.ERROR,
    title="the ResourceSlices list the node's GPUs and MIG devices (as NVML and the CDI spec do)",
    remedy="Restart the kubelet plugin pod so that it enumerates the GPUs again.",
    sources=(DRA_DRIVER,),
    depends_on=(*DRA_ORDER, "dra.slices-missing"),
    where=HOST_ONLY,
)
def slices_mismatch(facts: NodeFacts) -> Result:
    """The devices `ctk cdi generate` writes for this node (full GPUs, the MIG devices of GPUs in
    MIG mode, by UUID) against the slices' `type` gpu/mig devices: one missing cannot be
    claimed, one extra (a replaced GPU, a MIG device since destroyed) fails when allocated."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    node, api = found
    expected = expected_devices(facts)
    if expected is None:
        return unknown("NVML did not answer: the node's GPUs are not known")
    devices = _gpu_devices(_current(_slices(api, GPU_DRIVER)))
    if not devices:
        return skip("no GPU device in this node's ResourceSlices")
    published = {d.uuid for d in devices if d.uuid}
    parents = _parents(facts)
    missing = [
        e.label
        for e in expected
        if e.uuid not in published and parents.get(e.uuid) not in published
    ]
    known = {e.uuid for e in expected} | set(parents.values())
    extra = sorted(f"{d.name} ({d.uuid})" for d in devices if d.uuid and d.uuid not in known)
    if not missing and not extra:
        return ok(f"{len(published)} device(s), as NVML reports them")
    problems = [f"{label} is in no slice" for label in missing]
    problems += [f"{device} names no device of this node" for device in extra]
    return fail(
        f"the ResourceSlices of {GPU_DRIVER} do not match the node's GPUs: " + "; ".join(problems),
        Evidence("NVML", ", ".join(e.uuid for e in expected)),
        Evidence("ResourceSlices", ", ".join(sorted(published))),
        commands=_plugin_restarts(node, GPU_DRIVER),
        notes=(
            "the plugin enumerates the GPUs (and the MIG devices of GPUs in MIG mode) at start: "
            "after a MIG change or a GPU replacement restart it",
        ),
    )


# --- DeviceClasses and claims ---------------------------------------------------------------


DRIVER_TERM: Final = re.compile(r"""device\.driver\s*==\s*['"]([^'"]+)['"]""")
ATTRIBUTE_TERM: Final = re.compile(
    r"""device\.attributes\[\s*['"]([^'"]+)['"]\s*\]\.(\w+)\s*==\s*['"]([^'"]*)['"]"""
)


def selects(expression: str, driver: str, device: DraDevice) -> bool:
    """Whether a CEL selector may select ``device`` of ``driver``: its `&&`-joined
    `device.driver == '...'` and string attribute equalities are checked; any other term (and
    an expression with `||` or `!`) may hold, so that only a certain mismatch says no."""
    if "||" in expression or "!" in expression:
        return True
    values = {"type": device.type, "uuid": device.uuid, "parentUUID": device.parent_uuid}
    for raw in expression.split("&&"):
        term = raw.strip().strip("()").strip()
        if match := DRIVER_TERM.fullmatch(term):
            if match.group(1) != driver:
                return False
        elif match := ATTRIBUTE_TERM.fullmatch(term):
            domain, name, value = match.groups()
            actual = values.get(name)
            if domain != driver or (actual is not None and actual != value):
                return False
    return True


def class_selects(device_class: DeviceClass, driver: str, device: DraDevice) -> bool:
    """Whether every selector of the class may select the device (no selector: all devices)."""
    return all(selects(e, driver, device) for e in device_class.expressions)


@check(
    "dra.device-class-missing",
    severity=Severity.ERROR,
    title="a DeviceClass selects the node's GPU devices",
    remedy="Create the driver's DeviceClasses (its chart: gpu.nvidia.com, mig.nvidia.com).",
    sources=(DRA_DRIVER,),
    depends_on=("dra.slices-missing",),
    where=HOST_ONLY,
)
def device_class_missing(facts: NodeFacts) -> Result:
    """Slices with `type` gpu (or mig) devices that no DeviceClass selects: a claim can only
    name a class, so those devices cannot be claimed."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    _, api = found
    if api.classes is None:
        return unknown("the API server refused to list DeviceClasses")
    devices = _gpu_devices(_current(_slices(api, GPU_DRIVER)))
    if not devices:
        return skip("no GPU device in this node's ResourceSlices")
    unselected = sorted(
        {d.type or "" for d in devices}
        - {d.type or "" for d in devices for c in api.classes if class_selects(c, GPU_DRIVER, d)}
    )
    if not unselected:
        names = sorted(
            c.name for c in api.classes if any(class_selects(c, GPU_DRIVER, d) for d in devices)
        )
        return ok(f"selected by DeviceClass {', '.join(names)}")
    return fail(
        f"no DeviceClass selects the node's {' and '.join(unselected)} devices of {GPU_DRIVER}: "
        "claims cannot ask for them",
        Evidence("DeviceClasses", ", ".join(sorted(c.name for c in api.classes)) or "none"),
        Evidence(
            "ResourceSlices", f"device types {', '.join(sorted({d.type or '' for d in devices}))}"
        ),
        notes=(
            "the driver's Helm chart creates them (resources.gpus.enabled): gpu.nvidia.com "
            "selects device.driver == 'gpu.nvidia.com' && "
            "device.attributes['gpu.nvidia.com'].type == 'gpu', mig.nvidia.com the same with "
            "'mig'",
        ),
    )


@check(
    "dra.claim-unallocated",
    severity=Severity.ERROR,
    title="the ResourceClaims of this node's pods are allocated",
    remedy="Describe the claim: its DeviceClass, its selectors and the free devices.",
    sources=(DRA_DOCS,),
    depends_on=("dra.slices-missing", "dra.device-class-missing"),
    where=HOST_ONLY,
)
def claim_unallocated(facts: NodeFacts) -> Result:
    """A pod on this node uses a claim without allocation: it cannot start."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    node, api = found
    pods = node.get("dra_pods")
    if api.claims is None or not isinstance(pods, tuple):
        return unknown("the API server refused to list ResourceClaims or pods")
    claims = {(c.namespace, c.name): c for c in api.claims}
    used = [(p, name) for p in pods for name in p.claims]
    if not used:
        return skip("no pod on this node uses a ResourceClaim")
    classes = {c.name for c in api.classes or ()}
    stuck = []
    for pod, name in used:
        claim = claims.get((pod.namespace, name))
        if claim is None or not claim.allocated:
            reason = "does not exist" if claim is None else "is not allocated"
            absent = [
                n for n in (claim.classes if claim else ()) if api.classes and n not in classes
            ]
            if absent:
                reason += f" (DeviceClass {', '.join(absent)} does not exist)"
            stuck.append((pod, name, reason))
    if not stuck:
        return ok(f"{len(used)} claim(s) of this node's pods allocated")
    pod, name, reason = stuck[0]
    return fail(
        f"claim {pod.namespace}/{name} of pod {pod.name} {reason}: the pod cannot start",
        *(Evidence(f"pod {p.namespace}/{p.name}", f"claim {n} {r}") for p, n, r in stuck),
        commands=tuple(f"kubectl -n {p.namespace} describe resourceclaim {n}" for p, n, _ in stuck),
    )


@check(
    "dra.claim-orphaned",
    severity=Severity.WARNING,
    title="no claim holds this node's devices for a pod that is gone",
    remedy="Let the resource claim controller release it, else delete the claim.",
    sources=(DRA_DOCS,),
    depends_on=("dra.slices-missing",),
    where=HOST_ONLY,
)
def claim_orphaned(facts: NodeFacts) -> Result:
    """A claim allocated from this node and reserved for a pod the API server no longer has:
    its devices stay taken until the reservation is removed."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    _, api = found
    if api.claims is None:
        return unknown("the API server refused to list ResourceClaims")
    gone = set(api.gone_pods)
    orphaned = [
        (c, name) for c in api.claims for name, _ in c.reserved_for if (c.namespace, name) in gone
    ]
    if not orphaned:
        return ok("every reservation names a pod that exists")
    claim, pod = orphaned[0]
    return warn(
        f"claim {claim.namespace}/{claim.name} is reserved for pod {pod}, which is gone: its "
        "devices on this node stay taken",
        *(
            Evidence(f"claim {c.namespace}/{c.name}", f"reservedFor pod {p} (not found)")
            for c, p in orphaned
        ),
        commands=tuple(
            f"kubectl -n {c.namespace} get resourceclaim {c.name} -o yaml" for c, _ in orphaned
        ),
        notes=(
            "kube-controller-manager's resource claim controller removes reservations of pods "
            "that are gone; where one stays, delete the claim (a template's claim is made again "
            "for the next pod)",
        ),
    )


# --- the engine and the plugin's CDI specs --------------------------------------------------


def _cdi_root(node: Mapping[str, Any] | None) -> str:
    """Where the plugins write their claims' specs: a plugin pod's `CDI_ROOT`, else the default."""
    pods = [p for d in DRA_DRIVERS for p in _plugin_pods(node, d) or ()] if node else []
    roots = [posixpath.normpath(p.cdi_root) for p in pods if p.cdi_root]
    return roots[0] if roots else PLUGIN_CDI_ROOT


@check(
    "dra.engine-cdi-unresolvable",
    severity=Severity.ERROR,
    title="the node's container runtime resolves the DRA plugin's CDI devices",
    remedy="Enable CDI in containerd (enable_cdi) and read the plugin's CDI root (/var/run/cdi).",
    sources=(DRA_DRIVER, "https://github.com/containerd/containerd/blob/main/docs/cri/config.md"),
    depends_on=("dra.plugin-not-registered",),
    where=HOST_ONLY,
)
def engine_cdi_unresolvable(facts: NodeFacts) -> Result:
    """The plugin hands the kubelet CDI device names (`k8s.gpu.nvidia.com/claim=<uid>-gpu-0`):
    containerd must read CDI (1.7 needs `enable_cdi`, 2.x reads by default) from the directory
    the plugin writes to."""
    node = kube(facts)
    known = node if not isinstance(node, Result) else None
    if not any(_signs(facts, known, d) for d in DRA_DRIVERS):
        return skip("no NVIDIA DRA kubelet plugin on this node")
    root = _cdi_root(known)
    engines = {
        r: e for r, e in engines_in_use(facts).items() if r in (Runtime.CONTAINERD, Runtime.CRIO)
    }
    if not engines:
        return skip("no containerd or CRI-O serves the kubelet here")
    for runtime, engine in engines.items():
        if engine.error is not None or engine.needs_root:
            return unknown(f"{engine.config_path} could not be read")
        setting = Evidence(engine.config_path, cdi_setting(runtime, engine))
        if engine_reader(facts, runtime) is None:
            unsupported = cdi_unsupported(runtime, engine)
            if unsupported is not None:
                return fail(
                    f"{unsupported}: it cannot resolve the DRA plugin's CDI devices, and every "
                    "pod with a GPU claim fails to start",
                    setting,
                    notes=("upgrade containerd to 1.7 or later (2.x reads CDI specs by default)",),
                )
            remedy = (
                containerd_change(facts, "set enable_cdi = true in the CRI plugin", enable_cdi=True)
                if runtime is Runtime.CONTAINERD
                else Remedy()
            )
            return fail(
                f"{runtime.value} does not read CDI specs: pods with GPU claims fail with "
                "'unresolvable CDI devices k8s.gpu.nvidia.com/claim=...'",
                setting,
                fixes=remedy.fixes,
                commands=remedy.commands,
                notes=remedy.notes,
            )
        dirs = [posixpath.normpath(d) for d in spec_dirs(engine)]
        if root not in dirs:
            return fail(
                f"the DRA plugin writes its CDI specs to {root}, which {runtime.value} does not "
                "read: pods with GPU claims fail with 'unresolvable CDI devices'",
                setting,
                Evidence(engine.config_path, f"cdi_spec_dirs = {dirs}"),
                Evidence("DRA kubelet plugin", f"CDI_ROOT={root}"),
                notes=(f"add {root} to cdi_spec_dirs in {engine.config_path}, then restart it",),
            )
    names = ", ".join(r.value for r in engines)
    return ok(f"{names} reads CDI specs from {root}, where the DRA plugin writes them")


@check(
    "dra.claim-spec-invalid",
    severity=Severity.ERROR,
    title="the DRA plugin's CDI specs are valid and clash with no other spec",
    remedy="Validate the spec; remove a spec of the plugin's kind that the plugin did not write.",
    sources=(DRA_DRIVER, "https://github.com/cncf-tags/container-device-interface"),
    depends_on=("dra.engine-cdi-unresolvable",),
    where=HOST_ONLY,
)
def claim_spec_invalid(facts: NodeFacts) -> Result:
    """A claim's spec the CDI validator (`ctk cdi validate`'s rules) refuses, or whose hook
    program is missing, fails its pod; a spec of another file that takes the plugin's kind
    (`k8s.gpu.nvidia.com/...`) or a clash of device names makes the runtime drop the devices."""
    kinds = tuple(f"k8s.{driver}/" for driver in DRA_DRIVERS)
    ours = [s for s in facts.cdi.specs if dra_plugin_spec(s.path) is not None]
    foreign = [
        s
        for s in facts.cdi.specs
        if dra_plugin_spec(s.path) is None and (s.kind or "").startswith(kinds)
    ]
    if not ours and not foreign:
        return skip("no CDI spec of the DRA plugin (no claim prepared on this node)")
    broken = [s for s in ours if s.problems or s.missing_hook_paths]
    clashing = [s for s in ours if s.path in facts.cdi.conflict_files]
    if broken:
        spec = broken[0]
        why = spec.problems[0] if spec.problems else f"hook {spec.missing_hook_paths[0]} is missing"
        return fail(
            f"{spec.path} of the DRA plugin is not a usable CDI spec ({why}): the pod of its "
            "claim fails to start",
            *(
                Evidence(
                    s.path,
                    "; ".join((*s.problems, *(f"missing {h}" for h in s.missing_hook_paths))),
                )
                for s in broken
            ),
            fixes=tuple(ValidateSpec(path=s.path) for s in broken),
        )
    if foreign or clashing:
        other = foreign[0] if foreign else clashing[0]
        return fail(
            f"{other.path} defines CDI devices of kind {other.kind}, which the DRA plugin owns: "
            "the runtime drops clashing devices and claims' pods fail",
            *(Evidence(s.path, f"kind {s.kind}") for s in (*foreign, *clashing)),
            notes=(
                "the plugin writes k8s.<driver>-claim_<uid>.yaml itself; a spec of its kind "
                "written by hand or by `cdi generate --vendor` belongs removed",
            ),
        )
    return ok(f"{len(ours)} spec(s) of the DRA plugin valid")


# --- the classic device plugin --------------------------------------------------------------


@check(
    "dra.device-plugin-overlap",
    severity=Severity.ERROR,
    title="the device plugin and the DRA driver do not both advertise the node's GPUs",
    remedy="Run one of them on this node: disable the device plugin here, or the DRA GPUs.",
    sources=(DRA_DRIVER,),
    depends_on=("dra.slices-missing",),
    where=HOST_ONLY,
)
def device_plugin_overlap(facts: NodeFacts) -> Result:
    """`nvidia.com/gpu` (or mig-*) allocatable from the device plugin and the same GPUs in
    gpu.nvidia.com slices: two pods get the same GPU (the driver's chart refuses this setup
    without `gpuResourcesEnabledOverride`)."""
    found = _dra_node(facts)
    if isinstance(found, Result):
        return found
    node, api = found
    devices = _gpu_devices(_current(_slices(api, GPU_DRIVER)))
    if not devices:
        return skip("no GPU device in this node's ResourceSlices")
    allocatable = node.get("allocatable")
    if not isinstance(allocatable, Mapping):
        return unknown("the API server did not return this node's allocatable resources")
    offered = {k: v for k, v in allocatable.items() if v not in ("0", "")}
    if not offered:
        return ok(f"only DRA advertises the GPUs ({len(devices)} device(s) in ResourceSlices)")
    listed = ", ".join(f"{k}={v}" for k, v in sorted(offered.items()))
    operator = gpu_operator(facts, node)
    name = node.get("node", "NODE")
    commands = (
        (f"kubectl label node {name} nvidia.com/gpu.deploy.device-plugin=false --overwrite",)
        if operator is not None
        else ()
    )
    return fail(
        f"the device plugin offers {listed} and the DRA driver the same GPUs in ResourceSlices: "
        "the scheduler can give one GPU to two pods",
        Evidence(f"node {name}", f"allocatable {listed}"),
        Evidence("ResourceSlices", f"{len(devices)} {GPU_DRIVER} device(s)"),
        *((operator,) if operator is not None else ()),
        commands=commands,
        notes=(
            "keep one per node: remove the device plugin's DaemonSet from this node (the GPU "
            "Operator: label nvidia.com/gpu.deploy.device-plugin=false), or install the DRA "
            "driver with resources.gpus.enabled=false (compute domains only)",
        ),
    )


# --- compute domains (IMEX) -----------------------------------------------------------------


def _domain_node(facts: NodeFacts) -> tuple[Mapping[str, Any] | None, list[Evidence]] | Result:
    node = kube(facts)
    known = node if not isinstance(node, Result) else None
    signs = _signs(facts, known, COMPUTE_DOMAIN_DRIVER)
    if not signs:
        return skip(f"no {COMPUTE_DOMAIN_DRIVER} kubelet plugin on this node")
    return known, signs


@check(
    "dra.imex-channels-missing",
    severity=Severity.ERROR,
    title="the driver offers IMEX channels to the compute-domain plugin",
    remedy="Use a driver with IMEX channel support (nvidia-caps-imex-channels in /proc/devices).",
    sources=(DRA_DRIVER, "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/"),
    depends_on=("driver.not-loaded",),
    where=HOST_ONLY,
)
def imex_channels_missing(facts: NodeFacts) -> Result:
    """The compute-domain plugin gives each workload an IMEX channel, a character device of the
    driver's `nvidia-caps-imex-channels` major (`/dev/nvidia-caps-imex-channels/channel<N>`,
    made in the container): without the major it cannot prepare a channel claim."""
    found = _domain_node(facts)
    if isinstance(found, Result):
        return found
    _, signs = found
    major = facts.kernel.char_majors.get(IMEX_MAJOR)
    channels = sorted(p for p in facts.dev.nodes if p.startswith("/dev/nvidia-caps-imex-channels/"))
    if major is None:
        return fail(
            f"the driver has no {IMEX_MAJOR} device (not in /proc/devices): the compute-domain "
            "plugin cannot prepare IMEX channels, and compute domain workloads do not start",
            Evidence("/proc/devices", f"no {IMEX_MAJOR}"),
            *signs,
            notes=(
                "IMEX channels come with the data-center driver on NVLink multi-node systems "
                "(GB200 NVL); check that the loaded driver is that branch",
            ),
        )
    shown = f", {len(channels)} channel node(s) on the host" if channels else ""
    return ok(f"{IMEX_MAJOR} major {major}{shown}")


@check(
    "dra.imex-daemon-not-running",
    severity=Severity.ERROR,
    title="the compute domain's IMEX daemon runs on this node",
    remedy="Look at the compute domain's daemon pod on this node (describe, logs).",
    sources=(DRA_DRIVER,),
    depends_on=("dra.imex-channels-missing", "dra.plugin-not-running"),
    where=HOST_ONLY,
)
def imex_daemon_not_running(facts: NodeFacts) -> Result:
    """A node in a compute domain (label `resource.nvidia.com/computeDomain=<uid>`, set when a
    channel claim is prepared here) needs that domain's IMEX daemon pod Running and Ready, else
    its workloads wait ('current node not ready in ComputeDomain')."""
    found = _domain_node(facts)
    if isinstance(found, Result):
        return found
    node, _ = found
    if node is None:
        return skip("no Kubernetes node facts: the compute domain is not known")
    labels = node.get("labels")
    domain = labels.get(DOMAIN_LABEL) if isinstance(labels, Mapping) else None
    if not domain:
        return skip("the node is in no compute domain")
    pods = node.get("dra_pods")
    if not isinstance(pods, tuple):
        return unknown("the pods on this node could not be listed")
    daemons = [p for p in pods if isinstance(p, DraPod) and p.domain == domain]
    if any(p.phase == "Running" and p.ready for p in daemons):
        pod = next(p for p in daemons if p.phase == "Running" and p.ready)
        return ok(f"IMEX daemon {pod.namespace}/{pod.name} of compute domain {domain} runs")
    state = (
        ", ".join(f"{p.namespace}/{p.name} {p.phase}, ready {p.ready}" for p in daemons) or "no pod"
    )
    return fail(
        f"compute domain {domain} has no running IMEX daemon on this node: its workloads' "
        "channel claims are not prepared ('current node not ready in ComputeDomain')",
        Evidence("node labels", f"{DOMAIN_LABEL}={domain}"),
        Evidence("pods on this node", f"IMEX daemon: {state}"),
        commands=(
            *(f"kubectl -n {p.namespace} logs {p.name} -c compute-domain-daemon" for p in daemons),
            f"kubectl get pods -A -l {DOMAIN_LABEL}={domain} -o wide",
        ),
    )
