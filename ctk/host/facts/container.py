"""What a process inside a container sees: environment, /dev/shm, image files."""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
from collections.abc import Mapping

from ctk.doctor.facts import (
    CompatLibrary,
    ContainerFacts,
    Unavailable,
)
from ctk.doctor.model import Where
from ctk.errors import CtkError
from ctk.host import files
from ctk.host.facts.gatherer import (
    LIB_VERSION,
    LIBRARY_DIRS,
    READ_TIMEOUT_S,
    TORCH_GLOBS,
    Gatherer,
)

FWD_COMPAT_NOTE = ".note.cuda.fwd_compatibility"

# --- inside a container -------------------------------------------------------------------


def read_environ(g: Gatherer) -> dict[str, str]:
    """The environment of the diagnosed process (`/proc/self/environ` under the root)."""
    host = g.host("/proc/self/environ")
    try:
        data = files.read_bytes(host, limit=files.PROC_LIMIT) if host is not None else b""
    except CtkError:
        return {}
    env = {}
    for item in data.split(b"\0"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep:
            env[key] = value
    return env


def _mount_points(g: Gatherer) -> set[str]:
    points = set()
    for line in (g.text("/proc/self/mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 4:
            points.add(fields[4].replace("\\040", " "))
    return points


def _shm_size(g: Gatherer) -> int | Unavailable | None:
    host = g.host("/dev/shm")
    if host is None or not host.is_dir():
        return None
    try:
        info = os.statvfs(host)
    except OSError as exc:
        return Unavailable(f"statvfs: {exc.strerror}")
    return info.f_frsize * info.f_blocks


def gather_container(g: Gatherer, env: Mapping[str, str]) -> ContainerFacts:
    """/dev/shm, driver files of the image, HAMi preload, allocation markers."""
    mounts = _mount_points(g)
    image_libs = []
    for directory in LIBRARY_DIRS:
        for pattern in ("libcuda.so.*.*", "libnvidia-ml.so.*.*"):
            for path in g.glob(f"{directory}/{pattern}"):
                host = g.host(path)
                if host is not None and not host.is_symlink() and path not in mounts:
                    image_libs.append(path)
    preload = (g.text("/etc/ld.so.preload") or "").split()
    timed_out: int | Unavailable | None = Unavailable("statvfs did not answer in time")
    shm = g.bounded("statvfs /dev/shm", lambda: _shm_size(g), timed_out, READ_TIMEOUT_S)
    return ContainerFacts(
        env=dict(env),
        shm_size=shm,
        memlock=None,
        image_libraries=tuple(sorted(set(image_libs))),
        preload=tuple(preload),
        has_torch=any(g.glob(pattern) for pattern in TORCH_GLOBS),
        allocation_markers=g.exists("/var/run/nvidia-container-devices"),
        compat=_compat(g, env, mounts),
    )


def _compat(g: Gatherer, env: Mapping[str, str], mounts: set[str]) -> CompatLibrary | None:
    """The highest `libcuda.so.<version>` of the image's compat directory, and its ELF note."""
    from ctk.host.elf import read_note
    from ctk.host.facts.kernel import ld_conf_dirs

    found = []
    for path in g.glob("/usr/local/cuda*/compat/libcuda.so.*.*"):
        match = LIB_VERSION.search(path)
        host = g.host(path)
        if match and host is not None and not host.is_symlink():
            numbers = tuple(int(p) for p in match.group(1).split("."))
            found.append((numbers, match.group(1), path, host))
    if not found:
        return None
    _, version, path, host = max(found)
    note = read_note(host, FWD_COMPAT_NOTE)
    payload: dict[str, object] = {}
    if note:
        with contextlib.suppress(ValueError):
            decoded = json.loads(note.rstrip(b"\0").decode("utf-8", "replace"))
            payload = (
                {str(k).lower(): v for k, v in decoded.items()} if isinstance(decoded, dict) else {}
            )
    branches = payload.get("driver")
    directory = posixpath.dirname(path)
    ld_path = [d.rstrip("/") for d in env.get("LD_LIBRARY_PATH", "").split(":")]
    on_path = (
        "LD_LIBRARY_PATH"
        if directory in ld_path
        else ("/etc/ld.so.conf" if directory in ld_conf_dirs(g) else None)
    )
    mounted = sorted(
        point
        for point in mounts
        if posixpath.basename(point) == posixpath.basename(path) and point != path
    )
    return CompatLibrary(
        path=path,
        version=version,
        mounted_at=mounted[0] if mounted else None,
        cuda_version=str(payload["cuda version"]) if "cuda version" in payload else None,
        driver_branches=tuple(b for b in branches if isinstance(b, int))
        if isinstance(branches, list)
        else (),
        on_path=on_path,
    )


def detect_where(g: Gatherer, env: Mapping[str, str]) -> Where:
    """Host, container or pod (a container plus KUBERNETES_SERVICE_HOST).

    Container markers: /.dockerenv, /run/.containerenv, a container cgroup of PID 1 (cgroup v1),
    or an overlay root file system (CRI containers on cgroup v2 have no other marker). A marker
    file alone does not count on a machine booted from its root: the root file system a whole
    block device and /dev the kernel's devtmpfs. Images made from a container (Firecracker and
    other microVMs, `docker export`) keep the /.dockerenv of the container they came from; a
    container gets its root from the engine's storage and a tmpfs /dev.
    """
    mountinfo = g.text("/proc/self/mountinfo") or ""
    inside = (g.exists("/.dockerenv") or g.exists("/run/.containerenv")) and not _booted_root(
        mountinfo
    )
    if not inside:
        cgroup = g.text("/proc/1/cgroup") or ""
        inside = any(word in cgroup for word in ("/docker/", "/kubepods", "/containerd/"))
    if not inside:
        inside = _overlay_root(mountinfo)
    if not inside:
        return Where.HOST
    return Where.POD if "KUBERNETES_SERVICE_HOST" in env else Where.CONTAINER


def _mounts(mountinfo: str) -> dict[str, tuple[str, str, str]]:
    """Mount point -> (root within its file system, type, source); the last mount wins."""
    mounts = {}
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        head, rest = fields.split(), tail.split()
        if len(head) > 4 and len(rest) > 1:
            mounts[head[4]] = (head[3], rest[0], rest[1])
    return mounts


def _booted_root(mountinfo: str) -> bool:
    """Whether / is a whole file system on a block device and /dev a devtmpfs."""
    mounts = _mounts(mountinfo)
    root, dev = mounts.get("/"), mounts.get("/dev")
    return (
        root is not None
        and root[0] == "/"
        and root[2].startswith("/dev/")
        and root[1] not in ("overlay", "tmpfs")
        and dev is not None
        and dev[1] == "devtmpfs"
    )


def _overlay_root(mountinfo: str) -> bool:
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] == "/" and " - overlay " in line:
            return True
    return False
