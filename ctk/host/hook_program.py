"""The native `ctk-hook` program: where the installed package keeps it, and running it.

`pip install` builds it from native/ (Go, static) into ``ctk/_bin/ctk-hook``; `ctk install`
copies it to a stable path outside any Python environment, which is what CDI specs should name.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from ctk.errors import CtkError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

HOOK_NAME = "ctk-hook"
REBUILD_HINT = (
    "reinstall ctk so that its build step compiles the hook: python3 -m pip install "
    "--force-reinstall ctk (from a checkout: python3 -m pip install -e .)"
)


def packaged_hook() -> Path:
    """The native hook inside the installed ctk package; CtkError when it was not built."""
    path = Path(__file__).resolve().parents[1] / "_bin" / HOOK_NAME
    if not os.access(path, os.X_OK):
        raise CtkError(
            f"{path}: the native ctk-hook is missing from this install", hint=REBUILD_HINT
        )
    return path


def exec_hook(args: list[str]) -> NoReturn:
    """Replace this process by the native hook with ``args`` (stdin, stdout, stderr inherited)."""
    program = packaged_hook()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(program, [HOOK_NAME, *args])
    except OSError as exc:
        raise CtkError(f"{program}: cannot run: {exc.strerror}", hint=REBUILD_HINT) from exc


#: where `ctk install` puts the hook (default prefix first), as the host sees it
INSTALLED_HOOKS: tuple[str, ...] = (
    "/usr/local/libexec/ctk/ctk-hook",
    "/usr/libexec/ctk/ctk-hook",
)
NO_HOOK_HINT = (
    "run `ctk install` (it puts the native hook at /usr/local/libexec/ctk/ctk-hook), pass "
    "--hook-path with the absolute path of nvidia-cdi-hook or ctk-hook on the host, or "
    "--disable-hook all"
)
SYSTEM_PREFIXES = ("/", "/usr", "/usr/local")


def _is_program(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _places(path: str, driver_root: Path) -> list[Path]:
    """Where host path ``path`` is seen from here: itself and, when ctk looks at a host mounted
    elsewhere (--driver-root), under that root."""
    places = [Path(path)]
    if os.path.abspath(driver_root) != "/":
        from ctk.host.root import HostRoot, PathEscapeError

        with contextlib.suppress(PathEscapeError):
            places.append(HostRoot(driver_root).path(path))
    return places


def unstable_place(path: str) -> str | None:
    """Why ``path`` is a poor place for a hook that runs on every container start (inside a
    Python environment, pyenv or a home directory: gone or unreadable when that environment is
    upgraded, removed, or the engine runs rootless), or None."""
    real = os.path.realpath(path)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        root = os.path.realpath(prefix)
        if root not in SYSTEM_PREFIXES and (real + "/").startswith(root + "/"):
            return f"is inside the Python environment {prefix}"
    parts = Path(real).parts
    if ".pyenv" in parts or "pipx" in parts or "site-packages" in parts:
        return "is inside a Python installation (pyenv, pipx or site-packages)"
    for parent in Path(real).parents:
        if (parent / "pyvenv.cfg").is_file():
            return f"is inside the Python virtual environment {parent}"
    homes = {os.path.realpath(Path.home()), "/root", "/home"}
    if any((real + "/").startswith(home.rstrip("/") + "/") for home in homes if home != "/"):
        return "is inside a home directory"
    return None


def default_hook_path(driver_root: Path = Path("/")) -> str:
    """The hook program for a spec: `nvidia-cdi-hook` on PATH (NVIDIA's, when the toolkit is
    installed), else the native `ctk-hook` that `ctk install` put in place; a program inside a
    Python environment or a home directory is passed over. CtkError when there is none: a spec
    naming a missing program fails every container."""
    import shutil  # (bz2, lzma, zlib): not for a given --hook-path

    found = shutil.which("nvidia-cdi-hook")
    if found and unstable_place(found) is None:
        return os.path.abspath(found)
    for candidate in INSTALLED_HOOKS:
        if any(_is_program(place) for place in _places(candidate, driver_root)):
            return candidate
    raise CtkError(
        "no hook program found: nvidia-cdi-hook is not on PATH and the native ctk-hook is not "
        f"installed ({INSTALLED_HOOKS[0]})",
        hint=NO_HOOK_HINT,
    )


def hook_path_warning(path: str, driver_root: Path) -> str | None:
    """Why ``path`` (--hook-path) will not run on the host, or is in a poor place; None when it
    looks fine. The runtime runs the hook on the host, so the path is checked on this machine
    and, for a driver root other than `/` (ctk in a container with the host mounted there),
    under it."""
    places = _places(path, driver_root)
    if any(_is_program(place) for place in places):
        where = unstable_place(path)
        if where is None:
            return None
        return (
            f"hook program {path} {where}; containers given devices from this spec fail to "
            "start once it changes or goes (run `ctk install` and use its ctk-hook)"
        )
    where = "" if len(places) == 1 else f" (nor under --driver-root {driver_root})"
    problem = (
        "is not an executable file"
        if any(place.exists() for place in places)
        else f"does not exist on this machine{where}"
    )
    return (
        f"hook program {path} {problem}; containers given devices from this spec fail to start "
        "until it is installed there"
    )
