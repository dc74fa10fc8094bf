"""`ctk-hook create-symlinks` against bundles made in the test, hostile ones included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hook.bundles import make_bundle, run_hook, snapshot

LIB = "usr/lib/x86_64-linux-gnu"


def test_creates_links_and_parents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = make_bundle(tmp_path)
    before = snapshot(bundle.outside)
    rc = run_hook(
        monkeypatch,
        bundle,
        "create-symlinks",
        "--link",
        f"libcuda.so.1::/{LIB}/libcuda.so",
        "--link=../libnvidia-allocator.so.1::/" + LIB + "/gbm/nvidia-drm_gbm.so",
        "--link",
        "../card1::/dev/dri/by-path/pci-0000:01:00.0-card",
    )
    assert rc == 0
    got = {k: v for k, v in snapshot(bundle.rootfs).items() if v[0] == "link"}
    assert got == {
        f"{LIB}/libcuda.so": ("link", "libcuda.so.1"),
        f"{LIB}/gbm/nvidia-drm_gbm.so": ("link", "../libnvidia-allocator.so.1"),
        "dev/dri/by-path/pci-0000:01:00.0-card": ("link", "../card1"),
    }
    assert snapshot(bundle.outside) == before


def test_second_run_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = make_bundle(tmp_path)
    args = ("create-symlinks", "--link", f"libcuda.so.1::/{LIB}/libcuda.so")
    assert run_hook(monkeypatch, bundle, *args) == 0
    once = snapshot(bundle.rootfs)
    assert run_hook(monkeypatch, bundle, *args, "--link", f"libcuda.so.1::/{LIB}/libcuda.so") == 0
    assert snapshot(bundle.rootfs) == once


def test_replaces_an_old_symlink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = make_bundle(tmp_path)
    os.symlink("stubs/libcuda.so", bundle.rootfs / LIB / "libcuda.so")
    assert (
        run_hook(
            monkeypatch, bundle, "create-symlinks", "--link", f"libcuda.so.1::/{LIB}/libcuda.so"
        )
        == 0
    )
    assert os.readlink(bundle.rootfs / LIB / "libcuda.so") == "libcuda.so.1"


def test_absolute_image_link_stays_in_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`usr/lib/x86_64-linux-gnu -> /etc` in the image is the container's /etc, not the host's."""
    bundle = make_bundle(tmp_path)
    os.rmdir(bundle.rootfs / LIB)
    os.symlink("/etc", bundle.rootfs / LIB)
    name = f"libctk-test-{os.getpid()}.so"
    assert (
        run_hook(monkeypatch, bundle, "create-symlinks", "--link", f"libcuda.so.1::/{LIB}/{name}")
        == 0
    )
    assert os.readlink(bundle.rootfs / "etc" / name) == "libcuda.so.1"
    assert not os.path.lexists(f"/etc/{name}")


@pytest.mark.parametrize(
    ("setup", "link", "message"),
    [
        pytest.param(
            "relative-escape",
            f"libcuda.so.1::/{LIB}/libcuda.so",
            f"/{LIB}: leads out of the container root {{root}}; refusing",
            id="dir-link-with-dotdot-out-of-root",
        ),
        pytest.param(
            None,
            f"../../../../../host/etc/passwd::/{LIB}/libcuda.so",
            f"/{LIB}/libcuda.so -> ../../../../../host/etc/passwd:"
            " the target leads out of the container root",
            id="target-climbs-above-root",
        ),
        pytest.param(
            "regular-file",
            f"libcuda.so.1::/{LIB}/libcuda.so",
            f"{{root}}/{LIB}/libcuda.so: already exists and is not a symlink;"
            " refusing to replace it",
            id="pre-existing-file",
        ),
        pytest.param(
            "regular-file",
            f"libcuda.so.1::/{LIB}/libcuda.so/sub/link",
            f"/{LIB}/libcuda.so/sub/link: cannot create the link: a parent in the container"
            " is not a directory",
            id="parent-is-a-file",
        ),
        pytest.param(
            None,
            "libcuda.so.1::/../../host/etc/passwd",
            "/../../host/etc: leads out of the container root {root}; refusing",
            id="link-path-with-dotdot",
        ),
        pytest.param(
            None,
            "libcuda.so.1",
            "invalid --link 'libcuda.so.1': expected TARGET::LINK",
            id="no-separator",
        ),
        pytest.param(
            None, "a::b::c", "invalid --link 'a::b::c': expected TARGET::LINK", id="two-separators"
        ),
    ],
)
def test_hostile_links_are_refused_and_change_nothing(
    tmp_path: Path,
    *,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: str | None,
    link: str,
    message: str,
) -> None:
    bundle = make_bundle(tmp_path)
    if setup == "relative-escape":
        os.rmdir(bundle.rootfs / LIB)
        os.symlink("../../../../host/lib", bundle.rootfs / LIB)
    elif setup == "regular-file":
        (bundle.rootfs / LIB / "libcuda.so").write_text("not a link\n")
    before_root, before_host = snapshot(bundle.rootfs), snapshot(bundle.outside)
    # a valid link given first must not be created either: all or nothing
    rc = run_hook(
        monkeypatch, bundle, "create-symlinks", "--link", "x::/etc/ok-link", "--link", link
    )
    assert rc == 1
    assert (
        capsys.readouterr().err
        == f"ctk-hook create-symlinks: error: {message.format(root=bundle.rootfs)}\n"
    )
    assert snapshot(bundle.rootfs) == before_root
    assert snapshot(bundle.outside) == before_host
