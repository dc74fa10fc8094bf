"""Hostile spec directories and outputs (issue 15): links that loop or lead elsewhere,
directories that deny entry, a spec of 200,000 aliases. Never exit 3, never a file not named."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml import FakeNode
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library
from tests.runners import main_as_nobody
from tests.runners import open_to_nobody as open_to_nobody_dir

REPO = Path(__file__).resolve().parents[2]

__all__ = ["fake_node", "fake_nvml_library"]

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUN = FIXTURES / "specs" / "run" / "cdi"
MakeNode = Callable[[str], FakeNode]


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


def test_a_symlink_loop_named_yaml_hides_no_good_spec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    (tmp_path / "nvidia.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    loop = (
        f"{tmp_path}/loop.yaml: error: cannot read: Too many levels of symbolic links [read.error]"
    )

    assert main(["cdi", "list", "--spec-dir", str(tmp_path)]) == 1
    assert capsys.readouterr() == ("nvidia.com/gpu=1\n", f"{loop}\n1 invalid spec skipped\n")

    assert main(["cdi", "validate", "--spec-dir", str(tmp_path)]) == 1
    assert capsys.readouterr() == (
        f"{loop}\n{tmp_path}/loop.yaml: invalid (1 error)\n"
        f"{tmp_path}/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 1 device)\n"
        "2 specs: 1 valid, 1 invalid\n",
        "",
    )


def _main_as_nobody(argv: list[str]) -> tuple[int, str, str]:
    """`main_as_nobody`, after importing as root what the command needs."""
    import rich.console  # noqa: F401
    import typer._click._textwrap  # noqa: F401  (imported lazily; nobody cannot read site-packages)

    main(["cdi", "list", "--spec-dir", "/nonexistent"])  # import the rest as root
    return main_as_nobody(argv)


@pytest.fixture
def open_to_nobody() -> Iterator[Path]:
    with open_to_nobody_dir() as base:
        yield base


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become user nobody")
@pytest.mark.parametrize("command", ["list", "validate"])
def test_unreadable_spec_dirs_exit_1_and_the_others_are_read(
    capfd: pytest.CaptureFixture[str], open_to_nobody: Path, command: str
) -> None:
    base = open_to_nobody
    good = base / "good"
    good.mkdir()
    good.chmod(0o755)  # whatever the umask an earlier test left
    (good / "nvidia.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    (good / "nvidia.yaml").chmod(0o644)
    locked = base / "locked"
    locked.mkdir(mode=0o000)
    behind = base / "closed" / "cdi"
    behind.mkdir(parents=True)
    behind.parent.chmod(0o000)
    argv = ["cdi", command, *(f"--spec-dir={d}" for d in (locked, behind, good))]

    code, out, err = _main_as_nobody(argv)
    denied = "error: spec directory cannot be listed: Permission denied [spec-dir.unreadable]"
    problems = f"{locked}: {denied}\n{behind}: {denied}\n"
    if command == "list":
        assert (code, out, err) == (1, "nvidia.com/gpu=1\n", problems)
    else:
        verdict = f"{good}/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 1 device)\n"
        assert (code, out, err) == (1, problems + verdict, "")


def _alias_spec(count: int) -> str:
    head = 'cdiVersion: "0.6.0"\nkind: nvidia.com/gpu\ndevices:\n'
    device = '- &d\n  name: "0"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n'
    return head + device + "- *d\n" * count


def test_two_hundred_thousand_aliases_are_refused_with_their_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "alias.yaml"
    spec.write_text(_alias_spec(200_000))
    expected = (
        f"{spec}: error: YAML aliases expand 17 nodes to 2000017 (more than 100000); not read "
        "[parse.aliases]\n"
    )
    for argv in (["validate", str(spec)], ["list", "--spec-dir", str(tmp_path)]):
        assert main(["cdi", *argv]) == 1
        out, err = capsys.readouterr()
        if argv[0] == "validate":
            assert (out, err) == (expected + f"{spec}: invalid (1 error)\n", "")
        else:
            assert (out, err) == ("", expected + "1 invalid spec skipped\n")


def _laughs_spec(depth: int) -> str:
    """A billion laughs: each level lists the one below twice, so the last expands to 2**depth."""
    levels = ['  - &l0 ["ha", "ha"]\n']
    levels += [f"  - &l{k} [*l{k - 1}, *l{k - 1}]\n" for k in range(1, depth)]
    return (
        'cdiVersion: "0.6.0"\nkind: nvidia.com/gpu\nlaughs:\n' + "".join(levels) + "devices: []\n"
    )


@pytest.mark.parametrize("command", ["validate", "list"])
def test_a_billion_laughs_is_counted_not_expanded(command: str, tmp_path: Path) -> None:
    """2**60 nodes once expanded: refused from the count. The run is a child process with a
    timeout, so a reader that expanded the aliases fails the test instead of hanging the suite
    (a hang guard, not a speed measure: speed lives in benchmarks/)."""
    spec = tmp_path / "laughs.yaml"
    spec.write_text(_laughs_spec(60))
    argv = [str(spec)] if command == "validate" else ["--spec-dir", str(tmp_path)]
    entry = "import sys; from ctk.cli.app import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", entry, "cdi", command, *argv],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    found = re.search(
        r"YAML aliases expand (\d+) nodes to (\d+) \(more than 100000\)", done.stderr + done.stdout
    )
    assert done.returncode == 1 and found is not None, done.stderr
    distinct, expanded = int(found[1]), int(found[2])
    assert distinct < 300 and expanded > 2**60


def _refresh(node: FakeNode, output: Path, command: str = "refresh") -> int:
    argv = ["--driver-root", str(node.root), "--disable-hook", "all", "-o", str(output)]
    return main(["cdi", command, *argv])


@pytest.mark.integration
@pytest.mark.parametrize("command", ["refresh", "generate"])
def test_output_link_to_a_file_that_is_not_a_spec_is_not_replaced(
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    node = fake_node("workstation")
    precious = tmp_path / "etc" / "passwd"
    precious.parent.mkdir()
    precious.write_bytes(b"root:x:0:0::/root:/bin/sh\n")
    link = tmp_path / "nvidia.yaml"
    link.symlink_to(precious)

    assert _refresh(node, link, command) == 1
    assert capsys.readouterr() == (
        "",
        f"error: --output {link}: a symlink to {precious}, which is not a CDI spec; not "
        "replacing it\nhint: remove the link, or pass the path of the spec file itself\n",
    )
    assert precious.read_bytes() == b"root:x:0:0::/root:/bin/sh\n"
    assert link.readlink() == precious


@pytest.mark.integration
def test_output_link_to_a_spec_is_refreshed_through(
    fake_node: MakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = fake_node("workstation")
    spec = tmp_path / "specs" / "nvidia.yaml"
    spec.parent.mkdir()
    assert _refresh(node, spec) == 0
    spec.write_text(spec.read_text().replace("nvidia0", "nvidia9"))
    link = tmp_path / "nvidia.yaml"
    link.symlink_to(spec)
    capsys.readouterr()

    assert _refresh(node, link) == 0
    assert link.is_symlink()
    assert "nvidia9" not in spec.read_text()


@pytest.mark.integration
@pytest.mark.parametrize("command", ["refresh", "generate"])
def test_dangling_output_link_creates_nothing(
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    node = fake_node("workstation")
    out = tmp_path / "out"
    out.mkdir()
    target = out / "missing" / "dir" / "nvidia.yaml"
    link = out / "nvidia.yaml"
    link.symlink_to(target)

    assert _refresh(node, link, command) == 1
    assert capsys.readouterr() == (
        "",
        f"error: --output {link}: a symlink to {target}, which does not exist\n"
        "hint: remove the link, or pass the path of the spec file itself\n",
    )
    assert [p.name for p in out.iterdir()] == ["nvidia.yaml"]
