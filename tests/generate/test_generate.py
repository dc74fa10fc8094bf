"""`ctk cdi generate` end to end on fixture nodes: whole specs against golden files.

Golden files live in tests/fixtures/expected/; the node's temporary root is written as `/HOST`.
Regenerate them with `CTK_UPDATE_GOLDEN=1 pytest tests/generate` and review the diff.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ctk.cdi.model import Spec
from ctk.cdi.validate import validate_text
from ctk.cli.app import main
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


@pytest.mark.integration
@pytest.mark.parametrize(
    ("node_name", "flags", "golden"),
    [
        pytest.param("dgx-a100", [], "dgx-a100.yaml", id="dgx-mixed-mig"),
        pytest.param("workstation", [], "workstation.yaml", id="workstation-drm-graphics"),
        pytest.param("driver-container", [], "driver-container.yaml", id="driver-container"),
        pytest.param("usr-local-nvidia", [], "usr-local-nvidia.yaml", id="driver-under-a-prefix"),
        pytest.param(
            "dgx-a100",
            ["--mode", "management"],
            "dgx-a100-management.yaml",
            id="management-mode",
        ),
        pytest.param(
            "dgx-a100",
            [
                "--format=json",
                "--device-name-strategy=type-index",
                "--device-id=0",
                "--device-id=GPU-a1000005-8f3c-4b1e-9d2a-000000000005",
                "--no-all-device",
                "--disable-hook=enable-cuda-compat",
                "--enable-hook=chmod",
            ],
            "dgx-a100-selected.json",
            id="json-selected-type-index",
        ),
        pytest.param(
            "workstation",
            ["--disable-hook=all", "--device-name-strategy=uuid", "--vendor=example.com"],
            "workstation-no-hooks.yaml",
            id="no-hooks-uuid-vendor",
        ),
        pytest.param(
            "workstation",
            [
                "--feature-flag=no-additional-gids-for-device-nodes,disable-ipc-discoverer",
                "--feature-flag=enable-explicit-driver-libraries",
                "--enable-hook=chmod",
                "--device-name-strategy=index",
            ],
            "workstation-feature-flags.yaml",
            id="feature-flags-chmod",
        ),
        pytest.param(
            "dgx-a100",
            ["--mode=management", "--enable-hook=chmod", "--disable-hook=create-symlinks"],
            "dgx-a100-management-chmod.yaml",
            id="management-chmod",
        ),
    ],
)
def test_generate_golden(
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


@pytest.mark.integration
def test_output_file_is_written_atomically_with_mode_0644(
    fake_node: MakeNode, hook_on_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Also: without --hook-path the spec names nvidia-cdi-hook found on PATH."""
    node = fake_node("workstation")
    output = tmp_path / "etc" / "cdi" / "nvidia.json"
    code = main(["cdi", "generate", *_roots(node), "-o", str(output)])
    out, err = capsys.readouterr()
    assert (code, out) == (0, "")
    assert err == f"wrote {output} (cdiVersion 0.7.0, kind nvidia.com/gpu, 3 devices)\n"
    assert output.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in output.parent.iterdir()) == ["nvidia.json"]
    expected = yaml.safe_load((EXPECTED / "workstation.yaml").read_text())
    text = output.read_text().replace(str(hook_on_path), HOOK).replace(str(node.root), "/HOST")
    assert json.loads(text) == expected


def _break(node: FakeNode, path: str) -> None:
    (node.root / path).unlink()


BROKEN = [
    pytest.param(
        "no-nvml-library",
        None,
        [
            "error: NVML library libnvidia-ml.so.1 not found under driver root {root}",
            "hint: is the NVIDIA driver installed? For a driver container pass --driver-root "
            "(e.g. /run/nvidia/driver), or use --mode management, which needs no NVML",
        ],
        id="nvml-library-missing",
    ),
    pytest.param(
        "version-mismatch",
        None,
        [
            "error: NVIDIA driver/library version mismatch "
            "(NVML initialisation: RM has detected an NVML/RM version mismatch.)",
            "hint: the loaded kernel module and the user-space driver differ (usually after a "
            "driver upgrade): reboot, or unload and reload the nvidia modules",
        ],
        id="version-mismatch",
    ),
    pytest.param(
        "dgx-a100",
        "dev/nvidia3",
        [
            "error: GPU 3 (GPU-a1000003-8f3c-4b1e-9d2a-000000000003): device node /dev/nvidia3 "
            "not found under {root}",
            "hint: the driver has not created it: run `nvidia-modprobe -c 3` or pass the right "
            "--dev-root",
        ],
        id="gpu-node-missing",
    ),
    pytest.param(
        "dgx-a100",
        "proc/driver/nvidia-caps/mig-minors",
        [
            "error: MIG device 2:0 (MIG-2a1c0001-5b6e-5f1a-8c33-000000000001): "
            "{root}/proc/driver/nvidia-caps/mig-minors is missing or empty",
            "hint: MIG needs the nvidia-caps support of the driver; load the nvidia module with "
            "MIG support or pass the right --dev-root",
        ],
        id="mig-minors-missing",
    ),
    pytest.param(
        "dgx-a100",
        "dev/nvidia-caps/nvidia-cap680",
        [
            "error: MIG device 5:1 (MIG-5b7d0002-6c7f-5a2b-9d44-000000000002): capability "
            "device /dev/nvidia-caps/nvidia-cap680 not found under {root}",
            "hint: create the MIG capability nodes: `nvidia-modprobe -f "
            "/proc/driver/nvidia-caps/mig-minors` or `ctk system create-device-nodes`",
        ],
        id="mig-capability-node-missing",
    ),
    pytest.param(
        "workstation",
        "usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
        [
            "error: libcuda.so.550.54.15 (the CUDA driver library) not found under driver root "
            "{root}",
            "hint: a spec without it gives containers GPUs that CUDA cannot use: reinstall the "
            "driver, or pass the right --driver-root or --library-search-path",
        ],
        id="libcuda-missing",
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize(("node_name", "remove", "stderr"), BROKEN)
def test_broken_node_fails_and_keeps_the_output(
    node_name: str,
    remove: str | None,
    stderr: list[str],
    *,
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = fake_node(node_name)
    if remove:
        _break(node, remove)
    output = tmp_path / "nvidia.yaml"
    output.write_bytes(b"# the old spec\n")
    output.chmod(0o600)
    code = main(["cdi", "generate", *_roots(node), "-o", str(output)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.splitlines() == [line.format(root=node.root) for line in stderr]
    assert output.read_bytes() == b"# the old spec\n"
    assert output.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["nvidia.yaml"]


@pytest.mark.integration
def test_unknown_device_id(fake_node: MakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    node = fake_node("dgx-a100")
    assert main(["cdi", "generate", *_roots(node), "--device-id", "2:7"]) == 2
    assert capsys.readouterr() == (
        "",
        "error: --device-id 2:7: no such GPU or MIG device\n"
        "hint: devices on this node: 0, 1, 2:0, 2:1, 2:2, 3, 4, 5:0, 5:1, 6, 7, "
        "or a GPU/MIG UUID, all, none\n",
    )


@pytest.mark.integration
def test_device_id_none(fake_node: MakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    node = fake_node("workstation")
    flags = ["--device-id", "none", "--disable-hook", "all", "--format", "json"]
    assert main(["cdi", "generate", *_roots(node), *flags]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert (spec["cdiVersion"], spec["devices"]) == (
        "0.5.0",
        [{"name": "none", "containerEdits": {"env": ["NVCT_EMPTY_DEVICE="]}}],
    )


@pytest.mark.integration
def test_a_broken_gpu_does_not_block_the_others(
    fake_node: MakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("dgx-a100")
    _break(node, "dev/nvidia3")
    flags = ["--device-id", "0", "--device-id", "5:1", "--format", "json"]
    assert main(["cdi", "generate", *_roots(node), *flags]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in spec["devices"]] == [
        "0",
        "5:1",
        "GPU-a1000000-8f3c-4b1e-9d2a-000000000000",
        "MIG-5b7d0002-6c7f-5a2b-9d44-000000000002",
        "all",
    ]


@pytest.mark.integration
def test_nvidia_ctk_flag_aliases(fake_node: MakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    """An nvidia-ctk command line runs unchanged; a hook path named nvidia-ctk gets `hook`."""
    node = fake_node("dgx-a100")
    flags = [
        "--devices=0",
        "--device-ids=1",
        "--device=2:2",
        "--disable-hooks=all",
        "--enable-hooks=update-ldcache",
        "--nvidia-ctk-path=/usr/bin/nvidia-ctk",
        "--device-name-strategy=index",
        "--feature-flags=disable-nvsandboxutils",
        "--discovery-mode=auto",
        "--format=json",
    ]
    assert main(["cdi", "generate", *_roots(node), *flags]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert ([d["name"] for d in spec["devices"]], spec["containerEdits"]["hooks"]) == (
        ["0", "1", "2:2", "all"],
        [
            {
                "hookName": "createContainer",
                "path": "/usr/bin/nvidia-ctk",
                "args": [
                    "nvidia-ctk",
                    "hook",
                    "update-ldcache",
                    "--folder",
                    "/usr/lib/x86_64-linux-gnu",
                    "--folder",
                    "/usr/lib/x86_64-linux-gnu/vdpau",
                ],
                "env": ["NVIDIA_CTK_DEBUG=false"],
            }
        ],
    )


@pytest.mark.integration
def test_library_search_path_finds_a_driver_outside_the_standard_dirs(
    fake_node: MakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("driver-container")
    (node.driver_root / "opt/nvidia").mkdir(parents=True)
    (node.driver_root / "usr/lib64").rename(node.driver_root / "opt/nvidia/lib64")
    flags = ["--format=json", "--disable-hook=all"]
    assert main(["cdi", "generate", *_roots(node), *flags]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: NVML library libnvidia-ml.so.1 not found under driver root {node.driver_root}"
    )
    flags.append("--library-search-path=/opt/nvidia/lib64")
    assert main(["cdi", "generate", *_roots(node), *flags]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert (spec["containerEdits"]["env"], len(spec["devices"])) == (
        ["NVIDIA_CTK_LIBCUDA_DIR=/opt/nvidia/lib64", "NVIDIA_VISIBLE_DEVICES=void"],
        5,
    )


LIBDIR = "usr/lib/x86_64-linux-gnu"


def _library_mounts(out: str, root: Path) -> list[tuple[str, str]]:
    mounts = json.loads(out)["containerEdits"]["mounts"]
    return [
        (m["hostPath"].replace(str(root), "/HOST"), m["containerPath"])
        for m in mounts
        if "/libcuda.so" in m["containerPath"] or "/libnvidia-ml.so" in m["containerPath"]
    ]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("link", "stderr"),
    [
        pytest.param(
            "/opt/nvidia/libcuda.so.550.54.15", "", id="absolute-link-inside-the-driver-root"
        ),
        pytest.param(
            "/{outside}/libcuda.so.550.54.15",
            "error: libcuda.so.550.54.15 (the CUDA driver library) not found under driver root "
            "{root}\nhint: a spec without it gives containers GPUs that CUDA cannot use: "
            "reinstall the driver, or pass the right --driver-root or --library-search-path\n",
            id="absolute-link-to-the-machine-running-ctk",
        ),
    ],
)
def test_libcuda_as_a_link_is_resolved_inside_the_driver_root(
    link: str, stderr: str, fake_node: MakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    """QA 5: such a libcuda was silently left out (exit 0); now it is mounted, or an error."""
    node = fake_node("workstation")
    real = node.root / LIBDIR / "libcuda.so.550.54.15"
    (node.root / "opt/nvidia").mkdir(parents=True)
    real.rename(node.root / "opt/nvidia/libcuda.so.550.54.15")
    # a link that only works on the machine running ctk: an absolute target outside the root
    target = link.format(outside=str(node.root / "opt/nvidia").lstrip("/"))
    real.symlink_to(target)
    code = main(["cdi", "generate", *_roots(node), "--format=json", "--disable-hook=all"])
    out, err = capsys.readouterr()
    assert (code, err) == (1 if stderr else 0, stderr.format(root=node.root))
    if not stderr:
        assert _library_mounts(out, node.root) == [
            ("/HOST/opt/nvidia/libcuda.so.550.54.15", f"/{LIBDIR}/libcuda.so.550.54.15"),
            (f"/HOST/{LIBDIR}/libnvidia-ml.so.550.54.15", f"/{LIBDIR}/libnvidia-ml.so.550.54.15"),
        ]


@pytest.mark.integration
def test_missing_nvml_library_file_is_a_warning(
    fake_node: MakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    """libnvidia-ml.so.<version> missing (NVML loads from a plain libnvidia-ml.so.1): CUDA still
    works, so the spec is written, with a warning."""
    node = fake_node("workstation")
    libdir = node.root / LIBDIR
    (libdir / "libnvidia-ml.so.1").unlink()
    (libdir / "libnvidia-ml.so.550.54.15").rename(libdir / "libnvidia-ml.so.1")
    code = main(["cdi", "generate", *_roots(node), "--format=json", "--disable-hook=all"])
    out, err = capsys.readouterr()
    assert (code, err) == (
        0,
        f"warning: libnvidia-ml.so.550.54.15 (the NVML library) not found under driver root "
        f"{node.root}; nvidia-smi and other NVML tools will fail in containers\n",
    )
    assert _library_mounts(out, node.root) == [
        (f"/HOST/{LIBDIR}/libcuda.so.550.54.15", f"/{LIBDIR}/libcuda.so.550.54.15")
    ]


def _link(path: Path, target: str | Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


@pytest.mark.integration
def test_hostile_links_in_the_driver_root_are_dropped(
    fake_node: MakeNode, hook_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 2: every discovered file is resolved inside --driver-root; one that leads out of
    it, dangles or is the wrong kind of file is left out, and hostPath is the resolved path."""
    node = fake_node("driver-container")
    driver = node.driver_root
    outside = node.root.parent / "outside"  # the machine running ctk, outside the driver root
    (outside / "vdpau").mkdir(parents=True)
    (outside / "mps").mkdir()
    for name in ("secret.bin", "vdpau/libvdpau_nvidia.so.550.54.15"):
        (outside / name).write_bytes(b"")
    climb = "../" * 32 + str(outside).lstrip("/")  # `..` past the driver root
    firmware = driver / "lib/firmware/nvidia/550.54.15"
    _link(firmware / "gsp_absolute.bin", outside / "secret.bin")  # resolves to nothing inside
    _link(firmware / "gsp_climbs.bin", f"{climb}/secret.bin")
    _link(firmware / "gsp_directory.bin", "/usr")
    _link(firmware / "gsp_dangling.bin", "/nowhere")
    # a link inside the root: mounted at its own path, hostPath is the file it leads to
    (driver / "opt/fw").mkdir(parents=True)
    (firmware / "gsp_ga10x.bin").rename(driver / "opt/fw/gsp_ga10x.bin")
    _link(firmware / "gsp_ga10x.bin", "/opt/fw/gsp_ga10x.bin")
    shutil.rmtree(driver / "usr/lib64/vdpau")
    _link(driver / "usr/lib64/vdpau", outside / "vdpau")
    _link(driver / "usr/bin/nvidia-imex", f"{climb}/secret.bin")
    _link(driver / "etc/vulkan/icd.d/nvidia_icd.json", outside / "secret.bin")
    (driver / "usr/share/glvnd/egl_vendor.d/10_nvidia.json").mkdir(parents=True)
    (driver / "run/nvidia-fabricmanager").mkdir(parents=True)
    (driver / "run/nvidia-fabricmanager/socket").write_bytes(b"")  # not a socket
    _link(driver / "tmp/nvidia-mps", outside / "mps")
    _link(driver / "usr/lib64/xorg/modules/drivers/nvidia_drv.so", f"{climb}/secret.bin")

    code = main(["cdi", "generate", "--hook-path", str(hook_program), *_roots(node)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    text = out.replace(str(hook_program), HOOK).replace(str(node.root), "/HOST")
    assert text == _golden("driver-container-hostile-links.yaml", text)


def _ldcache_hook(out: str) -> list[str]:
    hooks = json.loads(out)["containerEdits"]["hooks"]
    (args,) = [h["args"] for h in hooks if h["args"][1] == "update-ldcache"]
    return list(args)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("ldconfig_real", "flags", "expected"),
    [
        pytest.param("file", [], ["--ldconfig-path", "{driver}/usr/sbin/ldconfig.real"], id="real"),
        pytest.param(
            "file",
            ["--ldconfig-path", "/opt/ldconfig"],
            ["--ldconfig-path", "/opt/ldconfig"],
            id="flag-wins",
        ),
        pytest.param(None, [], [], id="none"),
        pytest.param("escapes", [], [], id="link-out-of-the-root"),
        pytest.param("directory", [], [], id="not-a-file"),
    ],
)
def test_update_ldcache_uses_ldconfig_real_of_the_driver_root(
    ldconfig_real: str | None,
    flags: list[str],
    expected: list[str],
    fake_node: MakeNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Review 4: on Debian/Ubuntu /sbin/ldconfig is a shell script; the hook must run
    ldconfig.real. Found in the driver root, resolved inside it (merged /usr here)."""
    node = fake_node("driver-container")
    driver = node.driver_root
    (driver / "usr/sbin").mkdir(parents=True)
    (driver / "sbin").symlink_to("usr/sbin")
    real = driver / "usr/sbin/ldconfig.real"
    if ldconfig_real == "file":
        real.write_bytes(b"")
    elif ldconfig_real == "escapes":
        real.symlink_to("../" * 32 + "bin/true")
    elif ldconfig_real == "directory":
        real.mkdir()
    code = main(["cdi", "generate", *_roots(node), "--format=json", *flags])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert _ldcache_hook(out) == [
        "nvidia-cdi-hook",
        "update-ldcache",
        *(arg.format(driver=driver) for arg in expected),
        "--folder",
        "/usr/lib64",
        "--folder",
        "/usr/lib64/vdpau",
    ]


@pytest.mark.integration
def test_damaged_ld_so_cache_is_no_internal_error(
    fake_node: MakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 6: an ld.so.cache whose string offset points past its end crashed generate."""
    node = fake_node("no-nvml-library")
    cache = b"glibc-ld.so.cache1.1" + struct.pack("<II", 1, 0) + bytes(20)
    cache += struct.pack("<iIIIQ", 0x303, 10_000, 10_000, 0, 0)
    (node.driver_root / "etc").mkdir(exist_ok=True)
    (node.driver_root / "etc/ld.so.cache").write_bytes(cache)
    code = main(["cdi", "generate", *_roots(node)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: NVML library libnvidia-ml.so.1 not found under driver root {node.driver_root}",
        "hint: is the NVIDIA driver installed? For a driver container pass --driver-root "
        "(e.g. /run/nvidia/driver), or use --mode management, which needs no NVML",
    ]


@pytest.mark.integration
def test_summary_counts_one_device_in_the_singular(
    fake_node: MakeNode, hook_on_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("workstation")
    output = tmp_path / "management.yaml"
    code = main(["cdi", "generate", *_roots(node), "--mode", "management", "-o", str(output)])
    assert (code, capsys.readouterr().err) == (
        0,
        f"wrote {output} (cdiVersion 0.5.0, kind management.nvidia.com/gpu, 1 device)\n",
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("node_name", "mode", "builder"),
    [
        pytest.param("workstation", "management", "ctk.cdi.generate.build_spec", id="management"),
        pytest.param("gpudirect", "gds", "ctk.cdi.modes.build_class_spec", id="class-mode"),
    ],
)
def test_an_invalid_spec_is_never_written(
    node_name: str,
    mode: str,
    builder: str,
    *,
    fake_node: MakeNode,
    hook_program: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What was built is judged by `ctk cdi validate`'s rules before it is written: a guard
    against ctk's own bugs, shown here with a builder that names the first device badly."""
    module_name, _, function = builder.rpartition(".")
    module = importlib.import_module(module_name)
    build = getattr(module, function)

    def broken(*args: object, **kwargs: object) -> Spec:
        spec: Spec = build(*args, **kwargs)
        first = dataclasses.replace(spec.devices[0], name="-bad")
        return dataclasses.replace(spec, devices=(first, *spec.devices[1:]))

    monkeypatch.setattr(module, function, broken)
    node = fake_node(node_name)
    output = tmp_path / "nvidia.yaml"
    output.write_bytes(b"# the old spec\n")
    argv = ["cdi", "generate", "--mode", mode, "--hook-path", str(hook_program), *_roots(node)]
    code = main([*argv, "-o", str(output)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "error: the generated spec is invalid (device.name: device name '-bad' must start with "
        "an ASCII letter or digit); nothing was written",
        "hint: this is a bug in ctk: report it with the output of --debug",
    ]
    assert output.read_bytes() == b"# the old spec\n"


def _host_paths(out: str) -> list[str]:
    spec = yaml.safe_load(out)
    edits = [spec.get("containerEdits", {}), *(d["containerEdits"] for d in spec["devices"])]
    return [m["hostPath"] for e in edits for m in e.get("mounts", [])]


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["nvml", "management"])
def test_binaries_mounted_only_when_executable_and_mps_dir_never(
    mode: str, fake_node: MakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvidia-ctk 1.20's effect: only executable binaries; /tmp/nvidia-mps (a folder) never.

    Its executable locator skips a 0644 file; its file locator skips folders, so the MPS pipe
    folder that it lists is mounted in no mode (docs/cdi-generate.md, differences).
    """
    node = fake_node("workstation")
    (node.driver_root / "usr/bin/nvidia-smi").chmod(0o644)
    (node.driver_root / "usr/bin/nvidia-debugdump").chmod(0o100)  # anyone with a bit set
    (node.driver_root / "tmp/nvidia-mps").mkdir(parents=True)
    assert main(["cdi", "generate", *_roots(node), "--mode", mode]) == 0
    mounted = [p.replace(str(node.driver_root), "") for p in _host_paths(capsys.readouterr().out)]
    assert "/usr/bin/nvidia-smi" not in mounted
    assert "/usr/bin/nvidia-debugdump" in mounted
    assert "/usr/bin/nvidia-persistenced" in mounted
    assert "/tmp/nvidia-mps" not in mounted
    # nvidia-xconfig is a graphics tool: in the nvml spec with the graphics files, never in
    # the management spec (nvidia-ctk 1.20 mounts it in neither; today's nvidia-ctk in nvml)
    assert ("/usr/bin/nvidia-xconfig" in mounted) == (mode == "nvml")
