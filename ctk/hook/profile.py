"""`update-application-profile`: limit EGL/Vulkan to the container's GPUs.

The driver reads application profiles from /etc/nvidia/nvidia-application-profiles-rc.d; a
profile setting `EGLVisibleDGPUDevices` to the bit mask of the `/dev/nvidia<minor>` nodes in the
container keeps EGL and Vulkan from enumerating GPUs the container was not given.
"""

import os
import stat

from ctk.hook.rootfd import Root, write_new_file
from ctk.hook.rootfs import HookError, resolve

PROFILE_DIR = "/etc/nvidia/nvidia-application-profiles-rc.d"
PROFILE_NAME = "10-container.conf"


def gpu_minors(dev_dir: str) -> list[int]:
    """Minors of the `nvidia<N>` character devices in ``dev_dir`` (a host path)."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return []
    minors = []
    for name in names:
        if not (name.startswith("nvidia") and name[6:].isdigit()):
            continue
        info = os.lstat(os.path.join(dev_dir, name))
        if stat.S_ISCHR(info.st_mode):
            minors.append(os.minor(info.st_rdev))
    return sorted(minors)


def profile_text(minors: list[int]) -> str | None:
    """The profile for GPUs with these minors (only 0..63 fit the mask), or None."""
    mask = 0
    for minor in minors:
        if 0 <= minor < 64:
            mask |= 1 << minor
    if not mask:
        return None
    return (
        '{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",'
        f'{mask:#x}]}}],"rules":[{{"pattern":[],"profile":"_container_"}}]}}'
    )


def update_application_profile(root: str) -> str | None:
    """Write the profile for the container's GPUs; returns its container path, or None if no GPU.

    The profile is written to a new file and renamed over the old one, both relative to the
    folder's descriptor: an old symlink is replaced, never followed.
    """
    text = profile_text(gpu_minors(resolve(root, "/dev")))
    if text is None:
        return None
    with Root(root) as container:
        folder = container.make_dirs(PROFILE_DIR)
        try:
            try:
                info = os.stat(PROFILE_NAME, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                if stat.S_ISDIR(info.st_mode):
                    where = f"{root}{PROFILE_DIR}/{PROFILE_NAME}"
                    raise HookError(f"{where}: is a directory; refusing to replace it")
            temp = write_new_file(
                folder, PROFILE_DIR, ".10-container-", ".tmp", text=text, mode=0o444
            )
            os.rename(temp, PROFILE_NAME, src_dir_fd=folder, dst_dir_fd=folder)
        finally:
            os.close(folder)
    return f"{PROFILE_DIR}/{PROFILE_NAME}"
