"""CRI-O checks (`crio.*`): the nvidia runtime in crio.conf and its drop-ins."""

from __future__ import annotations

from ctk.doctor.checks.engine_cdi import cdi_only
from ctk.doctor.checks.engine_config import (
    configure_fix,
    engine_not_installed,
    nvidia_runtime_entry,
    runtime_binary_missing,
)
from ctk.doctor.checks.toolkit import INSTALL_GUIDE
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
from ctk.runtime_config.engines import Runtime


@check(
    "crio.runtime-not-configured",
    severity=Severity.ERROR,
    title="CRI-O has the nvidia runtime",
    remedy="Add the nvidia runtime to CRI-O's configuration and restart CRI-O.",
    sources=(INSTALL_GUIDE,),
    depends_on=("toolkit.not-installed",),
    where=HOST_ONLY,
)
def crio_runtime(facts: NodeFacts) -> Result:
    """No `[crio.runtime.runtimes.nvidia]`, no OCI hook, and no usable nvidia.com/gpu spec in
    CRI-O's spec directories (`cdi_only`)."""
    crio = facts.engine(Runtime.CRIO)
    blocked = engine_not_installed(crio)
    if blocked is not None and crio.error is None:
        return blocked
    if crio.error is not None:
        return fail(
            f"{crio.config_path} does not parse: {crio.error}",
            Evidence(crio.config_path, crio.error),
        )
    runtime, evidence = nvidia_runtime_entry(crio)
    if runtime is not None:
        return ok("nvidia runtime configured", *evidence)
    missing = runtime_binary_missing(crio, "sudo systemctl restart crio")
    if missing is not None:
        return missing
    if facts.toolkit.oci_hooks:
        return ok("the (deprecated) NVIDIA OCI hook is installed")
    cdi = cdi_only(facts, Runtime.CRIO)
    if cdi is not None:
        return cdi
    return fail(
        "CRI-O has no usable nvidia runtime",
        *evidence,
        commands=("sudo systemctl restart crio",),
        fixes=(configure_fix("crio"),),
    )
