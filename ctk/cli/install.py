"""`ctk install` and `ctk uninstall`: the native hook at a stable path, the systemd units and the
udev rule, written under --root (default /) and recorded in a manifest."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import PurePosixPath
from typing import Annotated

from typer import Option

from ctk.cli import render
from ctk.cli.options import Json, new_app
from ctk.errors import CtkError

Root = Annotated[
    str,
    Option(
        "--root",
        metavar="DIR",
        help="Write into this node tree (an existing directory) instead of / (images, tests).",
    ),
]
Prefix = Annotated[str, Option("--prefix", help="The hook goes to PREFIX/libexec/ctk/ctk-hook.")]
Force = Annotated[
    bool,
    Option(
        "--force",
        help="Replace files in the way that ctk did not write (each kept as <file>.bak).",
    ),
]
CtkProgram = Annotated[
    str | None,
    Option(
        "--ctk",
        help="The ctk program the units and the rule run [default: the ctk running now, its real "
        "path].",
    ),
]


def running_ctk() -> str:
    """The real path of the `ctk` program that is running (for ExecStart=)."""
    argv0 = sys.argv[0] if sys.argv else ""
    candidates = [argv0] if os.path.basename(argv0) == "ctk" else []
    found = shutil.which("ctk")
    candidates += [found] if found else []
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    raise CtkError(
        "cannot tell which ctk program is running, for the units' ExecStart=",
        hint="run the installed `ctk` command, or pass --ctk /path/to/ctk",
    )


def _prefix(text: str) -> PurePosixPath:
    prefix = PurePosixPath(text)
    if not prefix.is_absolute() or ".." in prefix.parts:
        raise CtkError(f"--prefix {text}: must be an absolute path without '..'")
    return prefix


app = new_app()


@app.command("install")
def install(
    root_text: Root = "/",
    prefix: Prefix = "/usr/local",
    as_json: Json = False,
    ctk_program: CtkProgram = None,
    force: Force = False,
) -> None:
    """Install the native hook, the systemd units and the udev rule (idempotent)."""
    from ctk.host import files, installation
    from ctk.host.hook_program import packaged_hook
    from ctk.host.root import existing_root
    from ctk.install import install_plan

    with render.json_errors(as_json):
        root = existing_root("--root", root_text).root  # a str: `--root ''` is refused, not "."
        where = _prefix(prefix)
        plan = install_plan(  # gather, then decide
            prefix=where,
            ctk_program=ctk_program or running_ctk(),
            hook=files.read_bytes(packaged_hook(), limit=64 << 20),
            units=installation.unit_templates(),
        )
        outcome = installation.install(root, where, plan, force=force)  # write
    if as_json:
        render.echo(
            json.dumps(
                {
                    "written": [{"path": str(f.path), "sha256": f.sha256} for f in outcome.written],
                    "unchanged": [
                        {"path": str(f.path), "sha256": f.sha256} for f in outcome.unchanged
                    ],
                    "left": [{"path": str(f.path), "sha256": f.sha256} for f in outcome.left],
                    "backups": [str(p) for p in outcome.backups],
                    "manifest": None if outcome.manifest is None else str(outcome.manifest),
                },
                indent=2,
            )
        )
        return
    for backup in outcome.backups:
        render.echo(f"kept the file that was there as {installation.shown(root, backup)}")
    for item in outcome.written:
        render.echo(f"wrote {installation.shown(root, item.path)}")
    for item in outcome.left:
        render.echo(
            f"left {installation.shown(root, item.path)}: already what ctk would write, but not "
            "written by ctk (ctk uninstall keeps it; --force takes it over)"
        )
    if not outcome.written:
        render.echo("already installed; nothing written")
    elif str(root) == "/":
        render.echo(
            "next: systemctl daemon-reload && systemctl enable --now ctk-cdi-refresh.path "
            "ctk-cdi-refresh.service ctk-dev-char-symlinks.service && udevadm control --reload"
        )


@app.command("uninstall")
def uninstall(root_text: Root = "/", prefix: Prefix = "/usr/local", as_json: Json = False) -> None:
    """Remove what `ctk install` wrote (changed files are kept); put back what --force replaced."""
    from ctk.host import installation
    from ctk.host.root import existing_root

    with render.json_errors(as_json):
        root = existing_root("--root", root_text).root
        where = _prefix(prefix)
        outcome = installation.uninstall(root, where)
        if outcome is None:
            folder = installation.shown(root, where / "libexec" / "ctk")
            raise CtkError(
                f"nothing to uninstall: no install manifest under {folder}",
                hint="pass the --prefix (and --root) that ctk install was given",
            )
    if as_json:
        render.echo(
            json.dumps(
                {
                    "removed": [str(p) for p in outcome.removed],
                    "kept": [str(p) for p in outcome.kept],
                    "restored": [str(p) for p in outcome.restored],
                },
                indent=2,
            )
        )
        return
    for path in outcome.removed:
        render.echo(f"removed {installation.shown(root, path)}")
    for path in outcome.kept:
        render.echo(f"kept {installation.shown(root, path)}: changed since ctk install wrote it")
    for path in outcome.restored:
        shown = installation.shown(root, path)
        render.echo(f"restored {shown} (the file ctk install --force had replaced, from .bak)")
