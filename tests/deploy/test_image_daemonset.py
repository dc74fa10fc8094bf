"""The image run the way the chart's DaemonSet runs it, under runc, against a fake host.

The fake host is a fixture node (fake NVML) with a real containerd 1.6 whose config lives in that
tree (tests/agent's supervisor plays systemd). The container gets exactly the DaemonSet's
hostPath mounts (from `helm template`: the host's / read-only at /host, the written dirs
read-write) and its CTK_AGENT_* environment, and runs `ctk agent --once`. The agent reaches "the
host's root" through --host-exec: a shell script in the container that hands each command to this
test, which runs it on the host (as `chroot /host` would on a node).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.chart import kinds, pod_spec, render
from tests.fake_nvml import TOPOLOGY_ENV, FakeNode, SkipNode, materialise
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401

agent_tests = pytest.importorskip(
    "tests.agent.conftest", reason="ctk agent is not in this tree yet"
)
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


@dataclass
class Run:
    host: Path
    ctl: Path
    pod: Path
    done: subprocess.CompletedProcess[str]  # the first `ctk agent --once`
    again: subprocess.CompletedProcess[str]  # a second one (a new pod: an upgrade)
    uninstall: subprocess.CompletedProcess[str]  # `ctk agent --uninstall` (the pre-delete hook)
    original: str  # the host's containerd config before
    after_once: str  # ... after the passes
    seen: dict[str, str]  # what the passes left on the host and in the pod


def serve_bridge(ctl: Path, stop: threading.Event) -> None:
    """Run each command the container hands over on the host, through the supervisor."""
    bridge = ctl / "bridge"
    while not stop.is_set():
        for request in sorted(bridge.glob("*.argv")):
            argv = request.read_text().splitlines()
            request.unlink()
            done = subprocess.run(
                [sys.executable, supervisor.__file__, str(ctl), *argv],
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            stem = bridge / request.stem
            Path(f"{stem}.out").write_text(done.stdout)
            Path(f"{stem}.err").write_text(done.stderr)
            Path(f"{stem}.rc.tmp").write_text(str(done.returncode))
            os.rename(f"{stem}.rc.tmp", f"{stem}.rc")
        time.sleep(0.05)


def daemonset_mounts(host: Path) -> list[dict[str, Any]]:
    """The agent DaemonSet's hostPath mounts, as runc mounts of the fake host."""
    (ds,) = [
        d
        for d in kinds(render({"runtime": "containerd"}), "DaemonSet")
        if d["metadata"]["name"] == "ctk"
    ]
    spec = pod_spec(ds)
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = []
    for mount in spec["containers"][0]["volumeMounts"]:
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


def agent_env() -> list[str]:
    (ds,) = [
        d
        for d in kinds(render({"runtime": "containerd"}), "DaemonSet")
        if d["metadata"]["name"] == "ctk"
    ]
    return [f"{e['name']}={e['value']}" for e in pod_spec(ds)["containers"][0]["env"]]


@pytest.fixture(scope="module")
def ran(image_dir: Path, fake_nvml_library: Path) -> Iterator[Run]:  # noqa: F811
    for tool in ("runc", "umoci", "containerd", "unshare"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    short = Path(tempfile.mkdtemp(prefix="ctk-ds-", dir="/tmp"))
    try:
        node: FakeNode = materialise("workstation", short / "n", fake_nvml_library)
    except SkipNode as exc:
        pytest.skip(str(exc))
    host = node.root
    # As on a real node: /var/run is a symlink to /run.
    if not (host / "var/run").exists():
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
    agent_tests.wait_socket(host / "run/containerd/containerd.sock")
    pod = short / "pod"  # the DaemonSet's emptyDir
    pod.mkdir()

    bundle = short / "bundle"
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
    spec = json.loads((bundle / "config.json").read_text())
    process = spec["process"]
    process["terminal"] = False
    process["args"] = ["ctk", "agent", "--once"]  # the entrypoint, once
    process["env"] = [
        *process["env"],
        *agent_env(),
        "CTK_AGENT_HOST_EXEC=/bin/sh /ctl/bridge.sh",
        f"{TOPOLOGY_ENV}=/topology/{node.topology.name}",
    ]
    caps = all_capabilities()
    process["capabilities"] = {k: caps for k in ("bounding", "effective", "permitted")}
    linux = spec["linux"]
    linux.pop("seccomp", None)
    linux["maskedPaths"] = []
    linux["readonlyPaths"] = []
    linux["namespaces"] = [n for n in linux["namespaces"] if n["type"] != "network"]
    spec["mounts"] += [
        *daemonset_mounts(host),
        {"destination": "/run/ctk-pod", "type": "bind", "source": str(pod), "options": ["rbind"]},
        {"destination": "/ctl", "type": "bind", "source": str(ctl), "options": ["rbind"]},
        {
            "destination": "/topology",
            "type": "bind",
            "source": str(node.topology.parent),
            "options": ["rbind", "ro"],
        },
    ]
    stop = threading.Event()
    thread = threading.Thread(target=serve_bridge, args=(ctl, stop), daemon=True)
    thread.start()
    name = f"ctk-test-{os.getpid()}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        process["args"] = ["ctk", "agent", *args]  # the image's entrypoint plus one option
        (bundle / "config.json").write_text(json.dumps(spec))
        return subprocess.run(
            ["runc", "run", "--bundle", str(bundle), name],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    original = config.read_text()
    try:
        done = run("--once")
        again = run("--once")  # a new pod on the same node (an upgrade, a reschedule)
        after_once = config.read_text()
        seen = snapshot(host, pod, ctl)
        undo = run("--uninstall")  # what the chart's pre-delete hook runs
        yield Run(host, ctl, pod, done, again, undo, original, after_once, seen)
    finally:
        stop.set()
        subprocess.run(["runc", "delete", "--force", name], capture_output=True, check=False)
        supervisor.stop(ctl)
        shutil.rmtree(short, ignore_errors=True)


def dump(ctl: Path) -> str:
    """`containerd config dump` of the host's config, run on the host."""
    return subprocess.run(
        [
            sys.executable,
            supervisor.__file__,
            str(ctl),
            "containerd",
            "--config",
            "/etc/containerd/config.toml",
            "config",
            "dump",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    ).stdout


def snapshot(host: Path, pod: Path, ctl: Path) -> dict[str, str]:
    """What the passes left on the host and in the pod, and the hook run in the host's root."""
    seen = {}
    for key, path in {
        "ready": pod / "ready",
        "spec": host / "run/cdi/nvidia.yaml",
        "prom": host / "var/lib/node_exporter/textfile_collector/ctk.prom",
        "nfd": host / "etc/kubernetes/node-feature-discovery/features.d",
    }.items():
        if path.is_dir():
            seen[key] = "".join(p.read_text() for p in sorted(path.iterdir()))
        elif path.exists():
            seen[key] = path.read_text()
    seen["dump"] = dump(ctl)
    seen["python in host"] = " ".join(str(p) for p in host.glob("usr/*bin/python*"))
    if (host / "usr/local/libexec/ctk/ctk-hook").exists():
        # The fake host has no Python: run the installed hook there, as the engine would.
        hook = subprocess.run(
            ["chroot", str(host), "/usr/local/libexec/ctk/ctk-hook", "--version"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        seen["hook"] = f"{hook.returncode} {hook.stdout}{hook.stderr}"
    return seen


def image_version(image_dir: Path) -> str:
    index = json.loads((image_dir / "oci" / "index.json").read_text())
    name: str = index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
    return name


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


def test_once_passes_and_a_new_pod_restarts_nothing(ran: Run) -> None:
    assert ran.done.returncode == 0, ran.done.stdout + ran.done.stderr
    assert ran.again.returncode == 0, ran.again.stdout + ran.again.stderr
    assert "restarted" not in ran.again.stderr
    # One restart for the configure, none for the second pod, one for the uninstall.
    restarts = (ran.ctl / "restarts.log").read_text().splitlines()
    assert restarts == ["systemctl restart containerd"] * 2


def test_effective_config_gains_nvidia_with_host_paths(ran: Run) -> None:
    assert ran.after_once != ran.original
    # The path written into the host's config is the host's, never /host/...
    assert '"/etc/containerd/conf.d/99-nvidia.toml"' in ran.after_once
    assert "/host/" not in ran.after_once
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' in ran.seen["dump"]


def test_ready_file_spec_and_outlets_land_where_the_chart_mounts_them(ran: Run) -> None:
    assert ran.seen["ready"] == ""
    # The spec went to /var/run/cdi on the host: through the /var/run -> /run symlink into the
    # chart's /run/cdi mount; the hook it names is the host's path.
    assert "/usr/local/libexec/ctk/ctk-hook" in ran.seen["spec"]
    assert "/host/" not in ran.seen["spec"]
    assert "ctk_engine_restarts_total 1" in ran.seen["prom"]
    assert "ctk.nvidia.com/runtime.configured=true" in ran.seen["nfd"]


def test_hook_lands_in_the_host_and_runs_there_without_python(ran: Run) -> None:
    assert ran.seen["python in host"] == ""
    assert ran.seen["hook"].startswith("0 "), ran.seen["hook"]


def test_uninstall_restores_the_original_config(ran: Run) -> None:
    assert ran.uninstall.returncode == 0, ran.uninstall.stdout + ran.uninstall.stderr
    assert (ran.host / "etc/containerd/config.toml").read_text() == ran.original
    assert not (ran.host / "etc/containerd/conf.d/99-nvidia.toml").exists()
    assert not (ran.host / "usr/local/libexec/ctk/ctk-hook").exists()
    assert "nvidia" not in dump(ran.ctl)
