"""`chmod`: set the mode of paths inside the container root (e.g. /dev/dri)."""

import os
import stat

from ctk.hook.rootfs import HookError, check_inside, resolve


def parse_mode(text: str) -> int:
    """Parse an octal mode such as ``755``."""
    try:
        mode = int(text.strip(), 8)
    except ValueError:
        raise HookError(f"invalid --mode {text!r}: expected an octal mode such as 755") from None
    if not 0 <= mode <= 0o7777:
        raise HookError(f"invalid --mode {text!r}: expected an octal mode up to 7777")
    return mode


def change_modes(root: str, paths: list[str], mode_text: str) -> None:
    """Give each existing path in ``paths`` (container paths) the octal ``mode_text``.

    Missing paths are skipped (nvidia-cdi-hook does the same); all are checked before any changes.
    """
    mode = parse_mode(mode_text)
    targets: list[str] = []
    for path in paths:
        if not path.strip():
            raise HookError("--path must not be empty")
        host = resolve(root, path)
        try:
            info = os.lstat(host)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise HookError(f"{host}: cannot stat: {exc.strerror}") from exc
        check_inside(root, host)
        if stat.S_IMODE(info.st_mode) != mode:
            targets.append(host)
    for host in targets:
        try:
            os.chmod(host, mode)
        except PermissionError:
            continue  # a read-only /dev bind mount: nvidia-cdi-hook ignores this too
        except OSError as exc:
            raise HookError(f"{host}: cannot chmod: {exc.strerror}") from exc
