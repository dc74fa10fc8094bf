"""End to end: Podman 4.3 with runc applies a spec that `ctk cdi generate` wrote.

The spec comes from the dgx-a100 fixture node (fake NVML, real device nodes made with mknod);
hooks are left out here (the hooks issue tests them in Podman). Inside a busybox container the
test checks the device nodes (numbers and all), a mounted driver library and the environment.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ctk.cli.app import main
from tests.fake_nvml import FakeNode
from tests.runners import busybox_rootfs, installed_hook, podman_run

REPO = Path(__file__).resolve().parents[2]

TOOLS = ("podman", "runc", "unshare", "busybox")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
INSIDE = (
    "ls -l /dev/nvidia0 /dev/nvidia5 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-caps/* "
    "| sed 's/  */ /g' | cut -d' ' -f1,5,6,10; "
    f"grep -c ' {LIBDIR}/' /proc/mounts; cat {LIBDIR}/libnvidia-ml.so.550.54.15 | head -c 4; echo; "
    "env | grep ^NVIDIA | sort; test -S /run/nvidia-persistenced/socket && echo socket"
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in TOOLS), reason=f"needs {', '.join(TOOLS)}"
    ),
    pytest.mark.skipif(os.geteuid() != 0, reason="podman with --rootfs and mounts needs root"),
]


def test_podman_runs_a_container_with_generated_devices(
    tmp_path: Path, fake_node: Callable[[str], FakeNode], capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("dgx-a100")
    specs = tmp_path / "specs"
    code = main(
        [
            *("cdi", "generate", "--driver-root", str(node.root), "--disable-hook=all"),
            *("--hook-path=/usr/bin/nvidia-cdi-hook", "--output", str(specs / "nvidia.yaml")),
        ]
    )
    assert code == 0, capsys.readouterr().err
    devices = ("--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=5:1")
    rootfs = busybox_rootfs(tmp_path)
    result = podman_run(tmp_path, specs, (*devices, "--rootfs", str(rootfs), *_sh(INSIDE)))
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.splitlines() == [
        "cr--r--r-- 508, 678 /dev/nvidia-caps/nvidia-cap678",
        "cr--r--r-- 508, 680 /dev/nvidia-caps/nvidia-cap680",
        "crw-rw-rw- 510, 0 /dev/nvidia-uvm",
        "crw-rw-rw- 195, 0 /dev/nvidia0",
        "crw-rw-rw- 195, 5 /dev/nvidia5",
        "crw-rw-rw- 195, 255 /dev/nvidiactl",
        "14",  # every driver library of the fixture, vdpau/ and nvvm70 included
        "\x7fELF",
        f"NVIDIA_CTK_LIBCUDA_DIR={LIBDIR}",
        "NVIDIA_VISIBLE_DEVICES=void",
        "socket",
    ]


def _sh(script: str) -> tuple[str, ...]:
    return ("/bin/sh", "-c", script)


@pytest.mark.skipif(not os.path.exists("/sbin/ldconfig"), reason="needs a static /sbin/ldconfig")
@pytest.mark.parametrize("ubuntu", [False, True], ids=["plain", "ubuntu-ldconfig-real"])
def test_podman_runs_the_generated_hooks_through_ctk_hook(
    ubuntu: bool,
    tmp_path: Path,
    fake_node: Callable[[str], FakeNode],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ubuntu: the driver root's /sbin/ldconfig is a shell script around ldconfig.real (review
    4); the spec names ldconfig.real and ctk-hook runs it."""
    node = fake_node("dgx-a100")
    if ubuntu:
        (node.root / "sbin").mkdir()
        (node.root / "sbin/ldconfig").write_text('#!/bin/sh\nexec /sbin/ldconfig.real "$@"\n')
        shutil.copy("/sbin/ldconfig", node.root / "sbin/ldconfig.real")
    specs = tmp_path / "specs"
    hook = installed_hook(tmp_path)
    code = main(
        [
            *("cdi", "generate", "--driver-root", str(node.root), "--device-id=0"),
            *("--hook-path", str(hook), "--output", str(specs / "nvidia.yaml")),
        ]
    )
    assert code == 0, capsys.readouterr().err
    hooks = yaml.safe_load((specs / "nvidia.yaml").read_text())["containerEdits"]["hooks"]
    (ldcache,) = [h["args"][2:4] for h in hooks if h["args"][1] == "update-ldcache"]
    real = ["--ldconfig-path", f"{node.root}/sbin/ldconfig.real"]
    assert ldcache == (real if ubuntu else ["--folder", LIBDIR])
    rootfs = busybox_rootfs(tmp_path)
    (rootfs / "sbin").mkdir()
    shutil.copy("/sbin/ldconfig", rootfs / "sbin/ldconfig")
    inside = (
        f"for link in libcuda.so.1 libcuda.so libnvidia-ml.so.1; do readlink {LIBDIR}/$link; done; "
        "ldconfig -p | grep libnvidia-ml; "
        "cat /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf; echo"
    )
    result = podman_run(
        tmp_path, specs, ("--device", "nvidia.com/gpu=0", "--rootfs", str(rootfs), *_sh(inside))
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert [line.strip() for line in result.stdout.splitlines()] == [
        "libcuda.so.550.54.15",
        "libcuda.so.1",
        "libnvidia-ml.so.550.54.15",
        f"libnvidia-ml.so.1 (libc6,x86-64) => {LIBDIR}/libnvidia-ml.so.1",
        # update-application-profile: EGL/Vulkan see only /dev/nvidia0 (bit 0)
        '{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0x1]}],'
        '"rules":[{"pattern":[],"profile":"_container_"}]}',
    ]


def test_podman_mounts_a_libcuda_that_is_a_link_inside_the_driver_root(
    tmp_path: Path, fake_node: Callable[[str], FakeNode], capsys: pytest.CaptureFixture[str]
) -> None:
    """QA 5: libcuda.so.<version> -> /opt/nvidia/... (absolute, inside the driver root) is
    mounted at its own path from the file the link leads to, and the SONAME link works."""
    node = fake_node("dgx-a100")
    libcuda = node.root / LIBDIR.lstrip("/") / "libcuda.so.550.54.15"
    (node.root / "opt/nvidia").mkdir(parents=True)
    (node.root / "opt/nvidia/libcuda.so.550.54.15").write_text("the real libcuda\n")
    libcuda.unlink()
    libcuda.symlink_to("/opt/nvidia/libcuda.so.550.54.15")
    specs = tmp_path / "specs"
    code = main(
        [
            *("cdi", "generate", "--driver-root", str(node.root), "--disable-hook=all"),
            *("--device-id=0", "--output", str(specs / "nvidia.yaml")),
        ]
    )
    assert code == 0, capsys.readouterr().err
    rootfs = busybox_rootfs(tmp_path)
    inside = f"cat {LIBDIR}/libcuda.so.550.54.15"
    result = podman_run(
        tmp_path, specs, ("--device", "nvidia.com/gpu=0", "--rootfs", str(rootfs), *_sh(inside))
    )
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "the real libcuda\n")


def test_podman_applies_imex_and_gds_specs(
    tmp_path: Path, fake_node: Callable[[str], FakeNode], capsys: pytest.CaptureFixture[str]
) -> None:
    """An IMEX channel is written with path and hostPath only (as nvidia-ctk writes it): the
    runtime takes its numbers from the host node. GDS brings cufile.json along."""
    imex, gds = fake_node("gb200-imex"), fake_node("gpudirect")
    specs = tmp_path / "specs"
    for mode, node in (("imex", imex), ("gds", gds)):
        code = main(
            [
                *("cdi", "generate", f"--mode={mode}", "--driver-root", str(node.root)),
                *("--output", str(specs / f"{mode}.yaml")),
            ]
        )
        assert code == 0, capsys.readouterr().err
    inside = (
        "ls -l /dev/nvidia-caps-imex-channels/* /dev/nvidia-fs* "
        "| sed 's/  */ /g' | cut -d' ' -f1,5,6,10; head -c 12 /etc/cufile.json; echo"
    )
    devices = ("--device", "nvidia.com/imex-channel=10", "--device", "nvidia.com/gds=all")
    rootfs = busybox_rootfs(tmp_path)
    result = podman_run(tmp_path, specs, (*devices, "--rootfs", str(rootfs), *_sh(inside)))
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.splitlines() == [
        "crw-rw-rw- 234, 10 /dev/nvidia-caps-imex-channels/channel10",
        "crw-rw-rw- 241, 0 /dev/nvidia-fs0",
        "crw-rw-rw- 241, 1 /dev/nvidia-fs1",
        "crw-rw-rw- 241, 2 /dev/nvidia-fs2",
        "crw-rw-rw- 241, 3 /dev/nvidia-fs3",
        "{",
        '    "loggi',
    ]
