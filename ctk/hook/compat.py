"""`enable-cuda-compat`: prefer the image's CUDA forward-compat driver when it is newer."""

import os

from ctk.hook.ldcache import add_conf_file
from ctk.hook.rootfd import Root
from ctk.hook.rootfs import HookError, resolve

DEFAULT_COMPAT_ROOT = "/usr/local/cuda/compat"


def _major(version: str, what: str) -> int:
    head = version.strip().split(".", 1)[0]
    if not head.isdigit():
        raise HookError(f"{what} {version!r}: expected a version such as 570.124.06")
    return int(head)


def compat_major(root: str, compat_dir: str) -> int | None:
    """Return the driver major version of the one ``libcuda.so.X.Y`` in ``compat_dir``, if any."""
    host_dir = resolve(root, compat_dir)
    try:
        names = os.listdir(host_dir)
    except OSError:
        return None
    libs = [n for n in names if n.startswith("libcuda.so.") and n.count(".") >= 3]
    if len(libs) != 1:
        return None
    version = libs[0].removeprefix("libcuda.so.")
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def enable_cuda_compat(root: str, host_driver_version: str, compat_dir: str) -> str | None:
    """Add ``compat_dir`` to the loader path when its driver is newer than the host's.

    Like nvidia-cdi-hook: a no-op unless the image has the compat folder, an ld.so.cache and an
    ld.so.conf.d folder, and exactly one compat libcuda. Returns the conf file written, if any.
    """
    if not host_driver_version:
        raise HookError("--host-driver-version is required")
    host_major = _major(host_driver_version, "--host-driver-version")
    if not compat_dir.startswith("/"):
        raise HookError(f"--cuda-compat-container-root {compat_dir!r}: must be absolute")
    for needed in (compat_dir, "/etc/ld.so.cache", "/etc/ld.so.conf.d"):
        if not os.path.exists(resolve(root, needed)):
            return None
    major = compat_major(root, compat_dir)
    if major is None or major <= host_major:
        return None
    with Root(root) as container:
        return add_conf_file(container, "00-compat-", [compat_dir])
