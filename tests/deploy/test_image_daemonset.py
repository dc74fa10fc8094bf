"""The image run the way the chart's DaemonSet runs it, under runc, against a fake host.

The fake host is a fixture node (fake NVML) with a real containerd 1.6 whose config lives in that
tree (tests/agent's supervisor plays systemd). The container gets exactly the DaemonSet's
hostPath mounts (from `helm template`: the host's / read-only at /host, the written dirs
read-write) and its CTK_AGENT_* environment, and runs `ctk agent --once`. The agent reaches "the
host's root" through --host-exec: a shell script in the container that hands each command to this
test, which runs it on the host (as `chroot /host` would on a node). tests/deploy/pods.py does the
running.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.chart import one, pod_spec, render
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
    node: Node


@pytest.fixture(scope="module")
def ran(image_dir: Path, fake_nvml_library: Path) -> Iterator[Run]:  # noqa: F811
    need("runc", "umoci", "containerd", "unshare")
    short = Path(tempfile.mkdtemp(prefix="ctk-ds-", dir="/tmp"))
    ds = one(render({"runtime": "containerd"}), "DaemonSet", "ctk")
    name = f"ctk-test-{os.getpid()}"
    with fake_node(short, fake_nvml_library) as node, bridge(node):
        base_bundle = short / "bundle"
        base = unpack(image_dir, base_bundle)
        config = node.host / "etc/containerd/config.toml"

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            spec = container_spec(
                base,
                pod_spec(ds),
                containers(ds)["agent"],
                node,
                args=["ctk", "agent", *args],  # the image's entrypoint plus one option
                extra_env=(f"CTK_AGENT_HOST_EXEC={HOST_EXEC}",),
            )
            bundle = write_bundle(base_bundle, spec, "agent")
            return subprocess.run(
                runc(base_bundle.parent / "runc", "run", "--bundle", str(bundle), name),
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
            seen = snapshot(node)
            undo = run("--uninstall")  # what the chart's pre-delete hook runs
            yield Run(
                node.host, node.ctl, node.pod, done, again, undo, original, after_once, seen, node
            )
        finally:
            subprocess.run(
                runc(base_bundle.parent / "runc", "delete", "--force", name),
                capture_output=True,
                check=False,
                timeout=60,
            )


def snapshot(node: Node) -> dict[str, str]:
    """What the passes left on the host and in the pod, and the hook run in the host's root."""
    host, pod = node.host, node.pod
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
    seen["dump"] = node.dump()
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
    assert "nvidia" not in ran.node.dump()
