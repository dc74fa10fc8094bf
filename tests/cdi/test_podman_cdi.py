"""A real CDI runtime (Podman 4.3) resolves exactly the devices `ctk cdi list` lists.

Podman reads only /etc/cdi and /var/run/cdi, so each run happens in a private mount namespace
with an overlay on /etc and a tmpfs on /run, the test's spec directories bound over both (recipe
in REAL-CONSUMERS.md). Podman 4.3 embeds CDI 0.5, so the specs stay at cdiVersion 0.5.0 and use
classes longer than one letter (that library panics on those).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ctk.host.cdi_specs import load_spec_dirs

pytestmark = pytest.mark.integration

CONF = """[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
netns = "none"
[network]
network_backend = "cni"
[engine]
runtime = "runc"
"""

SPECS = {
    "etc/gpu.yaml": "cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n"
    "- name: a\n  containerEdits:\n    env: [CTK_A=etc]\n"
    "- name: b\n  containerEdits:\n    env: [CTK_B=etc]\n"
    "- name: dup\n  containerEdits:\n    env: [CTK_D=1]\n",
    "etc/gpu-dup.yaml": "cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n"
    "- name: dup\n  containerEdits:\n    env: [CTK_D=2]\n",
    "etc/broken.yaml": "cdiVersion: 0.5.0\nkind: example.com/broken\ndevices:\n"
    "- name: x\n  containerEdits:\n    env: [CTK_X=1]\n"
    "- name: x\n  containerEdits:\n    env: [CTK_X=2]\n",
    "run/gpu.yaml": "cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n"
    "- name: a\n  containerEdits:\n    env: [CTK_A=run]\n",
}


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (mount namespaces)"
    for tool in ("podman", "unshare", "runc", "busybox"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@pytest.fixture
def world(tmp_path: Path) -> Path:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    for name, text in SPECS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    rootfs = tmp_path / "rootfs" / "bin"
    rootfs.mkdir(parents=True)
    shutil.copy(shutil.which("busybox") or "", rootfs / "busybox")
    for applet in ("sh", "env"):
        (rootfs / applet).symlink_to("busybox")
    (tmp_path / "containers.conf").write_text(CONF)
    for sub in ("upper", "work", "root", "tmp"):
        (tmp_path / sub).mkdir()
    return tmp_path


def _podman(world: Path, device: str) -> subprocess.CompletedProcess[str]:
    script = (
        "mount -n -t overlay overlay"
        f" -o lowerdir=/etc,upperdir={world}/upper,workdir={world}/work /etc"
        f" && mkdir -p /etc/cdi && mount -n --bind {world}/etc /etc/cdi"
        " && mount -n -t tmpfs tmpfs /run && mkdir /run/cdi"
        f" && mount -n --bind {world}/run /run/cdi"
        # podman wants a runroot under 50 characters: the private /run tmpfs has room
        " && mkdir /run/ctk-runroot"
        f" && exec podman --root {world}/root --runroot /run/ctk-runroot --tmpdir {world}/tmp"
        f" run --rm --device {device} --rootfs {world}/rootfs /bin/sh -c env"
    )
    env = {**os.environ, "CONTAINERS_CONF": str(world / "containers.conf")}
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_podman_resolves_what_ctk_lists(world: Path) -> None:
    registry = load_spec_dirs([world / "etc", world / "run"])
    listed = [str(d.name) for d in registry.devices]
    assert listed == ["example.com/gpu=a", "example.com/gpu=b"]
    assert registry.device("example.com/gpu=a").source == f"{world}/run/gpu.yaml"  # type: ignore[union-attr]
    for device in [
        "example.com/gpu=a",
        "example.com/gpu=b",
        "example.com/gpu=dup",
        "example.com/broken=x",
    ]:
        result = _podman(world, device)
        if device in listed:
            assert result.returncode == 0, result.stderr
        else:
            assert result.returncode != 0
            assert f"unresolvable CDI devices {device}" in result.stderr
    env = _podman(world, "example.com/gpu=a").stdout.splitlines()
    assert "CTK_A=run" in env  # the higher-priority directory wins, as ctk says


NUMBERS = {
    # go-yaml reads 1e0 and 3.0 as floats; sigs.k8s.io/yaml prints them as JSON 1 and 3, which
    # Go decodes into the int64 fields. 3.5 cannot be decoded: the whole spec is rejected.
    "etc/float.yaml": "cdiVersion: 0.5.0\nkind: example.com/float\ndevices:\n"
    "- name: null\n  containerEdits:\n"
    "    deviceNodes: [{path: /dev/ctk-null, type: c, major: 1e0, minor: 3.0}]\n",
    "etc/fraction.yaml": "cdiVersion: 0.5.0\nkind: example.com/fraction\ndevices:\n"
    "- name: null\n  containerEdits:\n"
    "    deviceNodes: [{path: /dev/ctk-null, type: c, major: 1, minor: 3.5}]\n",
}


def test_podman_reads_numbers_as_ctk_does(world: Path) -> None:
    for name, text in NUMBERS.items():
        (world / name).write_text(text.replace("name: null", 'name: "null"'))
    registry = load_spec_dirs([world / "etc", world / "run"])
    assert registry.device("example.com/float=null") is not None
    assert registry.device("example.com/fraction=null") is None
    accepted = _podman(world, "example.com/float=null")
    assert accepted.returncode == 0, accepted.stderr
    refused = _podman(world, "example.com/fraction=null")
    assert refused.returncode != 0
    assert "unresolvable CDI devices example.com/fraction=null" in refused.stderr
