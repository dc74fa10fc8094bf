"""With --json, an error is still one JSON document on standard output (and the usual lines on
standard error, the usual exit code): a program parsing the output never gets nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctk.cli.app import main


def _deep(tmp_path: Path) -> str:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    return str(deep)


CASES = [
    pytest.param(
        lambda t: ["doctor", "--json", "--root", str(t), "--image-env", _deep(t)],
        1,
        "{tmp}/deep.json: not valid JSON: nested too deeply to read",
        id="doctor-image-env-nested-100000-deep",
    ),
    pytest.param(
        lambda t: ["doctor", "--json", "--root", f"{t}/missing"],
        1,
        "--root {tmp}/missing: no such directory",
        id="doctor-root",
    ),
    pytest.param(
        lambda t: ["doctor", "--json", "--check", "no.such-check"],
        2,
        "unknown check id: no.such-check",
        id="doctor-usage",
    ),
    pytest.param(
        lambda t: ["cdi", "list", "--json", "--root", f"{t}/missing"],
        1,
        "--root {tmp}/missing: no such directory",
        id="cdi-list",
    ),
    pytest.param(
        lambda t: ["cdi", "validate", "--json", f"{t}/a.yaml", "--spec-dir", str(t)],
        2,
        "give spec files or --spec-dir, not both",
        id="cdi-validate",
    ),
    pytest.param(
        lambda t: ["install", "--json", "--root", f"{t}/missing"],
        1,
        "--root {tmp}/missing: no such directory",
        id="install",
    ),
    pytest.param(
        lambda t: ["uninstall", "--json", "--root", str(t)],
        1,
        "nothing to uninstall: no install manifest under {tmp}/usr/local/libexec/ctk",
        id="uninstall",
    ),
    pytest.param(
        lambda t: ["cdi", "diff", "--json", f"{t}/missing.yaml", f"{t}/missing.yaml"],
        1,
        "{tmp}/missing.yaml: cannot read: No such file or directory",
        id="cdi-diff",
    ),
]


@pytest.mark.parametrize(("argv", "code", "message"), CASES)
def test_an_error_with_json_is_a_json_document(
    argv: object, code: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert callable(argv)
    assert main(argv(tmp_path)) == code
    out, err = capsys.readouterr()
    document = json.loads(out)  # exactly one document
    expected = message.format(tmp=tmp_path)
    assert document["schema"] == "ctk.error/v1"
    assert (document["error"]["message"], document["error"]["exit_code"]) == (expected, code)
    assert err.splitlines()[0] == f"error: {expected}"
    assert document["error"]["hint"] == (
        err.splitlines()[1].removeprefix("hint: ") if len(err.splitlines()) > 1 else None
    )


def test_without_json_nothing_goes_to_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--root", str(tmp_path), "--image-env", _deep(tmp_path)]) == 1
    assert capsys.readouterr().out == ""
