"""GPU health checks (`gpu.*`)."""

from __future__ import annotations

from ctk.doctor.facts import NodeFacts, Unavailable
from ctk.doctor.model import HOST_ONLY, Evidence, Result, Severity, check, ok, unknown, warn

STUCK_STATES = {"Z": "zombie", "D": "uninterruptible sleep"}


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
    """Zombie or D-state processes with `/dev/nvidia*` open keep GPU memory allocated."""
    holders = facts.gpu_processes
    if isinstance(holders, Unavailable):
        return unknown(
            f"cannot list GPU processes: {holders.reason}", needs_root=holders.needs_root
        )
    stuck = [p for p in holders if p.state in STUCK_STATES]
    if not stuck:
        return ok(f"{len(holders)} process(es) hold the GPUs, none dead or stuck")
    return warn(
        f"{len(stuck)} dead or stuck process(es) still hold the GPUs and their memory",
        *(
            Evidence(f"/proc/{p.pid}", f"{p.command}: {STUCK_STATES[p.state]} ({p.state})")
            for p in stuck
        ),
        commands=(
            "sudo fuser -v /dev/nvidia*",
            *(f"sudo kill -9 {p.pid}" for p in stuck),
            "# memory still held with no process: sudo nvidia-smi --gpu-reset -i <idx>, or reboot",
        ),
    )
