"""`ctk cdi refresh` decides from the structural diff of the old and new spec, on fixture nodes:
an unchanged node (whatever the old file's layout) writes nothing; a driver upgrade and a MIG
reconfiguration are updates whose diff it reports, also as JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml import FakeNode

MakeNode = Callable[[str], FakeNode]
OLD, NEW = "550.54.15", "560.35.03"


def _refresh(node: FakeNode, output: Path, *flags: str) -> int:
    return main(["cdi", "refresh", "--driver-root", str(node.root), "-o", str(output), *flags])


def _upgrade_driver(node: FakeNode) -> None:
    """Replace driver OLD by NEW on the node: its files, the links to them, and NVML's version."""
    for directory, dirs, names in os.walk(node.root, topdown=False):
        for name in [*names, *dirs]:
            path = Path(directory, name)
            if path.is_symlink() and OLD in os.readlink(path):
                target = os.readlink(path).replace(OLD, NEW)
                path.unlink()
                path.symlink_to(target)
            if OLD in name:
                path.rename(path.with_name(name.replace(OLD, NEW)))
    node.topology.write_text(node.topology.read_text().replace(OLD, NEW))


LIBS = "/usr/lib/x86_64-linux-gnu"
DGX_LIBRARIES = (
    "libcuda",
    "libcudadebugger",
    "libnvcuvid",
    "libnvidia-allocator",
    "libnvidia-cfg",
    "libnvidia-encode",
    "libnvidia-gpucomp",
    "libnvidia-ml",
    "libnvidia-nvvm",
    "libnvidia-opencl",
    "libnvidia-opticalflow",
    "libnvidia-ptxjitcompiler",
)


def _driver_mounts(version: str) -> list[str]:
    """The mounts of the dgx-a100 node that carry the driver version, in the spec's order."""
    return [
        *(f"{LIBS}/{name}.so.{version}" for name in DGX_LIBRARIES),
        f"/lib/firmware/nvidia/{version}/gsp_ga10x.bin",
        f"/lib/firmware/nvidia/{version}/gsp_tu10x.bin",
        f"{LIBS}/vdpau/libvdpau_nvidia.so.{version}",
    ]


def _same() -> dict[str, object]:
    return {
        "same": True,
        "fields": {},
        "devices": {"added": [], "removed": [], "changed": {}},
        "commonEdits": {},
        "otherFields": False,
    }


@pytest.mark.integration
def test_unchanged_node_writes_nothing(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("dgx-a100")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    before = output.read_bytes()
    first = output.stat()
    capsys.readouterr()
    assert _refresh(node, output, "--json") == 0
    out, err = capsys.readouterr()
    assert (json.loads(out), err) == (
        {
            "output": str(output),
            "outcome": "keep",
            "written": False,
            "cdiVersion": "0.5.0",
            "kind": "nvidia.com/gpu",
            "devices": 23,
            "changes": [],
            "diff": _same(),
        },
        "",
    )
    again = output.stat()
    assert (output.read_bytes(), again.st_ino, again.st_mtime_ns) == (
        before,
        first.st_ino,
        first.st_mtime_ns,
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    "relayout",
    [
        pytest.param(lambda data: json.dumps(data, indent=2), id="as-json"),
        pytest.param(lambda data: json.dumps(data) + "\n", id="one-json-line"),
        pytest.param(
            lambda data: json.dumps({**data, "devices": data["devices"][::-1]}),
            id="devices-in-another-order",
        ),
    ],
)
def test_same_spec_in_another_layout_is_kept(
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    relayout: Callable[[dict[str, object]], str],
) -> None:
    """The structural diff decides, not the bytes: a spec with the same content stays as it is."""
    import yaml

    node = fake_node("workstation")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    output.write_text(relayout(yaml.safe_load(output.read_text())))
    before = output.read_bytes()
    first = output.stat()
    capsys.readouterr()
    assert _refresh(node, output) == 0
    assert capsys.readouterr() == (
        "",
        f"{output} is up to date (cdiVersion 0.7.0, kind nvidia.com/gpu, 3 devices); "
        "nothing written\n",
    )
    again = output.stat()
    assert (output.read_bytes(), again.st_mtime_ns) == (before, first.st_mtime_ns)


@pytest.mark.integration
def test_mounts_in_another_order_are_a_change(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A runtime applies mounts in order: the same mounts reordered are rewritten."""
    import yaml

    node = fake_node("workstation")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    fresh = output.read_bytes()
    data = yaml.safe_load(fresh)
    data["containerEdits"]["mounts"].reverse()
    output.write_text(json.dumps(data))
    capsys.readouterr()
    assert _refresh(node, output) == 0
    assert capsys.readouterr() == (
        "",
        f"updated {output} (cdiVersion 0.7.0, kind nvidia.com/gpu, 3 devices; "
        "common mounts reordered)\n",
    )
    assert output.read_bytes() == fresh


@pytest.mark.integration
def test_driver_upgrade_is_reported(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("dgx-a100")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    _upgrade_driver(node)
    capsys.readouterr()
    assert _refresh(node, output, "--json") == 0
    out, err = capsys.readouterr()
    changes = [
        f"driver {OLD} -> {NEW}",
        "common hooks changed create-symlinks, enable-cuda-compat",
        "15 common mounts added",
        "15 common mounts removed",
    ]
    diff = {
        "same": False,
        "fields": {"driver version": {"old": OLD, "new": NEW}},
        "devices": {"added": [], "removed": [], "changed": {}},
        "commonEdits": {
            "hooks": {
                "added": [],
                "removed": [],
                "changed": ["create-symlinks", "enable-cuda-compat"],
            },
            "mounts": {"added": _driver_mounts(NEW), "removed": _driver_mounts(OLD), "changed": []},
        },
        "otherFields": False,
    }
    assert (json.loads(out), err) == (
        {
            "output": str(output),
            "outcome": "update",
            "written": True,
            "cdiVersion": "0.5.0",
            "kind": "nvidia.com/gpu",
            "devices": 23,
            "changes": changes,
            "diff": diff,
        },
        "",
    )
    assert f"libcuda.so.{NEW}" in output.read_text()
    assert f"libcuda.so.{OLD}" not in output.read_text()

    capsys.readouterr()
    assert _refresh(node, output) == 0  # and the text says the same
    assert capsys.readouterr().err == (
        f"{output} is up to date (cdiVersion 0.5.0, kind nvidia.com/gpu, 23 devices); "
        "nothing written\n"
    )


@pytest.mark.integration
def test_mig_reconfiguration_is_reported(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPU 2 loses its 1g.10gb+me MIG device: two names go, and its cap nodes leave `all`."""
    node = fake_node("dgx-a100")
    output = tmp_path / "nvidia.yaml"
    assert _refresh(node, output) == 0
    lines = node.topology.read_text().splitlines(keepends=True)
    node.topology.write_text("".join(line for line in lines if "1g.10gb+me" not in line))
    capsys.readouterr()
    assert _refresh(node, output, "--json") == 0
    out, err = capsys.readouterr()
    removed = ["2:2", "MIG-2a1c0003-5b6e-5f1a-8c33-000000000003"]
    caps = ["/dev/nvidia-caps/nvidia-cap390", "/dev/nvidia-caps/nvidia-cap391"]
    assert (json.loads(out), err) == (
        {
            "output": str(output),
            "outcome": "update",
            "written": True,
            "cdiVersion": "0.5.0",
            "kind": "nvidia.com/gpu",
            "devices": 21,
            "changes": [
                f"removed {', '.join(removed)}",
                "device edits changed: all (device nodes)",
            ],
            "diff": {
                "same": False,
                "fields": {},
                "devices": {
                    "added": [],
                    "removed": removed,
                    "changed": {
                        "all": {"device nodes": {"added": [], "removed": caps, "changed": []}}
                    },
                },
                "commonEdits": {},
                "otherFields": False,
            },
        },
        "",
    )
