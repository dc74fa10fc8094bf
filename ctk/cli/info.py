"""`ctk info`: what ctk would use on this machine (nvidia-ctk's `info` prints only its help)."""

from __future__ import annotations

import os
import sys

from ctk.cli import render
from ctk.cli.options import new_app


def info() -> None:
    """Show ctk's version and the files and programs it would use here."""
    from ctk import __version__
    from ctk.cli.cdi_generate import DEFAULT_OUTPUT
    from ctk.host.cdi_specs import DEFAULT_SPEC_DIRS
    from ctk.toolkit_config import DEFAULT_PATH

    hook = os.environ.get("NVIDIA_CTK_CDI_HOOK_PATH") or _hook()
    rows = [
        ("version", __version__),
        ("python", sys.version.split()[0]),
        ("hook program", hook),
        ("spec output", str(DEFAULT_OUTPUT)),
        ("spec dirs", ", ".join(str(d) for d in DEFAULT_SPEC_DIRS)),
        ("toolkit config", f"{DEFAULT_PATH} ({_state(DEFAULT_PATH)})"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        render.echo(f"{name + ':':<{width + 1}} {value}")


def _hook() -> str:
    from ctk.errors import CtkError
    from ctk.host.hook_program import default_hook_path

    try:
        return default_hook_path()
    except CtkError:
        return "none found (nvidia-cdi-hook, or ctk-hook after `ctk install`)"


def _state(path: str) -> str:
    return "present" if os.path.isfile(path) else "absent: the toolkit's defaults apply"


app = new_app()
app.command("info")(info)
