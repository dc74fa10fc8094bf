"""`ctk-hook chmod`: modes change inside the root only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hook.bundles import make_bundle, run_hook, snapshot

pytestmark = pytest.mark.usefixtures("resolver")  # openat2, and the walk without it


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_sets_modes_and_skips_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = make_bundle(tmp_path)
    os.chmod(bundle.rootfs / "dev/dri", 0o700)
    os.symlink("/etc", bundle.rootfs / "dev/abs")  # the container's /etc, not the host's
    args = [
        "chmod",
        "--mode",
        "755",
        "--path",
        "/dev/dri",
        "--path",
        "/dev/nvidia-caps",
        "--path",
        "/dev/abs",
    ]
    assert run_hook(monkeypatch, bundle, *args) == 0
    assert (mode(bundle.rootfs / "dev/dri"), mode(bundle.rootfs / "etc")) == (0o755, 0o755)
    assert not (bundle.rootfs / "dev/nvidia-caps").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--mode", "9z", "--path", "/dev/dri"],
            "invalid --mode '9z': expected an octal mode such as 755",
            id="bad-mode",
        ),
        pytest.param(
            ["--mode", "17777", "--path", "/dev/dri"],
            "invalid --mode '17777': expected an octal mode up to 7777",
            id="big-mode",
        ),
        pytest.param(
            ["--mode", "777", "--path", "/dev/escape/x"],
            "/dev/escape/x: leads out of the container root {root}; refusing",
            id="dotdot-link",
        ),
        pytest.param(
            ["--mode", "777", "--path", "/dev/dri", "--path", " "],
            "--path must not be empty",
            id="empty-path",
        ),
    ],
)
def test_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    bundle = make_bundle(tmp_path)
    os.symlink("../../../host/lib", bundle.rootfs / "dev/escape")
    before_root, before_host = snapshot(bundle.rootfs), snapshot(bundle.outside)
    assert run_hook(monkeypatch, bundle, "chmod", *args) == 1
    assert (
        capsys.readouterr().err == f"ctk-hook chmod: error: {message.format(root=bundle.rootfs)}\n"
    )
    assert (snapshot(bundle.rootfs), snapshot(bundle.outside)) == (before_root, before_host)
    assert mode(bundle.outside / "lib") == 0o700
