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
        "MIG-2a1c0003-5b6e-5f1a-8c33-000000000003; device edits changed: all (device nodes))\n"
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
        "common device nodes changed /dev/nvidia-uvm)\n"
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


NOT_A_SPEC = [
    pytest.param(bytes(range(128, 256)), id="not-utf8"),
    pytest.param(b"x: [\n", id="yaml-syntax"),
    pytest.param(b"\0\0\0\0", id="nul-bytes"),
    pytest.param(b"", id="empty"),
    pytest.param(b"kind: nvidia.com/gpu\ndevices: 3\n", id="wrong-shape"),
    pytest.param(b"- a\n", id="a-list"),
]


@pytest.mark.integration
@pytest.mark.parametrize("garbage", NOT_A_SPEC)
def test_refresh_replaces_what_is_not_a_spec(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str], garbage: bytes
) -> None:
    """A refresh job at boot repairs: whatever is wrong with the old file, it is replaced."""
    node = fake_node("workstation")
    fresh = tmp_path / "fresh.yaml"
    assert _refresh(node, fresh) == 0
    output = tmp_path / "nvidia.yaml"
    output.write_bytes(garbage)
    capsys.readouterr()
    assert _refresh(node, output) == 0
    assert capsys.readouterr() == (
        "",
        f"replaced {output}, which was not a readable CDI spec "
        "(cdiVersion 0.7.0, kind nvidia.com/gpu, 3 devices)\n",
    )
    assert output.read_bytes() == fresh.read_bytes()


WORKSTATION_DEVICES = "0, GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d, all"
LIBS = "/usr/lib/x86_64-linux-gnu"


def _edit_old(old: str, new: str) -> Callable[[FakeNode, Path], None]:
    def edit(node: FakeNode, output: Path) -> None:
        assert old in output.read_text()
        output.write_text(output.read_text().replace(old, new))

    return edit


def _remove_library(node: FakeNode, output: Path) -> None:
    (node.root / LIBS.lstrip("/") / "libnvidia-opencl.so.550.54.15").unlink()


def _nothing(node: FakeNode, output: Path) -> None:
    pass


@pytest.mark.integration
@pytest.mark.parametrize(
    ("change", "args", "said"),
    [
        pytest.param(
            _nothing,
            ["--vendor", "example.com"],
            "kind nvidia.com/gpu -> example.com/gpu",
            id="vendor",
        ),
        pytest.param(
            _nothing,
            ["--class", "compute"],
            "kind nvidia.com/gpu -> nvidia.com/compute",
            id="class",
        ),
        pytest.param(
            _nothing,
            ["--hook-path", "{other_hook}"],
            "hook program {hook} -> {other_hook}",
            id="hook-path",
        ),
        pytest.param(
            _nothing,
            ["--disable-hook", "create-symlinks"],
            "common hooks removed create-symlinks; "
            f"device edits changed: {WORKSTATION_DEVICES} (hooks)",
            id="hook-disabled",
        ),
        pytest.param(
            _remove_library,
            [],
            "common hooks changed create-symlinks; "
            f"common mounts removed {LIBS}/libnvidia-opencl.so.550.54.15",
            id="driver-library",
        ),
        pytest.param(
            _edit_old("libnvidia-opencl.so.550.54.15", "libnvidia-opencl.so.535.104.05"),
            [],
            "common hooks changed create-symlinks; "
            f"common mounts added {LIBS}/libnvidia-opencl.so.550.54.15; "
            f"common mounts removed {LIBS}/libnvidia-opencl.so.535.104.05",
            id="driver-upgrade",
        ),
        pytest.param(
            _edit_old("NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=all"),
            [],
            "common env changed NVIDIA_VISIBLE_DEVICES",
            id="env-edited",
        ),
        pytest.param(
            _edit_old("cdiVersion: 0.7.0", "cdiVersion: 0.6.0"),
            [],
            "cdiVersion 0.6.0 -> 0.7.0",
            id="cdi-version",
        ),
    ],
)
def test_refresh_says_what_changed(  # noqa: PLR0917  (pytest passes fixtures by position)
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    hook_program: Path,
    change: Callable[[FakeNode, Path], None],
    args: list[str],
    said: str,
) -> None:
    """Changes other than devices (kind, hooks, driver libraries, edits) are named."""
    node = fake_node("workstation")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    change(node, output)
    other_hook = tmp_path / "bin/ctk-hook"
    other_hook.parent.mkdir()
    other_hook.write_text("#!/bin/sh\nexit 0\n")
    other_hook.chmod(0o755)
    fresh = tmp_path / "fresh.yaml"
    refresh = ["cdi", "refresh", "--driver-root", str(node.root)]
    refresh += [arg.format(other_hook=other_hook) for arg in args]
    assert main([*refresh, "-o", str(fresh)]) == 0
    capsys.readouterr()
    assert main([*refresh, "-o", str(output)]) == 0
    kind = "example.com/gpu" if "--vendor" in args else "nvidia.com/gpu"
    kind = "nvidia.com/compute" if "--class" in args else kind
    assert capsys.readouterr() == (
        "",
        f"updated {output} (cdiVersion 0.7.0, kind {kind}, 3 devices; "
        + said.format(hook=hook_program, other_hook=other_hook)
        + ")\n",
    )
    assert output.read_bytes() == fresh.read_bytes()


@pytest.mark.integration
def test_refresh_reads_unquoted_mig_names_as_strings(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`name: 2:2` is the string "2:2" for the CDI library and Podman: the file is a spec."""
    node = fake_node("dgx-a100")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    fresh = output.read_bytes()
    unquoted = fresh.replace(b'name: "2:2"', b"name: 2:2").replace(b'name: "5:1"', b"name: 5:1")
    assert unquoted.count(b"name: 2:2") == unquoted.count(b"name: 5:1") == 1
    output.write_bytes(unquoted)
    capsys.readouterr()
    assert _refresh(node, output) == 0
    assert capsys.readouterr() == (
        "",
        f"updated {output} (cdiVersion 0.5.0, kind nvidia.com/gpu, 23 devices; "
        "same content, new layout)\n",
    )
    assert output.read_bytes() == fresh


@pytest.mark.integration
def test_refresh_to_management_mode_names_each_hook_once(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two create-symlinks hooks become one: that hook is `changed (2 -> 1)`, not also removed."""
    node = fake_node("workstation")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    refresh = ["cdi", "refresh", "--driver-root", str(node.root), "--mode", "management"]
    fresh = tmp_path / "fresh.yaml"
    assert main([*refresh, "-o", str(fresh)]) == 0
    capsys.readouterr()
    assert main([*refresh, "-o", str(output)]) == 0
    assert capsys.readouterr() == (
        "",
        f"updated {output} (cdiVersion 0.5.0, kind management.nvidia.com/gpu, 1 device; "
        "kind nvidia.com/gpu -> management.nvidia.com/gpu; cdiVersion 0.7.0 -> 0.5.0; "
        "removed 0, GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d; common device nodes removed "
        "/dev/nvidia-modeset, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidiactl; "
        "common hooks removed disable-device-node-modification, update-application-profile; "
        "common hooks changed create-symlinks (2 -> 1); 14 common mounts removed; "
        "device edits changed: all (device nodes, hooks, additional GIDs))\n",
    )
    assert output.read_bytes() == fresh.read_bytes()
