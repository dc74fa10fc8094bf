"""GPU health checks (`gpu.*`)."""

from __future__ import annotations

from ctk.doctor.facts import NodeFacts, NvmlFacts, NvmlGpu, Unavailable
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

STUCK_STATES = {"Z": "zombie", "D": "uninterruptible sleep"}
ORPHAN_MIN_BYTES = 2 << 30
ORPHAN_FRACTION = 0.05


NVML_GPU_IS_LOST = 15
NVML_UNKNOWN_ERROR = 999
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
    if not isinstance(nvml, NvmlFacts):
        return unknown(f"NVML facts unavailable: {nvml.reason}")
    code = nvml.error_code
    on_host = facts.where is Where.HOST
    if code == NVML_UNKNOWN_ERROR and not on_host:
        return skip("Unknown Error inside a container: see container.nvml-unknown-error")
    if code not in (NVML_GPU_IS_LOST, NVML_UNKNOWN_ERROR):
        if code is not None:
            return skip(f"NVML did not initialise ({nvml.error}): see the driver and lib checks")
        return ok(f"NVML reaches {len(nvml.gpus)} GPU(s)")
    what = "GPU is lost" if code == NVML_GPU_IS_LOST else "Unknown Error"
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
    gpus = _nvml_gpus(facts)
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


def _nvml_gpus(facts: NodeFacts) -> tuple[NvmlGpu, ...]:
    nvml = facts.nvml
    if isinstance(nvml, NvmlFacts) and nvml.error_code is None:
        return nvml.gpus
    return ()


def _unaccounted(gpu: NvmlGpu) -> int | None:
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
