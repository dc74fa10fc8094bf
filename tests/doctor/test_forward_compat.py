"""Forward compatibility judged on the host (`--image-env`): the image's files are not there."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

CUDA_13_0 = "cuda>=13.0 brand=nvidia,driver>=535,driver<536 brand=nvidia,driver>=550,driver<551"


@pytest.mark.parametrize(
    ("requirement", "status", "summary"),
    [
        pytest.param(
            CUDA_13_0,
            "warn",
            "the workload needs CUDA 13.0 but driver 550.54.15 supports 12.4; the requirement "
            "holds only through brand=nvidia,driver>=550,driver<551, which counts on forward "
            "compatibility: nothing shows it applies here, and without it CUDA fails with 'CUDA "
            "driver version is insufficient for CUDA runtime version'",
            id="clause-for-the-host-branch",
        ),
        pytest.param(
            "cuda>=13.0 brand=nvidia,driver>=535,driver<536",
            "fail",
            "the workload needs CUDA 13.0 but driver 550.54.15 supports 12.4: the runtime refuses "
            "the container (unsatisfied condition: cuda>=13.0)",
            id="no-clause-for-the-host-branch",
        ),
        pytest.param(
            "cuda>=12.4 brand=nvidia,driver>=550,driver<551",
            "ok",
            "the driver satisfies the workload's CUDA requirement",
            id="native-cuda-no-forward-compat",
        ),
    ],
)
def test_image_env_on_the_h100_host(
    requirement: str,
    status: str,
    summary: str,
    *,
    tmp_path: Path,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = fake_node("healthy")
    env = tmp_path / "image.env"
    env.write_text(f"NVIDIA_REQUIRE_CUDA={requirement}\n")
    code = main(["doctor", "--json", "--root", str(built.root), "--image-env", str(env)])
    document = json.loads(capsys.readouterr().out)
    (found,) = [c for c in document["checks"] if c["id"] == "cuda.driver-too-old"]
    assert (code, found["status"], found["summary"]) == (int(status == "fail"), status, summary)
