"""CUDA compatibility checks (`cuda.*`): the driver against what a workload needs."""

from __future__ import annotations

from ctk.doctor import cuda as compat
from ctk.doctor.facts import CudaNeed, NodeFacts, NvmlAnswer
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
    warn,
)

RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
MVC_DOCS = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
FORWARD_DOCS = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"
# NVML brands as the toolkit names them (`ctk.host.nvml.BRANDS`). Forward compatibility works on
# data-center GPUs (Tesla, and "NVIDIA" for A100/H100 and later), on some NGC-ready RTX SKUs only,
# and never on GeForce/Titan (CUDA error 804).
DATA_CENTER_BRANDS = frozenset({"tesla", "nvidia"})
SOME_SKU_BRANDS = frozenset({"quadrortx", "nvidiartx"})
NO_NEED = (
    "no CUDA requirement to check (use --cuda-version or --image-env, or run in the container)"
)


def host_cuda(facts: NodeFacts) -> compat.HostCuda | None:
    """Driver version, CUDA version (NVML, else the table) and GPU brands of the host."""
    driver = compat.parse_version(facts.kernel.driver_version or "")
    if driver is None:
        return None
    cuda: tuple[int, ...] | None = None
    brands: frozenset[str] = frozenset()
    if isinstance(facts.nvml, NvmlAnswer) and facts.nvml.error_code is None:
        cuda = facts.nvml.cuda_version
        brands = frozenset(g.brand.lower() for g in facts.nvml.health_by_gpu if g.brand)
    if cuda is None:
        cuda = compat.host_cuda_from_driver(facts.cuda_table, driver)
    return compat.HostCuda(
        driver=driver, driver_text=facts.kernel.driver_version or "", cuda=cuda, brands=brands
    )


def _evidence(need: CudaNeed, host: compat.HostCuda) -> tuple[Evidence, ...]:
    shown_cuda = compat.format_version(host.cuda) if host.cuda else "unknown"
    items = [
        Evidence("/proc/driver/nvidia/version", host.driver_text),
        Evidence("driver CUDA version", shown_cuda),
    ]
    items += [Evidence(need.source, f"NVIDIA_REQUIRE: {expr}") for expr in need.requirements]
    if need.cuda_version:
        items.append(Evidence(need.source, f"CUDA_VERSION={need.cuda_version}"))
    if need.disable_require:
        items.append(Evidence(need.source, "NVIDIA_DISABLE_REQUIRE=true"))
    return tuple(items)


def _judge(facts: NodeFacts) -> tuple[CudaNeed, compat.HostCuda, compat.Verdict] | Result:
    need = facts.cuda_need
    if need is None:
        return skip(NO_NEED)
    if need.unknown is not None:
        return unknown(need.unknown)
    bad = compat.malformed(need)
    if bad:
        shown = ", ".join(repr(condition) for condition in bad)
        return unknown(
            f"cannot judge the CUDA requirement of {need.source}: {shown} is not a valid "
            "condition (e.g. cuda>=12.4)"
        )
    host = host_cuda(facts)
    if host is None:
        return unknown("the driver version is unknown")
    verdict = compat.judge(need, host, facts.cuda_table)
    if verdict.beyond_table and not verdict.satisfied:
        wanted = compat.format_version(verdict.required or ())
        return unknown(f"CUDA {wanted} is newer than ctk's compatibility table: upgrade ctk")
    return need, host, verdict


def _upgrade_commands(
    verdict: compat.Verdict, host: compat.HostCuda, *, offer_compat: bool = True
) -> tuple[str, ...]:
    commands = []
    if verdict.row is not None and verdict.row.min_driver is not None:
        minimum = verdict.row.min_driver_text
        note = "" if verdict.row.verified else " (unverified table value)"
        commands.append(
            f"upgrade the driver to >= {minimum}{note}: "
            f"sudo apt-get install nvidia-driver-{verdict.row.min_driver[0]} && sudo reboot"
        )
    if host.cuda is not None:
        commands.append(
            f"or use an image built for CUDA {compat.format_version(host.cuda)} or older"
        )
    if verdict.required is not None and offer_compat:
        major, minor = verdict.required[:2]
        known = host.brands - {"unknown"}
        compat_line = (
            f"or add cuda-compat-{major}-{minor} to the image (forward compatibility; the "
            "driver branch must be one the compat package lists)"
        )
        if known and known <= DATA_CENTER_BRANDS:
            commands.append(compat_line)
        elif known and known <= DATA_CENTER_BRANDS | SOME_SKU_BRANDS:
            commands.append(compat_line.replace("(forward", "(only NGC-ready RTX SKUs; forward"))
        elif known:
            shown = ", ".join(sorted(known - DATA_CENTER_BRANDS))
            commands.append(
                f"forward compatibility (cuda-compat) does not work on {shown} GPUs "
                "(CUDA error 804)"
            )
    return tuple(commands)


COMPAT_DIR = "/usr/local/cuda/compat"


def _bridge_gaps(
    facts: NodeFacts, host: compat.HostCuda, bridge: compat.ForwardCompat
) -> tuple[Evidence, ...]:
    """What is not shown for forward compatibility to work here; () when all of it is."""
    gaps = []
    known = host.brands - {"unknown"}
    if bridge.brand_assumed or not known:
        gaps.append(
            Evidence("NVML brand", "unknown: forward compatibility needs a data-center GPU")
        )
    elif not known <= DATA_CENTER_BRANDS:
        shown = ", ".join(sorted(known - DATA_CENTER_BRANDS))
        gaps.append(Evidence("NVML brand", f"{shown}: not a data-center brand (tesla, nvidia)"))
    if facts.where not in INSIDE:
        gaps.append(
            Evidence(
                f"{COMPAT_DIR}/libcuda.so.*",
                "not checked: only the image's environment is known here",
            )
        )
        return tuple(gaps)
    lib = facts.container.compat
    if lib is None:
        return (
            *gaps,
            Evidence(f"{COMPAT_DIR}/libcuda.so.*", "absent: no cuda-compat in the image"),
        )
    version = compat.parse_version(lib.version)
    if version is None or version <= host.driver:
        gaps.append(Evidence(lib.path, f"not newer than driver {host.driver_text}: unused"))
    if lib.driver_branches and host.driver[0] not in lib.driver_branches:
        branches = ", ".join(str(b) for b in lib.driver_branches)
        gaps.append(
            Evidence(lib.path, f"supports driver branches {branches}, not {host.driver[0]}")
        )
    if lib.on_path is None and lib.mounted_at is None:
        gaps.append(
            Evidence(
                lib.path,
                "not used: neither LD_LIBRARY_PATH nor ld.so.conf names its directory, and the "
                "runtime did not mount it over the driver's libcuda",
            )
        )
    return tuple(gaps)


def _forward_compat_verdict(
    facts: NodeFacts,
    host: compat.HostCuda,
    verdict: compat.Verdict,
    bridge: compat.ForwardCompat,
    evidence: tuple[Evidence, ...],
) -> Result:
    """The requirement holds only through a `brand=` clause: ok where forward compatibility is
    shown to apply, an error inside a container whose image has no compat libraries (without
    minor-version compatibility to fall back on), a warning otherwise."""
    wanted = compat.format_version(verdict.required or ())
    shown_cuda = compat.format_version(host.cuda or ())
    clause = Evidence("clause", bridge.clause)
    if bridge.branch_cuda is not None:
        clause = Evidence(
            "clause",
            f"{bridge.clause} (that driver branch runs CUDA "
            f"{compat.format_version(bridge.branch_cuda)} natively)",
        )
    gaps = _bridge_gaps(facts, host, bridge)
    lib = facts.container.compat
    if not gaps and lib is not None:
        used = f"first on {lib.on_path}" if lib.on_path else f"mounted at {lib.mounted_at}"
        return ok(
            f"CUDA {wanted} runs on driver {host.driver_text} through forward compatibility: "
            f"compat libcuda {lib.version} ({used}) on a data-center GPU",
            *evidence,
            clause,
        )
    summary = (
        f"the workload needs CUDA {wanted} but driver {host.driver_text} supports {shown_cuda}; "
        f"the requirement holds only through {bridge.clause}, which counts on forward "
        "compatibility"
    )
    missing = facts.where in INSIDE and lib is None
    if verdict.mvc_applies:
        summary += (
            ": without it CUDA falls back to minor-version compatibility (no PTX JIT, no newer "
            "APIs)"
        )
    elif missing:
        summary += (
            ": the image has no cuda-compat libraries, so CUDA fails with 'CUDA driver version "
            "is insufficient for CUDA runtime version'"
        )
    else:
        summary += (
            ": nothing shows it applies here, and without it CUDA fails with 'CUDA driver "
            "version is insufficient for CUDA runtime version'"
        )
    major, minor = (verdict.required or (0, 0))[:2]
    notes = (
        f"forward compatibility needs all of: a data-center GPU (NVML brand tesla or nvidia), "
        f"the image's cuda-compat-{major}-{minor} libraries ({COMPAT_DIR}/libcuda.so.*) listing "
        f"driver branch {host.driver[0]}, and a runtime that puts them before the driver's "
        "libcuda (nvidia-container-cli mounts them; in CDI mode the spec's enable-cuda-compat "
        f"hook adds them to ld.so.conf; or LD_LIBRARY_PATH={COMPAT_DIR})",
        *_upgrade_commands(verdict, host, offer_compat=False),
    )
    if missing and not verdict.mvc_applies:
        return fail(summary, *evidence, clause, *gaps, notes=notes)
    return warn(summary, *evidence, clause, *gaps, notes=notes, severity=Severity.WARNING)


@check(
    "cuda.driver-too-old",
    severity=Severity.ERROR,
    title="the driver supports the CUDA version the workload needs",
    remedy="Upgrade the driver, or use an image built for the host's CUDA version.",
    sources=(
        RELEASE_NOTES,
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/152",
        "https://github.com/NVIDIA/nvidia-docker/issues/1442",
    ),
    depends_on=("driver.not-loaded",),
)
def driver_too_old(facts: NodeFacts) -> Result:
    """`unsatisfied condition: cuda>=12.8` at start, or CUDA error 35 at run time."""
    judged = _judge(facts)
    if isinstance(judged, Result):
        return judged
    need, host, verdict = judged
    evidence = _evidence(need, host)
    if verdict.forward_compat is not None:
        return _forward_compat_verdict(facts, host, verdict, verdict.forward_compat, evidence)
    if verdict.satisfied:
        return ok("the driver satisfies the workload's CUDA requirement", *evidence)
    wanted = compat.format_version(verdict.required) if verdict.required else "the requirement"
    shown_cuda = compat.format_version(host.cuda) if host.cuda else "an unknown CUDA version"
    if need.disable_require:
        if verdict.mvc_applies:
            return ok(
                f"CUDA {wanted} runs on driver {host.driver_text} only through "
                "minor-version compatibility (see cuda.minor-compat-only)",
                *evidence,
            )
        summary = (
            f"the workload needs CUDA {wanted} but the driver supports {shown_cuda}; the "
            "requirement check is disabled, so it fails at run time with error 35 "
            "(CUDA driver version is insufficient)"
        )
    else:
        summary = (
            f"the workload needs CUDA {wanted} but driver {host.driver_text} "
            f"supports {shown_cuda}: the runtime refuses the container "
            f"(unsatisfied condition: cuda>={wanted})"
        )
        if verdict.mvc_applies:
            summary += (
                "; it would probably run under minor-version compatibility with "
                "NVIDIA_DISABLE_REQUIRE=1 (no PTX JIT, no newer APIs)"
            )
    return fail(summary, *evidence, notes=_upgrade_commands(verdict, host))


@check(
    "cuda.minor-compat-only",
    severity=Severity.WARNING,
    title="the workload does not depend on minor-version compatibility",
    remedy="Upgrade the driver to the full minimum for the workload's CUDA version.",
    sources=(MVC_DOCS,),
    depends_on=("driver.not-loaded",),
)
def minor_compat_only(facts: NodeFacts) -> Result:
    """Runs only through MVC: PTX JIT and APIs newer than the driver fail."""
    judged = _judge(facts)
    if isinstance(judged, Result):
        return judged
    need, host, verdict = judged
    evidence = _evidence(need, host)
    if verdict.satisfied or not verdict.mvc_applies or not need.disable_require:
        return ok("minor-version compatibility is not relied on", *evidence)
    wanted = compat.format_version(verdict.required or ())
    return warn(
        f"CUDA {wanted} runs on driver {host.driver_text} only through "
        "minor-version compatibility: kernels shipped as PTX fail to JIT and newer APIs "
        "return 'not supported'",
        *evidence,
        notes=_upgrade_commands(verdict, host),
    )


@check(
    "cuda.requirement-check-disabled",
    severity=Severity.INFO,
    title="the runtime's CUDA requirement check is active",
    remedy="Unset NVIDIA_DISABLE_REQUIRE so that incompatible containers fail early and clearly.",
    sources=(
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
        "docker-specialized.html",
    ),
    depends_on=("driver.not-loaded",),
)
def requirement_check_disabled(facts: NodeFacts) -> Result:
    """`NVIDIA_DISABLE_REQUIRE` hides the clear 'unsatisfied condition' error."""
    judged = _judge(facts)
    if isinstance(judged, Result):
        return judged
    need, host, verdict = judged
    if not need.disable_require:
        return ok("the requirement check is active")
    if verdict.satisfied:
        return ok("NVIDIA_DISABLE_REQUIRE is set, but the driver satisfies the requirement")
    return warn(
        "NVIDIA_DISABLE_REQUIRE is set: the runtime does not refuse this container although "
        "the driver does not meet its CUDA requirement",
        *_evidence(need, host),
    )


@check(
    "cuda.forward-compat-unusable",
    severity=Severity.WARNING,
    title="the image's CUDA forward-compatibility libraries can work on this host",
    remedy="Upgrade the host driver (best), or drop the compat directory from the library path.",
    sources=(
        FORWARD_DOCS,
        "https://github.com/NVIDIA/nvidia-container-toolkit/pull/906",
    ),
    depends_on=("driver.not-loaded",),
    where=INSIDE,
)
def forward_compat_unusable(facts: NodeFacts) -> Result:
    """`cuda-compat` libs on a GeForce GPU or an unlisted driver branch: CUDA error 804.

    The compat `libcuda` only matters when it is newer than the host driver. It works on
    data-center brands (some NGC-ready RTX SKUs too) and on the driver branches its
    `.note.cuda.fwd_compatibility` lists; forced onto the library path it breaks every CUDA call.
    """
    lib = facts.container.compat
    if lib is None:
        return skip("the image ships no forward-compatibility libraries")
    host = host_cuda(facts)
    if host is None:
        return unknown("the driver version is unknown")
    version = compat.parse_version(lib.version)
    if version is not None and version <= host.driver:
        return ok(
            f"the host driver {host.driver_text} is not older than the image's compat libcuda "
            f"{lib.version}: the compat libraries are not used"
        )
    problems = []
    known = host.brands - {"unknown"}
    if known and not known <= DATA_CENTER_BRANDS | SOME_SKU_BRANDS:
        shown = ", ".join(sorted(known - DATA_CENTER_BRANDS - SOME_SKU_BRANDS))
        problems.append(
            Evidence("NVML brand", f"{shown}: forward compatibility needs a data-center GPU")
        )
    if lib.driver_branches and host.driver[0] not in lib.driver_branches:
        branches = ", ".join(str(b) for b in lib.driver_branches)
        problems.append(
            Evidence(
                lib.path, f"supports driver branches {branches}; the host runs {host.driver[0]}"
            )
        )
    if not problems:
        if not known and not lib.driver_branches:
            return unknown(
                "neither the GPU brand nor the compat library's driver branches are known"
            )
        return ok(
            f"compat libcuda {lib.version} supports driver {host.driver_text} on this GPU",
            *(
                (Evidence(lib.path, f"driver branches {', '.join(map(str, lib.driver_branches))}"),)
                if lib.driver_branches
                else ()
            ),
        )
    commands = [f"upgrade the host driver to >= {lib.version} (then the compat libs are unused)"]
    summary = f"the image's compat libcuda {lib.version} cannot work on this host"
    if lib.on_path is None:
        return warn(summary + " (CUDA error 804 if it is used)", *problems, notes=tuple(commands))
    directory = lib.path.rsplit("/", 1)[0]
    commands.append(f"or remove {directory} from {lib.on_path} in the image")
    return fail(
        summary + f": {lib.on_path} forces it first, so CUDA fails with error 804",
        *problems,
        Evidence(lib.on_path, directory),
        notes=tuple(commands),
        severity=Severity.ERROR,
    )
