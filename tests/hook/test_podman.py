"""End to end: Podman 4.3 + runc run a container whose CDI spec calls ctk-hook.

The spec is hand-written here as `ctk cdi generate --hook-path` would write it for a driver
library: a mount, a device node, and createContainer hooks that call a ctk-hook wrapper.
Inside the container the symlink exists and the library is in the loader cache (the busybox
rootfs gets Debian's static ldconfig, so `ldconfig -p` can read the cache in the container).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main as ctk_main
from tests.fake_nvml import FakeNode
from tests.hook.test_ldcache import build_library
from tests.runners import busybox_rootfs, installed_hook, podman_run

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("podman", "runc", "unshare", "busybox")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in TOOLS), reason=f"needs {', '.join(TOOLS)}"
    ),
    pytest.mark.skipif(os.geteuid() != 0, reason="podman with --rootfs and mounts needs root"),
    pytest.mark.skipif(
        not os.path.exists("/sbin/ldconfig"), reason="needs a static /sbin/ldconfig"
    ),
]


def rootfs_with_ldconfig(tmp_path: Path) -> Path:
    rootfs = busybox_rootfs(tmp_path)
    (rootfs / "sbin").mkdir()
    shutil.copy("/sbin/ldconfig", rootfs / "sbin/ldconfig")
    return rootfs


def run_podman(
    tmp_path: Path, rootfs: Path, device: str, inside: str
) -> subprocess.CompletedProcess[str]:
    """Run ``inside`` in a busybox container with the CDI ``device`` from ``tmp_path/specs``."""
    run = ("--device", device, "--rootfs", str(rootfs), "/bin/sh", "-c", inside)
    return podman_run(tmp_path, tmp_path / "specs", run)


def test_hooks_run_in_podman(tmp_path: Path) -> None:
    rootfs = rootfs_with_ldconfig(tmp_path)
    library = build_library(tmp_path / "driver", "libctkfake.so.1")
    (tmp_path / "dev").mkdir()
    os.mknod(tmp_path / "dev/nvidia0", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    hook = str(installed_hook(tmp_path))
    spec = {
        "cdiVersion": "0.5.0",
        "kind": "ctk.test/gpu",
        "devices": [
            {
                "name": "0",
                "containerEdits": {
                    "deviceNodes": [
                        {"path": "/dev/nvidia0", "hostPath": str(tmp_path / "dev/nvidia0")}
                    ]
                },
            }
        ],
        "containerEdits": {
            "mounts": [
                {
                    "hostPath": str(library),
                    "containerPath": f"/usr/lib/ctk/{library.name}",
                    "options": ["ro", "nosuid", "nodev", "bind"],
                }
            ],
            "hooks": [
                {
                    "hookName": "createContainer",
                    "path": hook,
                    "args": [
                        "ctk-hook",
                        "create-symlinks",
                        "--link",
                        "libctkfake.so.1::/usr/lib/ctk/libctkfake.so",
                    ],
                },
                {
                    "hookName": "createContainer",
                    "path": hook,
                    "args": ["ctk-hook", "update-ldcache", "--folder", "/usr/lib/ctk"],
                },
                {
                    "hookName": "createContainer",
                    "path": hook,
                    "args": ["ctk-hook", "update-application-profile"],
                },
            ],
        },
    }
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs/ctk-test.json").write_text(json.dumps(spec))
    inside = (
        "readlink /usr/lib/ctk/libctkfake.so; ls /dev/nvidia0; ldconfig -p; "
        "cat /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf"
    )
    result = run_podman(tmp_path, rootfs, "ctk.test/gpu=0", inside)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "libctkfake.so.1",
        "/dev/nvidia0",
        "1 libs found in cache `/etc/ld.so.cache'",
    ]
    assert lines[3].strip() == "libctkfake.so.1 (libc6,x86-64) => /usr/lib/ctk/libctkfake.so.1"
    # the node is c 1:3, so the GPU mask has bit 3 set
    assert lines[-1] == (
        '{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0x8]}],'
        '"rules":[{"pattern":[],"profile":"_container_"}]}'
    )
    assert (tmp_path / "podman").is_dir()


def test_spec_from_ctk_cdi_generate_runs_in_podman(
    tmp_path: Path, fake_node: Callable[[str], FakeNode], capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole path: `ctk cdi generate --hook-path ctk-hook` on a fixture node, then Podman."""
    node = fake_node("dgx-a100")
    hook = installed_hook(tmp_path)
    (tmp_path / "specs").mkdir()
    output = tmp_path / "specs/nvidia.yaml"
    roots = ["--driver-root", str(node.driver_root), "--dev-root", str(node.dev_root)]
    assert ctk_main(["cdi", "generate", "--hook-path", str(hook), *roots, "-o", str(output)]) == 0
    capsys.readouterr()
    lib = "/usr/lib/x86_64-linux-gnu"
    links = ("libcuda.so.1", "libcuda.so", "libnvidia-nvvm.so.4")
    inside = "".join(f"readlink {lib}/{name}; " for name in links)
    inside += "cat /etc/ld.so.conf.d/00-nvcr-*.conf"
    result = run_podman(tmp_path, rootfs_with_ldconfig(tmp_path), "nvidia.com/gpu=0", inside)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "libcuda.so.550.54.15",
        "libcuda.so.1",
        "libnvidia-nvvm.so.550.54.15",
        lib,
        f"{lib}/vdpau",  # update-ldcache gets every folder with a mounted library
    ]
