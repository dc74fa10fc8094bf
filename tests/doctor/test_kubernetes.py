"""Kubernetes facts from a real HTTPS API server on 127.0.0.1 serving recorded objects.

The server's certificate is made here with `openssl` (self-signed for IP 127.0.0.1); the node's
kubeconfig (host) or service account (pod) names it as the CA, so the doctor's client verifies
the server as it would a real one.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

TOKEN = "recorded-token"
NODE = "gpu-node-1"
NODE_OBJECT = {
    "kind": "FakeNode",
    "metadata": {"name": NODE, "labels": {"nvidia.com/mig.strategy": "single"}},
    "status": {
        "capacity": {"cpu": "64", "nvidia.com/gpu": "1", "nvidia.com/mig-3g.40gb": "1"},
        "allocatable": {"cpu": "63", "nvidia.com/gpu": "1", "nvidia.com/mig-3g.40gb": "1"},
    },
}
RUNTIME_CLASSES = {"kind": "RuntimeClassList", "items": [{"handler": "kata"}]}
PLUGIN_PODS = {
    "kind": "PodList",
    "items": [
        {
            "spec": {
                "containers": [
                    {
                        "name": "nvidia-device-plugin-ctr",
                        "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                        "env": [{"name": "DEVICE_LIST_STRATEGY", "value": "cdi-cri"}],
                    }
                ]
            }
        }
    ],
}


@dataclass
class Api:
    """The recorded API server: its URL, CA certificate and the requests it saw."""

    url: str
    ca: bytes
    objects: dict[str, Any]
    seen: list[tuple[str, str | None]] = field(default_factory=list)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make the server's certificate")
    cert, key = tmp_path / "api.crt", tmp_path / "api.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    state = Api(url="", ca=cert.read_bytes(), objects={})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            state.seen.append((self.path, self.headers.get("Authorization")))
            body = state.objects.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body or {"kind": "Status", "code": 404}).encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.url = f"https://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def _kubelet_conf(root: Path, api: Api) -> None:
    (root / "etc/kubernetes").mkdir(parents=True, exist_ok=True)
    (root / "etc/kubernetes/kubelet.conf").write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n"
        f"    server: {api.url}\n"
        f"    certificate-authority-data: {base64.b64encode(api.ca).decode()}\n"
        f"users:\n- name: kubelet\n  user:\n    token: {TOKEN}\n"
    )
    (root / "etc/hostname").write_text(f"{NODE}\n")


def _doctor(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[str, str]]:
    main(["doctor", "--json", "--root", str(root)])
    document = json.loads(capsys.readouterr().out)
    return {
        c["id"]: (c["status"], c["summary"])
        for c in document["checks"]
        if c["id"].startswith(("k8s.", "mig.strategy", "mig.device-plugin", "cdi.management"))
        or c["id"] in ("containerd.not-default-no-runtimeclass", "containerd.cdi-disabled")
    }


@pytest.fixture
def mig_node(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node("a100-mig-mixed")


def test_host_checks_run_on_the_api_servers_view(
    mig_node: FakeNode, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    api.objects.update(
        {
            f"/api/v1/nodes/{NODE}": NODE_OBJECT,
            "/apis/node.k8s.io/v1/runtimeclasses": RUNTIME_CLASSES,
            f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}": PLUGIN_PODS,
        }
    )
    _kubelet_conf(mig_node.root, api)
    found = _doctor(mig_node.root, capsys)
    assert found == {
        "mig.strategy-mismatch": (
            "fail",
            "MIG strategy 'single' with a mixed layout: the device plugin advertises nothing",
        ),
        "mig.device-plugin-stale": (
            "warn",
            "the node advertises a MIG layout that differs from the GPUs' current one",
        ),
        "containerd.not-default-no-runtimeclass": (
            "fail",
            "nvidia is neither containerd's default runtime nor the handler of a RuntimeClass: "
            "GPU pods run under runc and see no GPU",
        ),
        "containerd.cdi-disabled": (
            "warn",
            "the device plugin hands out GPUs as CDI devices (cdi-cri) but enable_cdi is not true",
        ),
        "cdi.management-spec-missing": (
            "fail",
            "the device plugin uses CDI but no management.nvidia.com/gpu spec exists",
        ),
        "k8s.runtimeclass-handler-missing": ("skip", "no RuntimeClass has handler nvidia"),
        "k8s.gpu-not-allocatable": (
            "ok",
            "allocatable: nvidia.com/gpu=1, nvidia.com/mig-3g.40gb=1",
        ),
        "k8s.device-list-strategy-invalid": ("ok", "DEVICE_LIST_STRATEGY=cdi-cri"),
        "k8s.unrequested-gpu-access": ("skip", "applies on pod only"),
    }
    assert {auth for _, auth in api.seen} == {f"Bearer {TOKEN}"}


def test_an_unreachable_api_makes_its_checks_unknown(
    mig_node: FakeNode, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    api.url = "https://127.0.0.1:1"  # nothing listens there
    _kubelet_conf(mig_node.root, api)
    found = _doctor(mig_node.root, capsys)
    unknown = {k: v[1] for k, v in found.items() if v[0] == "unknown"}
    assert sorted(unknown) == [
        "cdi.management-spec-missing",
        "containerd.not-default-no-runtimeclass",
        "k8s.device-list-strategy-invalid",
        "k8s.gpu-not-allocatable",
        "k8s.runtimeclass-handler-missing",
        "mig.device-plugin-stale",
        "mig.strategy-mismatch",
    ]
    assert unknown["mig.strategy-mismatch"].startswith(
        "Kubernetes facts unavailable: Kubernetes API at https://127.0.0.1:1 not reachable: "
    )


@pytest.fixture
def pod(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node("pod-unrequested")


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        pytest.param(
            {"nvidia.com/gpu": "1"}, ("ok", "the pod requested nvidia.com/gpu=1"), id="req"
        ),
        pytest.param(
            {},
            (
                "warn",
                "the pod sees 2 GPU(s) through NVIDIA_VISIBLE_DEVICES=all without a device plugin "
                "allocation: it bypasses the scheduler",
            ),
            id="none",
        ),
    ],
)
def test_a_pod_reads_its_own_resources(
    limits: dict[str, str],
    expected: tuple[str, str],
    pod: FakeNode,
    api: Api,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = pod.root
    port = api.url.rsplit(":", 1)[1]
    environ = (root / "proc/self/environ").read_bytes()
    extra = f"KUBERNETES_SERVICE_HOST=127.0.0.1\0KUBERNETES_SERVICE_PORT={port}\0HOSTNAME=job-0\0"
    (root / "proc/self/environ").write_bytes(environ + extra.encode())
    account = root / "var/run/secrets/kubernetes.io/serviceaccount"
    account.mkdir(parents=True)
    (account / "token").write_text(TOKEN)
    (account / "ca.crt").write_bytes(api.ca)
    (account / "namespace").write_text("ml")
    api.objects["/api/v1/namespaces/ml/pods/job-0"] = {
        "spec": {
            "nodeName": NODE,
            "runtimeClassName": "nvidia",
            "containers": [{"name": "job", "resources": {"limits": {"cpu": "1", **limits}}}],
        }
    }
    api.objects[f"/api/v1/nodes/{NODE}"] = NODE_OBJECT
    assert _doctor(root, capsys)["k8s.unrequested-gpu-access"] == expected
    assert (f"/api/v1/nodes/{NODE}", f"Bearer {TOKEN}") in api.seen


def _point_kubeconfig(root: Path, path: str, api: Api) -> None:
    """The node's own kubeconfig at ``path``, pointed at the recorded server, with the server's
    CA in the file the kubeconfig names (as k3s, RKE2 and microk8s keep it)."""
    kubeconfig = root / path.lstrip("/")
    text = kubeconfig.read_text().replace("https://127.0.0.1:1", api.url)
    kubeconfig.write_text(text)
    [ca] = re.findall(r"certificate-authority: (\S+)", text)
    (root / ca.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / ca.lstrip("/")).write_bytes(api.ca)


GPU_NODE = {
    "metadata": {"name": NODE, "labels": {}},
    "status": {"capacity": {"nvidia.com/gpu": "2"}, "allocatable": {"nvidia.com/gpu": "2"}},
}
K3S_CONFIG = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
RKE2_CONFIG = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"
MICROK8S_CONFIG = "/var/snap/microk8s/current/args/containerd-template.toml"
NOT_DEFAULT = (
    "fail",
    "nvidia is neither containerd's default runtime nor the handler of a RuntimeClass: GPU "
    "pods run under runc and see no GPU",
)


KUBECONFIGS = {
    "k3s-agent-no-runtimeclass": "/var/lib/rancher/k3s/agent/kubelet.kubeconfig",
    "rke2-agent-no-runtimeclass": "/var/lib/rancher/rke2/agent/kubelet.kubeconfig",
    "microk8s-no-runtimeclass": "/var/snap/microk8s/current/credentials/kubelet.config",
}
"""Each distribution node's kubelet kubeconfig, where the distribution keeps it."""
Remedy = tuple[list[tuple[str, str]], list[str], list[str]]
"""A finding's evidence (source, value), remedy commands and notes."""


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(
            "k3s-agent-no-runtimeclass",
            (
                [
                    (K3S_CONFIG, "default_runtime_name = None"),
                    ("RuntimeClasses", "kata"),
                    (K3S_CONFIG, "k3s's containerd"),
                ],
                ["sudo systemctl restart k3s-agent"],
                [
                    "create a RuntimeClass named nvidia with handler nvidia (the way k3s "
                    "documents) and give GPU pods runtimeClassName: nvidia",
                    "or make nvidia the default: default-runtime: nvidia in "
                    "/etc/rancher/k3s/config.yaml (the --default-runtime option), then restart "
                    "k3s-agent",
                ],
            ),
            id="k3s-agent",
        ),
        pytest.param(
            "rke2-agent-no-runtimeclass",
            (
                [
                    (RKE2_CONFIG, "default_runtime_name = None"),
                    ("RuntimeClasses", "kata"),
                    (RKE2_CONFIG, "rke2's containerd"),
                ],
                ["sudo systemctl restart rke2-agent"],
                [
                    "create a RuntimeClass named nvidia with handler nvidia (the way rke2 "
                    "documents) and give GPU pods runtimeClassName: nvidia",
                    "or make nvidia the default: default-runtime: nvidia in "
                    "/etc/rancher/rke2/config.yaml (the --default-runtime option), then restart "
                    "rke2-agent",
                ],
            ),
            id="rke2-agent",
        ),
        pytest.param(
            "microk8s-no-runtimeclass",
            (
                [
                    (MICROK8S_CONFIG, "default_runtime_name = ${RUNTIME}"),
                    ("RuntimeClasses", "kata"),
                    (MICROK8S_CONFIG, "microk8s's containerd"),
                ],
                [
                    "sudo ctk runtime configure --runtime=containerd --set-as-default "
                    f"--config=ROOT{MICROK8S_CONFIG} --drop-in-config=",  # what --fix runs there
                    "sudo systemctl restart snap.microk8s.daemon-containerd",
                ],
                ["or create a RuntimeClass named nvidia with handler nvidia"],
            ),
            id="microk8s",
        ),
    ],
)
def test_a_distributions_kubelet_is_a_kubernetes_node_with_its_own_remedy(
    node: str,
    expected: Remedy,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    api: Api,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """k3s, RKE2 and microk8s keep the kubelet's kubeconfig (and node name) in places of their
    own; containerd there runs in the distribution's unit, from a config it renders (k3s/RKE2:
    a Go template ctk does not edit; microk8s: containerd-template.toml, which ctk edits)."""
    built = fake_node(node)
    api.objects.update(
        {
            f"/api/v1/nodes/{NODE}": GPU_NODE,
            "/apis/node.k8s.io/v1/runtimeclasses": RUNTIME_CLASSES,
        }
    )
    _point_kubeconfig(built.root, KUBECONFIGS[node], api)
    main(["doctor", "--json", "--root", str(built.root)])
    checks = {c["id"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    found = checks["containerd.not-default-no-runtimeclass"]
    assert (found["status"], found["summary"]) == NOT_DEFAULT
    assert _remedy(found, built.root) == expected
    # the node asked for by the name its kubelet registers (node-name, --hostname-override)
    assert checks["k8s.gpu-not-allocatable"]["summary"] == "allocatable: nvidia.com/gpu=2"


def _remedy(finding: dict[str, Any], root: Path | None = None) -> Remedy:
    """Evidence, commands (the --root of the test's node written ROOT) and notes."""
    evidence = [(e["source"], e["value"]) for e in finding["evidence"]]
    commands = finding["remedy"]["commands"]
    if root is not None:
        commands = [c.replace(str(root), "ROOT") for c in commands]
    return evidence, commands, finding["remedy"]["notes"]


OPERATOR_TOOLKIT_POD = {
    "metadata": {
        "namespace": "nvidia-gpu-operator",
        "ownerReferences": [{"kind": "DaemonSet", "name": "nvidia-container-toolkit-daemonset"}],
    },
    "spec": {"containers": [{"name": "nvidia-container-toolkit-ctr", "image": "toolkit:v1.17"}]},
}
NO_MANAGEMENT_SPEC = "the device plugin uses CDI but no management.nvidia.com/gpu spec exists"


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(
            PLUGIN_PODS["items"],
            (
                [
                    ("/etc/cdi, /var/run/cdi", "no management.nvidia.com/gpu spec"),
                    (
                        "GPU Operator",
                        "none on this node (no toolkit DaemonSet pod, label or files)",
                    ),
                ],
                [
                    "sudo chroot ROOT ctk cdi generate --mode=management "
                    "--output=/var/run/cdi/management.yaml"
                ],
                ["no GPU Operator writes it here: it is generated on the node"],
            ),
            id="device-plugin-alone",
        ),
        pytest.param(
            [*PLUGIN_PODS["items"], OPERATOR_TOOLKIT_POD],
            (
                [
                    ("/etc/cdi, /var/run/cdi", "no management.nvidia.com/gpu spec"),
                    (
                        "pods on this node",
                        "GPU Operator DaemonSet "
                        "nvidia-gpu-operator/nvidia-container-toolkit-daemonset",
                    ),
                ],
                [
                    "kubectl -n nvidia-gpu-operator rollout restart "
                    "daemonset/nvidia-container-toolkit-daemonset"
                ],
                [],
            ),
            id="gpu-operator-in-its-own-namespace",
        ),
    ],
)
def test_the_management_spec_remedy_fits_what_installed_the_node(
    pods: list[dict[str, Any]],
    expected: Remedy,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    api: Api,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The GPU Operator's toolkit DaemonSet writes the management spec at start (restart it, in
    the namespace its pod runs in); a node without the operator generates it itself."""
    built = fake_node("crio-cdi-no-management-spec")
    api.objects.update(
        {
            f"/api/v1/nodes/{NODE}": GPU_NODE,
            f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}": {"items": pods},
        }
    )
    _point_kubeconfig(built.root, "/etc/kubernetes/kubelet.conf", api)
    main(["doctor", "--json", "--root", str(built.root)])
    checks = {c["id"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    found = checks["cdi.management-spec-missing"]
    assert (found["status"], found["summary"]) == ("fail", NO_MANAGEMENT_SPEC)
    assert _remedy(found, built.root) == expected
