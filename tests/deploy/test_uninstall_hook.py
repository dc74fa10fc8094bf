"""`helm uninstall`'s pre-delete hook played out on one node, with the chart's own pods.

What is real: the image (unpacked, run under runc), each pod's command, env, mounts and
securityContext from `helm template`, the agent running as its DaemonSet runs it, the uninstall
DaemonSet's init container (its retry loop while the agent's lock is held), the waiter Job running
as the unprivileged user the chart gives it and finding the API the in-cluster way (service
environment, token and CA under /var/run/secrets), a containerd 1.6 on the node.

What is played by the test, because no Kubernetes control plane runs on this machine: the API
server (a stand-in on HTTPS that answers the three calls the Role allows) and the kubelet (it
stops the agent pod with SIGTERM when its DaemonSet is deleted, and reports the uninstall pod
Ready once its init container succeeded).
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.chart import NAMESPACE, one, pod_spec, render
from tests.deploy.pods import (
    HOST_EXEC,
    Node,
    bridge,
    container_spec,
    containers,
    fake_node,
    need,
    runc,
    unpack,
    write_bundle,
)
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401

pytestmark = pytest.mark.integration

TOKEN = "hook-t0ken"
BASE = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/"
SPEC = "run/cdi/nvidia.yaml"
HOOK = "usr/local/libexec/ctk/ctk-hook"
DROP_IN = "etc/containerd/conf.d/99-nvidia.toml"
AGENT_POD = "ctk-x7k2p"  # the pods' names (their hostnames)
UNDO_POD = "ctk-uninstall-q9z4m"


@dataclass
class Played:
    node: Node
    original: str  # the node's containerd config before the chart
    configured: dict[str, bool]  # what the agent had put in place before the uninstall
    events: list[str]  # in the order they happened
    agent: str  # the agent pod's log
    undo: subprocess.CompletedProcess[str]  # the uninstall pod's init container (one log)
    waiter: subprocess.CompletedProcess[str]  # the pre-delete Job
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, auth)
    agent_host: str = AGENT_POD


def present(node: Node) -> dict[str, bool]:
    return {p: (node.host / p).exists() for p in (SPEC, HOOK, DROP_IN)}


class Cluster:
    """The stand-in API server and kubelet for one node."""

    def __init__(
        self, node: Node, agent: subprocess.Popen[bytes], agent_id: str, state: Path
    ) -> None:
        self.state = state
        self.node = node
        self.agent = agent
        self.agent_id = agent_id
        self.events: list[str] = []
        self.calls: list[tuple[str, str, str]] = []
        self.agent_gone = threading.Event()
        self.undo_rc: int | None = None

    def event(self, text: str) -> None:
        self.events.append(text)

    def delete_agent(self) -> None:
        """The kubelet's side of a Foreground delete: SIGTERM the pod, wait, then it is gone."""
        self.event("api: DaemonSet ctk deleted")
        subprocess.run(runc(self.state, "kill", self.agent_id, "TERM"), check=False, timeout=30)
        rc = self.agent.wait(timeout=60)
        self.event(f"kubelet: agent pod exited {rc}")
        self.agent_gone.set()

    def answer(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        """The API server's answer to the calls the hook's Role allows (403 to the rest)."""
        if path == BASE + "ctk" and self.agent_gone.is_set():
            return 404, {}
        if (method, path) == ("DELETE", BASE + "ctk"):
            threading.Thread(target=self.delete_agent, daemon=True).start()
            return 202, {}
        if (method, path) == ("GET", BASE + "ctk"):
            return 200, {}
        if (method, path) == ("GET", BASE + "ctk-uninstall"):
            body = self.uninstall_ds()
            if body["status"]["numberReady"] == 1 and "api: uninstall ready" not in self.events:
                self.event("api: uninstall ready")
            return 200, body
        return 403, {}

    def uninstall_ds(self) -> dict[str, Any]:
        ready = 1 if self.undo_rc == 0 else 0
        return {
            "metadata": {"name": "ctk-uninstall", "generation": 1},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 1, "numberReady": ready},
        }


def serve_api(cluster: Cluster, cert: Path, key: Path) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def answer(self) -> None:
            if self.command == "DELETE":
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
            auth = self.headers.get("Authorization", "")
            cluster.calls.append((self.command, self.path, auth))
            if auth != f"Bearer {TOKEN}":
                self.reply(401, {})
            else:
                self.reply(*cluster.answer(self.command, self.path))

        do_GET = do_DELETE = answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def service_account(where: Path) -> Path:
    """The token and CA a pod finds under /var/run/secrets (the CA signs the stand-in's cert)."""
    where.mkdir()
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(where / "tls.key"),
            "-out",
            str(where / "ca.crt"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    (where / "token").write_text(TOKEN)
    for name in ("ca.crt", "token"):
        (where / name).chmod(0o644)
    return where


def wait_for(path: Path, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


@pytest.fixture(scope="module")
def played(image_dir: Path, fake_nvml_library: Path) -> Iterator[Played]:  # noqa: F811
    need("runc", "umoci", "containerd", "unshare", "openssl")
    docs = render({"runtime": "containerd"})
    agent_ds = one(docs, "DaemonSet", "ctk")
    undo_ds = one(docs, "DaemonSet", "ctk-uninstall")
    job = one(docs, "Job", "ctk-uninstall-wait")
    short = Path(tempfile.mkdtemp(prefix="ctk-hook-", dir="/tmp"))
    suffix = str(os.getpid())
    with fake_node(short, fake_nvml_library) as node:
        original = (node.host / "etc/containerd/config.toml").read_text()
        base_bundle = short / "bundle"
        base = unpack(image_dir, base_bundle)
        bridge_env = (f"CTK_AGENT_HOST_EXEC={HOST_EXEC}",)
        cluster: Cluster | None = None

        def observe(argv: list[str]) -> None:
            if cluster is not None and argv[:2] == ["systemctl", "restart"]:
                seen = " ".join(f"{p}={'yes' if v else 'no'}" for p, v in present(node).items())
                cluster.event(f"host: {' '.join(argv)} ({seen})")

        ids = {name: f"ctk-{name}-{suffix}" for name in ("agent", "undo", "wait")}
        state = short / "runc"
        try:
            with bridge(node, observe):
                # The agent pod: the image's entrypoint, looping.
                spec = container_spec(
                    base,
                    pod_spec(agent_ds),
                    containers(agent_ds)["agent"],
                    node,
                    args=["ctk", "agent"],
                    extra_env=bridge_env,
                    hostname=AGENT_POD,
                )
                agent_log = short / "agent.log"
                with agent_log.open("wb") as log:
                    agent = subprocess.Popen(
                        runc(
                            state,
                            "run",
                            "--bundle",
                            str(write_bundle(base_bundle, spec, "agent")),
                            ids["agent"],
                        ),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                    )
                wait_for(node.pod / "ready", agent, agent_log, 180)
                configured = present(node)
                cluster = Cluster(node, agent, ids["agent"], state)
                cert_dir = service_account(short / "sa")
                server, port = serve_api(cluster, cert_dir / "ca.crt", cert_dir / "tls.key")

                # helm uninstall: the hook's DaemonSet starts its pod at once...
                undo_spec = container_spec(
                    base,
                    pod_spec(undo_ds),
                    containers(undo_ds)["uninstall"],
                    node,
                    extra_env=bridge_env,
                    hostname=UNDO_POD,
                )
                undo_log = short / "undo.log"
                undo_result: list[subprocess.CompletedProcess[str]] = []

                def run_undo() -> None:
                    assert cluster is not None
                    argv = runc(
                        state,
                        "run",
                        "--bundle",
                        str(write_bundle(base_bundle, undo_spec, "undo")),
                        ids["undo"],
                    )
                    with undo_log.open("wb") as log:  # one log, in order, as kubectl logs shows
                        rc = subprocess.run(
                            argv, stdout=log, stderr=log, check=False, timeout=400
                        ).returncode
                    cluster.event(f"kubelet: uninstall init container exited {rc}")
                    cluster.undo_rc = rc
                    undo_result.append(
                        subprocess.CompletedProcess(argv, rc, undo_log.read_text(), "")
                    )

                undo_thread = threading.Thread(target=run_undo, daemon=True)
                undo_thread.start()
                # Helm does not wait for a hook DaemonSet: whether its pod or the Job comes
                # first is up to the cluster. The pod first, finding the agent's lock held, is
                # the case with something to prove (its retry loop).
                deadline = time.monotonic() + 120
                while b"another ctk agent" not in (
                    undo_log.read_bytes() if undo_log.exists() else b""
                ):
                    assert time.monotonic() < deadline, undo_log.read_text()
                    time.sleep(0.1)
                # ... and the Job waits for it, finding the API as every pod does.
                sa_mount = {
                    "destination": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "type": "bind",
                    "source": str(cert_dir),
                    "options": ["rbind", "ro"],
                }
                wait_spec = container_spec(
                    base,
                    pod_spec(job),
                    containers(job)["wait"],
                    node,
                    extra_env=(
                        "KUBERNETES_SERVICE_HOST=127.0.0.1",
                        f"KUBERNETES_SERVICE_PORT={port}",
                    ),
                    extra_mounts=(sa_mount,),
                )
                waiter = subprocess.run(
                    runc(
                        state,
                        "run",
                        "--bundle",
                        str(write_bundle(base_bundle, wait_spec, "wait")),
                        ids["wait"],
                    ),
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=600,
                )
                cluster.event(f"job: exited {waiter.returncode}")
                undo_thread.join(timeout=400)
                server.shutdown()
            yield Played(
                node,
                original,
                configured,
                cluster.events,
                agent_log.read_text(),
                undo_result[0],
                waiter,
                cluster.calls,
            )
        finally:
            for name in ids.values():
                subprocess.run(
                    runc(state, "delete", "--force", name),
                    capture_output=True,
                    check=False,
                    timeout=60,
                )


def test_the_agent_had_configured_the_node(played: Played) -> None:
    assert played.configured == {SPEC: True, HOOK: True, DROP_IN: True}, played.agent


def test_the_hook_runs_in_order_and_succeeds(played: Played) -> None:
    assert played.waiter.returncode == 0, played.waiter.stderr
    assert played.events == [
        "api: DaemonSet ctk deleted",
        "kubelet: agent pod exited 0",
        # the engine is restarted with its original config while spec and hook are still there
        f"host: systemctl restart containerd ({SPEC}=yes {HOOK}=yes {DROP_IN}=no)",
        "kubelet: uninstall init container exited 0",
        "api: uninstall ready",
        "job: exited 0",
    ]
    assert "SIGTERM: stopping without reverting anything" in played.agent


def test_the_waiter_used_the_service_account_and_only_what_its_role_allows(
    played: Played,
) -> None:
    assert {auth for _, _, auth in played.calls} == {f"Bearer {TOKEN}"}
    assert {(method, path) for method, path, _ in played.calls} == {
        ("DELETE", BASE + "ctk"),
        ("GET", BASE + "ctk"),
        ("GET", BASE + "ctk-uninstall"),
    }
    assert played.waiter.stdout.splitlines()[0] == "stopping the agent (DaemonSet ctk)"
    assert played.waiter.stdout.splitlines()[-1] == "1/1 nodes reverted"


def test_uninstall_retries_while_the_agent_holds_the_lock_then_reverts_in_order(
    played: Played,
) -> None:
    lines = played.undo.stdout.splitlines()
    # The agent's pod is named in the message: a PID alone would not say whose it is. Which PID
    # the kernel reports for a lock held in another PID namespace differs by kernel: the
    # holder's own (1, seen on one machine of this kind) or none, as F_GETLK documents for a
    # holder the caller cannot see (0: "PID unknown", seen on kernel 6.18).
    assert lines[0] in {
        f"error: another ctk agent is running on this node ({pid} on {played.agent_host} holds "
        "/host/run/ctk/agent.lock)"
        for pid in ("PID 1", "PID unknown")
    }, lines
    steps = [line for line in lines if line.startswith(("restored ", "removed ", "restarted "))]
    assert [s.split(" (")[0] for s in steps] == [
        "restored /etc/containerd/config.toml",
        "removed /etc/containerd/conf.d/99-nvidia.toml",
        "restarted containerd",
        "removed /var/run/cdi/nvidia.yaml",
        "removed /usr/local/libexec/ctk/ctk-hook",
        # then its own files: the ready file (the pod's own), the outlets named as on the host
        "removed /run/ctk-pod/ready",
        "removed /var/lib/node_exporter/textfile_collector/ctk.prom",
        "removed /etc/kubernetes/node-feature-discovery/features.d/ctk",
    ], lines


def test_the_node_is_back_to_its_original_state(played: Played) -> None:
    node = played.node
    assert (node.host / "etc/containerd/config.toml").read_text() == played.original
    assert present(node) == {SPEC: False, HOOK: False, DROP_IN: False}
    assert "nvidia" not in node.dump()
    # One restart to configure, one to revert; the upgrade-free SIGTERM restarted nothing.
    assert node.restarts == ["systemctl restart containerd"] * 2
