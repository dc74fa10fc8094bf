"""`disable-device-node-modification` for real: a private mount namespace stands in for a host
whose driver allows device-file modification, and the hook mounts its copy over the container's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.hook.bundles import Bundle, make_bundle
from tests.hook.native import hook_binary, test_hook_binary

REPO = Path(__file__).resolve().parents[2]
PARAMS = "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n"
needs_namespace = pytest.mark.skipif(
    shutil.which("unshare") is None or os.geteuid() != 0,
    reason="needs unshare (util-linux) and root (mounting)",
)


def run_with_host_params(
    tmp_path: Path,
    bundle: Bundle,
    host_params: str,
    show: Path,
    *,
    program: Path | None = None,
    also: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run disable-device-node-modification in a private mount namespace whose host
    /proc/driver/nvidia/params says ``host_params``; prints ``show`` (the container's file) and
    whether it is writable (after ``also``, when given)."""
    (tmp_path / "host-params").write_text(host_params)
    (tmp_path / "state.json").write_text(bundle.state)
    script = (
        # the host's /proc/driver is replaced, in this namespace only, by one that says 1
        "mount -n -t tmpfs tmpfs /proc/driver && mkdir /proc/driver/nvidia && "
        'cp "$1/host-params" /proc/driver/nvidia/params && '
        '"$2" disable-device-node-modification --container-spec "$1/state.json" && '
        'cat "$4" "$3" && if echo x >> "$3"; then echo writable; else echo read-only; fi'
    )
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         str(tmp_path), str(program or hook_binary()), str(show), str(also or "/dev/null")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_params_are_masked_read_only(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    container_params = bundle.rootfs / "proc/driver/nvidia/params"
    container_params.parent.mkdir(parents=True)
    container_params.write_text(PARAMS)  # stands for the container's view of the host's /proc
    result = run_with_host_params(tmp_path, bundle, PARAMS, container_params)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout
        == PARAMS.replace("ModifyDeviceFiles: 1", "ModifyDeviceFiles: 0") + "read-only\n"
    )
    # outside that namespace nothing is mounted and the file is as it was
    assert container_params.read_text() == PARAMS
    # the copy lived on a tmpfs mounted in the container's /run, not in the image
    [scratch] = os.listdir(bundle.rootfs / "run/ctk-hook")
    assert os.listdir(bundle.rootfs / "run/ctk-hook" / scratch) == []


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_folder_swapped_before_the_bind_mount(tmp_path: Path) -> None:
    """The container's /proc/driver/nvidia becomes a symlink to a host folder just before the
    bind mount: the copy is still mounted over the file the hook checked, not the host's."""
    bundle = make_bundle(tmp_path)
    folder = bundle.rootfs / "proc/driver/nvidia"
    folder.mkdir(parents=True)
    (folder / "params").write_text(PARAMS)
    (bundle.outside / "params").write_text(PARAMS)
    # the test build swaps the folder just before the bind mount (native/testhook_on.go)
    os.environ["CTK_HOOK_SWAP"] = f"bind\t\t{folder}\t{bundle.outside}"
    try:
        result = run_with_host_params(
            tmp_path, bundle, PARAMS, Path(str(folder) + ".orig/params"),
            program=test_hook_binary(), also=bundle.outside / "params",
        )  # fmt: skip
    finally:
        del os.environ["CTK_HOOK_SWAP"]
    assert result.returncode == 0, result.stderr
    masked = PARAMS.replace("ModifyDeviceFiles: 1", "ModifyDeviceFiles: 0")
    assert result.stdout == PARAMS + masked + "read-only\n"
    assert (bundle.outside / "params").read_text() == PARAMS
    assert folder.is_symlink()  # the swap did happen
