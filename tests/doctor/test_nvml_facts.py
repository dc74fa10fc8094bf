"""NVML facts the doctor needs, read by the real pynvml from the fake libnvidia-ml.so.1."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from ctk.cli.app import main
from ctk.host.nvml import read_nvml, read_nvml_report
from ctk.node.nvml import ComputeProcess, GpuHealth
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

H100_BYTES = 85520809984
GIB = 1 << 30


@pytest.fixture
def node(
    request: pytest.FixtureRequest,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node(request.param)


@pytest.mark.parametrize(
    ("node", "health"),
    [
        pytest.param(
            "healthy",
            (
                GpuHealth(0, "nvidia", 0, 0, H100_BYTES, 0, ()),
                GpuHealth(1, "nvidia", 0, 0, H100_BYTES, 0, ()),
            ),
            id="defaults-of-older-topologies",
        ),
        pytest.param(
            "a100-mig-pending",
            (
                GpuHealth(0, "nvidia", 0, 1, H100_BYTES, 0, ()),
                GpuHealth(1, "nvidia", 0, 0, H100_BYTES, 0, ()),
            ),
            id="mig-pending",
        ),
        pytest.param(
            "gpu-leftover-nvml",
            (
                GpuHealth(
                    0,
                    "nvidia",
                    0,
                    0,
                    H100_BYTES,
                    11 * GIB,
                    (ComputeProcess(4343, 10 * GIB), ComputeProcess(4444, GIB)),
                ),
                GpuHealth(1, "nvidia", 0, 0, H100_BYTES, 20 * GIB, ()),
            ),
            id="processes-and-memory",
        ),
        pytest.param(
            "rtx-forward-compat",
            (GpuHealth(0, "geforcertx", None, None, 25757220864, 0, (ComputeProcess(777, None),)),),
            id="geforce-no-mig-memory-not-available",
        ),
        pytest.param(
            "a100-mig-leftover-unprivileged",
            (
                GpuHealth(
                    0,
                    "nvidia",
                    1,
                    1,
                    H100_BYTES,
                    0,
                    (ComputeProcess(5151, 4 * GIB),),
                    errors=("nvmlDeviceGetComputeRunningProcesses: Insufficient Permissions",),
                ),
                GpuHealth(1, "nvidia", 0, 0, H100_BYTES, 0, ()),
            ),
            id="mig-processes-through-mig-handles-without-privileges",
        ),
    ],
    indirect=["node"],
)
def test_report_health(node: FakeNode, health: tuple[GpuHealth, ...]) -> None:
    """Whole per-GPU details; older topology files get the fake's defaults (a healthy GPU in
    persistence mode, idle)."""
    report = read_nvml_report(node.root)
    healthy = tuple(replace(h, **HEALTHY) for h in health)
    assert (report.facts, report.health) == (read_nvml(node.root), healthy)


HEALTHY: dict[str, Any] = {
    "ecc_uncorrected": 0,
    "retired_pages_pending": False,
    "remap_pending": False,
    "remap_failed": False,
    "clock_reasons": 1,
    "persistence": True,
}


@pytest.mark.parametrize(
    ("node", "health"),
    [
        pytest.param(
            "gpu-ecc",
            replace(
                GpuHealth(0, "nvidia", 0, 0, H100_BYTES, 0, ()), **{**HEALTHY, "ecc_uncorrected": 3}
            ),
            id="ecc",
        ),
        pytest.param(
            "gpu-remap-failed",
            replace(
                GpuHealth(0, "nvidia", 0, 0, H100_BYTES, 0, ()), **{**HEALTHY, "remap_failed": True}
            ),
            id="remap-failed",
        ),
        pytest.param(
            "gpu-throttled",
            replace(
                GpuHealth(0, "nvidia", 0, 0, H100_BYTES, 0, ()),
                **{**HEALTHY, "clock_reasons": 0x40},
            ),
            id="throttled",
        ),
    ],
    indirect=["node"],
)
def test_health_fields_come_from_nvml(node: FakeNode, health: GpuHealth) -> None:
    assert read_nvml_report(node.root).health[0] == health


LEFTOVER = """\
ctk doctor: host, root {root}, root, ctk 0.1.0
The fixes below are for the node under {root}: ctk's name that root; run the others on that node \
(from a debug pod: `sudo chroot {root}` first).

gpu
  [warn] gpu.leftover-processes  GPU memory is held by dead, stuck or missing processes
         evidence  NVML GPU 0 PID 4343: 10240 MiB, no /proc/4343
                   NVML GPU 1: 20480 MiB used, 20480 MiB held by no process
         remedy    Find the holders with fuser, kill them; reset the GPU or reboot if memory \
stays held.
         fix       sudo fuser -v /dev/nvidia*
                   sudo nvidia-smi --gpu-reset -i 0
                   sudo nvidia-smi --gpu-reset -i 1
         note      a GPU reset frees memory no live process holds; reboot if it fails
         docs      https://github.com/PaddlePaddle/PaddleOCR/issues/2074

0 error(s), 1 warning(s), 0 ok, 0 skipped, 0 unknown. Fix first: gpu.leftover-processes.
"""

PENDING = """\
ctk doctor: host, root {root}, root, ctk 0.1.0
The fixes below are for the node under {root}: ctk's name that root; run the others on that node \
(from a debug pod: `sudo chroot {root}` first).

mig
  [warn] mig.mode-pending  MIG mode change pending on GPU 0: it takes effect after a GPU reset \
or reboot
         evidence  NVML GPU 0: MIG current 0, pending 1
         remedy    Stop the GPU's clients and reset it (or reboot) so the MIG mode change takes \
effect.
         fix       sudo systemctl stop nvidia-persistenced nvidia-dcgm
                   sudo nvidia-smi -i 0 -r
         docs      https://docs.nvidia.com/datacenter/tesla/mig-user-guide/

0 error(s), 1 warning(s), 0 ok, 0 skipped, 0 unknown. Fix first: mig.mode-pending.
"""


COMPAT_GEFORCE = """\
ctk doctor: container, root {root}, root, ctk 0.1.0

cuda
  [FAIL] cuda.forward-compat-unusable  the image's compat libcuda 570.124.06 cannot work on this \
host: LD_LIBRARY_PATH forces it first, so CUDA fails with error 804
         evidence  NVML brand: geforcertx: forward compatibility needs a data-center GPU
                   LD_LIBRARY_PATH: /usr/local/cuda/compat
         remedy    Upgrade the host driver (best), or drop the compat directory from the \
library path.
         note      upgrade the host driver to >= 570.124.06 (then the compat libs are unused)
                   or remove /usr/local/cuda/compat from LD_LIBRARY_PATH in the image
         docs      https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html

1 error(s), 0 warning(s), 0 ok, 0 skipped, 0 unknown. Fix first: cuda.forward-compat-unusable.
"""


@pytest.mark.parametrize(
    ("node", "check", "code", "expected"),
    [
        pytest.param("gpu-leftover-nvml", "gpu.leftover-processes", 0, LEFTOVER, id="leftover"),
        pytest.param("a100-mig-pending", "mig.mode-pending", 0, PENDING, id="mig-pending"),
        pytest.param(
            "container-compat-geforce",
            "cuda.forward-compat-unusable",
            1,
            COMPAT_GEFORCE,
            id="compat-on-geforce",
        ),
    ],
    indirect=["node"],
)
def test_nvml_finding_is_exact(
    node: FakeNode, check: str, code: int, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = main(["doctor", "--root", str(node.root), "--check", check])
    captured = capsys.readouterr()
    assert (exit_code, captured.out, captured.err) == (code, expected.format(root=node.root), "")


@pytest.mark.parametrize(
    ("node", "last_note"),
    [
        pytest.param(
            "container-old-driver",
            "or add cuda-compat-12-8 to the image (forward compatibility; the driver branch must "
            "be one the compat package lists)",
            id="data-center-brand",
        ),
        pytest.param(
            "rtx-forward-compat",
            "forward compatibility (cuda-compat) does not work on geforcertx GPUs (CUDA error 804)",
            id="geforce-brand",
        ),
    ],
    indirect=["node"],
)
def test_forward_compat_follows_the_brand(
    node: FakeNode, last_note: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["doctor", "--json", "--root", str(node.root), "--check", "cuda.driver-too-old"])
    (found,) = json.loads(capsys.readouterr().out)["checks"]
    assert found["remedy"]["notes"][-1] == last_note
