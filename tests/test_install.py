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
from pathlib import Path, PurePosixPath

import pytest

from ctk.cli.app import main
from ctk.cli.install import running_ctk
from ctk.host.hook_program import packaged_hook
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
    assert f"kept {service}: changed since ctk install wrote it" in out  # the real path
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


def _install(tree: Path, *more: str) -> list[str]:
    return ["install", "--root", str(tree), "--ctk", "/opt/ctk/bin/ctk", *more]


@pytest.mark.parametrize("command", ["install", "uninstall"])
@pytest.mark.parametrize(
    ("root", "problem"),
    [
        pytest.param("missing", "no such directory", id="missing"),
        pytest.param("file", "not a directory", id="file"),
    ],
)
def test_root_must_be_an_existing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, root: str, problem: str
) -> None:
    """Like every other root option (issue 22, item 3): nothing is made, exit 1, the hint."""
    (tmp_path / "file").write_text("x\n")
    where = tmp_path / root
    argv = _install(where) if command == "install" else [command, "--root", str(where)]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"error: --root {where}: {problem}\nhint: pass an existing directory\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert (tmp_path / "file").read_text() == "x\n"


HOOK = "usr/local/libexec/ctk/ctk-hook"
HOOK_PATH = "/" + HOOK
MANIFEST = "usr/local/libexec/ctk/install-manifest.json"


def _hand_copied(tree: Path, content: bytes) -> Path:
    hook = tree / HOOK
    hook.parent.mkdir(parents=True)
    hook.write_bytes(content)
    hook.chmod(0o755)
    return hook


def test_a_foreign_hook_is_refused_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file at the hook's path that no manifest lists is not ctk's (issue 22, item 4): nothing
    is written without --force; with it, the file is kept as .bak and the hook is ctk's."""
    tree = tmp_path / "node"
    hook = _hand_copied(tree, b"#!/bin/sh\n# the admin's own hook\n")
    hook.chmod(0o700)
    before = _tree_snapshot(tree)
    assert main(_install(tree)) == 1
    assert capsys.readouterr().err == (
        f"error: {hook}: not written by ctk (no install manifest lists it as it is now); "
        "nothing was written\n"
        "hint: move it away, or pass --force to replace it (the old file is kept as "
        "<file>.bak)\n"
    )
    assert _tree_snapshot(tree) == before
    assert main(_install(tree, "--force")) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"kept the file that was there as {hook}.bak\nwrote {hook}\n")
    assert (tree / (HOOK + ".bak")).read_bytes() == b"#!/bin/sh\n# the admin's own hook\n"
    assert hook.read_bytes() == Path(packaged_hook()).read_bytes()
    assert oct(hook.stat().st_mode & 0o777) == "0o755"  # ctk's hook, not the old file's mode
    assert main(_install(tree)) == 0  # ctk's own now: no --force needed again
    assert capsys.readouterr().out == "already installed; nothing written\n"
    capsys.readouterr()
    assert main(["uninstall", "--root", str(tree)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"restored {hook} (the file ctk install --force had replaced, from .bak)"
    )
    assert _tree_snapshot(tree) == before  # the admin's hook back, its mode too; no .bak


def test_uninstall_keeps_the_backup_of_a_file_changed_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "node"
    hook = _hand_copied(tree, b"#!/bin/sh\n# the admin's own hook\n")
    assert main(_install(tree, "--force")) == 0
    hook.write_bytes(b"patched after the install\n")
    capsys.readouterr()
    assert main(["uninstall", "--root", str(tree), "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert (done["kept"], done["restored"]) == ([HOOK_PATH], [])
    assert hook.read_bytes() == b"patched after the install\n"
    assert (tree / (HOOK + ".bak")).read_bytes() == b"#!/bin/sh\n# the admin's own hook\n"


@pytest.mark.parametrize("gone", ["removed", "replaced-by-a-link"])
def test_uninstall_restores_nothing_where_the_backup_is_gone(
    gone: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "node"
    hook = _hand_copied(tree, b"#!/bin/sh\n# the admin's own hook\n")
    assert main(_install(tree, "--force")) == 0
    backup = tree / (HOOK + ".bak")
    backup.unlink()
    if gone == "replaced-by-a-link":
        backup.symlink_to("/etc/passwd")
    capsys.readouterr()
    assert main(["uninstall", "--root", str(tree), "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert HOOK_PATH in done["removed"] and done["restored"] == []
    assert not hook.exists()


def test_a_file_ctk_wrote_and_someone_changed_is_foreign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "node"
    tree.mkdir()
    assert main(_install(tree)) == 0
    (tree / HOOK).write_bytes(b"patched\n")
    capsys.readouterr()
    assert main(_install(tree)) == 1
    assert "not written by ctk" in capsys.readouterr().err
    assert (tree / HOOK).read_bytes() == b"patched\n"


def test_an_upgrade_rewrites_ctks_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files the manifest lists as they are now are ctk's: a new install replaces them (no
    --force, no backup)."""
    tree = tmp_path / "node"
    tree.mkdir()
    assert main(_install(tree)) == 0
    capsys.readouterr()
    again = ["install", "--root", str(tree), "--ctk", "/opt/new/bin/ctk"]
    assert main(again) == 0
    service = tree / "etc/systemd/system/ctk-cdi-refresh.service"
    assert capsys.readouterr().out.splitlines()[0] == f"wrote {service}"
    assert "ExecStart=/opt/new/bin/ctk " in service.read_text()
    assert not list(tree.rglob("*.bak"))


def test_a_hand_copied_identical_hook_is_never_ctks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Byte-identical is not ownership: the hook is left, stays out of the manifest, and
    uninstall keeps it."""
    tree = tmp_path / "node"
    hook = _hand_copied(tree, Path(packaged_hook()).read_bytes())
    assert main(_install(tree)) == 0
    out = capsys.readouterr().out
    assert f"left {hook}: already what ctk would write, but not written by ctk" in out
    listed = json.loads((tree / MANIFEST).read_text())["files"]
    assert "/usr/local/libexec/ctk/ctk-hook" not in [entry["path"] for entry in listed]
    assert main(["uninstall", "--root", str(tree)]) == 0
    assert f"removed {hook}" not in capsys.readouterr().out
    assert hook.read_bytes() == Path(packaged_hook()).read_bytes()
    hook.chmod(0o644)  # the same bytes, but not what ctk would write: refused
    assert main(_install(tree)) == 1
    assert oct(hook.stat().st_mode & 0o777) == "0o644"


def test_printed_paths_are_under_the_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `ctk install --root R` prints names the files it wrote, under R (issue 22)."""
    tree = tmp_path / "node"
    tree.mkdir()
    assert main(_install(tree)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"wrote {tree}/usr/local/libexec/ctk/ctk-hook"
    assert all(line.startswith(f"wrote {tree}/") for line in lines)
    assert main(["uninstall", "--root", str(tree)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"removed {tree}/usr/local/libexec/ctk/ctk-hook"
    assert main(["uninstall", "--root", str(tree)]) == 1
    assert capsys.readouterr().err.startswith(
        f"error: nothing to uninstall: no install manifest under {tree}/usr/local/libexec/ctk\n"
    )


@pytest.mark.parametrize(
    ("backups", "error"),
    [
        pytest.param([{"path": "/a", "backup": "/a.bak"}], None, id="absolute"),
        pytest.param([{"path": "/a", "backup": "a.bak"}], "names a path", id="relative-backup"),
        pytest.param([{"path": "/a/../x", "backup": "/a.bak"}], "names a path", id="dotdot"),
        pytest.param([{"path": "/a"}], "not a ctk install manifest", id="no-backup-key"),
        pytest.param(["/a"], "not a ctk install manifest", id="not-an-object"),
    ],
)
def test_a_manifest_backup_entry_is_checked(backups: list[object], error: str | None) -> None:
    from ctk.errors import CtkError
    from ctk.install import Manifest, parse_manifest, render_manifest

    text = json.dumps({"version": 1, "files": [], "folders": [], "backups": backups})
    if error is None:
        manifest = parse_manifest(text, "m.json")
        assert manifest == Manifest(backups=((PurePosixPath("/a"), PurePosixPath("/a.bak")),))
        assert parse_manifest(render_manifest(manifest), "m.json") == manifest
        return
    with pytest.raises(CtkError, match=error):
        parse_manifest(text, "m.json")
