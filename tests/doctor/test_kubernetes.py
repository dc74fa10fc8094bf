"""Kubernetes facts from a real HTTPS API server on 127.0.0.1 serving recorded objects.

The server's certificate is made here with `openssl` (self-signed for IP 127.0.0.1); the node's
kubeconfig (host) or service account (pod) names it as the CA, so the doctor's client verifies
the server as it would a real one.
"""

from __future__ import annotations

import base64
import json
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
