"""Bad paths and broken node files: one clear error (exit 1 or 2), no traceback, and an
existing output file (or whatever stands in the output's way) left exactly as it was."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml import FakeNode

MakeNode = Callable[[str], FakeNode]
OLD = b"# the old spec\n"
MIG_MINORS = "proc/driver/nvidia-caps/mig-minors"
MALFORMED_HINT = (
    "hint: the driver writes this file: reload the nvidia module (check dmesg), or pass the "
    "right --dev-root"
)


def _output_parent_is_a_file(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "cdi").write_bytes(OLD)
    return ["generate", "-o", f"{tmp}/cdi/nvidia.yaml"], tmp / "cdi"


def _output_is_a_directory(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "cdi.yaml").mkdir()
    (tmp / "cdi.yaml/kept").write_bytes(OLD)
    return ["generate", "-o", f"{tmp}/cdi.yaml"], tmp / "cdi.yaml/kept"


def _output_is_etc_cdi(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    """`-o /etc/cdi` once wrote /etc/cdi.yaml beside it, a file no engine reads."""
    (tmp / "cdi").mkdir()
    (tmp / "cdi/kept").write_bytes(OLD)
    return ["generate", "-o", f"{tmp}/cdi"], tmp / "cdi/kept"


def _refresh_output_is_etc_cdi(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    args, kept = _output_is_etc_cdi(node, tmp)
    return ["refresh", *args[1:]], kept


def _refresh_output_is_a_directory(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    args, kept = _output_is_a_directory(node, tmp)
    return ["refresh", *args[1:]], kept


def _driver_root_missing(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    return ["generate", "--driver-root", f"{tmp}/run/nvidia/driver"], tmp / "nvidia.yaml"


def _driver_root_is_a_file(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "driver").write_bytes(b"")
    return ["generate", "--driver-root", f"{tmp}/driver"], tmp / "nvidia.yaml"


def _dev_root_without_dev(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "host").mkdir()
    return ["generate", "--dev-root", f"{tmp}/host"], tmp / "nvidia.yaml"


def _management_dev_root_without_dev(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    args, kept = _dev_root_without_dev(node, tmp)
    return [*args, "--mode", "management"], kept


def _mig_minors(text: bytes) -> Callable[[FakeNode, Path], tuple[list[str], Path]]:
    def prepare(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
        (node.root / MIG_MINORS).write_bytes(text)
        return ["generate"], tmp / "nvidia.yaml"

    return prepare


def _nvml_gpu_without_node(node: FakeNode, tmp: Path) -> tuple[list[str], Path]:
    extra = "gpu 7 off GPU-6a6b0c1d-2e3f-4a5b-8c6d-000000000007 00000000:02:00.0 NVIDIA A2\n"
    node.topology.write_text(node.topology.read_text() + extra)
    return ["generate"], tmp / "nvidia.yaml"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("node_name", "prepare", "code", "stderr"),
    [
        pytest.param(
            "workstation",
            _output_parent_is_a_file,
            2,
            [
                "error: --output {tmp}/cdi/nvidia.yaml: {tmp}/cdi is not a directory",
                "hint: choose a path whose parent directories are directories (missing ones are "
                "created)",
            ],
            id="output-parent-is-a-file",
        ),
        pytest.param(
            "workstation",
            _output_is_a_directory,
            2,
            [
                "error: --output {tmp}/cdi.yaml: is a directory",
                "hint: name the spec file, e.g. {tmp}/cdi.yaml/nvidia.yaml",
            ],
            id="output-is-a-directory",
        ),
        pytest.param(
            "workstation",
            _refresh_output_is_a_directory,
            2,
            [
                "error: --output {tmp}/cdi.yaml: is a directory",
                "hint: name the spec file, e.g. {tmp}/cdi.yaml/nvidia.yaml",
            ],
            id="refresh-output-is-a-directory",
        ),
        *(
            pytest.param(
                "workstation",
                make,
                2,
                [
                    "error: --output {tmp}/cdi: is a directory",
                    "hint: name the spec file, e.g. {tmp}/cdi/nvidia.yaml",
                ],
                id=name,
            )
            for name, make in [
                ("output-is-etc-cdi", _output_is_etc_cdi),
                ("refresh-output-is-etc-cdi", _refresh_output_is_etc_cdi),
            ]
        ),
        pytest.param(
            "workstation",
            _driver_root_missing,
            1,
            [
                "error: --driver-root {tmp}/run/nvidia/driver: no such directory",
                "hint: pass an existing directory",
            ],
            id="driver-root-missing",
        ),
        pytest.param(
            "workstation",
            _driver_root_is_a_file,
            1,
            [
                "error: --driver-root {tmp}/driver: not a directory",
                "hint: pass an existing directory",
            ],
            id="driver-root-is-a-file",
        ),
        pytest.param(
            "workstation",
            _dev_root_without_dev,
            1,
            [
                "error: GPU 0 (GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d): device node "
                "/dev/nvidia0 not found under {tmp}/host",
                "hint: the driver has not created it: run `nvidia-modprobe -c 0` or pass the "
                "right --dev-root",
            ],
            id="dev-root-without-dev",
        ),
        pytest.param(
            "workstation",
            _management_dev_root_without_dev,
            1,
            [
                "error: no NVIDIA device nodes found under {tmp}/host",
                "hint: is the driver loaded? Pass --dev-root if /dev lives elsewhere",
            ],
            id="management-dev-root-without-dev",
        ),
        pytest.param(
            "dgx-a100",
            _mig_minors(b"config 1\ngpu2/gi1/access x\n\ngarbage\n"),
            1,
            [
                "error: MIG device 2:0 (MIG-2a1c0001-5b6e-5f1a-8c33-000000000001): "
                "{root}/" + MIG_MINORS + " is malformed (line 2: 'gpu2/gi1/access x', "
                "line 4: 'garbage'; expected '<capability> <minor>' lines)",
                MALFORMED_HINT,
            ],
            id="mig-minors-malformed",
        ),
        pytest.param(
            "dgx-a100",
            _mig_minors(b"\xff\xfe\x00garbage\n"),
            1,
            [
                "error: MIG device 2:0 (MIG-2a1c0001-5b6e-5f1a-8c33-000000000001): "
                "{root}/" + MIG_MINORS + " is malformed (line 1: '\\xff\\xfe\x00garbage'; "
                "expected '<capability> <minor>' lines)",
                MALFORMED_HINT,
            ],
            id="mig-minors-not-text",
        ),
        pytest.param(
            "workstation",
            _nvml_gpu_without_node,
            1,
            [
                "error: GPU 1 (GPU-6a6b0c1d-2e3f-4a5b-8c6d-000000000007): device node "
                "/dev/nvidia7 not found under {root}",
                "hint: the driver has not created it: run `nvidia-modprobe -c 7` or pass the "
                "right --dev-root",
            ],
            id="nvml-gpu-minor-without-dev-node",
        ),
    ],
)
def test_bad_input_is_one_clear_error(
    node_name: str,
    prepare: Callable[[FakeNode, Path], tuple[list[str], Path]],
    code: int,
    stderr: list[str],
    *,
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = fake_node(node_name)
    tmp = tmp_path / "work"
    tmp.mkdir()
    (tmp / "nvidia.yaml").write_bytes(OLD)
    args, kept = prepare(node, tmp)
    if "--driver-root" not in args:
        args += ["--driver-root", str(node.root)]
    if "-o" not in args:
        args += ["-o", str(tmp / "nvidia.yaml")]
    before = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
    assert main(["cdi", *args]) == code
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [s.format(tmp=tmp, root=node.root) for s in stderr])
    assert kept.read_bytes() == OLD
    assert sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*")) == before


@pytest.mark.integration
@pytest.mark.parametrize("verb", ["generate", "refresh"])
def test_an_output_that_is_a_fifo_is_named_and_kept(
    verb: str, fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """refresh once read the FIFO it was to replace, with an error that did not name it."""
    node = fake_node("workstation")
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / "nvidia.yaml"
    os.mkfifo(fifo)
    args = ["cdi", verb, "--driver-root", str(node.root), "--disable-hook", "all", "-o", str(fifo)]
    assert main(args) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-2].startswith(f"error: {fifo}: is a named pipe (FIFO), not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in out.iterdir()) == ["nvidia.yaml"]
