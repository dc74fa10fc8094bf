"""`disable-device-node-modification`: hide `ModifyDeviceFiles: 1` from the container.

The driver's /proc/driver/nvidia/params tells the CUDA library whether it may create device
nodes; in a container it must not. The hook bind-mounts a copy saying `ModifyDeviceFiles: 0`
over the container's file, read-only. Every mount names its target through a descriptor
(`/proc/self/fd/N`, see `ctk.hook.rootfd`), so a folder swapped for a symlink cannot move it.
"""

import os
import stat

from ctk.hook.rootfd import DIR_FLAGS, PATH_FLAGS, Root, proc_path, write_new_file
from ctk.hook.rootfs import HookError

PARAMS = "/proc/driver/nvidia/params"
MS_RDONLY, MS_NODEV, MS_REMOUNT, MS_BIND, MS_PRIVATE = 1, 4, 32, 4096, 1 << 18


def modified_params(text: str) -> str | None:
    """Return ``text`` with `ModifyDeviceFiles: 0`, or None when nothing needs changing."""
    lines = text.splitlines()
    if "ModifyDeviceFiles: 1" not in lines:
        return None
    return "".join(
        ("ModifyDeviceFiles: 0" if line == "ModifyDeviceFiles: 1" else line) + "\n"
        for line in lines
    )


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    args = [None if v is None else v.encode() for v in (source, target, fstype)]
    if libc.mount(args[0], args[1], args[2], flags, data.encode() or None) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def disable_device_node_modification(root: str) -> None:
    """Mount a params file with `ModifyDeviceFiles: 0` over the container's; no-op if not needed."""
    try:
        with open(PARAMS, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise HookError(f"{PARAMS}: cannot read: {exc.strerror}") from exc
    contents = modified_params(text)
    if contents is None:
        return
    fds: list[int] = []
    with Root(root) as container:
        try:
            _mask(container, contents, fds)
        finally:
            for fd in fds:
                os.close(fd)


def _mask(container: Root, contents: str, fds: list[int]) -> None:
    """Mount a read-only file of ``contents`` over the container's params, from a tmpfs in its
    /run; ``fds`` collects the descriptors opened, for the caller to close."""
    where = f"{container.path}{PARAMS}"
    missing = HookError(f"{where}: missing in the container; is /proc mounted?")
    try:
        folder, name = container.walk(PARAMS)
    except FileNotFoundError:
        raise missing from None
    fds.append(folder)
    try:
        fds.append(target := os.open(name, PATH_FLAGS, dir_fd=folder))
    except FileNotFoundError:
        raise missing from None
    if not stat.S_ISREG(os.fstat(target).st_mode):
        raise missing
    pid = str(os.getpid())
    fds.append(run := container.make_dirs("/run/ctk-hook"))
    fds.append(mountpoint := container.make_dirs(f"/run/ctk-hook/{pid}"))
    try:
        size = max(len(contents), 4096)
        _mount("tmpfs", proc_path(mountpoint), "tmpfs", 0, f"size={size},mode=0755")
        fds.append(tmpfs := os.open(pid, DIR_FLAGS, dir_fd=run))  # the tmpfs, now on top
        copy = write_new_file(
            tmpfs, f"/run/ctk-hook/{pid}", "params-", "", text=contents, mode=0o444
        )
        fds.append(source := os.open(copy, PATH_FLAGS, dir_fd=tmpfs))
        _mount(proc_path(source), proc_path(target), None, MS_BIND, "")
        fds.append(masked := os.open(name, PATH_FLAGS, dir_fd=folder))  # the bind mount
        _mount(None, proc_path(masked), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NODEV, "")
        _mount(None, proc_path(masked), None, MS_PRIVATE, "")
    except OSError as exc:
        raise HookError(f"{where}: cannot mount a read-only copy over it: {exc.strerror}") from exc
