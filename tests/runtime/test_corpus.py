"""`ctk runtime configure` on the real-world corpus: whole files compared, then undone."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.runtime.corpus import ROOT_MARK, UPDATE, Case, cases, read_tree

CASES = [pytest.param(case, id=case.id) for case in cases()]


def _run(args: list[str], capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return (
        code,
        captured.out.replace(str(root), ROOT_MARK),
        captured.err.replace(str(root), ROOT_MARK),
    )


@pytest.mark.parametrize("case", CASES)
def test_configure_matches_golden(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    case.install(root)
    code, out, err = _run(["runtime", "configure", *case.args(root)], capsys, root)
    tree = read_tree(root, mark=root)
    if UPDATE:
        case.update(tree, out, err)
    assert (code, out, err) == (0, case.expected_text("stdout"), case.expected_text("stderr"))
    assert tree == case.expected_tree()


@pytest.mark.parametrize("case", CASES)
def test_configure_twice_changes_nothing(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    case.install(root)
    assert main(["runtime", "configure", *case.args(root)]) == 0
    first = read_tree(root)
    capsys.readouterr()
    code, out, _ = _run(["runtime", "configure", *case.args(root)], capsys, root)
    assert (code, out) == (0, f"{case.engine} is already configured; nothing changed\n")
    assert read_tree(root) == first


@pytest.mark.parametrize("case", CASES)
def test_unconfigure_restores_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    case.install(root)
    before = read_tree(root, mark=root)
    args = case.args(root)
    assert main(["runtime", "configure", *args]) == 0
    keep = [a for a in args if a not in ("--set-as-default", "--cdi.enabled", "--enable-cdi")]
    keep = [
        a
        for i, a in enumerate(keep)
        if keep[i - 1] != "--nvidia-runtime-path" and (a != "--nvidia-runtime-path")
    ]
    assert main(["runtime", "unconfigure", *keep]) == 0
    assert read_tree(root, mark=root) == before
    assert before == case.input_tree()
