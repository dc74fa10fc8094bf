"""`runtime unconfigure` after `configure` leaves the root as it found it: no empty folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctk.cli.app import main


@pytest.fixture(autouse=True)
def _state_under_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """ctk's state goes under --root (var/lib/ctk), as on a node, not the suite's own dir."""
    monkeypatch.delenv("CTK_STATE_DIR", raising=False)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _both(runtime: str, root: Path, *more: str) -> None:
    for verb in ("configure", "unconfigure"):
        assert main(["runtime", verb, f"--runtime={runtime}", "--root", str(root), *more]) == 0


@pytest.mark.parametrize("runtime", ["containerd", "docker", "crio"])
def test_a_round_trip_on_an_empty_root_leaves_it_empty(
    runtime: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once left var/lib/ctk/runtime/undo, etc/containerd/conf.d and etc/crio/crio.conf.d."""
    root = tmp_path / "node"
    root.mkdir()
    assert main(["runtime", "configure", f"--runtime={runtime}", "--root", str(root)]) == 0
    assert _tree(root)  # something was written
    assert main(["runtime", "unconfigure", f"--runtime={runtime}", "--root", str(root)]) == 0
    assert _tree(root) == []


@pytest.mark.parametrize("runtime", ["containerd", "crio"])
def test_folders_that_were_there_stay(
    runtime: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A packaged, empty crio.conf.d (or conf.d) is the system's, not ctk's: it stays."""
    root = tmp_path / "node"
    drop_ins = root / ("etc/crio/crio.conf.d" if runtime == "crio" else "etc/containerd/conf.d")
    drop_ins.mkdir(parents=True)
    (root / "var/lib").mkdir(parents=True)
    before = _tree(root)
    _both(runtime, root)
    assert _tree(root) == before


def test_a_folder_that_holds_a_users_file_stays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "node"
    root.mkdir()
    assert main(["runtime", "configure", "--runtime=crio", "--root", str(root)]) == 0
    (root / "etc/crio/crio.conf.d/50-mine.conf").write_text("[crio]\n")
    assert main(["runtime", "unconfigure", "--runtime=crio", "--root", str(root)]) == 0
    assert _tree(root) == [
        "etc",
        "etc/crio",
        "etc/crio/crio.conf.d",
        "etc/crio/crio.conf.d/50-mine.conf",
        # the list keeps the folders still to remove; ctk's state stays with it
        "var",
        "var/lib",
        "var/lib/ctk",
        "var/lib/ctk/runtime",
        "var/lib/ctk/runtime/made-dirs.json",
    ]
    (root / "etc/crio/crio.conf.d/50-mine.conf").unlink()
    _both("crio", root)  # the next round trip finishes the job
    assert _tree(root) == []


def test_the_list_never_leads_out_of_the_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A made-dirs list naming a folder outside --root (edited, or another root's) is ignored."""
    root = tmp_path / "node"
    outside = tmp_path / "outside-empty"
    outside.mkdir()
    root.mkdir()
    assert main(["runtime", "configure", "--runtime=docker", "--root", str(root)]) == 0
    listing = root / "var/lib/ctk/runtime/made-dirs.json"
    data = json.loads(listing.read_text())
    data["directories"] += [str(outside), f"{root}/../outside-empty", "relative/dir"]
    listing.write_text(json.dumps(data))
    assert main(["runtime", "unconfigure", "--runtime=docker", "--root", str(root)]) == 0
    assert outside.is_dir()
    assert _tree(root) == []


def test_a_dry_run_writes_no_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "node"
    root.mkdir()
    assert main(["runtime", "configure", "--runtime=crio", "--root", str(root), "--dry-run"]) == 0
    assert _tree(root) == []


def test_with_a_state_dir_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """$CTK_STATE_DIR stays (it is the user's); the folders ctk made inside it go."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("CTK_STATE_DIR", str(state))
    root = tmp_path / "node"
    root.mkdir()
    _both("containerd", root)
    assert (_tree(root), _tree(state)) == ([], [])
    assert state.is_dir()


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize(
    "pattern", ["/etc/containerd/*", "/etc/containerd/conf.d/*", "/etc/containerd/conf.d/*/"]
)
def test_an_import_glob_that_matches_a_directory_round_trips(
    pattern: str, version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """containerd fails on an imported directory: ctk warns, and undoes its edit exactly."""
    root = tmp_path / "node"
    (root / "etc/containerd/conf.d/subdir").mkdir(parents=True)
    config = root / "etc/containerd/config.toml"
    text = f'version = {version}\nimports = ["{pattern}"]\n\n[plugins]\n  # mine\n'
    config.write_text(text)
    before = _tree(root)
    assert main(["runtime", "configure", "--runtime=containerd", "--root", str(root)]) == 0
    assert "which is a directory: containerd fails to start on it" in capsys.readouterr().err
    assert main(["runtime", "unconfigure", "--runtime=containerd", "--root", str(root)]) == 0
    assert (config.read_text(), _tree(root)) == (text, before)
