"""Kubernetes facts: this node (and pod) as the API server sees them; read-only and optional.

In a pod: the in-cluster API with the pod's service account (`KUBERNETES_SERVICE_HOST`, the token
and CA under /var/run/secrets/kubernetes.io/serviceaccount). On a host: the kubelet's kubeconfig
(kubeadm's /etc/kubernetes/kubelet.conf, else k3s's, RKE2's or microk8s's: `DISTRIBUTIONS`;
client certificate or token) and node name (the kubelet's `--hostname-override`, k3s/RKE2's
`node-name`, else the host name). Every request is a GET bounded in time; an API that
cannot be reached makes the facts `Unavailable` with the reason, never a failure.
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from ctk.doctor.facts import Distribution, Unavailable
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
    g: Gatherer, env: Mapping[str, str], where: Where
) -> Mapping[str, Any] | Unavailable | None:
    """The node's labels, capacity, allocatable, RuntimeClass handlers, the device plugin's
    settings and (in a pod) this pod's GPU resources; None where there is no Kubernetes."""
    access = _in_cluster(g, env) if where is Where.POD else _kubelet(g)
    if access is None:
        return None
    if isinstance(access, Unavailable):
        return access
    try:
        return _read(access)
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


def _read(access: Access) -> dict[str, Any]:
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
