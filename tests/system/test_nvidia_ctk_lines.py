"""`ctk system` run as NVIDIA's udev rule, refresh unit and GPU Operator run `nvidia-ctk system`:
their flags and environment variables, with nvidia-ctk's precedence (a flag beats its variable)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.system.test_system import fake_root, needs_root, tree

ENV_NAMES = (
    "DEV_CHAR_PATH",
    "NVIDIA_DRIVER_ROOT",
    "DRIVER_ROOT",
    "ROOT",
    "NVIDIA_DEV_ROOT",
    "DEV_ROOT",
    "CREATE_ALL",
    "CREATE_DEVICE_NODES",
    "LOAD_KERNEL_MODULES",
    "DRY_RUN",
)

ALL_LINKS = {  # every node the fake driver implies: its 2 GPUs, nvidiactl, modeset, uvm, uvm-tools
    "char/195:0": "-> ../nvidia0",
    "char/195:1": "-> ../nvidia1",
    "char/195:254": "-> ../nvidia-modeset",
    "char/195:255": "-> ../nvidiactl",
    "char/509:1": "-> ../nvidia-caps/nvidia-cap1",
    "char/510:0": "-> ../nvidia-uvm",
    "char/510:1": "-> ../nvidia-uvm-tools",
}
EXISTING_LINKS = {
    k: v
    for k, v in ALL_LINKS.items()
    if k in ("char/195:0", "char/195:255", "char/509:1", "char/510:0")
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


def _links(root: Path) -> dict[str, str]:
    return {k: v for k, v in tree(root / "dev").items() if k.startswith("char/")}


@needs_root
@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        pytest.param(["--create-all"], {}, ALL_LINKS, id="udev-rule-create-all"),
        pytest.param([], {"CREATE_ALL": "true"}, ALL_LINKS, id="CREATE_ALL"),
        pytest.param(["--create-all=true"], {}, ALL_LINKS, id="create-all=true"),
        pytest.param(["--create-all=false"], {}, EXISTING_LINKS, id="create-all=false"),
        pytest.param([], {"CREATE_ALL": "false"}, EXISTING_LINKS, id="CREATE_ALL=false"),
        pytest.param(["--create-all"], {"DRY_RUN": "true"}, {}, id="DRY_RUN-writes-nothing"),
        pytest.param(["--create-all"], {"DRY_RUN": "1"}, {}, id="DRY_RUN=1"),
        pytest.param(["--create-all"], {"DRY_RUN": "false"}, ALL_LINKS, id="DRY_RUN=false"),
        pytest.param(["--dry-run=true"], {}, {}, id="dry-run=true"),
    ],
)
def test_dev_char_symlinks_as_nvidia_runs_them(  # noqa: PLR0917  (pytest passes fixtures by position)
    argv: list[str],
    env: dict[str, str],
    expected: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = fake_root(tmp_path)
    monkeypatch.setenv("DRIVER_ROOT", str(root))
    monkeypatch.setenv("DEV_CHAR_PATH", str(root / "dev/char"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = tree(root)
    assert main(["system", "create-dev-char-symlinks", *argv]) == 0
    assert _links(root) == expected
    if not expected:
        assert tree(root) == before
        assert capsys.readouterr().out.startswith("would create  ")


@needs_root
@pytest.mark.parametrize(
    ("env", "flags", "used"),
    [
        pytest.param(
            {"NVIDIA_DRIVER_ROOT": "{a}", "DRIVER_ROOT": "{b}"},
            [],
            "a",
            id="NVIDIA_DRIVER_ROOT-first",
        ),
        pytest.param({"DRIVER_ROOT": "{b}"}, [], "b", id="DRIVER_ROOT"),
        pytest.param(
            {"DRIVER_ROOT": "{b}"}, ["--driver-root", "{a}"], "a", id="flag-beats-DRIVER_ROOT"
        ),
        pytest.param(
            {"DEV_CHAR_PATH": "/nonexistent/x", "DRIVER_ROOT": "{a}"},
            ["--dev-char-path", "{a}/dev/char"],
            "a",
            id="flag-beats-DEV_CHAR_PATH",
        ),
    ],
)
def test_dev_char_symlinks_precedence(
    env: dict[str, str],
    flags: list[str],
    used: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    roots = {name: fake_root(tmp_path / name) for name in ("a", "b")}
    monkeypatch.setenv("DEV_CHAR_PATH", str(roots[used] / "dev/char"))
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(**roots))
    argv = [flag.format(**roots) for flag in flags]
    assert main(["system", "create-dev-char-symlinks", *argv]) == 0
    other = "b" if used == "a" else "a"
    assert (_links(roots[used]), _links(roots[other])) == (EXISTING_LINKS, {})


def test_create_all_without_a_driver_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text("Character devices:\n  1 mem\n")
    argv = ["--create-all", "--driver-root", str(tmp_path), "--dev-char-path", str(tmp_path / "c")]
    assert main(["system", "create-dev-char-symlinks", *argv]) == 1
    assert capsys.readouterr().err == (
        f"error: --create-all: no NVIDIA driver loaded: {tmp_path}/proc/devices lists no "
        "nvidia major\nhint: load the driver first (--load-kernel-modules), or pass --driver-root\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proc"]


@pytest.fixture
def modprobe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `modprobe` first on PATH that records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "modprobe.log"
    script = bin_dir / "modprobe"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


@needs_root
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "DRY_RUN"])
def test_refresh_unit_create_device_nodes_line(
    dry_run: bool,
    tmp_path: Path,
    modprobe: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """nvidia-cdi-refresh: `create-device-nodes --control-devices --load-kernel-modules`."""
    root = fake_root(tmp_path, with_nodes=False)
    dev_root = tmp_path / "devroot"
    (dev_root / "dev").mkdir(parents=True)
    monkeypatch.setenv("ROOT", str(root))
    monkeypatch.setenv("NVIDIA_DEV_ROOT", str(dev_root))
    if dry_run:
        monkeypatch.setenv("DRY_RUN", "true")
    before = tree(tmp_path)
    argv = ["system", "create-device-nodes", "--control-devices", "--load-kernel-modules"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    if dry_run:
        assert not modprobe.exists()
        assert tree(tmp_path) == before
        assert out.splitlines()[:3] == [
            f"would load    {m}" for m in ("nvidia", "nvidia-uvm", "nvidia-modeset")
        ]
        return
    assert modprobe.read_text() == "nvidia\nnvidia-uvm\nnvidia-modeset\n"
    assert tree(dev_root) == {
        "dev": "dir",
        "dev/nvidia0": "c 195:0 0o666",
        "dev/nvidia1": "c 195:1 0o666",
        "dev/nvidia-modeset": "c 195:254 0o666",
        "dev/nvidiactl": "c 195:255 0o666",
        "dev/nvidia-uvm": "c 510:0 0o666",
        "dev/nvidia-uvm-tools": "c 510:1 0o666",
    }
    assert not (root / "dev/nvidia0").exists()


def test_failing_modprobe_is_an_error(
    tmp_path: Path, modprobe: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bin/modprobe").write_text(
        '#!/bin/sh\necho "FATAL: Module $1 not found." >&2\nexit 1\n'
    )
    argv = ["--load-kernel-modules", "--driver-root", str(tmp_path), "--dry-run=false"]
    assert main(["system", "create-device-nodes", *argv]) == 1
    assert capsys.readouterr().err == (
        "error: cannot load kernel module nvidia: FATAL: Module nvidia not found.\n"
        "hint: is the NVIDIA driver installed for this kernel?\n"
    )


# --- every documented system and hook line: accepted (issue 12's done-when) --------------------

SYSTEM_LINES = [  # each dry: nothing is written, whatever else the line asks for
    "create-dev-char-symlinks --driver-root {root} --dev-char-path {root}/dev/char --dry-run",
    "create-dev-char-symlinks --driver-root={root} --dev-char-path={root}/dev/char --create-all "
    "--dry-run",
    "create-dev-char-symlinks --driver-root {root} --dev-char-path {root}/dev/char "
    "--create-device-nodes --dry-run=true",
    "create-dev-char-symlinks --driver-root {root} --dev-char-path {root}/dev/char "
    "--load-kernel-modules --create-all=true --dry-run",
    "create-device-nodes --driver-root {root} --dev-root {root} --control-devices --dry-run",
    "create-device-nodes --root {root} --dev-root {root} --control-devices --load-kernel-modules "
    "--dry-run",
    "create-device-nodes --root={root} --dry-run",
]


@needs_root
@pytest.mark.parametrize(
    "line", [pytest.param(line, id=line.split()[0] + str(i)) for i, line in enumerate(SYSTEM_LINES)]
)
def test_every_documented_system_line_is_accepted(
    line: str, tmp_path: Path, modprobe: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each flag of nvidia-ctk 1.20's `system` commands (NVIDIA-CTK-REFERENCE.md), dry: exit 0,
    no warning, no module loaded, nothing written."""
    root = fake_root(tmp_path, with_nodes=False)
    before = tree(tmp_path)
    assert main(["system", *line.format(root=root).split()]) == 0
    assert [w for w in capsys.readouterr().err.splitlines() if w.startswith("warning:")] == []
    assert (tree(tmp_path), modprobe.exists()) == (before, False)


HOOK_LINES = [  # nvidia-ctk hook <subcommand> with every flag nvidia-ctk 1.20 documents for it
    "update-ldcache --folder /usr/lib64 --folder /usr/lib --ldconfig-path /sbin/ldconfig "
    "--container-spec /run/config.json",
    "create-symlinks --link libcuda.so.1::/usr/lib64/libcuda.so --link a::/b",
    "chmod --path /dev/dri --path /dev/nvidia-caps --mode 755 --container-spec -",
    "enable-cuda-compat --host-driver-version 550.54.15 --host-cuda-version 12.4 "
    "--cuda-compat-container-root /usr/local/cuda/compat",
    "disable-device-node-modification",
    "update-application-profile",
]


def _hook_exit(args: list[str]) -> tuple[int, str]:
    """`ctk hook ARGS -h` in a child (the hook replaces the process): exit code, stderr."""
    import subprocess
    import sys

    from tests.hook.native import hook_binary

    hook_binary()  # built from native/ when this checkout's sources are newer
    script = "import sys; from ctk.cli.app import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", script, "hook", *args, "-h"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize("line", [pytest.param(line, id=line.split()[0]) for line in HOOK_LINES])
def test_every_documented_hook_flag_is_accepted(line: str) -> None:
    """The flags parse (the help that follows them exits 0); an unknown one would exit 2."""
    assert _hook_exit(line.split()) == (0, "")


def test_an_unknown_hook_flag_is_a_usage_error() -> None:
    """The table above can fail: the same run with a flag nvidia-ctk does not have."""
    code, err = _hook_exit(["update-ldcache", "--bogus"])
    assert (code, err.splitlines()[0]) == (
        2,
        "ctk-hook: error: update-ldcache: unknown option --bogus (see ctk-hook --help)",
    )
