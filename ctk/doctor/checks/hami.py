"""HAMi checks (`hami.*`): the libvgpu interposer and the memory limit it enforces."""

from __future__ import annotations

import re

from ctk.doctor.checks.container import MIB
from ctk.doctor.checks.mig import nvml_answer
from ctk.doctor.facts import NodeFacts
from ctk.doctor.model import (
    INSIDE,
    Evidence,
    Result,
    Severity,
    check,
    fail,
    ok,
    skip,
    unknown,
)

HAMI_PRELOAD = "libvgpu.so"
_SIZE = re.compile(r"^(\d+)([kmgt]?)i?b?$", re.IGNORECASE)
_UNITS = {"": MIB, "k": 1024, "m": MIB, "g": 1024 * MIB, "t": 1024 * 1024 * MIB}


def hami_limits(facts: NodeFacts) -> dict[str, str]:
    """HAMi's limit variables in the environment."""
    return {
        k: v
        for k, v in facts.container.env.items()
        if k.startswith("CUDA_DEVICE_MEMORY_LIMIT") or k == "CUDA_DEVICE_SM_LIMIT"
    }


@check(
    "hami.libvgpu-not-loaded",
    severity=Severity.ERROR,
    title="HAMi's libvgpu.so is preloaded where HAMi limits are set",
    remedy="Keep HAMi's /etc/ld.so.preload and library mount; restart the pod.",
    sources=(
        "https://github.com/Project-HAMi/HAMi/issues/777",
        "https://github.com/Project-HAMi/HAMi/issues/1346",
    ),
    where=INSIDE,
)
def libvgpu_not_loaded(facts: NodeFacts) -> Result:
    """Limits without the interposer are not enforced."""
    limits = hami_limits(facts)
    if not limits:
        return skip("no HAMi limits in the environment")
    if any(entry.endswith(HAMI_PRELOAD) for entry in facts.container.preload):
        return ok("libvgpu.so is preloaded")
    return fail(
        "HAMi limits are set but libvgpu.so is not preloaded: nothing enforces them",
        *(Evidence(k, v) for k, v in sorted(limits.items())),
        Evidence("/etc/ld.so.preload", ", ".join(facts.container.preload) or "empty or missing"),
        notes=("do not ship /etc/ld.so.preload in the image; restart the pod",),
    )


def parse_hami_size(text: str) -> int | None:
    """`4096m` -> bytes (a bare number counts in MiB, as HAMi does)."""
    match = _SIZE.match(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


@check(
    "hami.memory-limit-not-enforced",
    severity=Severity.ERROR,
    title="NVML reports HAMi's memory limit",
    remedy="As hami.libvgpu-not-loaded: the interposer must be active.",
    sources=("https://github.com/Project-HAMi/HAMi/issues/2581",),
    depends_on=("hami.libvgpu-not-loaded",),
    where=INSIDE,
)
def memory_limit_not_enforced(facts: NodeFacts) -> Result:
    """NVML's memory total above the limit: the interposer is not patching NVML."""
    limits = hami_limits(facts)
    memory = {k: v for k, v in limits.items() if k.startswith("CUDA_DEVICE_MEMORY_LIMIT")}
    if not memory:
        return skip("no HAMi memory limit in the environment")
    nvml = nvml_answer(facts)
    if isinstance(nvml, Result):
        return nvml
    gpus = nvml.health_by_gpu
    if any(gpu.memory_total is None for gpu in gpus):
        return unknown("the NVML adapter does not report memory totals")
    over = []
    for gpu in gpus:
        raw = memory.get(f"CUDA_DEVICE_MEMORY_LIMIT_{gpu.index}") or memory.get(
            "CUDA_DEVICE_MEMORY_LIMIT"
        )
        limit = parse_hami_size(raw) if raw else None
        if limit is not None and gpu.memory_total is not None and gpu.memory_total > limit:
            over.append(
                Evidence(
                    f"NVML GPU {gpu.index}",
                    f"total {gpu.memory_total // MIB} MiB > limit {limit // MIB} MiB",
                )
            )
    if not over:
        return ok("NVML reports the limited memory")
    return fail(
        "NVML reports the full GPU memory, not HAMi's limit: the limit is not enforced",
        *over,
        notes=("see hami.libvgpu-not-loaded",),
    )
