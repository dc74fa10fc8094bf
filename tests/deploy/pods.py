"""Running the chart's pods under runc from the built image, against a fake node.

A fake node is a fixture node (fake NVML) with a real containerd 1.6 whose config lives in that
tree (tests/agent's supervisor plays systemd). A pod's container gets exactly what `helm template`
gives it: its command, its env, its hostPath mounts (the fake node standing in for the host's
/), its securityContext. Commands the agent runs "in the host's root" (--host-exec) come back to
the test through a file bridge, which runs them on the fake node as `chroot /host` would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.chart import Doc, pod_spec
from tests.fake_nvml import TOPOLOGY_ENV, FakeNode, SkipNode, materialise

agent_tests = pytest.importorskip("tests.agent.conftest", reason="ctk agent is not in this tree")
supervisor = pytest.importorskip("tests.agent.supervisor")

BRIDGE = """\
#!/bin/sh
# --host-exec inside the container: ask the test (the host) to run "$@" in the host's root.
id=$$
printf '%s\\n' "$@" > /ctl/bridge/$id.tmp && mv /ctl/bridge/$id.tmp /ctl/bridge/$id.argv
while [ ! -e /ctl/bridge/$id.rc ]; do sleep 0.05; done
cat /ctl/bridge/$id.out
cat /ctl/bridge/$id.err >&2
rc=$(cat /ctl/bridge/$id.rc)
rm -f /ctl/bridge/$id.*
exit "$rc"
"""
HOST_EXEC = "/bin/sh /ctl/bridge.sh"


@dataclass
class Node:
    """The fake node: its root, the supervisor's control dir, a pod-local dir, temp space."""

    host: Path
    ctl: Path
    pod: Path
    short: Path
    node: FakeNode

    def dump(self) -> str:
        """`containerd config dump` of the node's config, run on the node."""
        return self.host_command(
            "containerd", "--config", "/etc/containerd/config.toml", "config", "dump"
        ).stdout

    def host_command(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, supervisor.__file__, str(self.ctl), *argv],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    @property
    def restarts(self) -> list[str]:
        log = self.ctl / "restarts.log"
        return log.read_text().splitlines() if log.exists() else []


def need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")


@contextmanager
def fake_node(short: Path, library: Path) -> Iterator[Node]:
    """The workstation node with a supervised containerd 1.6 on its own config."""
    try:
        node = materialise("workstation", short / "n", library)
    except SkipNode as exc:
        pytest.skip(str(exc))
    host = node.root
    if not (host / "var/run").exists():  # as on a real node: /var/run is a symlink to /run
        (host / "var").mkdir(exist_ok=True)
        (host / "var/run").symlink_to("/run")
    config = host / "etc/containerd/config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        agent_tests.CONTAINERD_CONFIG.format(root=short / "root", state=short / "state")
    )
    (host / "run/containerd").mkdir(parents=True, exist_ok=True)
    ctl = short / "ctl"
    (ctl / "bridge").mkdir(parents=True)
    (ctl / "host").write_text(str(host))
    (ctl / "bridge.sh").write_text(BRIDGE)
    (ctl / "engine.argv").write_text(
        json.dumps(
            supervisor.namespaced(host, ["containerd", "--config", "/etc/containerd/config.toml"])
        )
    )
    supervisor.start(ctl)
    try:
        agent_tests.wait_socket(host / "run/containerd/containerd.sock")
        pod = short / "pod"  # the DaemonSet's emptyDir
        pod.mkdir()
        yield Node(host, ctl, pod, short, node)
    finally:
        supervisor.stop(ctl)


Observer = Callable[[list[str]], None]


@contextmanager
def bridge(node: Node, observe: Observer | None = None) -> Iterator[None]:
    """Serve the containers' host commands on the node while the block runs; ``observe`` sees
    each command before it runs."""
    stop = threading.Event()

    def serve() -> None:
        requests = node.ctl / "bridge"
        while not stop.is_set():
            for request in sorted(requests.glob("*.argv")):
                argv = request.read_text().splitlines()
                request.unlink()
                if observe is not None:
                    observe(argv)
                done = node.host_command(*argv)
                stem = requests / request.stem
                Path(f"{stem}.out").write_text(done.stdout)
                Path(f"{stem}.err").write_text(done.stderr)
                Path(f"{stem}.rc.tmp").write_text(str(done.returncode))
                os.rename(f"{stem}.rc.tmp", f"{stem}.rc")
            time.sleep(0.05)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def image_version(image_dir: Path) -> str:
    index = json.loads((image_dir / "oci" / "index.json").read_text())
    name: str = index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
    return name


def unpack(image_dir: Path, bundle: Path) -> dict[str, Any]:
    """`umoci unpack` the image into a runc bundle; its config.json."""
    subprocess.run(
        [
            "umoci",
            "unpack",
            "--image",
            f"{image_dir / 'oci'}:{image_version(image_dir)}",
            str(bundle),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    spec: dict[str, Any] = json.loads((bundle / "config.json").read_text())
    return spec


def hostpath_mounts(spec: Doc, container: Doc, host: Path) -> list[dict[str, Any]]:
    """The container's hostPath mounts, as runc mounts of the fake node."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = []
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "hostPath" not in volume:
            continue
        source = host / volume["hostPath"]["path"].lstrip("/")
        if volume["hostPath"]["type"] == "DirectoryOrCreate":
            source.mkdir(parents=True, exist_ok=True)
        options = ["rbind", "ro" if mount.get("readOnly") else "rw"]
        if mount.get("mountPropagation") == "HostToContainer":
            options.append("rslave")
        mounts.append(
            {
                "destination": mount["mountPath"],
                "type": "bind",
                "source": str(source),
                "options": options,
            }
        )
    return mounts


CAPABILITIES = (
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
)


def all_capabilities() -> list[str]:
    """Every capability this process may grant (privileged: all of them, as far as we have)."""
    line = next(
        x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("CapBnd:")
    )
    mask = int(line.split()[1], 16)
    return [f"CAP_{name}" for bit, name in enumerate(CAPABILITIES) if mask >> bit & 1]


def container_spec(
    base: dict[str, Any],
    pod: Doc,
    container: Doc,
    node: Node,
    *,
    args: list[str] | None = None,
    extra_env: tuple[str, ...] = (),
    extra_mounts: tuple[dict[str, Any], ...] = (),
    hostname: str = "ctk-pod",
) -> dict[str, Any]:
    """The runc config of one of the chart's containers: its command (or the image's entrypoint
    plus ``args``), env, mounts, privileges and pod name (``hostname``); the host network
    (hostNetwork is not set, but the stand-in API server listens on this machine's loopback)."""
    spec: dict[str, Any] = json.loads(json.dumps(base))
    spec["hostname"] = hostname  # a pod's hostname is its name
    process = spec["process"]
    process["terminal"] = False
    if "command" in container:
        process["args"] = [*container["command"], *container.get("args", [])]
    elif args is not None:
        process["args"] = args
    env = [f"{e['name']}={e['value']}" for e in container.get("env", [])]
    process["env"] = [
        *process["env"],
        *env,
        *extra_env,
        f"{TOPOLOGY_ENV}=/topology/{node.node.topology.name}",
    ]
    security = container.get("securityContext", {})
    if security.get("privileged"):
        caps = all_capabilities()
        process["capabilities"] = {k: caps for k in ("bounding", "effective", "permitted")}
        spec["linux"].pop("seccomp", None)
        spec["linux"]["maskedPaths"] = []
        spec["linux"]["readonlyPaths"] = []
    else:
        if "capabilities" in security and security["capabilities"].get("drop") == ["ALL"]:
            process["capabilities"] = {k: [] for k in ("bounding", "effective", "permitted")}
        if "runAsUser" in security:
            process["user"] = {"uid": security["runAsUser"], "gid": security["runAsUser"]}
        process["noNewPrivileges"] = security.get("allowPrivilegeEscalation") is False
    namespaces = spec["linux"]["namespaces"]
    drop = {"network"} | ({"pid"} if pod.get("hostPID") else set())
    spec["linux"]["namespaces"] = [n for n in namespaces if n["type"] not in drop]
    spec["mounts"] += [
        *hostpath_mounts(pod, container, node.host),
        {"destination": "/ctl", "type": "bind", "source": str(node.ctl), "options": ["rbind"]},
        {
            "destination": "/topology",
            "type": "bind",
            "source": str(node.node.topology.parent),
            "options": ["rbind", "ro"],
        },
        *extra_mounts,
    ]
    if any(m["name"] == "pod-state" for m in container.get("volumeMounts", [])):
        spec["mounts"].append(
            {
                "destination": "/run/ctk-pod",
                "type": "bind",
                "source": str(node.pod),
                "options": ["rbind"],
            }
        )
    return spec


def runc(state: Path, *args: str) -> list[str]:
    """A runc command line whose container state lives under ``state`` (the test's own
    directory), not the host's /run/runc."""
    return ["runc", "--root", str(state), *args]


def write_bundle(base_bundle: Path, spec: dict[str, Any], name: str) -> Path:
    """A bundle for ``spec`` sharing the unpacked rootfs of ``base_bundle``."""
    bundle = base_bundle.parent / f"bundle-{name}"
    bundle.mkdir(exist_ok=True)
    spec = {**spec, "root": {"path": str(base_bundle / "rootfs"), "readonly": False}}
    (bundle / "config.json").write_text(json.dumps(spec))
    return bundle


def containers(daemonset: Doc) -> dict[str, Doc]:
    spec = pod_spec(daemonset)
    return {c["name"]: c for c in spec.get("initContainers", []) + spec["containers"]}
