"""`disable-device-node-modification`: hide `ModifyDeviceFiles: 1` from the container.

The driver's /proc/driver/nvidia/params tells the CUDA library whether it may create device
nodes; in a container it must not. The hook bind-mounts a copy saying `ModifyDeviceFiles: 0`
over the container's file, read-only.
"""

import os

from ctk.hook.rootfs import HookError, check_inside, make_dirs, resolve, write_new_file

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
        err = ctypes.get_errno()
        raise HookError(f"{target}: mount failed: {os.strerror(err)}")


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
    target = resolve(root, PARAMS)
    if not os.path.isfile(target):
        raise HookError(f"{target}: missing in the container; is /proc mounted?")
    check_inside(root, target)
    scratch = make_dirs(root, f"/run/ctk-hook/{os.getpid()}")
    _mount("tmpfs", scratch, "tmpfs", 0, f"size={max(len(contents), 4096)},mode=0755")
    source = write_new_file(scratch, "params-", "", contents, 0o444)
    _mount(source, target, None, MS_BIND, "")
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NODEV, "")
    _mount(None, target, None, MS_PRIVATE, "")
