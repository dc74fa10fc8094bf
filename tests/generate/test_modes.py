"""`ctk cdi generate --mode csv|wsl|imex|gds|gdrcopy|mofed|nvswitch` on fixture nodes.

Whole specs against golden files (tests/fixtures/expected/, the node's root written `/HOST`;
regenerate with `CTK_UPDATE_GOLDEN=1`), each also checked by `ctk cdi validate`'s rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctk.cdi.validate import validate_text
from ctk.cli.app import main
from ctk.host.modes import CSV_KINDS, parse_mount_spec
from tests.fake_nvml import FakeNode

EXPECTED = Path(__file__).resolve().parent.parent / "fixtures" / "expected"
HOOK = "/usr/bin/nvidia-cdi-hook"
UPDATE = os.environ.get("CTK_UPDATE_GOLDEN") == "1"

MakeNode = Callable[[str], FakeNode]


def _roots(node: FakeNode) -> list[str]:
    return ["--driver-root", str(node.driver_root), "--dev-root", str(node.dev_root)]


def _golden(name: str, text: str) -> str:
    path = EXPECTED / name
    if UPDATE:
        path.write_text(text)
    return path.read_text()


@pytest.mark.parametrize(
    ("node_name", "flags", "golden"),
    [
        pytest.param("gpudirect", ["--mode=gds"], "gpudirect-gds.yaml", id="gds"),
        pytest.param("gpudirect", ["--mode=gdrcopy"], "gpudirect-gdrcopy.yaml", id="gdrcopy"),
        pytest.param("gpudirect", ["--mode=mofed"], "gpudirect-mofed.yaml", id="mofed"),
        pytest.param("dgx-a100", ["--mode=nvswitch"], "dgx-a100-nvswitch.yaml", id="nvswitch"),
        pytest.param("gb200-imex", ["--mode=imex"], "gb200-imex.yaml", id="imex"),
        pytest.param(
            "gb200-imex",
            ["--mode=imex", "--device-id=channel2", "--device-id=0", "--format=json"],
            "gb200-imex-selected.json",
            id="imex-selected",
        ),
        pytest.param("wsl2", ["--mode=wsl"], "wsl2.yaml", id="wsl"),
        pytest.param("wsl2", [], "wsl2.yaml", id="auto-is-wsl-on-wsl2"),
        pytest.param(
            "wsl2-two-drivers", ["--mode=wsl"], "wsl2-two-drivers.yaml", id="wsl-active-store"
        ),
        pytest.param("jetson-orin", ["--mode=csv"], "jetson-orin.yaml", id="csv"),
        pytest.param(
            "jetson-orin", ["--mode=auto"], "jetson-orin.yaml", id="auto-is-csv-on-jetson"
        ),
        pytest.param(
            "jetson-orin",
            [
                "--mode=csv",
                "--csv.ignore-pattern=**/libv4l2.so.*",
                "--device-name-strategy=type-index",
                "--disable-hook=update-ldcache",
            ],
            "jetson-orin-ignore.yaml",
            id="csv-ignore-type-index",
        ),
    ],
)
def test_mode_golden(
    node_name: str,
    flags: list[str],
    golden: str,
    *,
    fake_node: MakeNode,
    hook_program: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = fake_node(node_name)
    code = main(["cdi", "generate", "--hook-path", str(hook_program), *_roots(node), *flags])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    report = validate_text(out, golden)
    text = out.replace(str(hook_program), HOOK).replace(str(node.root), "/HOST")
    assert text == _golden(golden, text)
    assert (report.problems, report.minimum_version) == (
        (),
        report.spec and report.spec["cdiVersion"],
    )


@pytest.mark.parametrize(
    ("node_name", "flags", "code", "message"),
    [
        pytest.param(
            "workstation",
            ["--mode=gds"],
            1,
            "error: no /dev/nvidia-fs* device nodes found under {root}\n"
            "hint: load the gds driver on this node, or pass the right --dev-root\n",
            id="gds-without-nvidia-fs",
        ),
        pytest.param(
            "dgx-a100",
            ["--mode=wsl"],
            1,
            "error: /dev/dxg not found under {root}: not a WSL2 node\n"
            "hint: --mode wsl is for WSL2 with NVIDIA's Windows driver; "
            "elsewhere use --mode nvml\n",
            id="wsl-without-dxg",
        ),
        pytest.param(
            "wsl2-no-dxcore",
            ["--mode=wsl"],
            1,
            "error: libdxcore.so not found in {root}/usr/lib/wsl/lib: without dxcore the NVIDIA "
            "driver store cannot be found\n"
            "hint: WSL2 provides it from the Windows host: update WSL (`wsl --update` on "
            "Windows), or pass the right --driver-root\n",
            id="wsl-without-dxcore",
        ),
        pytest.param(
            "wsl2-intel-only",
            ["--mode=wsl"],
            1,
            "error: no NVIDIA driver store (a nv*.inf_amd64_* directory) in "
            "{root}/usr/lib/wsl/drivers; found: iigd_dch.inf_amd64_81e2c5a0d3f4b697\n"
            "hint: install NVIDIA's Windows driver on the Windows host (WSL2 shows its driver "
            "store here), or pass the right --driver-root\n",
            id="wsl-without-nvidia-store",
        ),
        pytest.param(
            "gb200-imex",
            ["--mode=imex", "--device-id=5"],
            1,
            "error: IMEX channel 5 not found under {root}/dev/nvidia-caps-imex-channels\n"
            "hint: found: 0, 1, 2, 10\n",
            id="imex-missing-channel",
        ),
        pytest.param(
            "gb200-imex",
            ["--mode=imex", "--device-id=GPU-1"],
            2,
            "error: --device-id GPU-1: not an IMEX channel\n"
            "hint: a channel number 0-1048575 (or channel<N>), or all\n",
            id="imex-not-a-channel",
        ),
        pytest.param(
            "workstation",
            ["--mode=csv"],
            1,
            "error: no mount specifications in the CSV files: {root}/etc/nvidia-container-runtime/"
            "host-files-for-container.d/devices.csv, {root}/etc/nvidia-container-runtime/"
            "host-files-for-container.d/drivers.csv, {root}/etc/nvidia-container-runtime/"
            "host-files-for-container.d/l4t.csv\n"
            "hint: pass --csv.file with the files of the board's L4T release (in "
            "/etc/nvidia-container-runtime/host-files-for-container.d on Jetson)\n",
            id="csv-without-files",
        ),
    ],
)
def test_mode_refuses_a_node_without_its_devices(
    node_name: str,
    flags: list[str],
    code: int,
    message: str,
    *,
    fake_node: MakeNode,
    hook_program: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    node = fake_node(node_name)
    output = tmp_path / "out.yaml"
    args = ["cdi", "generate", "--hook-path", str(hook_program), *_roots(node), "-o", str(output)]
    assert main([*args, *flags]) == code
    assert capsys.readouterr() == ("", message.format(root=node.root))
    assert not output.exists()


def test_wsl_store_without_libcuda(
    fake_node: MakeNode, hook_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("wsl2-no-dxcore")
    (node.root / "usr/lib/wsl/lib/libdxcore.so").write_text("dxcore")
    store = node.root / "usr/lib/wsl/drivers/nv_dispi.inf_amd64_3c5a8e1f0b7d2e94"
    (store / "libcuda.so.1.1").unlink()
    argv = ["cdi", "generate", "--mode=wsl", "--hook-path", str(hook_program), *_roots(node)]
    assert main(argv) == 1
    assert capsys.readouterr() == (
        "",
        f"error: the NVIDIA driver store {store} holds no libcuda.so.1.1\n"
        "hint: reinstall NVIDIA's Windows driver; its WSL support puts the CUDA library there\n",
    )


def test_wsl_stores_none_installed_takes_the_newest(
    fake_node: MakeNode, hook_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No store's libcuda.so.1.1 is the installed copy: the newest store, with a warning."""
    node = fake_node("wsl2-two-drivers")
    (node.root / "usr/lib/wsl/lib/libcuda.so.1.1").write_text("libcuda 561.09")
    drivers = node.root / "usr/lib/wsl/drivers"
    old, new = "nv_dispi.inf_amd64_0d3c2b1a9f8e7d65", "nv_dispi.inf_amd64_b7e6f5a4c3d2e1f0"
    os.utime(drivers / old / "libcuda.so.1.1", (2_000_000_000, 2_000_000_000))
    os.utime(drivers / new / "libcuda.so.1.1", (1_000_000_000, 1_000_000_000))
    argv = ["cdi", "generate", "--mode=wsl", "--hook-path", str(hook_program), *_roots(node)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == (
        f"warning: 2 NVIDIA driver stores in {drivers} and none is the one "
        f"/usr/lib/wsl/lib/libcuda.so.1.1 was copied from; using the newest, {old}\n"
    )
    assert f"/usr/lib/wsl/drivers/{old}/libcuda.so.1.1" in out
    assert new not in out


@pytest.mark.parametrize(
    ("node_name", "mode"),
    [
        pytest.param("jetson-orin", "csv", id="csv"),
        pytest.param("wsl2", "wsl", id="wsl"),
        pytest.param("gb200-imex", "imex", id="imex"),
        pytest.param("gpudirect", "gds", id="gds"),
    ],
)
def test_device_id_none_is_the_empty_device(
    node_name: str,
    mode: str,
    fake_node: MakeNode,
    hook_program: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As in nvml mode (and nvidia-ctk): one device `none` that gives nothing, no `all`."""
    node = fake_node(node_name)
    argv = ["cdi", "generate", f"--mode={mode}", "--hook-path", str(hook_program), *_roots(node)]
    assert main([*argv, "--device-id=none", "--format=json"]) == 0
    out, err = capsys.readouterr()
    assert (json.loads(out)["devices"], err) == (
        [{"name": "none", "containerEdits": {"env": ["NVCT_EMPTY_DEVICE="]}}],
        "",
    )


def test_csv_uuid_names_is_a_warning(
    fake_node: MakeNode, hook_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvidia-ctk's strategy flag takes uuid in every mode; the Jetson GPU has none: index."""
    node = fake_node("jetson-orin")
    argv = ["cdi", "generate", "--mode=csv", "--hook-path", str(hook_program), *_roots(node)]
    assert main(argv) == 0
    expected = capsys.readouterr().out
    assert main([*argv, "--device-name-strategy=uuid"]) == 0
    assert capsys.readouterr() == (
        expected,
        "warning: --device-name-strategy uuid: the integrated GPU of csv mode has no UUID; "
        "naming it 0 (--device-name-strategy index)\n",
    )


def test_csv_file_flag_reads_the_given_files(
    fake_node: MakeNode, hook_program: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--csv.file names host paths; a missing one is a warning while another one is usable."""
    node = fake_node("jetson-orin")
    given = tmp_path / "only-devices.csv"
    given.write_text("dev, /dev/nvmap\n")
    missing = tmp_path / "missing.csv"
    flags = ["--mode=csv", f"--csv.file={given}", f"--csv.file={missing}", "--format=json"]
    assert main(["cdi", "generate", "--hook-path", str(hook_program), *_roots(node), *flags]) == 0
    out, err = capsys.readouterr()
    assert err == f"warning: skipping CSV file {missing}: no such file\n"
    nvmap = {
        "path": "/dev/nvmap",
        "hostPath": f"{node.root}/dev/nvmap",
        "major": 10,
        "minor": 125,
        "fileMode": 0o660,
        "permissions": "rwm",
        "gid": 44,
    }
    edits = {"deviceNodes": [nvmap], "additionalGids": [44]}
    release = {
        "hostPath": f"{node.root}/etc/nv_tegra_release",
        "containerPath": "/etc/nv_tegra_release",
        "options": ["ro", "nosuid", "nodev", "rbind", "rprivate"],
    }
    assert json.loads(out) == {
        "cdiVersion": "0.7.0",
        "kind": "nvidia.com/gpu",
        "devices": [{"name": name, "containerEdits": edits} for name in ("0", "all")],
        "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "mounts": [release]},
    }


@pytest.mark.parametrize(
    ("mode", "node_name"),
    [
        pytest.param("management", "dgx-a100", id="management"),
        pytest.param("gds", "gpudirect", id="gds"),
        pytest.param("imex", "gb200-imex", id="imex"),
        pytest.param("wsl", "wsl2", id="wsl"),
        pytest.param("csv", "jetson-orin", id="csv"),
    ],
)
def test_modes_without_nvml_never_import_pynvml(
    mode: str, node_name: str, fake_node: MakeNode, hook_program: Path
) -> None:
    """The import budget of issue 13: no pynvml (nor the NVML adapter) without NVML."""
    import subprocess
    import sys

    node = fake_node(node_name)
    argv = ["cdi", "generate", f"--mode={mode}", "--hook-path", str(hook_program), *_roots(node)]
    script = (
        "import sys\nfrom ctk.cli.app import main\n"
        f"code = main({argv!r})\n"
        "print(code, sorted(m for m in sys.modules if 'nvml' in m))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.stdout.splitlines()[-1] == "0 []"


def test_refresh_in_csv_mode_takes_the_csv_flags(
    fake_node: MakeNode, hook_program: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    node = fake_node("jetson-orin")
    output = tmp_path / "nvidia.yaml"
    flags = ["--mode=csv", "--csv.ignore-pattern=**/libv4l2.so.*", "--hook-path", str(hook_program)]
    args = ["cdi", "refresh", *_roots(node), *flags, "--output", str(output)]
    assert main(args) == 0
    assert main(args) == 0
    summary = "cdiVersion 0.7.0, kind nvidia.com/gpu, 2 devices"
    assert capsys.readouterr() == (
        "",
        f"created {output} ({summary})\n{output} is up to date ({summary}); nothing written\n",
    )
    assert "libv4l2" not in output.read_text()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("lib, /usr/lib/libcuda.so.1.1", ("lib", "/usr/lib/libcuda.so.1.1"), id="lib"),
        pytest.param("  dev ,/dev/nvmap  ", ("dev", "/dev/nvmap"), id="blanks"),
        pytest.param("sym, /a, b", ("sym", "/a, b"), id="comma-in-path"),
        pytest.param("file, /etc/x", None, id="unknown-kind"),
        pytest.param("dir,", None, id="no-path"),
        pytest.param("# lib, /x", None, id="comment"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_mount_spec(line: str, expected: tuple[str, str] | None) -> None:
    assert parse_mount_spec(line) == expected


@given(st.text())
def test_parse_mount_spec_takes_any_text(line: str) -> None:
    parsed = parse_mount_spec(line)
    assert parsed is None or (parsed[0] in CSV_KINDS and parsed[1] == parsed[1].strip() != "")
