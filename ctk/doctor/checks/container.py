"""Checks that make sense inside a container or pod (`container.*`, `k8s.*`, `hami.*`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ctk.doctor.checks.driver import visible_devices
from ctk.doctor.checks.mig import nvml_answer
from ctk.doctor.facts import NodeFacts, NvmlAnswer, Unavailable
from ctk.doctor.fixes import SetToolkitConfig
from ctk.doctor.model import (
    INSIDE,
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

MIB = 1024 * 1024
DOCKER_DEFAULT_SHM = 64 * MIB
SHM_FLOOR_FOR_TORCH = 1024 * MIB
NVML_UNKNOWN_ERROR = 999
HAMI_PRELOAD = "libvgpu.so"
_SIZE = re.compile(r"^(\d+)([kmgt]?)i?b?$", re.IGNORECASE)
_UNITS = {"": MIB, "k": 1024, "m": MIB, "g": 1024 * MIB, "t": 1024 * 1024 * MIB}


def _gpu_nodes(facts: NodeFacts) -> list[str]:
    return sorted(p for p in facts.dev.entries() if re.fullmatch(r"/dev/nvidia\d+", p))


@check(
    "container.nvml-unknown-error",
    severity=Severity.ERROR,
    title="NVML initialises inside the container",
    remedy="Restart the container now; fix the host with CDI or /dev/char links.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/48",
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/251",
    ),
    depends_on=("container.no-gpu-attached",),
    where=INSIDE,
)
def nvml_unknown_error(facts: NodeFacts) -> Result:
    """Device nodes present, NVML init 999: the device cgroup no longer allows the GPU."""
    if not isinstance(facts.nvml, NvmlAnswer):
        return unknown(f"NVML facts unavailable: {facts.nvml.reason}")
    if facts.nvml.error_code != NVML_UNKNOWN_ERROR:
        return ok("NVML initialises" if facts.nvml.error_code is None else "no Unknown Error")
    return fail(
        "NVML fails with 'Unknown Error' although /dev/nvidiactl exists: the container lost "
        "its device cgroup access (typically after a host `systemctl daemon-reload`)",
        Evidence("/dev/nvidiactl", "present"),
        Evidence("NVML", "nvmlInit: Unknown Error (999)"),
        notes=(
            "restart the container",
            "on the host: use CDI or create /dev/char links (see dev.char-symlinks-missing)",
        ),
    )


@check(
    "container.driver-in-image",
    severity=Severity.ERROR,
    title="the image does not ship its own driver libraries",
    remedy="Rebuild the image without driver packages; rely on the host driver.",
    sources=(
        "https://github.com/NVIDIA/nvidia-docker/issues/1168",
        "https://github.com/k4yt3x/video2x/issues/1226",
    ),
    depends_on=("container.no-gpu-attached",),
    where=INSIDE,
)
def driver_in_image(facts: NodeFacts) -> Result:
    """A non-mounted `libcuda.so.<ver>` with another version shadows the host's."""
    module = facts.kernel.driver_version
    foreign = [
        path
        for path in facts.container.image_libraries
        if not module or not path.endswith(f".so.{module}")
    ]
    if not foreign:
        return ok("driver libraries come from the host")
    return fail(
        f"the image ships its own driver libraries ({', '.join(foreign)}) that shadow the host "
        f"driver {module}: expect 'Driver/library version mismatch'",
        Evidence("/proc/driver/nvidia/version", module or "unknown"),
        *(Evidence(path, "file in the image, not mounted from the host") for path in foreign),
        notes=(
            "rebuild the image without nvidia-driver-*/libnvidia-compute-* packages or .run "
            "installers; start FROM nvidia/cuda",
        ),
    )


def _visible_problems(facts: NodeFacts, count: int) -> list[Evidence]:
    problems = []
    shown = visible_devices(facts)
    if shown is not None and shown not in ("", "void", "none", "all"):
        for item in shown.split(","):
            if item.isdigit() and int(item) >= count:
                problems.append(
                    Evidence("NVIDIA_VISIBLE_DEVICES", f"{shown}: index {item} does not exist")
                )
    cuda = facts.container.env.get("CUDA_VISIBLE_DEVICES")
    if cuda is not None:
        indices = [i for i in cuda.split(",") if i.strip().isdigit()]
        if indices and all(int(i) >= count for i in indices):
            problems.append(
                Evidence(
                    "CUDA_VISIBLE_DEVICES",
                    f"{cuda}: counts inside the container, which has {count} GPU(s); "
                    "this hides every GPU",
                )
            )
    return problems


@check(
    "container.visible-devices-misuse",
    severity=Severity.WARNING,
    title="NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES do what they seem to",
    remedy="Request GPUs with --gpus or nvidia.com/gpu; use UUIDs when pinning.",
    sources=(
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
        "docker-specialized.html",
    ),
    depends_on=("container.no-gpu-attached",),
    where=INSIDE,
)
def visible_devices_misuse(facts: NodeFacts) -> Result:
    """Env values that select nothing, or that name GPUs the container does not have."""
    count = len(_gpu_nodes(facts))
    shown = visible_devices(facts)
    if count == 0 and shown not in (None, "", "void", "none"):
        return warn(
            f"NVIDIA_VISIBLE_DEVICES={shown} but no GPU reached the container: the variable "
            "only works with the nvidia runtime (or --gpus)",
            Evidence("NVIDIA_VISIBLE_DEVICES", shown or ""),
            Evidence("/dev", "no nvidia* GPU nodes"),
            notes=("start the container with --gpus all (or --device nvidia.com/gpu=all)",),
        )
    problems = _visible_problems(facts, count)
    if not problems:
        return ok("device selection variables are consistent")
    return warn(
        "GPU selection variables name GPUs this container does not have",
        *problems,
        notes=("use GPU UUIDs, and leave CUDA_VISIBLE_DEVICES unset unless filtering",),
    )


@check(
    "container.shm-too-small",
    severity=Severity.WARNING,
    title="/dev/shm is large enough",
    remedy="Give the container a larger /dev/shm (--shm-size) or --ipc=host.",
    sources=(
        "https://github.com/pytorch/pytorch/issues/5040",
        "https://github.com/pytorch/pytorch/issues/16979",
    ),
    where=INSIDE,
)
def shm_too_small(facts: NodeFacts) -> Result:
    """Docker's 64 MiB default breaks PyTorch DataLoader workers and NCCL."""
    size = facts.container.shm_size
    if isinstance(size, Unavailable):
        return unknown(f"cannot measure /dev/shm: {size.reason}")
    if size is None:
        return skip("/dev/shm is not mounted")
    if facts.container.shm_is_host:
        return ok("/dev/shm is the host's (--ipc=host)")
    shown = f"{size / MIB:g} MiB"
    if size > DOCKER_DEFAULT_SHM and not (facts.container.has_torch and size < SHM_FLOOR_FOR_TORCH):
        return ok(f"/dev/shm is {shown}")
    why = (
        "the 64 MiB Docker default or less"
        if size <= DOCKER_DEFAULT_SHM
        else "below 1 GiB with PyTorch installed"
    )
    return warn(
        f"/dev/shm is {shown} ({why}): PyTorch DataLoader workers die with 'Bus error' and "
        "NCCL's shared-memory transport fails",
        Evidence("/dev/shm", f"{size} bytes (statvfs)"),
        *([Evidence("python packages", "torch installed")] if facts.container.has_torch else []),
        notes=(
            "Docker: start the container with --shm-size=16g (or --ipc=host)",
            "Kubernetes: mount an emptyDir {medium: Memory, sizeLimit: 16Gi} at /dev/shm",
        ),
    )


@check(
    "k8s.unrequested-gpu-access",
    severity=Severity.WARNING,
    title="the pod sees GPUs only if it requested them",
    remedy="Set NVIDIA_VISIBLE_DEVICES=void in pods without GPU limits; refuse it node-wide.",
    sources=(
        "https://github.com/NVIDIA/k8s-device-plugin/issues/61",
        "https://github.com/NVIDIA/gpu-operator/issues/421",
    ),
    where=frozenset({Where.POD}),
)
def unrequested_gpu_access(facts: NodeFacts) -> Result:
    """`NVIDIA_VISIBLE_DEVICES=all` in the image plus nvidia as default runtime = every GPU."""
    gpus = _gpu_nodes(facts)
    if not gpus:
        return ok("the pod sees no GPU")
    pod = facts.kubernetes.get("pod") if isinstance(facts.kubernetes, Mapping) else None
    if isinstance(pod, Mapping) and pod.get("limits"):
        limits = ", ".join(f"{k}={v}" for k, v in sorted(pod["limits"].items()))
        return ok(f"the pod requested {limits}")
    if facts.container.allocation_markers or visible_devices(facts) != "all":
        return ok("GPUs were allocated by the device plugin")
    return warn(
        f"the pod sees {len(gpus)} GPU(s) through NVIDIA_VISIBLE_DEVICES=all without a device "
        "plugin allocation: it bypasses the scheduler",
        Evidence("NVIDIA_VISIBLE_DEVICES", "all"),
        Evidence("/dev", ", ".join(gpus)),
        Evidence("/var/run/nvidia-container-devices", "no allocation markers"),
        *(
            (Evidence("pod spec", "no nvidia.com/gpu or mig-* limit"),)
            if isinstance(pod, Mapping)
            else ()
        ),
        fixes=(
            SetToolkitConfig(
                settings=(("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),)
            ),
        ),
        notes=("set env NVIDIA_VISIBLE_DEVICES=void in pods without nvidia.com/gpu limits",),
    )


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
