"""Where the doctor runs: host, container or pod, from the markers a root holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.doctor.model import Where
from ctk.host.facts.container import MountEntry, detect_where, parse_mountinfo, read_mounts
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot

# /proc/self/mountinfo as read on an H200 Firecracker VM booted from an image built as a
# container (2026-12-04, device run): ext4 root on /dev/vda, devtmpfs /dev, and /.dockerenv.
VM = """22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=65973716k,nr_inodes=16493429,mode=755
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=131961976k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
29 27 254:16 / /usr/local/nvidia ro,nosuid,nodev,relatime - squashfs /dev/vdb ro,errors=continue
"""
# A Docker container: overlay root, tmpfs /dev.
OVERLAY = """1207 1120 0:151 / / rw,relatime master:567 - overlay overlay rw,lowerdir=/var/lib/x
1208 1207 0:153 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
"""
# containerd's devmapper snapshotter: a block device root, but the engine's tmpfs /dev.
DEVMAPPER = """900 800 253:7 / / rw,relatime - ext4 /dev/mapper/containerd-pool-snap-12 rw
901 900 0:90 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
"""
# The native snapshotter: a directory of the host's file system bound at /, /dev bound in.
NATIVE = """900 800 259:2 /var/lib/containerd/snapshots/12/fs / rw - ext4 /dev/nvme0n1p2 rw
901 900 0:6 / /dev rw - devtmpfs devtmpfs rw,mode=755
"""
# A host whose root is on a block device (no marker files).
HOST = VM.replace("/dev/vda", "/dev/nvme0n1p2")


@pytest.mark.parametrize(
    ("files", "env", "expected"),
    [
        pytest.param({}, {}, Where.HOST, id="nothing"),
        pytest.param({"proc/self/mountinfo": HOST}, {}, Where.HOST, id="host"),
        pytest.param({".dockerenv": ""}, {}, Where.CONTAINER, id="dockerenv"),
        pytest.param({"run/.containerenv": ""}, {}, Where.CONTAINER, id="containerenv"),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": VM}, {}, Where.HOST, id="vm-from-an-image"
        ),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": VM, "proc/1/cgroup": "0::/kubepods/x\n"},
            {},
            Where.CONTAINER,
            id="vm-marker-but-container-cgroup",
        ),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": OVERLAY}, {}, Where.CONTAINER, id="overlay"
        ),
        pytest.param({"proc/self/mountinfo": OVERLAY}, {}, Where.CONTAINER, id="overlay-alone"),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": DEVMAPPER},
            {},
            Where.CONTAINER,
            id="devmapper-tmpfs-dev",
        ),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": NATIVE},
            {},
            Where.CONTAINER,
            id="native-snapshot-subdir-root",
        ),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": VM.replace(" ext4 ", " tmpfs ")},
            {},
            Where.CONTAINER,
            id="tmpfs-root",
        ),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": VM.replace(" ext4 /dev/vda", " ext4 vda")},
            {},
            Where.CONTAINER,
            id="root-not-from-a-device",
        ),
        pytest.param(
            {
                ".dockerenv": "",
                "proc/self/mountinfo": VM.replace("24 27 0:6 / /dev ", "24 27 0:6 / /xdev "),
            },
            {},
            Where.CONTAINER,
            id="no-dev-mount",
        ),
        pytest.param(
            {".dockerenv": ""},
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
            Where.POD,
            id="pod",
        ),
        pytest.param(
            {".dockerenv": "", "proc/self/mountinfo": VM},
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
            Where.HOST,
            id="vm-with-kubernetes-env",
        ),
    ],
)
def test_where(files: dict[str, str], env: dict[str, str], expected: Where, tmp_path: Path) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    g = Gatherer(HostRoot(tmp_path))
    assert detect_where(g, env, read_mounts(g)) is expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
            MountEntry("/mnt2", "/mnt1", "ext3", "/dev/root"),
            id="proc5-example-with-an-optional-field",
        ),
        pytest.param(
            "40 27 0:50 / /mnt/my\\040disk\\011x rw shared:2 master:3 - fuse.sshfs a\\134b rw",
            MountEntry("/mnt/my disk\tx", "/", "fuse.sshfs", "a\\b"),
            id="octal-escapes-and-two-optional-fields",
        ),
        pytest.param(
            "41 27 0:51 / /run/u rw - tmpfs tmpfs rw",
            MountEntry("/run/u", "/", "tmpfs", "tmpfs"),
            id="no-optional-field",
        ),
        pytest.param("41 27 0:51 / /run/u rw tmpfs tmpfs rw", None, id="no-separator"),
        pytest.param("41 27 0:51 / - tmpfs tmpfs rw", None, id="too-few-fields-before"),
        pytest.param("41 27 0:51 / /run/u rw - tmpfs", None, id="no-source"),
    ],
)
def test_parse_mountinfo(line: str, expected: MountEntry | None) -> None:
    assert parse_mountinfo(line + "\n") == ((expected,) if expected is not None else ())


def test_the_last_mount_over_root_is_the_one_seen(tmp_path: Path) -> None:
    """Where several mounts stack on /, the last one, the root the process sees, decides."""
    below_overlay = OVERLAY.splitlines()[0] + "\n" + VM
    over_overlay = VM + OVERLAY
    (tmp_path / ".dockerenv").write_text("")
    for text, expected in ((below_overlay, Where.HOST), (over_overlay, Where.CONTAINER)):
        g = Gatherer(HostRoot(tmp_path))
        assert detect_where(g, {}, parse_mountinfo(text)) is expected
