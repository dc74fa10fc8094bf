"""An installed wheel works on its own: console scripts, packaged schema and data, the native
hook built from native/ by the wheel's build step, no checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GOOD_SPEC = REPO / "tests/fixtures/conformance/cdi-upstream/good/spec-example.json"


@pytest.mark.integration
def test_wheel_in_a_fresh_venv(tmp_path: Path) -> None:
    # Build from a copy, so that the checkout gets no build/ or egg-info directories.
    source = tmp_path / "src"
    for part in ("ctk", "schemas"):
        shutil.copytree(
            REPO / part, source / part, ignore=shutil.ignore_patterns("__pycache__", "_bin")
        )
    shutil.copytree(REPO / "native", source / "native")
    for part in ("pyproject.toml", "README.md", "setup.py", "MANIFEST.in"):
        shutil.copy2(REPO / part, source / part)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
    )
    env_dir = tmp_path / "venv"
    # The dependencies come from this interpreter's site-packages; ctk itself only from the wheel.
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    wheel = next(wheels.glob("ctk-*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(env_dir / "bin/python"),
            "install",
            "-q",
            "--no-deps",
            "--force-reinstall",
            str(wheel),
        ],
        check=True,
    )
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    shutil.copy(GOOD_SPEC, workdir / "spec.json")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(env_dir / "bin" / argv[0]), *argv[1:]],
            cwd=workdir,
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )

    version = run("ctk", "--version")
    assert (version.returncode, version.stdout) == (0, "ctk 0.1.0\n")
    validated = run("ctk", "cdi", "validate", "--json", "spec.json")
    assert validated.returncode == 0, validated.stderr
    located = run("python", "-c", "import ctk, sys; print(ctk.__file__)")
    assert located.stdout.startswith(str(env_dir)), located.stdout
    doctor_list = run("ctk", "doctor", "--list")
    assert doctor_list.returncode == 0, doctor_list.stderr
    hook = run("python", "-c", "from ctk.host.hook_program import packaged_hook as p; print(p())")
    assert hook.stdout.startswith(str(env_dir)), hook.stderr
    program = Path(hook.stdout.strip())
    assert program.read_bytes()[:4] == b"\x7fELF"
    version = subprocess.run([program, "--version"], capture_output=True, text=True, check=False)
    assert (version.returncode, version.stdout) == (0, "ctk-hook version 0.1.0\n")
    with zipfile.ZipFile(wheel) as archive:
        assert "ctk/_bin/ctk-hook" in archive.namelist()
    assert not (REPO / "native/ctk-hook").exists()
