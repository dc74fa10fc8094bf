"""`ctk cdi inject` gives the OCI spec Podman 4.3 (a real CDI runtime) gives a container.

Podman runs through a wrapper runtime that keeps each bundle's config.json, then execs runc.
One container without devices gives the baseline; ctk injects the devices into it; a second
container with the same devices must have the same env, device nodes, cgroup rules, hooks and
mounts (in the same order). Same private mount namespace recipe as test_podman_cdi.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ctk.cdi.inject import HostDevice, apply_edits, merge_edits, needed_host_paths
from ctk.cdi.validate import validate_text
from tests.cdi.test_podman_cdi import world

__all__ = ["world"]

pytestmark = pytest.mark.integration

SPEC = """\
cdiVersion: 0.5.0
kind: example.com/inject
containerEdits:
  env: [CTK_COMMON=1, TERM=ctk]
  deviceNodes:
  - path: /dev/ctk-null
    hostPath: /dev/null
  mounts:
  - hostPath: {world}/share
    containerPath: /opt/ctk/share
    options: [ro, nosuid, nodev, bind]
  hooks:
  - hookName: createContainer
    path: /bin/true
    args: ["true", common]
devices:
- name: a
  containerEdits:
    env: [CTK_A=1, CTK_COMMON=from-a]
    deviceNodes:
    - path: /dev/ctk-zero
      hostPath: /dev/zero
      permissions: rw
    mounts:
    - hostPath: {world}/share
      containerPath: /opt
      options: [ro, bind]
    hooks:
    - hookName: prestart
      path: /bin/true
      args: ["true", a]
- name: b
  containerEdits:
    env: [CTK_B=1]
    deviceNodes:
    - path: /dev/ctk-full
      type: c
      major: 1
      minor: 7
    mounts:
    - hostPath: {world}/share
      containerPath: /opt/b
      options: [ro, rbind]
"""

WRAPPER = """#!/bin/sh
prev=
for arg in "$@"; do
    if [ "$prev" = --bundle ] || [ "$prev" = -b ]; then
        cp "$arg/config.json" "{out}/$(date +%s%N).json"
    fi
    prev=$arg
done
exec runc "$@"
"""


def _run(world: Path, devices: list[str]) -> dict[str, object]:
    out = world / "configs"
    out.mkdir(exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    flags = " ".join(f"--device {d}" for d in devices)
    script = (
        "mount -n -t overlay overlay"
        f" -o lowerdir=/etc,upperdir={world}/upper,workdir={world}/work /etc"
        f" && mkdir -p /etc/cdi && mount -n --bind {world}/etc /etc/cdi"
        " && mount -n -t tmpfs tmpfs /run && mkdir /run/cdi"
        f" && mount -n --bind {world}/run /run/cdi"
        " && mkdir /run/ctk-runroot"
        f" && exec podman --root {world}/root --runroot /run/ctk-runroot --tmpdir {world}/tmp"
        f" --runtime {world}/wrapper run --rm {flags} --rootfs {world}/rootfs /bin/sh -c true"
    )
    env = {**os.environ, "CONTAINERS_CONF": str(world / "containers.conf")}
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (config,) = out.iterdir()
    loaded = json.loads(config.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _seen(config: dict[str, object], own_env: int) -> dict[str, object]:
    """What CDI changes, with what differs between any two containers left out.

    The first ``own_env`` env entries are Podman's own (in no fixed order, with the container's
    hostname); the mounts' container-specific sources are left out.
    """
    process = config["process"]
    linux = config["linux"]
    assert isinstance(process, dict)
    assert isinstance(linux, dict)
    mounts = config["mounts"]
    assert isinstance(mounts, list)
    return {
        "env": (
            sorted(e.partition("=")[0] for e in process["env"][:own_env]),
            process["env"][own_env:],
        ),
        "devices": linux.get("devices"),
        "cgroup": linux["resources"].get("devices"),
        "hooks": config.get("hooks"),
        "mounts": [
            m if str(m.get("destination", "")).startswith("/opt") else m["destination"]
            for m in mounts
        ],
    }


def test_inject_matches_podman(world: Path) -> None:
    for mount_point in ("b", "ctk/share"):  # /opt is the share, read-only: mount points exist
        (world / "share" / mount_point).mkdir(parents=True)
    (world / "etc" / "inject.yaml").write_text(SPEC.format(world=world))
    wrapper = world / "wrapper"
    wrapper.write_text(WRAPPER.replace("{out}", str(world / "configs")))
    wrapper.chmod(0o755)
    for applet in ("true",):
        (world / "rootfs" / "bin" / applet).symlink_to("busybox")

    baseline = _run(world, [])
    requested = ["example.com/inject=b", "example.com/inject=a"]
    podman = _run(world, requested)

    report = validate_text(SPEC.format(world=world), "inject.yaml")
    assert report.valid and report.spec is not None
    spec = report.spec
    devices = {d["name"]: d["containerEdits"] for d in spec["devices"]}  # type: ignore[attr-defined]
    edits = merge_edits([spec["containerEdits"], devices["b"], devices["a"]])  # type: ignore[list-item]
    hosts = {}
    for path in needed_host_paths(edits):
        rdev = os.stat(path).st_rdev
        hosts[path] = HostDevice("c", os.major(rdev), os.minor(rdev))
    ours = apply_edits(baseline, edits, hosts)
    own_env = len(baseline["process"]["env"])  # type: ignore[index]
    assert _seen(ours, own_env) == _seen(podman, own_env)
