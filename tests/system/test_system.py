"""`ctk system create-dev-char-symlinks` and `create-device-nodes` on fake roots with real nodes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.errors import CtkError
from ctk.node.dev import Major, nvidia_majors
from ctk.nvproc import parse_gpu_information, parse_proc_devices
from tests.nodes import SkipNode, materialise, node_dir

PROC_DEVICES = (node_dir("system-two-gpus") / "proc/devices").read_text()
GPU_INFO = (
    "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\n"
    "Device Minor: \t {minor}\nBus Location: \t {bus}\n"
)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root (CAP_MKNOD)")


def node(path: Path, major: int, minor: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))


def fake_root(tmp_path: Path, *, with_nodes: bool = True, proc_devices: str | None = None) -> Path:
    """The driver root `system-two-gpus` (tests/fixtures/roots) under ``tmp_path``: /proc/devices,
    two GPUs in /proc/driver/nvidia, /dev with its NVIDIA nodes or (``with_nodes=False``) none."""
    name = "system-two-gpus" if with_nodes else "system-two-gpus-no-nodes"
    try:
        root = materialise(name, tmp_path, None).root
    except SkipNode as exc:
        pytest.skip(str(exc))
    if proc_devices is not None:
        (root / "proc/devices").write_text(proc_devices)
    return root


def tree(top: Path) -> dict[str, str]:
    """Every entry under ``top``: link target, device numbers and mode, or kind."""
    seen: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            rel = str(path.relative_to(top))
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = "-> " + os.readlink(path)
            elif stat.S_ISCHR(info.st_mode):
                numbers = f"{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"
                seen[rel] = f"c {numbers} {oct(info.st_mode & 0o777)}"
            else:
                seen[rel] = "dir" if stat.S_ISDIR(info.st_mode) else "file"
    return seen


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            PROC_DEVICES, {Major.FRONTEND: 195, Major.CAPS: 509, Major.UVM: 510}, id="char-only"
        ),
        pytest.param("Character devices:\n195 nvidia\n", {Major.NVIDIA: 195}, id="old-name"),
        pytest.param("Block devices:\n195 nvidia\n", {}, id="block-ignored"),
        pytest.param("", {}, id="empty"),
    ],
)
def test_parse_proc_devices(text: str, expected: dict[Major, int]) -> None:
    assert nvidia_majors(parse_proc_devices(text)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(GPU_INFO.format(minor=3, bus="x"), 3, id="minor"),
        pytest.param("Model: x\n", None, id="missing"),
        pytest.param("Device Minor: ?\n", None, id="garbage"),
    ],
)
def test_parse_device_minor(text: str, expected: int | None) -> None:
    assert parse_gpu_information(text).device_minor == expected


@needs_root
def test_dev_char_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fake_root(tmp_path)
    args = [
        "system",
        "create-dev-char-symlinks",
        "--driver-root",
        str(root),
        "--dev-char-path",
        str(root / "dev/char"),
    ]
    assert main([*args, "--dry-run"]) == 0
    dev = root / "dev"
    # links inside the root work from inside it too (a host mounted elsewhere): relative targets
    lines = [
        "195:0 -> ../nvidia0",
        "195:255 -> ../nvidiactl",
        "509:1 -> ../nvidia-caps/nvidia-cap1",
        "510:0 -> ../nvidia-uvm",
    ]
    assert capsys.readouterr().out == "".join(
        f"would create  {dev}/char/{line}\n" for line in lines
    )
    assert not (dev / "char").exists()
    assert main(args) == 0
    assert capsys.readouterr().out == "".join(
        f"created       {dev}/char/{line}\n" for line in lines
    )
    links = {k: v for k, v in tree(dev).items() if k.startswith("char/")}
    assert links == {
        f"char/{line.split(' -> ')[0]}": "-> " + line.split(" -> ")[1] for line in lines
    }
    before = tree(root)
    assert main(args) == 0
    assert capsys.readouterr().out == "".join(
        f"exists        {dev}/char/{line}\n" for line in lines
    )
    assert tree(root) == before


@needs_root
def test_dev_char_blocked_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fake_root(tmp_path)
    (root / "dev/char").mkdir()
    (root / "dev/char/510:0").write_text("stale\n")
    before = tree(root)
    assert (
        main(
            [
                "system",
                "create-dev-char-symlinks",
                "--driver-root",
                str(root),
                "--dev-char-path",
                str(root / "dev/char"),
            ]
        )
        == 1
    )
    assert capsys.readouterr().err == (
        f"error: {root}/dev/char/510:0: exists and is not a symlink; refusing to replace it\n"
        "hint: remove it by hand, or pass another --dev-char-path\n"
    )
    assert tree(root) == before


@needs_root
def test_dev_char_without_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fake_root(tmp_path, with_nodes=False)
    before = tree(root)
    assert (
        main(
            [
                "system",
                "create-dev-char-symlinks",
                "--driver-root",
                str(root),
                "--dev-char-path",
                str(root / "dev/char"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == f"No NVIDIA device nodes found in {root}\n"
    assert tree(root) == before


@needs_root
def test_create_device_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = fake_root(tmp_path, with_nodes=False)
    devroot = tmp_path / "devroot"
    args = [
        "system",
        "create-device-nodes",
        "--driver-root",
        str(root),
        "--dev-root",
        str(devroot),
        "--control-devices",
    ]
    expected = [
        ("nvidia-modeset", "c 195:254"),
        ("nvidia-uvm", "c 510:0"),
        ("nvidia-uvm-tools", "c 510:1"),
        ("nvidia0", "c 195:0"),
        ("nvidia1", "c 195:1"),
        ("nvidiactl", "c 195:255"),
    ]
    assert main([*args, "--dry-run"]) == 0
    assert capsys.readouterr().out == "".join(
        f"would create  {devroot}/dev/{n} ({c})\n" for n, c in expected
    )
    assert not devroot.exists()
    assert main(args) == 0
    assert capsys.readouterr().out == "".join(
        f"created       {devroot}/dev/{n} ({c})\n" for n, c in expected
    )
    assert tree(devroot) == {"dev": "dir", **{f"dev/{n}": f"{c} 0o666" for n, c in expected}}
    assert main(args[:-1]) == 0
    assert capsys.readouterr().out == "".join(
        f"exists        {devroot}/dev/{n} ({c})\n"
        for n, c in expected
        if n in ("nvidia0", "nvidia1")
    )


@needs_root
def test_create_device_nodes_refuses_a_wrong_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fake_root(tmp_path, with_nodes=False)
    node(root / "dev/nvidia1", 1, 3)
    before = tree(root)
    assert main(["system", "create-device-nodes", "--driver-root", str(root)]) == 1
    assert capsys.readouterr().err == (
        f"error: {root}/dev/nvidia1: is c 1:3, not c 195:1; refusing to replace it\n"
        "hint: remove it by hand if it is stale, then run this again\n"
    )
    assert tree(root) == before


@needs_root
def test_create_device_nodes_without_driver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fake_root(tmp_path, with_nodes=False, proc_devices="Character devices:\n  1 mem\n")
    before = tree(root)
    assert main(["system", "create-device-nodes", "--driver-root", str(root)]) == 1
    assert capsys.readouterr().err == (
        f"error: no NVIDIA driver loaded: {root}/proc/devices lists no nvidia major\n"
        "hint: load the driver (modprobe nvidia), or pass --driver-root of a driver container\n"
    )
    assert tree(root) == before


@needs_root
def test_dry_run_plans_links_for_nodes_it_would_create(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dry run's plan is exactly what the real run then does, links for new nodes included."""
    root = fake_root(tmp_path, with_nodes=False)
    node(root / "dev/nvidia-caps/nvidia-cap1", 509, 1)  # exists already: linked in both runs
    dev = root / "dev"
    args = [
        "system",
        "create-dev-char-symlinks",
        "--driver-root",
        str(root),
        "--dev-char-path",
        str(dev / "char"),
        "--create-device-nodes",
    ]
    nodes = [
        ("nvidia-modeset", "195:254"),
        ("nvidia-uvm", "510:0"),
        ("nvidia-uvm-tools", "510:1"),
        ("nvidia0", "195:0"),
        ("nvidia1", "195:1"),
        ("nvidiactl", "195:255"),
    ]
    links = [
        ("195:0", "nvidia0"),
        ("195:1", "nvidia1"),
        ("195:254", "nvidia-modeset"),
        ("195:255", "nvidiactl"),
        ("509:1", "nvidia-caps/nvidia-cap1"),
        ("510:0", "nvidia-uvm"),
        ("510:1", "nvidia-uvm-tools"),
    ]

    def plan(verb: str) -> str:
        return "".join(
            f"{verb:<13} {dev}/{name} (c {numbers})\n" for name, numbers in nodes
        ) + "".join(f"{verb:<13} {dev}/char/{link} -> ../{name}\n" for link, name in links)

    before = tree(root)
    assert main([*args, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert dry == plan("would create")
    assert tree(root) == before
    assert main(args) == 0
    assert capsys.readouterr().out == plan("created")
    assert dry.replace("would create", "created     ") == plan("created")


@pytest.mark.parametrize(
    ("dev_char", "shown"),
    [
        pytest.param("file", "--dev-char-path {path}: not a directory", id="regular-file"),
        pytest.param(
            "file/char", "--dev-char-path {path}: {root}/file is not a directory", id="under-a-file"
        ),
    ],
)
@pytest.mark.parametrize(
    "dry_run", [pytest.param([], id="real"), pytest.param(["--dry-run"], id="dry")]
)
@needs_root
def test_dev_char_path_not_a_directory(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    dev_char: str,
    shown: str,
    dry_run: list[str],
) -> None:
    root = fake_root(tmp_path, with_nodes=False)
    (root / "file").write_text("root:x:0:0::/root:/bin/sh\n")
    path = root / dev_char
    before = tree(root)
    args = ["system", "create-dev-char-symlinks", "--driver-root", str(root)]
    args += ["--dev-char-path", str(path), "--create-device-nodes", *dry_run]
    assert main(args) == 1
    assert capsys.readouterr() == (
        "",
        "error: " + shown.format(path=path, root=root) + "\n"
        "hint: pass the directory for the <major>:<minor> links, e.g. /dev/char\n",
    )
    assert tree(root) == before


@pytest.mark.parametrize(
    ("command", "option"),
    [
        pytest.param(["create-device-nodes"], "--driver-root", id="nodes"),
        pytest.param(["create-device-nodes"], "--root", id="nodes-root"),
        pytest.param(["create-dev-char-symlinks", "--dry-run"], "--driver-root", id="links"),
        pytest.param(["create-dev-char-symlinks", "--dry-run"], "--root", id="links-root"),
    ],
)
def test_missing_driver_root_is_the_message_generate_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], option: str
) -> None:
    """The error names the option as it was given (`--root` was once called --driver-root)."""
    missing = tmp_path / "no-such-root"
    assert main(["system", *command, option, str(missing)]) == 1
    assert capsys.readouterr().err == (
        f"error: {option} {missing}: no such directory\nhint: pass an existing directory\n"
    )
    assert main(["cdi", "generate", "--driver-root", str(missing)]) == 1
    assert capsys.readouterr().err == (
        f"error: --driver-root {missing}: no such directory\nhint: pass an existing directory\n"
    )


def test_root_without_proc_reads_the_running_kernels(tmp_path: Path) -> None:
    """As nvidia-ctk: a driver container's root has no /proc; the kernel's majors are read."""
    from ctk.host.driver_numbers import read_driver_numbers
    from ctk.host.root import HostRoot

    root = tmp_path / "driver"
    (root / "dev").mkdir(parents=True)
    kernel = fake_root(tmp_path / "kernel")
    facts = read_driver_numbers(HostRoot(root), kernel=HostRoot(kernel))
    assert facts.source == kernel / "proc/devices"
    assert facts.majors == nvidia_majors(parse_proc_devices(PROC_DEVICES))
    assert sorted(facts.gpu_minors) == [0, 1]  # the kernel's GPU information files too
    # the root's own /proc wins when it has one
    own = fake_root(tmp_path / "own", proc_devices="Character devices:\n195 nvidia-frontend\n")
    assert read_driver_numbers(HostRoot(own), kernel=HostRoot(kernel)).majors == {
        Major.FRONTEND: 195
    }
    with pytest.raises(CtkError, match=r"proc/devices: no such file"):
        read_driver_numbers(HostRoot(root))  # no kernel given: never a silent read
    with pytest.raises(CtkError, match=rf"{tmp_path}/empty/proc/devices: no such file"):
        (tmp_path / "empty").mkdir()
        read_driver_numbers(HostRoot(root), kernel=HostRoot(tmp_path / "empty"))


@pytest.mark.parametrize("dry_run", [["--dry-run"], []], ids=["dry-run", "for-real"])
def test_dev_char_links_of_a_root_without_proc_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: list[str]
) -> None:
    """nvidia-ctk 1.20 exits 0 on such a root: ctk too, saying which /proc/devices it read."""
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    before = tree(root)
    args = ["create-dev-char-symlinks", "--dev-char-path", f"{root}/dev/char", *dry_run]
    assert main(["system", *args, "--driver-root", str(root)]) == 0
    out, err = capsys.readouterr()
    assert err == (
        f"note: {root} has no /proc/devices: read the running kernel's /proc/devices "
        "(the majors are the kernel's)\n"
    )
    # this machine has no NVIDIA driver, or one without nodes under this empty root
    assert out == f"No NVIDIA device nodes found in {root}\n"
    assert tree(root) == before
