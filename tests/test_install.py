"""An installed wheel works on its own: console scripts, packaged schema and data, the native
hook built from native/ by the wheel's build step, no checkout."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.cli.install import running_ctk
from tests.runners import OWN_RUN

REPO = Path(__file__).resolve().parents[1]
GOOD_SPEC = REPO / "tests/fixtures/conformance/cdi-upstream/good/spec-example.json"


def _venv_with_our_dependencies(env_dir: Path) -> None:
    """A venv whose own site-packages holds nothing, seeing this interpreter's packages.

    The dependencies come from the site-packages of the interpreter running the tests (a venv of
    its own, or not), through a `.pth` path line; ctk itself only from the wheel installed next.
    A `.pth` line adds a directory without running the `.pth` files in it, so an editable ctk
    of the test run's environment stays out. (``system_site_packages`` would give the *base*
    interpreter's packages, which lack the dependencies when the tests run in a venv.)
    """
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = str(env_dir / "bin/python")
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    ours = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    Path(site.stdout.strip(), "ctk-test-dependencies.pth").write_text("\n".join(ours) + "\n")


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
    _venv_with_our_dependencies(env_dir)
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


def _tree_snapshot(top: Path) -> dict[str, str]:
    seen = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(top))
            if path.is_symlink():
                seen[rel] = "link " + os.readlink(path)
            elif path.is_dir():
                seen[rel] = "dir"
            else:
                seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def node_tree(tmp_path: Path) -> Path:
    """A node tree: systemd's own units (so verify finds its targets) and a ctk program."""
    tree = tmp_path / "node"
    for folder in ("usr/lib/systemd/system", "lib/systemd/system"):
        if Path("/", folder).is_dir() and not Path("/", folder).is_symlink():
            shutil.copytree(Path("/", folder), tree / folder, symlinks=True)
    ctk = tree / "opt/ctk/bin/ctk"
    ctk.parent.mkdir(parents=True)
    ctk.write_text("#!/bin/sh\n")
    ctk.chmod(0o755)
    return tree


UNITS = ["ctk-cdi-refresh.service", "ctk-cdi-refresh.path", "ctk-dev-char-symlinks.service"]


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_install_into_a_node_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = node_tree(tmp_path)
    before = _tree_snapshot(tree)
    argv = ["install", "--root", str(tree), "--ctk", "/opt/ctk/bin/ctk"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    written = {entry["path"]: entry["sha256"] for entry in report["written"]}
    assert sorted(written) == [
        "/etc/systemd/system/ctk-cdi-refresh.path",
        "/etc/systemd/system/ctk-cdi-refresh.service",
        "/etc/systemd/system/ctk-dev-char-symlinks.service",
        "/etc/udev/rules.d/71-ctk-dev-char.rules",
        "/usr/local/libexec/ctk/ctk-hook",
    ]
    for path, sha256 in written.items():
        assert hashlib.sha256((tree / path.lstrip("/")).read_bytes()).hexdigest() == sha256
    service = (tree / "etc/systemd/system/ctk-cdi-refresh.service").read_text()
    assert "ExecStart=/opt/ctk/bin/ctk cdi refresh --output /etc/cdi/nvidia.yaml" in service
    rule = (tree / "etc/udev/rules.d/71-ctk-dev-char.rules").read_text()
    assert 'RUN+="/opt/ctk/bin/ctk system create-dev-char-symlinks' in rule
    # idempotent
    assert main(argv) == 0
    assert capsys.readouterr().out == "already installed; nothing written\n"
    # systemd accepts the units as installed in the tree
    verify = subprocess.run(
        [*OWN_RUN, "systemd-analyze", "verify", f"--root={tree}", *UNITS],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (verify.returncode, verify.stderr) == (0, ""), verify.stderr
    # the hook in the tree runs
    hook = tree / "usr/local/libexec/ctk/ctk-hook"
    assert oct(hook.stat().st_mode & 0o777) == "0o755"
    ran = subprocess.run([hook, "--version"], capture_output=True, text=True, check=False)
    assert ran.stdout.startswith("ctk-hook version ")
    # uninstall leaves the tree as it was
    assert main(["uninstall", "--root", str(tree)]) == 0
    assert capsys.readouterr().out.count("removed ") == 5
    assert _tree_snapshot(tree) == before
    assert main(["uninstall", "--root", str(tree)]) == 1
    assert "nothing to uninstall" in capsys.readouterr().err


def test_uninstall_keeps_what_a_user_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "node"
    tree.mkdir()
    assert (
        main(["install", "--root", str(tree), "--ctk", "/opt/ctk/bin/ctk", "--prefix", "/opt/x"])
        == 0
    )
    capsys.readouterr()
    service = tree / "etc/systemd/system/ctk-cdi-refresh.service"
    service.write_text(service.read_text() + "# tuned by the admin\n")
    assert main(["uninstall", "--root", str(tree), "--prefix", "/opt/x"]) == 0
    out = capsys.readouterr().out
    assert (
        "kept /etc/systemd/system/ctk-cdi-refresh.service: changed since ctk install wrote it"
        in out
    )
    assert service.read_text().endswith("# tuned by the admin\n")
    assert sorted(_tree_snapshot(tree)) == [
        "etc",
        "etc/systemd",
        "etc/systemd/system",
        "etc/systemd/system/ctk-cdi-refresh.service",
    ]


def test_units_run_the_real_path_of_the_running_ctk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "opt/ctk/bin/ctk"
    real.parent.mkdir(parents=True)
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    link = tmp_path / "usr/local/bin/ctk"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    monkeypatch.setattr("sys.argv", [str(link), "install"])
    assert running_ctk() == str(real)


def test_install_refuses_a_relative_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["install", "--root", str(tmp_path), "--ctk", "/x/ctk", "--prefix", "usr/local"]
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith("error: --prefix usr/local: must be an absolute path")
    assert list(tmp_path.iterdir()) == []


def _installer_python() -> str:
    """The interpreter a node would install with: Debian's own /usr/bin/python3 (externally
    managed, PEP 668) where the suite runs on it or beside it, else the base interpreter of the
    Python running the suite (pyenv's 3.10 and 3.13 in CI's other runs)."""
    base = getattr(sys, "_base_executable", sys.executable)
    debian = Path("/usr/bin/python3")
    if sys.version_info[:2] == (3, 11) and debian.exists():
        return str(debian)
    return str(base)


@pytest.mark.integration
def test_readme_install_script(tmp_path: Path) -> None:
    """The README's first command, `scripts/install`, into a scratch venv, bin dir and node tree:
    it makes the venv, pip builds ctk with the native hook, links `ctk`, runs `ctk install`."""
    python = _installer_python()
    env = {
        **os.environ,
        "CTK_PYTHON": python,
        "CTK_VENV": str(tmp_path / "venv"),
        "CTK_BIN_DIR": str(tmp_path / "bin"),
        "CTK_ROOT": str(tmp_path / "node"),
    }
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        ["sh", str(REPO / "scripts/install")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"making {tmp_path / 'venv'} with {python}" in result.stderr
    ctk = tmp_path / "bin/ctk"
    assert os.readlink(ctk) == str(tmp_path / "venv/bin/ctk")
    version = subprocess.run([ctk, "--version"], capture_output=True, text=True, check=False)
    assert (version.returncode, version.stdout) == (0, "ctk 0.1.0\n")
    hook = tmp_path / "node/usr/local/libexec/ctk/ctk-hook"
    ran = subprocess.run([hook, "--version"], capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stdout) == (0, "ctk-hook version 0.1.0\n")
    unit = (tmp_path / "node/etc/systemd/system/ctk-cdi-refresh.service").read_text()
    assert f"{(tmp_path / 'venv/bin/ctk').resolve()}" in unit
