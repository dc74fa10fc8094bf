"""Host checks (`host.*`): the kernel and cgroup setup GPU containers need."""

from __future__ import annotations

from ctk.doctor.checks.toolkit import (
    CGROUP_V2_MINIMUM,
    UPGRADE,
    dotted,
    libnvidia_container_version,
)
from ctk.doctor.facts import NodeFacts
from ctk.doctor.model import (
    HOST_ONLY,
    Evidence,
    Result,
    Severity,
    check,
    fail,
    ok,
)


@check(
    "host.cgroup-v2-legacy-stack",
    severity=Severity.ERROR,
    title="libnvidia-container supports cgroup v2",
    remedy="Upgrade the toolkit to 1.8 or later.",
    sources=(
        "https://github.com/NVIDIA/nvidia-docker/issues/1447",
        "https://github.com/NVIDIA/libnvidia-container/issues/111",
    ),
    where=HOST_ONLY,
)
def cgroup_v2_legacy_stack(facts: NodeFacts) -> Result:
    """`cgroup subsystem devices not found` on cgroup v2 with libnvidia-container < 1.8."""
    version = libnvidia_container_version(facts)
    if facts.kernel.cgroup_version != 2:
        return ok("cgroup v1 host")
    if version is None or version >= CGROUP_V2_MINIMUM:
        return ok("cgroup v2 with a toolkit that supports it")
    return fail(
        f"cgroup v2 host with libnvidia-container {dotted(version)}: containers fail with "
        "'cgroup subsystem devices not found'",
        Evidence("/sys/fs/cgroup/cgroup.controllers", "present (cgroup v2)"),
        Evidence("/var/lib/dpkg/status", f"libnvidia-container {dotted(version)}"),
        commands=(UPGRADE,),
    )
