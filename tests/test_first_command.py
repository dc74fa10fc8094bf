"""The README's first command, `scripts/install`, as a newcomer runs it (issue 22): as root with
no sudo, as a user through sudo, into scratch places (CTK_VENV, CTK_BIN_DIR, CTK_ROOT under the
test's directory), and always ending with the doctor's report, here on a node tree without a
driver, where `generate` fails and a sample node shows the spec being made instead."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts/install"
README = (REPO / "README.md").read_text()


def first_command() -> str:
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block is not None
    return block.group(1).splitlines()[0]


def _installer_python() -> str:
    """The interpreter a node would install with: Debian's own /usr/bin/python3 (externally
    managed, PEP 668) where the suite runs on it or beside it, else the base interpreter of the
    Python running the suite (pyenv's 3.10 and 3.13 in CI's other runs)."""
    base = getattr(sys, "_base_executable", sys.executable)
    debian = Path("/usr/bin/python3")
    if sys.version_info[:2] == (3, 11) and debian.exists():
        return str(debian)
    return str(base)


def _build_files() -> dict[str, int]:
    """What a build in place writes into the checkout (setuptools' build/ and egg-info)."""
    found = {}
    for top in [REPO / "build", *REPO.glob("*.egg-info")]:
        if not top.exists():  # a newer setuptools builds an editable install elsewhere
            continue
        for path in [top, *top.rglob("*")]:
            found[str(path)] = path.lstat().st_mtime_ns
    return found


def _program(folder: Path, name: str, text: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


@pytest.mark.integration
@pytest.mark.skipif(os.geteuid() != 0, reason="as root: the script would run itself with sudo")
def test_as_root_without_sudo_it_ends_with_the_doctor(tmp_path: Path) -> None:
    """Verbatim, as root: no sudo is run (one on PATH fails loudly); pip shows its work; every
    `wrote` line is under CTK_ROOT; generate fails (the tree has no driver), the sample node's
    spec is made, validated and listed, then removed; the doctor runs last and names the root
    cause; the exit status says something is wrong."""
    fake = tmp_path / "fake-bin"
    _program(fake, "sudo", f"#!/bin/sh\ntouch {tmp_path}/sudo-ran\nexit 97\n")
    node = tmp_path / "node"
    node.mkdir()
    (tmp_path / "tmp").mkdir()
    python = _installer_python()
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "CTK_PYTHON": python,
        "CTK_VENV": str(tmp_path / "venv"),
        "CTK_BIN_DIR": str(tmp_path / "bin"),
        "CTK_ROOT": str(node),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    env.pop("PYTHONPATH", None)
    built = _build_files()
    result = subprocess.run(
        ["sh", "-c", first_command()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out, err = result.stdout, result.stderr
    assert result.returncode == 1, err[-3000:]
    assert not (tmp_path / "sudo-ran").exists()
    assert f"making {tmp_path / 'venv'} with {python}" in err
    assert f"scripts/install: pip: installing ctk from {REPO} (copied to {tmp_path}/tmp/" in err
    assert _build_files() == built  # pip built a copy: no root-owned files in the checkout
    assert list((tmp_path / "tmp").glob("ctk-build.*")) == []
    assert "Building wheel for ctk" in err or "Successfully installed" in err  # pip's own lines
    # ctk install: the real paths, under the root
    wrote = [line for line in out.splitlines() if line.startswith("wrote ")]
    assert f"wrote {node}/usr/local/libexec/ctk/ctk-hook" in wrote
    assert all(line.startswith(f"wrote {node}/") for line in wrote), wrote
    # generate fails on the tree (no driver): said, and the steps go on
    assert (
        f"ctk cdi generate: the CDI spec of this node's GPUs, to {node}/etc/cdi/nvidia.yaml" in err
    )
    assert "error: NVML library libnvidia-ml.so.1 not found under driver root" in err
    assert not (node / "etc/cdi/nvidia.yaml").exists()
    # the sample node: generated, validated, listed, removed
    assert re.search(r"/ctk-sample-node\.\w+/etc/cdi/management\.yaml: valid \(", out), out
    assert "management.nvidia.com/gpu=all\n" in out
    assert list((tmp_path / "tmp").glob("ctk-sample-node.*")) == []
    # the doctor, last, on the tree, naming the root cause
    assert err.rstrip().splitlines()[-1] == (
        f"scripts/install: ctk doctor --root {node}: the node end to end"
    )
    assert out.startswith("wrote ")
    assert out.rstrip().splitlines()[-1].endswith("Fix first: driver.not-loaded.")
    assert f"ctk doctor: host, root {node}" in out
    # what was installed works
    ctk = tmp_path / "bin/ctk"
    assert os.readlink(ctk) == str(tmp_path / "venv/bin/ctk")
    version = subprocess.run(
        [ctk, "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (version.returncode, version.stdout) == (0, "ctk 0.1.0\n")
    hook = node / "usr/local/libexec/ctk/ctk-hook"
    ran = subprocess.run(
        [hook, "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (ran.returncode, ran.stdout) == (0, "ctk-hook version 0.1.0\n")
    unit = (node / "etc/systemd/system/ctk-cdi-refresh.service").read_text()
    assert f"{(tmp_path / 'venv/bin/ctk').resolve()}" in unit


def _as_a_user(tmp_path: Path, *, sudo: bool) -> dict[str, str]:
    """An environment in which `id -u` says 1000; with ``sudo``, a sudo that records its
    arguments (one a line) and runs nothing. PATH holds these and dirname only."""
    fake = tmp_path / "fake-bin"
    _program(fake, "id", '#!/bin/sh\n[ "$1" = -u ] && { echo 1000; exit 0; }\nexit 1\n')
    for tool in ("dirname", "env", "grep", "cut"):
        found = next(Path(d, tool) for d in ("/usr/bin", "/bin") if Path(d, tool).exists())
        (fake / tool).symlink_to(found)
    if sudo:
        _program(
            fake,
            "sudo",
            f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {tmp_path}/sudo-args\n',
        )
    return {"PATH": str(fake), "HOME": str(tmp_path)}


def test_as_a_user_it_runs_itself_again_with_sudo(tmp_path: Path) -> None:
    """sudo resets the environment: the CTK_ settings and what pip needs to reach its index
    travel as `env NAME=value` arguments, and nothing else does."""
    env = {
        **_as_a_user(tmp_path, sudo=True),
        "CTK_ROOT": f"{tmp_path}/a node with spaces",
        "CTK_VENV": "/opt/ctk 'quoted' \"too\"",
        "PIP_INDEX_URL": "https://mirror.example/simple",
        "https_proxy": "http://proxy:3128",
        "REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca.pem",
        "SSL_CERT_FILE": "/etc/ssl/certs/ca.pem",
        "NO_PROXY": "localhost",
        "UNRELATED": "stays behind",
    }
    result = subprocess.run(
        ["/bin/sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr) == (
        0,
        "scripts/install: not root: running again as root with sudo\n",
    )
    argv = (tmp_path / "sudo-args").read_text().splitlines()
    assert argv[0] == "env"
    assert argv[-2:] == ["sh", str(SCRIPT)]
    assert sorted(argv[1:-2]) == sorted(
        f"{k}={v}" for k, v in env.items() if k not in ("PATH", "HOME", "UNRELATED")
    )


def test_as_a_user_without_sudo_it_says_so(tmp_path: Path) -> None:
    result = subprocess.run(
        ["/bin/sh", str(SCRIPT)],
        env=_as_a_user(tmp_path, sudo=False),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == (
        "scripts/install: error: ctk installs into /opt, /usr/local and /etc: run this as root "
        "(there is no sudo here)\n"
    )


def test_it_takes_no_arguments(tmp_path: Path) -> None:
    result = subprocess.run(
        ["/bin/sh", str(SCRIPT), "--root", "/x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("scripts/install: usage: scripts/install (no arguments;")
