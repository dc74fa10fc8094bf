"""cuda.driver-too-old's evidence and remedies on facts built here: a forward-compatibility clause
with no upper driver bound is shown as written, and cuda-compat on a node with every data-center
and every NGC-ready RTX brand keeps the RTX caveat (survivors of issue 26's mutation run)."""

from __future__ import annotations

from importlib import resources

import pytest

from ctk.doctor.checks.cuda import driver_too_old
from ctk.doctor.cuda import parse_table
from ctk.doctor.facts import (
    CompatLibrary,
    ContainerFacts,
    CudaNeed,
    KernelFacts,
    NodeFacts,
    NvmlAnswer,
)
from ctk.doctor.model import Evidence, Status, Where
from ctk.node.nvml import Gpu, GpuHealth, NvmlFacts

TABLE = parse_table(
    resources.files("ctk.data").joinpath("cuda-driver-compat.csv").read_text("utf-8")
)
OPEN_CLAUSE = "brand=tesla,driver>=418"
"""A clause with no `driver<` bound: the table says nothing of the CUDA its branch runs."""
V100 = Gpu(index=0, minor=0, uuid="GPU-0", name="Tesla V100-SXM2-16GB", pci_bus_id="")
COMPAT = CompatLibrary(
    path="/usr/local/cuda/compat/libcuda.so.440.33.01",
    version="440.33.01",
    cuda_version="10.2",
    driver_branches=(418, 440),
    on_path="LD_LIBRARY_PATH",
)


def tesla_418(where: Where, lib: CompatLibrary | None) -> NodeFacts:
    found = NvmlFacts(driver_version="418.87.01", cuda_driver_version=10010, gpus=(V100,))
    return NodeFacts(
        where=where,
        kernel=KernelFacts(driver_version="418.87.01"),
        nvml=NvmlAnswer(found=found, health=(GpuHealth(0, brand="tesla"),)),
        cuda_table=TABLE,
        cuda_need=CudaNeed(source="image", requirements=(f"cuda>=10.2 {OPEN_CLAUSE}",)),
        container=ContainerFacts(compat=lib),
    )


SEEN = (
    Evidence("/proc/driver/nvidia/version", "418.87.01"),
    Evidence("driver CUDA version", "10.1"),
    Evidence("image", f"NVIDIA_REQUIRE: cuda>=10.2 {OPEN_CLAUSE}"),
    Evidence("clause", OPEN_CLAUSE),
)


@pytest.mark.parametrize(
    ("facts", "status", "evidence"),
    [
        pytest.param(
            tesla_418(Where.CONTAINER, COMPAT), Status.OK, SEEN, id="compat-used-in-the-container"
        ),
        pytest.param(
            tesla_418(Where.HOST, None),
            Status.WARN,
            (
                *SEEN,
                Evidence(
                    "/usr/local/cuda/compat/libcuda.so.*",
                    "not checked: only the image's environment is known here",
                ),
            ),
            id="image-env-on-the-host",
        ),
        pytest.param(
            tesla_418(Where.CONTAINER, None),
            Status.FAIL,
            (
                *SEEN,
                Evidence(
                    "/usr/local/cuda/compat/libcuda.so.*", "absent: no cuda-compat in the image"
                ),
            ),
            id="no-compat-in-the-image",
        ),
    ],
)
def test_a_clause_without_an_upper_driver_bound_is_shown_as_written(
    facts: NodeFacts, status: Status, evidence: tuple[Evidence, ...]
) -> None:
    """No `driver<` bound: no "(that driver branch runs CUDA x natively)" to add."""
    result = driver_too_old(facts)
    assert (result.status, result.evidence) == (status, evidence)


def _node_with_brands(*brands: str) -> NodeFacts:
    gpus = tuple(
        Gpu(index=i, minor=i, uuid=f"GPU-{i}", name=f"GPU {i}", pci_bus_id="")
        for i in range(len(brands))
    )
    found = NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=gpus)
    return NodeFacts(
        kernel=KernelFacts(driver_version="550.54.15"),
        nvml=NvmlAnswer(
            found=found, health=tuple(GpuHealth(i, brand=b) for i, b in enumerate(brands))
        ),
        cuda_table=TABLE,
        cuda_need=CudaNeed(source="--cuda-version", requirements=("cuda>=12.6",)),
    )


UPGRADE = (
    "upgrade the driver to >= 560.28.03: sudo apt-get install nvidia-driver-560 && sudo reboot",
    "or use an image built for CUDA 12.4 or older",
)
COMPAT_LINE = (
    "or add cuda-compat-12-6 to the image (forward compatibility; the driver branch must be one "
    "the compat package lists)"
)
RTX_LINE = (
    "or add cuda-compat-12-6 to the image (only NGC-ready RTX SKUs; forward compatibility; the "
    "driver branch must be one the compat package lists)"
)


@pytest.mark.parametrize(
    ("brands", "compat_note"),
    [
        pytest.param(("Tesla", "NVIDIA"), COMPAT_LINE, id="every-data-center-brand"),
        pytest.param(("Tesla", "QuadroRTX"), RTX_LINE, id="data-center-and-an-rtx-sku"),
        pytest.param(
            ("Tesla", "NVIDIA", "QuadroRTX", "NvidiaRTX"), RTX_LINE, id="every-brand-that-may-work"
        ),
        pytest.param(
            ("Tesla", "NVIDIA", "QuadroRTX", "NvidiaRTX", "GeForce"),
            "forward compatibility (cuda-compat) does not work on geforce, nvidiartx, quadrortx "
            "GPUs (CUDA error 804)",
            id="and-a-geforce",
        ),
    ],
)
def test_cuda_compat_is_offered_by_the_nodes_gpu_brands(
    brands: tuple[str, ...], compat_note: str
) -> None:
    result = driver_too_old(_node_with_brands(*brands))
    assert (result.status, result.notes) == (Status.FAIL, (*UPGRADE, compat_note))
