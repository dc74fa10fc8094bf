"""Gather `NodeFacts` once, from files under `--root` (and NVML), each slow step bounded in time.

Everything is read through `HostRoot`, so `--root /host` diagnoses a host mounted elsewhere and
fixture trees stand in for nodes in tests. Facts that cannot be files come from the real
adapters: `ctk.host.devnodes` for device nodes, `os.statvfs` for `/dev/shm`, NVML through
`ctk.host.nvml`.
One module per layer: `kernel` (driver, device nodes, libraries, NVML, GPU processes),
`engine_configs` (toolkit, Docker, containerd, CRI-O, kubelet), `cdi`, `container`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from ctk.doctor.advisories import Advisory, parse_advisories
from ctk.doctor.cuda import need_from_env, parse_table
from ctk.doctor.facts import (
    ContainerFacts,
    CudaNeed,
    CudaRow,
    DraFiles,
    GpuProcess,
    NodeFacts,
    NvmlAnswer,
    TimedOut,
    Unavailable,
)
from ctk.doctor.model import Where
from ctk.host.facts.cdi import gather_cdi
from ctk.host.facts.container import (
    MountEntry,
    detect_where,
    gather_container,
    read_environ,
    read_mounts,
)
from ctk.host.facts.engine_configs import (
    ENGINE_FACTS,
    gather_distribution,
    gather_rootless_docker,
    gather_toolkit,
    gpu_operator_trace,
    kubelet_cgroup_driver,
)
from ctk.host.facts.gatherer import (
    DOCTOR_DEADLINE_S,
    KUBELET_PATHS,
    NVML_TIMEOUT_S,
    STEP_TIMEOUT_S,
    Gatherer,
    Timing,
)
from ctk.host.facts.kernel import (
    gather_dev,
    gather_gpu_processes,
    gather_kernel,
    gather_libs,
    gather_nvml,
    gather_process_states,
)
from ctk.host.facts.kubernetes import gather_dra_files, gather_kubernetes
from ctk.host.root import HostRoot

PERSISTENCED_SOCKETS = ("/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket")


def advisories() -> tuple[Advisory, ...]:
    """The packaged toolkit CVE table."""
    text = resources.files("ctk.data").joinpath("toolkit-cves.csv").read_text("utf-8")
    return parse_advisories(text)


def cuda_table() -> tuple[CudaRow, ...]:
    """The packaged CUDA/driver compatibility table."""
    text = resources.files("ctk.data").joinpath("cuda-driver-compat.csv").read_text("utf-8")
    return parse_table(text)


def gather(
    root: Path, *, cuda_need: CudaNeed | None = None, nvml_timeout: float = NVML_TIMEOUT_S
) -> tuple[NodeFacts, tuple[Timing, ...]]:
    """All facts about the node under ``root``; NVML runs in parallel with the file reads."""
    start = time.monotonic()
    g = Gatherer(HostRoot(root), deadline=start + max(DOCTOR_DEADLINE_S, nvml_timeout))
    nvml_box: list[NvmlAnswer | Unavailable] = []
    nvml_thread = threading.Thread(
        target=lambda: nvml_box.append(_safe_nvml(root)), name="ctk-doctor-nvml", daemon=True
    )
    nvml_thread.start()
    # Every step that reads /proc, /sys or config files runs bounded: a step that hangs (a broken
    # driver's /proc file, a dead NFS mount) leaves a `TimedOut` stand-in, and only the checks that
    # use that fact become `unknown`.
    no_env: dict[str, str] = {}
    env = g.bounded("environment", lambda: read_environ(g), no_env, STEP_TIMEOUT_S)
    no_mounts: tuple[MountEntry, ...] = ()
    mounts = g.bounded("mounts", lambda: read_mounts(g), no_mounts, STEP_TIMEOUT_S)
    where = g.bounded("context", lambda: detect_where(g, env, mounts), Where.HOST, STEP_TIMEOUT_S)
    # the API server is asked while the files are read: network waits overlap the rest; first
    # the DRA drivers' kubelet plugins on the node (whether the API's DRA objects are asked for)
    kube_box: list[Mapping[str, Any] | Unavailable | None] = []
    dra_box: list[DraFiles] = []
    kube_thread = threading.Thread(
        target=lambda: kube_box.append(_safe_kubernetes(g, env, where, dra_box)),
        name="ctk-doctor-kubernetes",
        daemon=True,
    )
    kube_thread.start()
    kernel = g.step("kernel", lambda: gather_kernel(g))
    dev = g.step("dev", lambda: gather_dev(g))
    libs = g.step("libraries", lambda: gather_libs(g, env if where is not Where.HOST else {}))
    toolkit = g.step("toolkit", lambda: gather_toolkit(g, env))
    binaries = {} if isinstance(toolkit, TimedOut) else toolkit.binaries
    engines = {
        runtime: g.step(str(runtime), partial(read, g, binaries))
        for runtime, read in ENGINE_FACTS.items()
    }
    rootless = g.step("rootless docker", lambda: gather_rootless_docker(g, binaries))
    readers = [*engines.values(), rootless]
    extra_dirs = tuple(
        directory
        for engine in readers
        if engine is not None and not isinstance(engine, TimedOut)
        for directory in (*(engine.cdi_spec_dirs or ()), *engine.user_cdi_dirs)
        if directory  # "" names no directory (dockerd: no CDI), not the node's /
    )
    cdi = g.step("cdi", lambda: gather_cdi(g, extra_dirs))
    container = (
        g.step("container", lambda: gather_container(g, env, mounts))
        if where is not Where.HOST
        else ContainerFacts()
    )
    need = cuda_need
    if need is None and where is not Where.HOST:
        need = need_from_env(env, "process environment")
    table = g.timed("cuda table", cuda_table)
    no_answer: tuple[GpuProcess, ...] | Unavailable = Unavailable("/proc scan timed out")
    processes = (
        g.bounded("gpu processes", lambda: gather_gpu_processes(g), no_answer, STEP_TIMEOUT_S)
        if where is Where.HOST
        and not isinstance(kernel, TimedOut)
        and kernel.driver_version is not None
        else ()
    )
    nvml_thread.join(max(0.0, nvml_timeout - (time.monotonic() - start)))
    elapsed = time.monotonic() - start
    if nvml_box:
        nvml: NvmlAnswer | Unavailable = nvml_box[0]
        g.timings.append(Timing("nvml", elapsed))
    else:
        nvml = Unavailable(f"NVML did not answer within {nvml_timeout:g} s")
        g.timings.append(Timing("nvml", elapsed, timed_out=True))
    pids = (
        sorted({p.pid for health in nvml.health for p in health.processes or ()})
        if isinstance(nvml, NvmlAnswer) and where is Where.HOST
        else []
    )
    no_states: dict[int, str] | Unavailable = Unavailable("/proc did not answer in time")
    states = (
        g.bounded(
            "nvml process states", lambda: gather_process_states(g, pids), no_states, STEP_TIMEOUT_S
        )
        if pids
        else {}
    )
    facts = NodeFacts(
        root=str(root),
        where=where,
        is_root=os.geteuid() == 0,
        kernel=kernel,
        dev=dev,
        libs=libs,
        nvml=nvml,
        cuda_table=table,
        cuda_need=need,
        toolkit=toolkit,
        engines=engines,
        docker_rootless=rootless,
        docker_snap=g.exists("/snap/bin/docker") or g.exists("/var/snap/docker"),
        cdi=cdi,
        container=container,
        gpu_processes=processes,
        nvml_process_states=states,
        advisories=g.timed("advisories", advisories),
        kubernetes=_joined(g, kube_thread, kube_box),
        dra=dra_box[0] if dra_box else DraFiles(),
        kubelet=any(g.exists(p) for p in KUBELET_PATHS),
        persistenced=any(g.exists(p) for p in PERSISTENCED_SOCKETS),
        kubelet_cgroup_driver=g.step("kubelet", lambda: kubelet_cgroup_driver(g)),
        host_mount="/host"
        if where is not Where.HOST and g.exists("/host/etc/os-release")
        else None,
        distribution=g.step("distribution", lambda: gather_distribution(g)),
        gpu_operator=g.step("gpu operator", lambda: gpu_operator_trace(g)),
    )
    return facts, tuple(g.timings)


def _safe_kubernetes(
    g: Gatherer, env: Mapping[str, str], where: Where, dra_box: list[DraFiles]
) -> Mapping[str, Any] | Unavailable | None:
    """The Kubernetes facts, after the DRA plugins' files (into ``dra_box``): both in the one
    thread the deadline bounds."""
    try:
        dra_box.append(gather_dra_files(g))
    except Exception:  # an adapter bug must not hide every other fact
        dra_box.append(DraFiles())
    try:
        return gather_kubernetes(g, env, where, dra_box[0])
    except Exception as exc:  # an adapter bug must not hide every other fact
        return Unavailable(f"Kubernetes facts failed: {type(exc).__name__}: {exc}")


def _joined(
    g: Gatherer, thread: threading.Thread, box: list[Mapping[str, Any] | Unavailable | None]
) -> Mapping[str, Any] | Unavailable | None:
    """The Kubernetes facts, waiting for them no longer than the deadline leaves."""
    start = time.monotonic()
    thread.join(g.wait(STEP_TIMEOUT_S))
    timed_out = thread.is_alive()
    g.timings.append(Timing("kubernetes", time.monotonic() - start, timed_out=timed_out))
    if timed_out:
        return Unavailable("the Kubernetes API did not answer in time")
    return box[0]


def _safe_nvml(root: Path) -> NvmlAnswer | Unavailable:
    try:
        return gather_nvml(root)
    except Exception as exc:  # an adapter bug must not hide every other fact
        return Unavailable(f"NVML adapter failed: {type(exc).__name__}: {exc}")
