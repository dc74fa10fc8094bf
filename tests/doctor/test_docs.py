"""docs/doctor.md stays true: the schema it shows and the check list are the real ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctk.cli.app import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"
SCHEMA = Path(__file__).resolve().parents[2] / "ctk" / "schemas" / "doctor-v1.json"


def _block(language: str) -> str:
    match = re.search(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)
    assert match is not None
    return match.group(1)


def test_documented_schema_is_the_shipped_one() -> None:
    assert json.loads(_block("json")) == json.loads(SCHEMA.read_text())


def test_documented_check_list_is_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--list"]) == 0
    assert _block("text") == capsys.readouterr().out
