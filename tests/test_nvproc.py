"""ctk.nvproc: one parser per driver /proc format, and the three places that use them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctk.errors import CtkError
from ctk.host.driver import read_driver
from ctk.host.driver_numbers import read_driver_numbers, read_gpu_information
from ctk.host.facts.gatherer import Gatherer
from ctk.host.facts.kernel import gather_dev, gather_kernel
from ctk.host.root import HostRoot
from ctk.nvproc import (
    GpuInformation,
    MigMinors,
    parse_gpu_information,
    parse_mig_minors,
    parse_proc_devices,
)

# What a 550 driver writes (printf "%3d %s"), with the other sections around it
PROC_DEVICES = """Character devices:
  1 mem
  4 /dev/vc/0
195 nvidia-frontend
195 nvidia
234 nvidia-caps-imex-channels
508 nvidia-uvm
511 nvidia-caps

Block devices:
  7 loop
195 not-a-char-device
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            PROC_DEVICES,
            {
                "mem": 1,
                "/dev/vc/0": 4,
                "nvidia-frontend": 195,
                "nvidia": 195,
                "nvidia-caps-imex-channels": 234,
                "nvidia-uvm": 508,
                "nvidia-caps": 511,
            },
            id="driver-550",
        ),
        pytest.param(
            "Character devices:\t\n195\tnvidia-frontend \t\n 508  nvidia-uvm\n",
            {"nvidia-frontend": 195, "nvidia-uvm": 508},
            id="tabs-and-trailing-blanks",
        ),
        pytest.param(
            "Character devices:\n195 nvidia\n196 nvidia\n", {"nvidia": 195}, id="first-wins"
        ),
        pytest.param(
            "Character devices:\n\u00b2 nvidia\nx nvidia-uvm\n195\n\n", {}, id="not-numbers"
        ),
        pytest.param("195 nvidia\n", {}, id="outside-a-section"),
        pytest.param("", {}, id="empty"),
    ],
)
def test_parse_proc_devices(text: str, expected: dict[str, int]) -> None:
    assert parse_proc_devices(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n",
            MigMinors(
                (
                    ("config", 1),
                    ("monitor", 2),
                    ("gpu0/gi1/access", 12),
                    ("gpu0/gi1/ci0/access", 13),
                )
            ),
            id="driver",
        ),
        pytest.param(
            "gpu0/gi1/access\t12 \ngpu0/gi2/access  \t21\t\n\n",
            MigMinors((("gpu0/gi1/access", 12), ("gpu0/gi2/access", 21))),
            id="tabs-and-trailing-blanks",
        ),
        pytest.param(
            "gpu0/gi1/access x\ngpu0/gi2/access 21\ngpu0 gi3 access 5\n" + "g" * 50 + " \u00b2\n",
            MigMinors(
                (("gpu0/gi2/access", 21),),
                (
                    "line 1: 'gpu0/gi1/access x'",
                    "line 3: 'gpu0 gi3 access 5'",
                    "line 4: '" + "g" * 40 + "...'",
                ),
            ),
            id="malformed",
        ),
        pytest.param("", MigMinors(), id="empty"),
    ],
)
def test_parse_mig_minors(text: str, expected: MigMinors) -> None:
    assert parse_mig_minors(text) == expected


# What a 550 driver writes: "Key:" then tabs and spaces
INFORMATION = (
    "Model: \t\t NVIDIA A100-SXM4-80GB\n"
    "IRQ:   \t\t 0\n"
    "GPU UUID: \t GPU-a1000002-8f3c-4b1e-9d2a-000000000002\n"
    "Video BIOS: \t 92.00.36.00.01\n"
    "Bus Type: \t PCIe\n"
    "DMA Size: \t 47 bits\n"
    "DMA Mask: \t 0x7fffffffffff\n"
    "Bus Location: \t 0000:47:00.0\n"
    "Device Minor: \t 2\n"
    "GPU Excluded:\t No\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            INFORMATION,
            GpuInformation(
                model="NVIDIA A100-SXM4-80GB",
                uuid="GPU-a1000002-8f3c-4b1e-9d2a-000000000002",
                bus_location="0000:47:00.0",
                device_minor=2,
            ),
            id="driver-550",
        ),
        pytest.param(
            "Device Minor:\t7 \t\nGPU Excluded: Yes\n",
            GpuInformation(device_minor=7, excluded=True),
            id="tabs-trailing-excluded",
        ),
        pytest.param("Device Minor: \u00b2\n", GpuInformation(), id="minor-not-a-number"),
        pytest.param("Device Minor:\n", GpuInformation(), id="minor-empty"),
        pytest.param("", GpuInformation(), id="empty"),
    ],
)
def test_parse_gpu_information(text: str, expected: GpuInformation) -> None:
    assert parse_gpu_information(text) == expected


TAB_MIG_MINORS = "config 1\ngpu0/gi1/access\t12 \ngpu0/gi1/ci0/access\t13\n"


def _proc(root: Path) -> None:
    (root / "proc/driver/nvidia-caps").mkdir(parents=True)
    (root / "proc/driver/nvidia-caps/mig-minors").write_text(TAB_MIG_MINORS)
    (root / "proc/devices").write_text("Character devices:\n195\tnvidia-frontend \n")
    (root / "proc/driver/nvidia/gpus/0000:47:00.0").mkdir(parents=True)
    (root / "proc/driver/nvidia/gpus/0000:47:00.0/information").write_text(INFORMATION)


def test_generate_doctor_and_system_read_the_same_files_alike(tmp_path: Path) -> None:
    """Review 10: doctor split mig-minors lines on a space only, so a tab lost every minor."""
    _proc(tmp_path)
    wanted = {"config": 1, "gpu0/gi1/access": 12, "gpu0/gi1/ci0/access": 13}
    driver = read_driver(tmp_path, tmp_path, version="550.54.15")
    assert (dict(driver.mig_minors), driver.mig_minors_malformed) == (wanted, ())
    assert gather_dev(Gatherer(HostRoot(tmp_path))).mig_minors == wanted
    facts = read_driver_numbers(HostRoot(tmp_path))
    assert (facts.majors, facts.gpu_minors) == ({"nvidia-frontend": 195}, [2])


@given(
    st.text(alphabet=st.sampled_from("gpu0/iac:ces \t\n12\u00b2\u0663Ch rtdvi-DMnoY"), max_size=200)
)
def test_parsers_take_any_text(text: str) -> None:
    """Whatever the files hold, the parsers return values (no exception)."""
    majors = parse_proc_devices(text)
    mig = parse_mig_minors(text)
    info = parse_gpu_information(text)
    assert all(isinstance(v, int) for v in majors.values())
    assert all(isinstance(minor, int) for _, minor in mig.minors)
    assert info.device_minor is None or isinstance(info.device_minor, int)


def test_an_unreadable_information_file_fails_system_and_the_doctor_reads_on(
    tmp_path: Path,
) -> None:
    """One reader of the GPUs' information files; each caller decides what unreadable means."""
    _proc(tmp_path)
    fifo = tmp_path / "proc/driver/nvidia/gpus/0000:07:00.0/information"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # read like a file, it would hang: refused, never opened
    found = read_gpu_information(HostRoot(tmp_path))
    assert [(f.container_path, f.information, str(f.error)) for f in found] == [
        (
            "/proc/driver/nvidia/gpus/0000:07:00.0/information",
            None,
            f"{fifo}: is a named pipe (FIFO), not a regular file; "
            "not read (reading it would block)",
        ),
        (
            "/proc/driver/nvidia/gpus/0000:47:00.0/information",
            parse_gpu_information(INFORMATION),
            "None",
        ),
    ]
    with pytest.raises(CtkError) as raised:
        read_driver_numbers(HostRoot(tmp_path))
    assert str(raised.value) == str(found[0].error)
    kernel = gather_kernel(Gatherer(HostRoot(tmp_path)))
    assert [(gpu.bdf, gpu.minor) for gpu in kernel.gpus] == [("0000:47:00.0", 2)]
