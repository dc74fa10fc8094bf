"""GPU health checks (`gpu.*`)."""

from __future__ import annotations

from ctk.doctor.facts import NodeFacts, NvmlFacts, NvmlGpu, Unavailable
from ctk.doctor.model import HOST_ONLY, Evidence, Result, Severity, check, ok, unknown, warn

STUCK_STATES = {"Z": "zombie", "D": "uninterruptible sleep"}
ORPHAN_MIN_BYTES = 2 << 30
ORPHAN_FRACTION = 0.05


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
            *(
                f"sudo nvidia-smi --gpu-reset -i {index}   # memory of no live process; or reboot"
                for index in dict.fromkeys(resets)
            ),
            *(
                ()
                if resets
                else ("# memory still held with no process: sudo nvidia-smi --gpu-reset -i <idx>",)
            ),
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
