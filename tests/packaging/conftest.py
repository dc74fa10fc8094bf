"""Session fixtures of the packaging tests: the build tools (from the package index, once), the
sdist and the four wheels of scripts/build-dist (built once), and a wheelhouse of ctk's
dependencies for x86_64 (downloaded once), so that each install test runs with --no-index."""

from __future__ import annotations

import os
import subprocess
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
TOOLS = (
    "build>=1.2",
    "wheel>=0.43",
    "twine>=5",
    "check-wheel-contents>=0.6",
    "auditwheel>=6.1",
    "pipx>=1.5",
    "uv>=0.4",
    "setuptools>=77.0.3",  # tests/packaging/test_wheels.py: builds refused before Go runs
)


@dataclass(frozen=True, slots=True)
class Dist:
    """What scripts/build-dist wrote."""

    folder: Path
    sdist: Path
    wheels: tuple[Path, ...]
    wheelhouse: Path  # ctk's dependencies, binary wheels for this machine's Python
    tools: Path  # the bin folder of the tools' venv


def run(
    argv: list[str], *, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``argv``, its output captured; it must exit 0 (the failure names its output)."""
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    assert result.returncode == 0, (
        f"{argv}: exit {result.returncode}\n{result.stdout}{result.stderr}"
    )
    return result


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    base = tmp_path_factory.mktemp("dist")
    tools = base / "tools"
    venv.create(tools, with_pip=True)
    python = tools / "bin" / "python"
    try:
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *TOOLS],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the build tools do not install here (no package index?): {exc.stderr[-300:]}")
    out = base / "out"
    env = {**os.environ, "CTK_DIST_PYTHON": str(python)}
    run([str(REPO / "scripts/build-dist"), str(out)], env=env, timeout=900)
    wheels = tuple(sorted(out.glob("*.whl")))
    (sdist,) = out.glob("*.tar.gz")
    manylinux = next(w for w in wheels if "manylinux" in w.name and "x86_64" in w.name)
    wheelhouse = base / "wheelhouse"
    run(
        [
            str(python),
            "-m",
            "pip",
            "download",
            "-q",
            "--only-binary=:all:",
            "--dest",
            str(wheelhouse),
            str(manylinux),
        ],
        timeout=600,
    )
    return Dist(out, sdist, wheels, wheelhouse, tools / "bin")
