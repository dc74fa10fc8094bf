"""`ctk cdi refresh`: regenerate only when the node changed, and say what changed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml import FakeNode

MakeNode = Callable[[str], FakeNode]


def _refresh(node: FakeNode, output: Path) -> int:
    """Refresh with the default hook program (the test's nvidia-cdi-hook, first on PATH)."""
    return main(["cdi", "refresh", "--driver-root", str(node.root), "-o", str(output)])


@pytest.mark.integration
def test_refresh_writes_only_when_the_node_changed(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("dgx-a100")
    output = tmp_path / "cdi" / "nvidia.yaml"
    summary = "cdiVersion 0.5.0, kind nvidia.com/gpu, {} devices"

    assert _refresh(node, output) == 0
    assert capsys.readouterr().err == f"created {output} ({summary.format(23)})\n"
    first = output.stat()

    assert _refresh(node, output) == 0
    assert capsys.readouterr().err == (
        f"{output} is up to date ({summary.format(23)}); nothing written\n"
    )
    again = output.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)

    # MIG reconfiguration: GPU 2 loses its 1g.10gb+me device.
    lines = node.topology.read_text().splitlines(keepends=True)
    node.topology.write_text("".join(line for line in lines if "1g.10gb+me" not in line))
    assert _refresh(node, output) == 0
    assert capsys.readouterr().err == (
        f"updated {output} ({summary.format(21)}; removed 2:2, "
        "MIG-2a1c0003-5b6e-5f1a-8c33-000000000003)\n"
    )
    assert output.stat().st_ino != first.st_ino


@pytest.mark.integration
def test_refresh_notices_new_device_numbers(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("workstation")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    before = output.read_text()
    uvm = node.root / "dev/nvidia-uvm"
    uvm.unlink()
    os.mknod(uvm, 0o20666, os.makedev(511, 0))  # the uvm major moved after a driver reload
    uvm.chmod(0o666)
    capsys.readouterr()
    assert _refresh(node, output) == 0
    assert capsys.readouterr().err == (
        f"updated {output} (cdiVersion 0.7.0, kind nvidia.com/gpu, 3 devices; "
        "device edits changed)\n"
    )
    assert output.read_text() == before.replace("major: 510", "major: 511", 1)  # uvm, not uvm-tools


@pytest.mark.integration
def test_refresh_failure_keeps_the_spec(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("workstation")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    before = output.read_bytes()
    node.topology.write_text(node.topology.read_text() + "error driver-not-loaded\n")
    capsys.readouterr()
    assert _refresh(node, output) == 1
    assert capsys.readouterr().err == (
        "error: NVIDIA driver is not loaded (NVML initialisation: Driver Not Loaded)\n"
        "hint: load the kernel module (modprobe nvidia) and check dmesg\n"
    )
    assert output.read_bytes() == before


@pytest.mark.integration
def test_refresh_reads_the_old_spec_as_runtimes_do(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 10: the old spec was read by a second parser (yaml.safe_load, YAML 1.1), which
    took an unquoted MIG name `2:2` for the number 122 and reported devices that never moved."""
    node = fake_node("dgx-a100")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    output.write_text(output.read_text().replace('name: "2:2"', "name: 2:2"))
    capsys.readouterr()
    assert _refresh(node, output) == 0
    assert capsys.readouterr().err == (
        f"updated {output} (cdiVersion 0.5.0, kind nvidia.com/gpu, 23 devices; "
        "device edits changed)\n"
    )
