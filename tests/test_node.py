"""ctk.node: the one rule for which /dev nodes a loaded driver implies, and NVML's codes."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from ctk.node.dev import DevNode, expected_nodes, nvidia_majors
from ctk.node.nvml import NvmlReturn


def nodes(*entries: tuple[str, int, int]) -> tuple[DevNode, ...]:
    return tuple(DevNode(PurePosixPath(path), major, minor) for path, major, minor in entries)


CTL = ("/dev/nvidiactl", 195, 255)
UVM = (("/dev/nvidia-uvm", 510, 0), ("/dev/nvidia-uvm-tools", 510, 1))


@pytest.mark.parametrize(
    ("majors", "minors", "flags", "expected"),
    [
        pytest.param(
            {"nvidia-frontend": 195, "nvidia-uvm": 510},
            [1, 0],
            {},
            nodes(
                ("/dev/nvidia-uvm", 510, 0),
                ("/dev/nvidia-uvm-tools", 510, 1),
                *[
                    ("/dev/nvidia0", 195, 0),
                    ("/dev/nvidia1", 195, 1),
                    CTL,
                ],
            ),
            id="gpus-ctl-uvm",
        ),
        pytest.param(
            # the major comes from /proc/devices (doctor assumed 195; system read it)
            {"nvidia": 200},
            [0],
            {},
            nodes(("/dev/nvidia0", 200, 0), ("/dev/nvidiactl", 200, 255)),
            id="old-name-other-major-no-uvm",
        ),
        pytest.param(
            # nvidia-modeset only when asked: display drivers open it, CUDA never does
            {"nvidia-frontend": 195, "nvidia-uvm": 510},
            [0],
            {"modeset": True},
            nodes(("/dev/nvidia-modeset", 195, 254), *UVM, ("/dev/nvidia0", 195, 0), CTL),
            id="modeset",
        ),
        pytest.param(
            {"nvidia-frontend": 195, "nvidia-uvm": 510},
            [0, 0],
            {"control": False},
            nodes(("/dev/nvidia0", 195, 0)),
            id="gpus-only",
        ),
        pytest.param({"nvidia-uvm": 510}, [0], {}, (), id="no-driver-no-nodes"),
    ],
)
def test_expected_nodes(
    majors: dict[str, int], minors: list[int], flags: dict[str, bool], expected: tuple[DevNode]
) -> None:
    assert expected_nodes(majors, minors, **flags) == expected


def test_nvidia_majors_keeps_only_the_drivers_entries() -> None:
    table = {"mem": 1, "nvidia-frontend": 195, "nvidia-caps-imex-channels": 234}
    assert nvidia_majors(table) == {"nvidia-frontend": 195, "nvidia-caps-imex-channels": 234}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(12, NvmlReturn.LIBRARY_NOT_FOUND, id="library-not-found"),
        pytest.param(999, NvmlReturn.UNKNOWN, id="unknown"),
        pytest.param(12345, None, id="not-a-code"),
        pytest.param("12", None, id="a-string"),
        pytest.param(True, None, id="a-bool"),
        pytest.param(None, None, id="none"),
    ],
)
def test_nvml_return_of(value: object, expected: NvmlReturn | None) -> None:
    assert NvmlReturn.of(value) is expected
