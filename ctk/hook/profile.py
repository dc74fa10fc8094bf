"""`update-application-profile`: limit EGL/Vulkan to the container's GPUs.

The driver reads application profiles from /etc/nvidia/nvidia-application-profiles-rc.d; a
profile setting `EGLVisibleDGPUDevices` to the bit mask of the `/dev/nvidia<minor>` nodes in the
container keeps EGL and Vulkan from enumerating GPUs the container was not given.
"""

import os
import stat

from ctk.hook.rootfs import HookError, check_inside, make_dirs, resolve, write_new_file

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
    """Write the profile for the container's GPUs; returns its host path, or None if no GPU."""
    dev = resolve(root, "/dev")
    check_inside(root, dev)
    text = profile_text(gpu_minors(dev))
    if text is None:
        return None
    directory = make_dirs(root, PROFILE_DIR)
    target = os.path.join(directory, PROFILE_NAME)
    if os.path.isdir(target) and not os.path.islink(target):
        raise HookError(f"{target}: is a directory; refusing to replace it")
    temp = write_new_file(directory, ".10-container-", ".tmp", text, 0o444)
    os.rename(temp, target)  # replaces a file or a symlink itself, never what a link points to
    return target
