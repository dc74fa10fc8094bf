"""`disable-device-node-modification` for real: a private mount namespace stands in for a host
whose driver allows device-file modification, and the hook mounts its copy over the container's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hook.bundles import make_bundle

REPO = Path(__file__).resolve().parents[2]
PARAMS = "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n"


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_params_are_masked_read_only(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    container_params = bundle.rootfs / "proc/driver/nvidia/params"
    container_params.parent.mkdir(parents=True)
    container_params.write_text(PARAMS)  # stands for the container's view of the host's /proc
    (tmp_path / "host-params").write_text(PARAMS)
    (tmp_path / "state.json").write_text(bundle.state)
    hook = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from ctk.hook.main import main; "
        f"sys.exit(main(['disable-device-node-modification', '--container-spec', "
        f"{str(tmp_path / 'state.json')!r}]))"
    )
    script = (
        # the host's /proc/driver is replaced, in this namespace only, by one that says 1
        "mount -t tmpfs tmpfs /proc/driver && mkdir /proc/driver/nvidia && "
        'cp "$1/host-params" /proc/driver/nvidia/params && "$2" -c "$3" && '
        'cat "$4" && if echo x >> "$4"; then echo writable; else echo read-only; fi'
    )
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         str(tmp_path), sys.executable, hook, str(container_params)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
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
    (tmp_path / "host-params").write_text(PARAMS)
    (tmp_path / "state.json").write_text(bundle.state)
    hook = (
        f"import os, sys; sys.path.insert(0, {str(REPO)!r}); import ctk.hook.params as p; "
        "from ctk.hook.main import main; real = p._mount\n"
        "def swapping(source, target, fstype, flags, data):\n"
        f"    if flags == p.MS_BIND and not os.path.islink({str(folder)!r}):\n"
        f"        os.rename({str(folder)!r}, {str(folder) + '.orig'!r})\n"
        f"        os.symlink({str(bundle.outside)!r}, {str(folder)!r})\n"
        "    real(source, target, fstype, flags, data)\n"
        "p._mount = swapping\n"
        f"sys.exit(main(['disable-device-node-modification', '--container-spec', "
        f"{str(tmp_path / 'state.json')!r}]))"
    )
    script = (
        "mount -t tmpfs tmpfs /proc/driver && mkdir /proc/driver/nvidia && "
        'cp "$1/host-params" /proc/driver/nvidia/params && "$2" -c "$3" && '
        'cat "$4" "$5" && if echo x >> "$5"; then echo writable; else echo read-only; fi'
    )
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         str(tmp_path), sys.executable, hook, str(bundle.outside / "params"),
         str(folder) + ".orig/params"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    masked = PARAMS.replace("ModifyDeviceFiles: 1", "ModifyDeviceFiles: 0")
    assert result.stdout == PARAMS + masked + "read-only\n"
    assert (bundle.outside / "params").read_text() == PARAMS
