"""Kubernetes facts: this node (and pod) as the API server sees them; read-only and optional.

In a pod: the in-cluster API with the pod's service account (`KUBERNETES_SERVICE_HOST`, the token
and CA under /var/run/secrets/kubernetes.io/serviceaccount). On a host: the kubelet's kubeconfig
(kubeadm's /etc/kubernetes/kubelet.conf, else k3s's, RKE2's or microk8s's: `DISTRIBUTIONS`;
client certificate or token) and node name (the kubelet's `--hostname-override`, k3s/RKE2's
`node-name`, else the host name). Every request is a GET bounded in time; an API that
cannot be reached makes the facts `Unavailable` with the reason, never a failure.

Dynamic Resource Allocation: `resource.k8s.io` is asked whether it is served (one GET of the
group); where it is, this node's ResourceSlices (one GET with a field selector), and only on a
node that looks like a DRA node (an NVIDIA DRA driver's kubelet plugin registered or its pod
here, or slices of its drivers) the DeviceClasses and ResourceClaims too (`DraApi`).
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import re
import ssl
import stat
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from ctk.doctor.facts import (
    COMPUTE_DOMAIN_DRIVER,
    DRA_DRIVERS,
    GPU_DRIVER,
    DeviceClass,
    Distribution,
    DraApi,
    DraDevice,
    DraFiles,
    DraPod,
    ResourceClaim,
    ResourceSlice,
    Unavailable,
)
from ctk.doctor.model import Where
from ctk.host.facts.gatherer import DISTRIBUTIONS, Gatherer

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
KUBELET_KUBECONFIG = "/etc/kubernetes/kubelet.conf"
KUBEADM_FLAGS = "/var/lib/kubelet/kubeadm-flags.env"
REQUEST_TIMEOUT_S = 2.0
DEVICE_PLUGIN = re.compile(r"(k8s-)?device-plugin", re.I)
OPERATOR_TOOLKIT = re.compile(r"nvidia-container-toolkit-daemonset")
"""The GPU Operator's toolkit DaemonSet (its ClusterPolicy names it so)."""
PLUGIN_SETTINGS = {"MIG_STRATEGY": "mig_strategy", "DEVICE_LIST_STRATEGY": "device_list_strategy"}

DRA_CONTAINERS = {"gpus": GPU_DRIVER, "compute-domains": COMPUTE_DOMAIN_DRIVER}
"""The kubelet plugin DaemonSet's containers (its Helm chart, templates/kubeletplugin.yaml)."""
DRA_IMAGE = re.compile(r"dra-driver", re.I)
"""nvcr.io/nvidia/k8s-dra-driver-gpu, registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu."""
DRA_PLUGIN_DAEMONSET = re.compile(r".*dra-driver.*-kubelet-plugin")
COMPUTE_DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
"""The label the compute domain's IMEX daemon pods (and the nodes in the domain) carry."""
KUBELET_DIRS = ("/var/lib/kubelet", "/var/snap/microk8s/common/var/lib/kubelet")
"""Where kubelets keep plugins_registry/ and plugins/ (kubeadm, k3s, RKE2; microk8s)."""
RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
"""The `resource.k8s.io` versions whose objects the doctor reads (1.34+, 1.33, 1.32), best first."""
GONE_LOOKUPS = 8
"""At most this many pods a claim is reserved for are looked up one by one."""


def gather_dra_files(g: Gatherer) -> DraFiles:
    """The NVIDIA DRA drivers' registration sockets and plugin directories under the kubelet's
    directory (`kubeletplugin.KubeletRegistryDir`, `KubeletPluginsDir`): the first kubelet
    directory that has either."""
    for kubelet in KUBELET_DIRS:
        registered: dict[str, str] = {}
        plugin_dirs: dict[str, str] = {}
        for driver in DRA_DRIVERS:
            own = re.compile(re.escape(driver) + r"(-[0-9a-f-]+)?-reg\.sock")
            for path in g.glob(f"{kubelet}/plugins_registry/{driver}*-reg.sock"):
                if own.fullmatch(posixpath.basename(path)) and _is_socket(g, path):
                    registered[driver] = path
                    break
            directory = f"{kubelet}/plugins/{driver}"
            if g.exists(directory):
                plugin_dirs[driver] = directory
        if registered or plugin_dirs:
            return DraFiles(registered=registered, plugin_dirs=plugin_dirs, kubelet_dir=kubelet)
    return DraFiles()


def _is_socket(g: Gatherer, path: str) -> bool:
    host = g.host(path)
    try:
        return host is not None and stat.S_ISSOCK(os.stat(host).st_mode)
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class Access:
    """How to reach the API server as this node or pod."""

    server: str
    ca: bytes | None = None
    token: str | None = None
    cert: bytes | None = None
    key: bytes | None = None
    node: str | None = None
    namespace: str | None = None
    pod: str | None = None


def gather_kubernetes(
    g: Gatherer, env: Mapping[str, str], where: Where, dra: DraFiles | None = None
) -> Mapping[str, Any] | Unavailable | None:
    """The node's labels, capacity, allocatable, RuntimeClass handlers, the device plugin's
    settings, (in a pod) this pod's GPU resources and the DRA view (``dra``: what the node's
    files show of the DRA drivers); None where there is no Kubernetes."""
    access = _in_cluster(g, env) if where is Where.POD else _kubelet(g)
    if access is None:
        return None
    if isinstance(access, Unavailable):
        return access
    try:
        return _read(access, dra or DraFiles())
    except (OSError, ValueError, ssl.SSLError) as exc:  # URLError is an OSError
        reason = getattr(exc, "reason", None) or exc
        return Unavailable(f"Kubernetes API at {access.server} not reachable: {reason}")


def _in_cluster(g: Gatherer, env: Mapping[str, str]) -> Access | Unavailable | None:
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        return None
    token = g.text(f"{SERVICE_ACCOUNT}/token")
    if token is None:
        return Unavailable("no service account token is mounted in this pod")
    ca = g.text(f"{SERVICE_ACCOUNT}/ca.crt")
    namespace = (g.text(f"{SERVICE_ACCOUNT}/namespace") or "").strip() or None
    server = f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"
    return Access(
        server=server,
        ca=ca.encode() if ca else None,
        token=token.strip(),
        node=env.get("NODE_NAME") or None,
        namespace=namespace,
        pod=env.get("POD_NAME") or env.get("HOSTNAME") or None,
    )


def kubelet_kubeconfigs() -> tuple[tuple[str, Distribution | None], ...]:
    """Where kubelets keep their kubeconfig: kubeadm's, then each distribution's."""
    return ((KUBELET_KUBECONFIG, None), *((d.kubeconfig, d) for d in DISTRIBUTIONS))


def _kubelet(g: Gatherer) -> Access | Unavailable | None:
    import yaml

    found = [(p, d) for p, d in kubelet_kubeconfigs() if g.readable(p) is not None]
    if not found:
        return None
    path, distribution = found[0]
    text = g.text(path)
    if text is None:
        if g.readable(path) is False:
            return Unavailable(f"{path} is readable by root only", needs_root=True)
        return None
    try:
        config = yaml.safe_load(text)
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        server = str(cluster["server"])
    except (yaml.YAMLError, ValueError, RecursionError, KeyError, IndexError, TypeError) as exc:
        return Unavailable(f"{path} is not a kubeconfig ({type(exc).__name__})")
    return Access(
        server=server,
        ca=_data(g, cluster, "certificate-authority"),
        token=user.get("token"),
        cert=_data(g, user, "client-certificate"),
        key=_data(g, user, "client-key"),
        node=_node_name(g, distribution),
    )


def _data(g: Gatherer, entry: Mapping[str, Any], name: str) -> bytes | None:
    """A kubeconfig credential: inline (`<name>-data`, base64) or a file on the node."""
    inline = entry.get(f"{name}-data")
    if isinstance(inline, str):
        with suppress(ValueError):
            return base64.b64decode(inline)
    path = entry.get(name)
    text = g.text(path) if isinstance(path, str) else None
    return text.encode() if text else None


def _node_name(g: Gatherer, distribution: Distribution | None = None) -> str | None:
    """The kubelet's node name: its `--hostname-override` (kubeadm's flags file, microk8s's
    kubelet arguments), k3s/RKE2's `node-name`, else the host name."""
    flags_file = KUBEADM_FLAGS if distribution is None else distribution.kubelet_args
    flags = (g.text(flags_file) if flags_file else None) or ""
    match = re.search(r"--hostname-override[= ](\S+?)[\"' \n]", flags + " ")
    if match:
        return match.group(1)
    configured = _configured_node_name(g, distribution)
    if configured:
        return configured
    hostname = (g.text("/etc/hostname") or "").strip().lower()
    return hostname or None


def _configured_node_name(g: Gatherer, distribution: Distribution | None) -> str | None:
    """`node-name` of k3s/RKE2's config.yaml."""
    import yaml

    path = None if distribution is None else distribution.node_config
    text = g.text(path) if path else None
    if not text:
        return None
    try:
        config = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    name = config.get("node-name") if isinstance(config, dict) else None
    if not isinstance(name, str):
        return None
    return name.strip().lower() or None


@contextmanager
def _context(access: Access) -> Iterator[ssl.SSLContext]:
    context = ssl.create_default_context(cadata=access.ca.decode() if access.ca else None)
    if access.cert is None or access.key is None:
        yield context
        return
    # ssl loads a client key from files only: private temporary files, removed at once
    with tempfile.TemporaryDirectory(prefix="ctk-kube-") as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((cert, access.cert), (key, access.key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert, key)
        yield context


def _get(access: Access, context: ssl.SSLContext, path: str) -> Any:
    request = urllib.request.Request(access.server.rstrip("/") + path, method="GET")
    request.add_header("Accept", "application/json")
    if access.token:
        request.add_header("Authorization", f"Bearer {access.token}")
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S, context=context) as answer:
        return json.loads(answer.read(8 << 20))


def _optional(access: Access, context: ssl.SSLContext, path: str) -> Any:
    """A GET whose refusal (403 without RBAC, 404) leaves that part out."""
    try:
        return _get(access, context, path)
    except urllib.error.HTTPError:
        return None


def _read(access: Access, dra: DraFiles) -> dict[str, Any]:
    with _context(access) as context:
        facts: dict[str, Any] = {"server": access.server}
        node_name = access.node
        if access.pod and access.namespace:
            pod = _optional(
                access, context, f"/api/v1/namespaces/{access.namespace}/pods/{access.pod}"
            )
            if isinstance(pod, dict):
                facts["pod"] = _pod_facts(pod)
                node_name = node_name or pod.get("spec", {}).get("nodeName")
        if node_name:
            facts["node"] = node_name
            node = _get(access, context, f"/api/v1/nodes/{urllib.parse.quote(node_name)}")
            metadata, status = node.get("metadata", {}), node.get("status", {})
            facts["labels"] = dict(metadata.get("labels") or {})
            facts["capacity"] = _gpu_resources(status.get("capacity"))
            facts["allocatable"] = _gpu_resources(status.get("allocatable"))
            selector = urllib.parse.quote(f"spec.nodeName={node_name}")
            pods = _optional(access, context, f"/api/v1/pods?fieldSelector={selector}")
            facts.update(_plugin_settings(pods))
            facts.update(_operator_toolkit(pods))
            dra_pods = _dra_pods(pods) if isinstance(pods, dict) else None
            if dra_pods is not None:
                facts["dra_pods"] = dra_pods
            with suppress(OSError, ValueError, ssl.SSLError):  # DRA's part only: left out
                facts["dra"] = _dra_api(access, context, node_name, dra, dra_pods or ())
        classes = _optional(access, context, "/apis/node.k8s.io/v1/runtimeclasses")
        if isinstance(classes, dict):
            facts["runtimeclass_handlers"] = sorted(
                str(item.get("handler")) for item in classes.get("items", [])
            )
        return facts


def _gpu_resources(values: Any) -> dict[str, str]:
    if not isinstance(values, dict):
        return {}
    return {k: str(v) for k, v in values.items() if str(k).startswith("nvidia.com/")}


def _pod_facts(pod: Mapping[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec", {})
    limits: dict[str, str] = {}
    for container in spec.get("containers", []):
        resources = (container.get("resources") or {}).get("limits") or {}
        limits.update(_gpu_resources(resources))
    return {"runtimeClassName": spec.get("runtimeClassName"), "limits": limits}


def _operator_toolkit(pods: Any) -> dict[str, dict[str, str]]:
    """The GPU Operator's toolkit DaemonSet with a pod on this node (its namespace and name)."""
    items = pods.get("items", []) if isinstance(pods, dict) else []
    for pod in items:
        metadata = pod.get("metadata") or {}
        for owner in metadata.get("ownerReferences") or []:
            name = str(owner.get("name", ""))
            if owner.get("kind") == "DaemonSet" and OPERATOR_TOOLKIT.fullmatch(name):
                namespace = str(metadata.get("namespace") or "default")
                return {"gpu_operator_toolkit": {"namespace": namespace, "daemonset": name}}
    return {}


def _plugin_settings(pods: Any) -> dict[str, str]:
    """MIG and device-list strategy of the device plugin pod on this node (env, then flags)."""
    settings: dict[str, str] = {}
    items = pods.get("items", []) if isinstance(pods, dict) else []
    for pod in items:
        for container in pod.get("spec", {}).get("containers", []):
            if not DEVICE_PLUGIN.search(f"{container.get('name')} {container.get('image')}"):
                continue
            for variable in container.get("env") or []:
                key = PLUGIN_SETTINGS.get(str(variable.get("name")))
                if key and isinstance(variable.get("value"), str):
                    settings[key] = variable["value"]
            for arg in (container.get("args") or []) + (container.get("command") or []):
                match = re.fullmatch(r"--(mig-strategy|device-list-strategy)=(\S+)", str(arg))
                if match:
                    settings[match.group(1).replace("-", "_")] = match.group(2)
    return settings


# --- Dynamic Resource Allocation ------------------------------------------------------------


def _dra_pods(pods: Mapping[str, Any]) -> tuple[DraPod, ...]:
    """The pods on this node that DRA checks look at: the NVIDIA DRA driver's kubelet plugin, a
    compute domain's IMEX daemon, and every pod that uses ResourceClaims."""
    found = []
    for pod in pods.get("items") or ():
        if not isinstance(pod, dict):
            continue
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        status = pod.get("status") or {}
        owners = [str(o.get("name", "")) for o in metadata.get("ownerReferences") or ()]
        plugin_owner = any(DRA_PLUGIN_DAEMONSET.fullmatch(name) for name in owners)
        drivers, cdi_root = [], None
        for container in spec.get("containers") or ():
            driver = DRA_CONTAINERS.get(str(container.get("name")))
            image = str(container.get("image", ""))
            if driver is None or not (plugin_owner or DRA_IMAGE.search(image)):
                continue
            drivers.append(driver)
            for variable in container.get("env") or ():
                if variable.get("name") == "CDI_ROOT" and isinstance(variable.get("value"), str):
                    cdi_root = variable["value"]
        labels = metadata.get("labels") or {}
        domain = labels.get(COMPUTE_DOMAIN_LABEL)
        claims = tuple(
            sorted(
                {
                    str(entry["resourceClaimName"])
                    for entry in status.get("resourceClaimStatuses") or ()
                    if isinstance(entry, dict) and entry.get("resourceClaimName")
                }
                | {
                    str(entry["resourceClaimName"])
                    for entry in spec.get("resourceClaims") or ()
                    if isinstance(entry, dict) and entry.get("resourceClaimName")
                }
            )
        )
        if not (drivers or domain or claims):
            continue
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
            if isinstance(c, dict)
        )
        found.append(
            DraPod(
                namespace=str(metadata.get("namespace") or "default"),
                name=str(metadata.get("name", "")),
                uid=str(metadata.get("uid", "")),
                phase=str(status.get("phase", "")),
                ready=ready,
                drivers=tuple(drivers),
                domain=str(domain) if domain else None,
                claims=claims,
                cdi_root=cdi_root,
            )
        )
    return tuple(found)


def _served_versions(group: Any) -> tuple[str, ...]:
    """The versions of an APIGroup document, the preferred one first."""
    if not isinstance(group, dict):
        return ()
    versions = [str(v.get("version")) for v in group.get("versions") or () if isinstance(v, dict)]
    preferred = (group.get("preferredVersion") or {}).get("version")
    if preferred in versions:
        versions.remove(preferred)
        versions.insert(0, preferred)
    return tuple(versions)


def _dra_api(
    access: Access,
    context: ssl.SSLContext,
    node: str,
    files: DraFiles,
    pods: tuple[DraPod, ...],
) -> DraApi:
    """`resource.k8s.io` as served, and this node's objects in it: few requests, and the
    cluster-wide lists only on a node that looks like a DRA node."""
    versions = _served_versions(_optional(access, context, "/apis/resource.k8s.io"))
    version = next((v for v in RESOURCE_VERSIONS if v in versions), None)
    if version is None:
        return DraApi(versions=versions)
    base = f"/apis/resource.k8s.io/{version}"
    selector = urllib.parse.quote(f"spec.nodeName={node}")
    listed = _optional(access, context, f"{base}/resourceslices?fieldSelector={selector}")
    slices = _slices(listed) if isinstance(listed, dict) else None
    looks_dra = (
        bool(files.registered or files.plugin_dirs)
        or any(p.drivers for p in pods)
        or any(s.driver in DRA_DRIVERS for s in slices or ())
    )
    if not looks_dra:
        return DraApi(versions=versions, slices=slices)
    classes = _optional(access, context, f"{base}/deviceclasses")
    claims_listed = _optional(access, context, f"{base}/resourceclaims")
    if not isinstance(claims_listed, dict):
        # the node authorizer lets a kubelet get the claims of its pods, not list them all
        claims_listed = _claims_of_pods(access, context, base, pods)
    claims = _claims(claims_listed, node, pods) if isinstance(claims_listed, dict) else None
    return DraApi(
        versions=versions,
        slices=slices,
        classes=_classes(classes) if isinstance(classes, dict) else None,
        claims=claims,
        gone_pods=_gone_pods(access, context, claims or (), pods),
    )


def _attribute(value: Any) -> str | None:
    """A device attribute's value as text (`string`, `version`, `int`, `bool`)."""
    if not isinstance(value, dict):
        return None
    for key in ("string", "version", "int", "bool"):
        if key in value:
            return str(value[key])
    return None


def _slices(listed: Mapping[str, Any]) -> tuple[ResourceSlice, ...]:
    """ResourceSlices of v1/v1beta2 (attributes on the device) or v1beta1 (under `basic`)."""
    found = []
    for item in listed.get("items") or ():
        if not isinstance(item, dict):
            continue
        spec = item.get("spec") or {}
        driver = str(spec.get("driver", ""))
        pool = spec.get("pool") or {}
        devices = []
        for device in spec.get("devices") or ():
            if not isinstance(device, dict):
                continue
            basic = device.get("basic")
            body: dict[str, Any] = basic if isinstance(basic, dict) else device
            raw = body.get("attributes") or {}
            # a qualified name in the driver's own domain is the same attribute
            attributes = {
                str(k).removeprefix(f"{driver}/"): _attribute(v)
                for k, v in (raw.items() if isinstance(raw, dict) else ())
            }
            devices.append(
                DraDevice(
                    name=str(device.get("name", "")),
                    type=attributes.get("type"),
                    uuid=attributes.get("uuid"),
                    parent_uuid=attributes.get("parentUUID"),
                    driver_version=attributes.get("driverVersion"),
                )
            )
        found.append(
            ResourceSlice(
                name=str((item.get("metadata") or {}).get("name", "")),
                driver=driver,
                pool=str(pool.get("name", "")),
                generation=_int(pool.get("generation")),
                slice_count=_int(pool.get("resourceSliceCount"), 1),
                devices=tuple(devices),
            )
        )
    return tuple(found)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _classes(listed: Mapping[str, Any]) -> tuple[DeviceClass, ...]:
    found = []
    for item in listed.get("items") or ():
        if not isinstance(item, dict):
            continue
        spec = item.get("spec") or {}
        expressions = tuple(
            str((selector.get("cel") or {}).get("expression", ""))
            for selector in spec.get("selectors") or ()
            if isinstance(selector, dict)
        )
        extended = spec.get("extendedResourceName")
        found.append(
            DeviceClass(
                name=str((item.get("metadata") or {}).get("name", "")),
                expressions=expressions,
                extended_resource=str(extended) if extended else None,
            )
        )
    return tuple(found)


def _claims(
    listed: Mapping[str, Any], node: str, pods: tuple[DraPod, ...]
) -> tuple[ResourceClaim, ...]:
    """The claims a pod on this node uses, and those allocated from this node's pools."""
    used = {(p.namespace, claim) for p in pods for claim in p.claims}
    found = []
    for item in listed.get("items") or ():
        if not isinstance(item, dict):
            continue
        metadata, spec = item.get("metadata") or {}, item.get("spec") or {}
        status = item.get("status") or {}
        allocation = status.get("allocation")
        results = (
            ((allocation.get("devices") or {}).get("results") or ())
            if isinstance(allocation, dict)
            else ()
        )
        devices = tuple(
            (str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
            for r in results
            if isinstance(r, dict)
        )
        key = (str(metadata.get("namespace") or "default"), str(metadata.get("name", "")))
        here = any(driver in DRA_DRIVERS and pool == node for driver, pool, _ in devices)
        if key not in used and not here:
            continue
        requests = (spec.get("devices") or {}).get("requests") or ()
        classes = []
        for request in requests:
            if not isinstance(request, dict):
                continue
            exactly = request.get("exactly") if isinstance(request.get("exactly"), dict) else {}
            for source in (request, exactly, *(request.get("firstAvailable") or ())):
                if isinstance(source, dict) and source.get("deviceClassName"):
                    classes.append(str(source["deviceClassName"]))
        found.append(
            ResourceClaim(
                namespace=key[0],
                name=key[1],
                uid=str(metadata.get("uid", "")),
                allocated=isinstance(allocation, dict),
                devices=devices,
                reserved_for=tuple(
                    (str(r.get("name", "")), str(r.get("uid", "")))
                    for r in status.get("reservedFor") or ()
                    if isinstance(r, dict) and r.get("resource", "pods") == "pods"
                ),
                classes=tuple(dict.fromkeys(classes)),
            )
        )
    return tuple(found)


def _claims_of_pods(
    access: Access, context: ssl.SSLContext, base: str, pods: tuple[DraPod, ...]
) -> dict[str, Any] | None:
    """The claims the pods on this node use, one GET each (at most `GONE_LOOKUPS`); None where
    one is refused too."""
    items = []
    wanted = sorted({(p.namespace, claim) for p in pods for claim in p.claims})
    for namespace, name in wanted[:GONE_LOOKUPS]:
        path = (
            f"{base}/namespaces/{urllib.parse.quote(namespace)}/resourceclaims/"
            f"{urllib.parse.quote(name)}"
        )
        try:
            items.append(_get(access, context, path))
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # a claim that does not exist is a fact; a refusal is not
                return None
    return {"items": items}


def _gone_pods(
    access: Access,
    context: ssl.SSLContext,
    claims: tuple[ResourceClaim, ...],
    pods: tuple[DraPod, ...],
) -> tuple[tuple[str, str], ...]:
    """Pods a claim here is reserved for that are not on this node and that the API server no
    longer has (or has under another UID: a new pod of the same name)."""
    here = {p.uid for p in pods}
    candidates = [
        (claim.namespace, name, uid)
        for claim in claims
        if claim.allocated
        for name, uid in claim.reserved_for
        if uid not in here
    ]
    gone = []
    for namespace, name, uid in candidates[:GONE_LOOKUPS]:
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(name)}"
        try:
            pod = _get(access, context, path)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                gone.append((namespace, name))
            continue
        if isinstance(pod, dict) and (pod.get("metadata") or {}).get("uid") not in (uid, None):
            gone.append((namespace, name))
    return tuple(gone)
