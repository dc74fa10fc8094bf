"""`ctk-hook update-application-profile`: the EGL GPU mask from the container's /dev."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hook.bundles import make_bundle, run_hook, snapshot

PROFILE = "etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root (CAP_MKNOD)")


def mknod(path: Path, major: int, minor: int) -> None:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))


@needs_root
@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param(
            {"nvidia0": 0, "nvidia3": 3, "nvidiactl": 255},
            '{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0x9]}],'
            '"rules":[{"pattern":[],"profile":"_container_"}]}',
            id="two-gpus",
        ),
        pytest.param({"nvidiactl": 255, "nvidia-uvm": 0}, None, id="no-gpu"),
        pytest.param({"nvidia64": 64}, None, id="minor-beyond-mask"),
    ],
)
def test_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: dict[str, int], expected: str | None
) -> None:
    bundle = make_bundle(tmp_path)
    for name, minor in nodes.items():
        mknod(bundle.rootfs / "dev" / name, 195, minor)
    (bundle.rootfs / "dev/nvidia1").write_text("a file, not a node\n")
    assert run_hook(monkeypatch, bundle, "update-application-profile") == 0
    profile = bundle.rootfs / PROFILE
    if expected is None:
        assert not profile.parent.exists()
    else:
        assert (profile.read_text(), oct(profile.stat().st_mode & 0o777)) == (expected, "0o444")


@needs_root
def test_profile_replaces_a_link_not_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = make_bundle(tmp_path)
    mknod(bundle.rootfs / "dev/nvidia2", 195, 2)
    (bundle.rootfs / PROFILE).parent.mkdir(parents=True)
    os.symlink(bundle.outside / "etc/passwd", bundle.rootfs / PROFILE)
    before = snapshot(bundle.outside)
    assert run_hook(monkeypatch, bundle, "update-application-profile") == 0
    assert not (bundle.rootfs / PROFILE).is_symlink()
    assert '"EGLVisibleDGPUDevices",0x4]' in (bundle.rootfs / PROFILE).read_text()
    assert snapshot(bundle.outside) == before
