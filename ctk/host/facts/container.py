"""What a process inside a container sees: environment, /dev/shm, image files."""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class MountEntry:
    """One line of /proc/self/mountinfo (proc(5)): where, what part of which file system."""

    point: str
    root: str
    """The directory of its file system that is mounted there (not "/" for a bind mount)."""
    fstype: str
    source: str


_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """The kernel writes a space, tab, newline and backslash in a path as \\ooo (octal)."""
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> tuple[MountEntry, ...]:
    """Each well-formed line of a mountinfo file, in order (a later mount over the same point
    hides the earlier one); optional fields end at the ` - ` separator."""
    mounts = []
    for line in text.splitlines():
        fields, sep, tail = line.partition(" - ")
        head, rest = fields.split(), tail.split()
        if sep and len(head) > 4 and len(rest) > 1:
            mounts.append(
                MountEntry(_unescape(head[4]), _unescape(head[3]), rest[0], _unescape(rest[1]))
            )
    return tuple(mounts)


def read_mounts(g: Gatherer) -> tuple[MountEntry, ...]:
    """The mounts the diagnosed process sees (its /proc/self/mountinfo under the root)."""
    return parse_mountinfo(g.text("/proc/self/mountinfo") or "")


def _shm_size(g: Gatherer) -> int | Unavailable | None:
    host = g.host("/dev/shm")
    if host is None or not host.is_dir():
        return None
    try:
        info = os.statvfs(host)
    except OSError as exc:
        return Unavailable(f"statvfs: {exc.strerror}")
    return info.f_frsize * info.f_blocks


def gather_container(
    g: Gatherer, env: Mapping[str, str], mounted: tuple[MountEntry, ...]
) -> ContainerFacts:
    """/dev/shm, driver files of the image, HAMi preload, allocation markers."""
    mounts = {mount.point for mount in mounted}
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


def detect_where(g: Gatherer, env: Mapping[str, str], mounts: tuple[MountEntry, ...]) -> Where:
    """Host, container or pod (a container plus KUBERNETES_SERVICE_HOST).

    Container markers: /.dockerenv, /run/.containerenv, a container cgroup of PID 1 (cgroup v1),
    or an overlay root file system (CRI containers on cgroup v2 have no other marker). A marker
    file alone does not count on a machine booted from its root: the root file system a whole
    block device and /dev the kernel's devtmpfs. Images made from a container (Firecracker and
    other microVMs, `docker export`) keep the /.dockerenv of the container they came from; a
    container gets its root from the engine's storage and a tmpfs /dev.
    """
    seen = {mount.point: mount for mount in mounts}  # the last mount over a point is the one seen
    inside = (g.exists("/.dockerenv") or g.exists("/run/.containerenv")) and not _booted_root(seen)
    if not inside:
        cgroup = g.text("/proc/1/cgroup") or ""
        inside = any(word in cgroup for word in ("/docker/", "/kubepods", "/containerd/"))
    if not inside:
        inside = "/" in seen and seen["/"].fstype == "overlay"
    if not inside:
        return Where.HOST
    return Where.POD if "KUBERNETES_SERVICE_HOST" in env else Where.CONTAINER


def _booted_root(seen: Mapping[str, MountEntry]) -> bool:
    """Whether / is a whole file system on a block device and /dev a devtmpfs."""
    root, dev = seen.get("/"), seen.get("/dev")
    return (
        root is not None
        and root.root == "/"
        and root.source.startswith("/dev/")
        and root.fstype not in ("overlay", "tmpfs")
        and dev is not None
        and dev.fstype == "devtmpfs"
    )
