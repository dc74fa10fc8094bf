"""A node with no Python: a chroot holding only busybox, the host's static ldconfig and the
installed native hook runs create-symlinks, update-ldcache and chmod on a bundle (no /proc)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.hook.native import hook_binary
from tests.hook.test_ldcache import LDCONFIG, build_library

HOOK = "/usr/local/libexec/ctk/ctk-hook"


@pytest.mark.integration
@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")
@pytest.mark.skipif(
    shutil.which("busybox") is None or shutil.which("gcc") is None or not os.path.exists(LDCONFIG),
    reason="needs busybox, gcc (for a test library) and a static /sbin/ldconfig",
)
def test_hooks_run_in_a_chroot_without_python(tmp_path: Path) -> None:
    node = tmp_path / "node"
    (node / "bin").mkdir(parents=True)
    busybox = shutil.which("busybox")
    assert busybox is not None
    shutil.copy(busybox, node / "bin/busybox")
    for applet in ("sh", "cat", "readlink", "stat"):
        (node / "bin" / applet).symlink_to("busybox")
    (node / "sbin").mkdir()
    shutil.copy(LDCONFIG, node / "sbin/ldconfig")
    (node / HOOK.lstrip("/")).parent.mkdir(parents=True)
    shutil.copy(hook_binary(), node / HOOK.lstrip("/"))
    bundle = node / "bundle"
    rootfs = bundle / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "dev/dri").mkdir(parents=True)
    os.chmod(rootfs / "dev/dri", 0o700)
    build_library(rootfs / "usr/lib/ctk", "libctkfake.so.1")
    (bundle / "config.json").write_text(json.dumps({"root": {"path": "rootfs"}}))
    assert not list(node.rglob("python*"))
    chroot = shutil.which("chroot")
    assert chroot is not None
    state = json.dumps({"bundle": "/bundle"})  # as the hook sees it, inside the chroot
    for argv in (
        ["create-symlinks", "--link", "libctkfake.so.1.0.0::/usr/lib/ctk/libctkfake.so.1"],
        ["update-ldcache", "--folder", "/usr/lib/ctk"],
        ["chmod", "--mode", "755", "--path", "/dev/dri"],
    ):
        result = subprocess.run(
            [chroot, str(node), HOOK, *argv],
            input=state, capture_output=True, text=True, timeout=60, env={}, check=False,
        )  # fmt: skip
        assert (result.returncode, result.stderr) == (0, ""), argv
    assert os.readlink(rootfs / "usr/lib/ctk/libctkfake.so.1") == "libctkfake.so.1.0.0"
    assert stat.S_IMODE((rootfs / "dev/dri").stat().st_mode) == 0o755
    cache = subprocess.run(
        [LDCONFIG, "-p", "-C", str(rootfs / "etc/ld.so.cache")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "libctkfake.so.1 (libc6,x86-64) => /usr/lib/ctk/libctkfake.so.1" in cache.stdout
