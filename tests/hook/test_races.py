"""A folder of the root swapped for a symlink to the host between check and use (the
CVE-2024-0132 class): the hooks' writes, chmods and mkdirs must still land inside the root.

The swap is made deterministic by the hook's test build (native/testhook_on.go): just before
the hook's first such operation, the folder is renamed to `<name>.orig` and a symlink to a host
folder takes its place, as a process writing into the root (a sibling container sharing a volume)
could do.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hook.bundles import Bundle, make_bundle, run_hook, snapshot

pytestmark = pytest.mark.usefixtures("resolver")  # openat2, and the walk without it

LIB = "usr/lib/x86_64-linux-gnu"


def swap_before(
    monkeypatch: pytest.MonkeyPatch, operation: str, folder: Path, outside: Path, name: str = ""
) -> None:
    """Before the hook's first ``operation`` (symlink, mkdir, rename, chmod, create, open; opened:
    just after) on ``name`` (any when empty), swap ``folder`` for a symlink to ``outside``."""
    monkeypatch.setenv("CTK_HOOK_SWAP", "\t".join((operation, name, str(folder), str(outside))))


@pytest.mark.parametrize(
    ("function", "link", "made"),
    [
        pytest.param("symlink", f"/{LIB}/libcuda.so", "libcuda.so", id="symlink"),
        pytest.param("mkdir", f"/{LIB}/gbm/libcuda.so", "gbm/libcuda.so", id="mkdir-parents"),
        pytest.param("rename", f"/{LIB}/old", "old", id="replace-old-link"),
    ],
)
def test_create_symlinks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str, link: str, made: str
) -> None:
    bundle = make_bundle(tmp_path)
    os.symlink("stale", bundle.rootfs / LIB / "old")
    before = snapshot(bundle.outside)
    swap_before(monkeypatch, function, bundle.rootfs / LIB, bundle.outside / "lib")
    assert run_hook(monkeypatch, bundle, "create-symlinks", "--link", f"libcuda.so.1::{link}") == 0
    assert snapshot(bundle.outside) == before
    assert os.readlink(bundle.rootfs / (LIB + ".orig") / made) == "libcuda.so.1"


@pytest.mark.parametrize(
    ("swapped", "path", "changed"),
    [
        pytest.param("dev/dri", "/dev/dri", "dev/dri.orig", id="the-path-itself"),
        pytest.param("dev", "/dev/dri", "dev.orig/dri", id="its-parent"),
    ],
)
def test_chmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str, path: str, changed: str
) -> None:
    bundle = make_bundle(tmp_path)
    (bundle.outside / "lib/dri").mkdir()
    os.chmod(bundle.outside / "lib/dri", 0o700)
    before = snapshot(bundle.outside)
    swap_before(monkeypatch, "chmod", bundle.rootfs / swapped, bundle.outside / "lib")
    assert run_hook(monkeypatch, bundle, "chmod", "--mode", "751", "--path", path) == 0
    assert snapshot(bundle.outside) == before
    assert stat.S_IMODE((bundle.rootfs / changed).stat().st_mode) == 0o751


def test_ld_so_conf_d(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """enable-cuda-compat writes its conf file into the folder it checked."""
    bundle = make_bundle(tmp_path)
    (bundle.rootfs / "etc/ld.so.conf.d").mkdir()
    (bundle.rootfs / "etc/ld.so.cache").write_bytes(b"")
    (bundle.rootfs / "usr/local/cuda/compat").mkdir(parents=True)
    (bundle.rootfs / "usr/local/cuda/compat/libcuda.so.580.65.06").write_bytes(b"\x7fELF")
    before = snapshot(bundle.outside)
    swap_before(monkeypatch, "create", bundle.rootfs / "etc/ld.so.conf.d", bundle.outside)
    args = ("enable-cuda-compat", "--host-driver-version", "570.1")
    assert run_hook(monkeypatch, bundle, *args) == 0
    assert snapshot(bundle.outside) == before
    [conf] = (bundle.rootfs / "etc/ld.so.conf.d.orig").glob("00-compat-*.conf")
    assert conf.read_text() == "/usr/local/cuda/compat\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root (CAP_MKNOD)")
def test_application_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = make_bundle(tmp_path)
    os.mknod(bundle.rootfs / "dev/nvidia0", 0o666 | stat.S_IFCHR, os.makedev(195, 0))
    folder = bundle.rootfs / "etc/nvidia/nvidia-application-profiles-rc.d"
    folder.mkdir(parents=True)
    before = snapshot(bundle.outside)
    swap_before(monkeypatch, "create", folder, bundle.outside / "etc")
    assert run_hook(monkeypatch, bundle, "update-application-profile") == 0
    assert snapshot(bundle.outside) == before
    written = folder.with_name(folder.name + ".orig") / "10-container.conf"
    assert '"EGLVisibleDGPUDevices",0x1]' in written.read_text()


def test_folder_swapped_while_walking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Swapped right after the walk opened it: the walk holds the folder, not its name."""
    bundle = make_bundle(tmp_path)
    before = snapshot(bundle.outside)
    swap_before(
        monkeypatch, "opened", bundle.rootfs / LIB, bundle.outside / "lib", "x86_64-linux-gnu"
    )
    link = f"libcuda.so.1::/{LIB}/gbm/libcuda.so"
    assert run_hook(monkeypatch, bundle, "create-symlinks", "--link", link) == 0
    assert (bundle.rootfs / LIB).is_symlink()  # the swap did happen
    assert snapshot(bundle.outside) == before
    assert os.readlink(bundle.rootfs / (LIB + ".orig") / "gbm/libcuda.so") == "libcuda.so.1"


def test_bundle_helper_sees_outside(tmp_path: Path) -> None:
    """The snapshot used above does notice a change outside (so the tests above can fail)."""
    bundle: Bundle = make_bundle(tmp_path)
    before = snapshot(bundle.outside)
    os.chmod(bundle.outside / "lib", 0o755)
    assert snapshot(bundle.outside) != before


def test_chmod_refuses_a_file_that_became_a_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Swapped between reading the last name and opening it: the hook holds the symlink itself."""
    bundle = make_bundle(tmp_path)
    before = snapshot(bundle.outside)
    swap_before(monkeypatch, "open", bundle.rootfs / "dev/dri", bundle.outside / "lib", "dri")
    assert run_hook(monkeypatch, bundle, "chmod", "--mode", "755", "--path", "/dev/dri") == 1
    assert capsys.readouterr().err == (
        f"ctk-hook chmod: error: {bundle.rootfs}/dev/dri: became a symlink;"
        " refusing to change its mode\n"
    )
    assert snapshot(bundle.outside) == before
