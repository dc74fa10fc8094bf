"""Checks that make sense inside a container or pod (`container.*`)."""

from __future__ import annotations

import re

from ctk.doctor.checks.driver import visible_devices
from ctk.doctor.facts import NodeFacts, NvmlAnswer, Unavailable
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
from ctk.node.nvml import NvmlReturn

MIB = 1024 * 1024
DOCKER_DEFAULT_SHM = 64 * MIB
SHM_FLOOR_FOR_TORCH = 1024 * MIB


def gpu_nodes(facts: NodeFacts) -> list[str]:
    return sorted(p for p in facts.dev.entries() if re.fullmatch(r"/dev/nvidia\d+", p))


@check(
    "container.no-gpu-attached",
    severity=Severity.ERROR,
    title="the container was started with a GPU",
    remedy="Start the container with --gpus (or a CDI device); request nvidia.com/gpu in pods.",
    sources=(
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
        "sample-workload.html",
    ),
    depends_on=("driver.not-loaded",),
    where=frozenset({Where.CONTAINER, Where.POD}),
)
def no_gpu_attached(facts: NodeFacts) -> Result:
    """Container context, the host has a driver, but no `/dev/nvidia*` reached the container."""
    if any(path.startswith("/dev/nvidia") for path in facts.dev.entries()):
        return ok("GPU device nodes are present in the container")
    shown = visible_devices(facts)
    return fail(
        "this container has no GPU: no /dev/nvidia* device node was injected",
        Evidence("/dev", "no nvidia* device nodes"),
        Evidence("NVIDIA_VISIBLE_DEVICES", "unset" if shown is None else shown),
        notes=(
            "Docker: start the container with --gpus all (or --device nvidia.com/gpu=all with CDI)",
            "Kubernetes: resources: {limits: {nvidia.com/gpu: 1}}",
        ),
    )


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
    if facts.nvml.error_code != NvmlReturn.UNKNOWN:
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
    if shown is not None:  # its words ('', void, none, all) and UUIDs are no indices
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
    count = len(gpu_nodes(facts))
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
