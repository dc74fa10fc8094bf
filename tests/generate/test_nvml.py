"""ctk.host.nvml against the fake libnvidia-ml.so.1, through the real pynvml."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ctk.errors import CtkError
from ctk.host.nvml import read_nvml
from ctk.node.nvml import Gpu, MigDevice, MigMode, NvmlFacts
from tests.fake_nvml import FakeNode

A100 = "NVIDIA A100-SXM4-80GB"
BUSES = ["07", "0F", "47", "4E", "87", "90", "B7", "BD"]


def _a100(index: int, migs: tuple[MigDevice, ...] = ()) -> Gpu:
    return Gpu(
        index=index,
        minor=index,
        uuid=f"GPU-a100{index:04x}-8f3c-4b1e-9d2a-00000000000{index}",
        name=A100,
        pci_bus_id=f"00000000:{BUSES[index]}:00.0",
        mig_mode=MigMode.ENABLED if migs else MigMode.DISABLED,
        migs=migs,
    )


def _mig(parent: int, row: tuple[int, int, int, int, int, int, str, str]) -> MigDevice:
    """A MIG device from a node.yaml `migs:` row."""
    slot, gi, ci, gi_slices, ci_slices, memory, uuid, profile = row
    return MigDevice(
        parent_index=parent,
        index=slot,
        gpu_instance=gi,
        compute_instance=ci,
        uuid=uuid,
        profile=profile,
        gpu_slices=gi_slices,
        compute_slices=ci_slices,
        memory_mib=memory,
    )


MIG = "MIG-2a1c000{}-5b6e-5f1a-8c33-00000000000{}"
MIG7 = "MIG-5b7d000{}-6c7f-5a2b-9d44-00000000000{}"
DGX = NvmlFacts(
    driver_version="550.54.15",
    cuda_driver_version=12040,
    gpus=(
        _a100(0),
        _a100(1),
        _a100(
            2,
            (
                _mig(2, (0, 1, 0, 3, 3, 40192, MIG.format(1, 1), "3g.40gb")),
                _mig(2, (1, 5, 0, 2, 2, 19968, MIG.format(2, 2), "2g.20gb")),
                _mig(2, (2, 13, 0, 1, 1, 9728, MIG.format(3, 3), "1g.10gb+me")),
            ),
        ),
        _a100(3),
        _a100(4),
        _a100(
            5,
            (
                _mig(5, (0, 0, 0, 7, 4, 80896, MIG7.format(1, 1), "4c.7g.80gb")),
                _mig(5, (1, 0, 1, 7, 3, 80896, MIG7.format(2, 2), "3c.7g.80gb")),
            ),
        ),
        _a100(6),
        _a100(7),
    ),
)

WORKSTATION = NvmlFacts(
    driver_version="550.54.15",
    cuda_driver_version=12040,
    gpus=(
        Gpu(
            index=0,
            minor=0,
            uuid="GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d",
            name="NVIDIA RTX A6000",
            pci_bus_id="00000000:01:00.0",
        ),
    ),
)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param("dgx-a100", DGX, id="dgx-mixed-mig"),
        pytest.param("workstation", WORKSTATION, id="workstation-no-mig-support"),
    ],
)
def test_read_nvml(node: str, expected: NvmlFacts, fake_node: Callable[[str], FakeNode]) -> None:
    assert read_nvml(fake_node(node).driver_root) == expected


@pytest.mark.integration
def test_driver_container_loads_nvml_from_the_driver_root(
    fake_node: Callable[[str], FakeNode],
) -> None:
    facts = read_nvml(fake_node("driver-container").driver_root)
    assert [(g.index, g.uuid, g.pci_bus_id, g.mig_mode) for g in facts.gpus] == [
        (0, "GPU-b1000000-0000-4000-8000-000000000000", "00000000:18:00.0", MigMode.DISABLED),
        (1, "GPU-b1000001-0000-4000-8000-000000000001", "00000000:2A:00.0", MigMode.DISABLED),
    ]
    assert facts.cuda_version == "12.4"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("node", "message", "hint"),
    [
        pytest.param(
            "no-nvml-library",
            "NVML library libnvidia-ml.so.1 not found under driver root {root}",
            "is the NVIDIA driver installed? For a driver container pass --driver-root "
            "(e.g. /run/nvidia/driver), or use --mode management, which needs no NVML",
            id="library-missing",
        ),
        pytest.param(
            "version-mismatch",
            "NVIDIA driver/library version mismatch "
            "(NVML initialisation: RM has detected an NVML/RM version mismatch.)",
            "the loaded kernel module and the user-space driver differ (usually after a driver "
            "upgrade): reboot, or unload and reload the nvidia modules",
            id="version-mismatch",
        ),
    ],
)
def test_read_nvml_errors(
    node: str, message: str, hint: str, fake_node: Callable[[str], FakeNode]
) -> None:
    root = fake_node(node).driver_root
    with pytest.raises(CtkError) as caught:
        read_nvml(root)
    assert (caught.value.message, caught.value.hint) == (message.format(root=root), hint)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("knob", "message"),
    [
        pytest.param(
            "driver-not-loaded",
            "NVIDIA driver is not loaded (NVML initialisation: Driver Not Loaded)",
            id="driver-not-loaded",
        ),
        pytest.param(
            "no-permission",
            "NVML initialisation failed: Insufficient Permissions",
            id="no-permission",
        ),
    ],
)
def test_error_knob(knob: str, message: str, fake_node: Callable[[str], FakeNode]) -> None:
    """The fake's `error` line fails nvmlInit like a real driver would."""
    node = fake_node("workstation")
    node.topology.write_text(node.topology.read_text() + f"error {knob}\n")
    with pytest.raises(CtkError) as caught:
        read_nvml(node.driver_root)
    assert caught.value.message == message


@pytest.mark.integration
def test_lost_gpu(fake_node: Callable[[str], FakeNode]) -> None:
    node = fake_node("dgx-a100")
    node.topology.write_text(node.topology.read_text() + "lost 3\n")
    with pytest.raises(CtkError) as caught:
        read_nvml(node.driver_root)
    assert (caught.value.message, caught.value.hint) == (
        "GPU 3 failed: GPU is lost",
        "the GPU fell off the bus: look for Xid 79 in dmesg; reset the GPU or reboot",
    )
