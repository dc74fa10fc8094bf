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
