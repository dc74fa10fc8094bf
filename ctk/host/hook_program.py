"""The native `ctk-hook` program: where the installed package keeps it, and running it.

`pip install` builds it from native/ (Go, static) into ``ctk/_bin/ctk-hook``; `ctk install`
copies it to a stable path outside any Python environment, which is what CDI specs should name.
"""

from __future__ import annotations

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
