"""GPU health checks (`gpu.*`)."""

from __future__ import annotations

from ctk.doctor.facts import NodeFacts, NvmlAnswer, Unavailable
from ctk.doctor.model import (
    HOST_ONLY,
    Evidence,
    Result,
    Severity,
    Where,
    check,
    fail,
    ok,
    skip,
    unknown,
    warn,
)
from ctk.node.nvml import GpuHealth, NvmlReturn

STUCK_STATES = {"Z": "zombie", "D": "uninterruptible sleep"}
ORPHAN_MIN_BYTES = 2 << 30
ORPHAN_FRACTION = 0.05


XID_DOCS = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


@check(
    "gpu.lost",
    severity=Severity.ERROR,
    title="NVML can talk to every GPU (none fell off the bus)",
    remedy="Drain the node; reset the GPU or reboot; if it recurs check power, cooling, seating.",
    sources=(
        XID_DOCS,
        "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/troubleshooting.html",
    ),
    depends_on=("driver.not-loaded", "driver.library-mismatch", "lib.nvml-not-found"),
)
def gpu_lost(facts: NodeFacts) -> Result:
    """NVML `GPU is lost` (15) anywhere, or `Unknown Error` (999) on the host itself.

    Inside a container 999 means the device cgroup lost the GPU (container.nvml-unknown-error);
    on the host, with the driver loaded and its libraries matching, it means the driver cannot
    reach a GPU: the same operator action as a lost GPU (Xid 79 in the kernel log, reset, reboot).
    """
    nvml = facts.nvml
    if not isinstance(nvml, NvmlAnswer):
        return unknown(f"NVML facts unavailable: {nvml.reason}")
    code = nvml.error_code
    on_host = facts.where is Where.HOST
    if code == NvmlReturn.UNKNOWN and not on_host:
        return skip("Unknown Error inside a container: see container.nvml-unknown-error")
    if code not in (NvmlReturn.GPU_IS_LOST, NvmlReturn.UNKNOWN):
        if code is not None:
            return skip(f"NVML did not initialise ({nvml.error}): see the driver and lib checks")
        return ok(f"NVML reaches {len(nvml.gpus)} GPU(s)")
    what = "GPU is lost" if code == NvmlReturn.GPU_IS_LOST else "Unknown Error"
    return fail(
        f"NVML fails with '{what}' ({code}) although the driver is loaded: a GPU "
        "fell off the bus or the driver lost it; GPU containers cannot start",
        Evidence("NVML", f"nvmlInit: {nvml.error or what}"),
        Evidence("/proc/driver/nvidia/version", facts.kernel.driver_version or "missing"),
        commands=("sudo dmesg | grep -i xid", "sudo nvidia-smi -r", "sudo reboot"),
        notes=(
            "Xid 79: the GPU fell off the bus; 119/120: GSP firmware",
            "reset once no process uses the GPU; reboot (drain the node first) if the reset fails",
        ),
    )


@check(
    "gpu.leftover-processes",
    severity=Severity.WARNING,
    title="no dead or stuck process holds the GPUs",
    remedy="Find the holders with fuser, kill them; reset the GPU or reboot if memory stays held.",
    sources=(
        "https://github.com/PaddlePaddle/PaddleOCR/issues/2074",
        "https://github.com/XuehaiPan/nvitop/issues/134",
    ),
    depends_on=("driver.not-loaded", "dev.nodes-missing"),
    where=HOST_ONLY,
)
def leftover_processes(facts: NodeFacts) -> Result:
    """GPU memory held by processes that are gone or stuck, or by no process at all.

    Three sources: `/proc/<pid>/fd` holders of `/dev/nvidia*` in `Z`/`D` state (fuser's method);
    NVML's compute processes whose PID has no `/proc` entry (a leak) or is stuck; and NVML's used
    memory far above what its processes account for (orphaned memory, more than
    `max(2 GiB, 5 % of the GPU)`, so the driver's own reservation never counts).
    """
    holders = facts.gpu_processes
    gpus = _nvml_health(facts)
    stuck = (
        {p.pid: p for p in holders if p.state in STUCK_STATES} if isinstance(holders, tuple) else {}
    )
    evidence = [
        Evidence(f"/proc/{p.pid}", f"{p.command}: {STUCK_STATES[p.state]} ({p.state})")
        for p in stuck.values()
    ]
    kill = list(stuck)
    states = facts.nvml_process_states
    resets: list[int] = []
    for gpu in gpus:
        for process in gpu.processes or ():
            state = None if isinstance(states, Unavailable) else states.get(process.pid)
            shown = f"NVML GPU {gpu.index} PID {process.pid}"
            if state == "":
                evidence.append(
                    Evidence(shown, f"{_mib(process.used_memory)}, no /proc/{process.pid}")
                )
                resets.append(gpu.index)
            elif state in STUCK_STATES and process.pid not in stuck:
                evidence.append(
                    Evidence(shown, f"{_mib(process.used_memory)}, {STUCK_STATES[state]}")
                )
                kill.append(process.pid)
        unaccounted = _unaccounted(gpu)
        if unaccounted is not None:
            resets.append(gpu.index)
            evidence.append(
                Evidence(
                    f"NVML GPU {gpu.index}",
                    f"{_mib(gpu.memory_used)} used, {_mib(unaccounted)} held by no process",
                )
            )
    if not evidence:
        if isinstance(holders, Unavailable):
            return unknown(
                f"cannot list GPU processes: {holders.reason}", needs_root=holders.needs_root
            )
        listed = sum(len(g.processes or ()) for g in gpus)
        open_count = len(holders) if isinstance(holders, tuple) else 0
        return ok(
            f"{open_count} process(es) hold the device nodes, {listed} compute process(es) "
            "in NVML; none dead, stuck or leaking"
        )
    return warn(
        "GPU memory is held by dead, stuck or missing processes",
        *evidence,
        commands=(
            "sudo fuser -v /dev/nvidia*",
            *(f"sudo kill -9 {pid}" for pid in kill),
            *(f"sudo nvidia-smi --gpu-reset -i {index}" for index in dict.fromkeys(resets)),
        ),
        notes=(
            "a GPU reset frees memory no live process holds; reboot if it fails"
            if resets
            else "memory still held with no process: reset that GPU (nvidia-smi --gpu-reset)",
        ),
    )


def _nvml_health(facts: NodeFacts) -> tuple[GpuHealth, ...]:
    nvml = facts.nvml
    if isinstance(nvml, NvmlAnswer) and nvml.error_code is None:
        return nvml.health_by_gpu
    return ()


def _unaccounted(gpu: GpuHealth) -> int | None:
    """Used memory no listed process accounts for, when it is clearly more than the driver's."""
    if gpu.processes is None or gpu.memory_used is None or gpu.memory_total is None:
        return None
    if any(p.used_memory is None for p in gpu.processes):
        return None
    unaccounted = gpu.memory_used - sum(p.used_memory or 0 for p in gpu.processes)
    threshold = max(ORPHAN_MIN_BYTES, int(gpu.memory_total * ORPHAN_FRACTION))
    return unaccounted if unaccounted > threshold else None


def _mib(size: int | None) -> str:
    return "memory unknown" if size is None else f"{size // (1 << 20)} MiB"


HEALTH_DEPENDS = (
    "driver.not-loaded",
    "driver.library-mismatch",
    "lib.nvml-not-found",
    "gpu.lost",
    "dev.permission-denied",
)
MEMORY_DOCS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
# nvmlClocksEventReason* bits that mean the GPU is held back by heat or power, not by choice
THROTTLE_REASONS = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


def _health_gpus(facts: NodeFacts) -> tuple[GpuHealth, ...] | Result:
    """NVML's health of each GPU, or the `unknown` result a health check returns without NVML."""
    nvml = facts.nvml
    if isinstance(nvml, Unavailable):
        return unknown(f"NVML facts unavailable: {nvml.reason}", needs_root=nvml.needs_root)
    if nvml.error_code is not None:  # the driver, lib, gpu.lost or container checks say why
        return skip(f"NVML did not initialise ({nvml.error}): see the checks that name the cause")
    return nvml.health_by_gpu


def _reset(gpus: list[GpuHealth]) -> tuple[str, ...]:
    return tuple(f"sudo nvidia-smi -r -i {gpu.index}" for gpu in gpus)


@check(
    "gpu.ecc-uncorrectable",
    severity=Severity.WARNING,
    title="no GPU has uncorrectable ECC errors since the driver loaded",
    remedy="Drain the node and reset the GPU; if errors recur, replace it.",
    sources=(MEMORY_DOCS, XID_DOCS),
    depends_on=HEALTH_DEPENDS,
)
def ecc_uncorrectable(facts: NodeFacts) -> Result:
    """`nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)` > 0."""
    gpus = _health_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    known = [gpu for gpu in gpus if gpu.ecc_uncorrected is not None]
    if not known:
        return skip("no GPU reports ECC counters (ECC off or not supported)")
    bad = [gpu for gpu in known if gpu.ecc_uncorrected]
    if not bad:
        return ok(f"no uncorrectable ECC errors on {len(known)} GPU(s)")
    return warn(
        f"GPU {', '.join(str(g.index) for g in bad)} had uncorrectable ECC errors since the "
        "driver loaded: its work may have failed, and CUDA contexts on it can be lost",
        *(
            Evidence(f"NVML GPU {g.index}", f"{g.ecc_uncorrected} volatile uncorrected error(s)")
            for g in bad
        ),
        commands=_reset(bad),
        notes=("drain the node before the reset; watch the kernel log for Xid 48, 94, 95",),
    )


@check(
    "gpu.memory-remap-pending",
    severity=Severity.WARNING,
    title="no memory repair waits for a GPU reset (row remap, page retirement)",
    remedy="Drain the node, reset the GPU (or reboot) so the repair takes effect; RMA on failure.",
    sources=(MEMORY_DOCS, "https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"),
    depends_on=HEALTH_DEPENDS,
)
def memory_remap_pending(facts: NodeFacts) -> Result:
    """Retired pages pending (pre-A100), a row remap pending, or a remap that failed."""
    gpus = _health_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    known = [g for g in gpus if g.remap_pending is not None or g.retired_pages_pending is not None]
    if not known:
        return skip("no GPU reports row remapping or page retirement")
    failed = [g for g in known if g.remap_failed]
    pending = [g for g in known if g.remap_pending or g.retired_pages_pending]
    if not failed and not pending:
        return ok(f"no memory repair pending on {len(known)} GPU(s)")
    evidence = [Evidence(f"NVML GPU {g.index}", "row remapping failed") for g in failed]
    evidence += [
        Evidence(
            f"NVML GPU {g.index}",
            "row remap pending" if g.remap_pending else "page retirement pending",
        )
        for g in pending
    ]
    if failed:
        return fail(
            f"row remapping failed on GPU {', '.join(str(g.index) for g in failed)}: the GPU "
            "has memory it cannot repair and should be replaced",
            *evidence,
            commands=_reset([*failed, *(g for g in pending if g not in failed)]),
            severity=Severity.ERROR,
            notes=("drain the node; open an RMA for the GPU",),
        )
    return warn(
        f"GPU {', '.join(str(g.index) for g in pending)} has a memory repair pending: it takes "
        "effect at the next GPU reset, until then the bad memory stays in use",
        *evidence,
        commands=_reset(pending),
        notes=("drain the node before the reset (or reboot it)",),
    )


@check(
    "gpu.clocks-throttled",
    severity=Severity.WARNING,
    title="no GPU is slowed down by heat or power now",
    remedy="Check cooling, airflow and power delivery; look at nvidia-smi's performance report.",
    sources=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",),
    depends_on=HEALTH_DEPENDS,
)
def clocks_throttled(facts: NodeFacts) -> Result:
    """`nvmlDeviceGetCurrentClocksEventReasons` has a thermal or power reason set."""
    gpus = _health_gpus(facts)
    if isinstance(gpus, Result):
        return gpus
    known = [g for g in gpus if g.clock_reasons is not None]
    if not known:
        return skip("no GPU reports its clock event reasons")
    slowed = {
        g.index: [name for bit, name in THROTTLE_REASONS.items() if (g.clock_reasons or 0) & bit]
        for g in known
    }
    slowed = {index: names for index, names in slowed.items() if names}
    if not slowed:
        return ok(f"no thermal or power slowdown on {len(known)} GPU(s)")
    return warn(
        f"GPU {', '.join(map(str, slowed))} runs below its clocks now because of "
        + ", ".join(sorted({name for names in slowed.values() for name in names})),
        *(Evidence(f"NVML GPU {i}", ", ".join(names)) for i, names in slowed.items()),
        commands=tuple(f"nvidia-smi -q -d PERFORMANCE -i {i}" for i in slowed),
        notes=("hardware slowdowns point to cooling or power supply; a power cap may be set",),
    )
