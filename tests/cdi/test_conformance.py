"""Every conformance file gets its expected verdict (tests/fixtures/conformance, see ORIGIN.md)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ctk.cdi.validate import validate_bytes

CONFORMANCE = Path(__file__).parent.parent / "fixtures" / "conformance"
CASES = CONFORMANCE / "cdi-cases"


def _cases() -> list[object]:
    with (CASES / "expected.tsv").open(encoding="utf-8") as table:
        rows = list(csv.DictReader(table, delimiter="\t"))
    return [
        pytest.param(row["file"], row["verdict"], id=f"{row['file']} {row['reason']}")
        for row in rows
    ]


def test_table_covers_every_file() -> None:
    with (CASES / "expected.tsv").open(encoding="utf-8") as table:
        listed = {row["file"] for row in csv.DictReader(table, delimiter="\t")}
    on_disk = {
        str(p.relative_to(CASES)) for p in CASES.rglob("*") if p.suffix in (".json", ".yaml")
    }
    assert listed == on_disk


@pytest.mark.parametrize(("file", "verdict"), _cases())
def test_case_verdict(file: str, verdict: str) -> None:
    report = validate_bytes((CASES / file).read_bytes(), file)
    assert ("valid" if report.valid else "invalid") == verdict, report.problems


@pytest.mark.parametrize(
    ("file", "verdict"),
    [
        pytest.param("good/minimal.json", "valid", id="good-minimal"),
        pytest.param("good/spec-example.json", "valid", id="good-spec-example"),
        pytest.param("bad/empty.json", "invalid", id="bad-empty-file"),
        pytest.param("bad/explicit-empty.json", "invalid", id="bad-empty-object"),
    ],
)
def test_upstream_verdict(file: str, verdict: str) -> None:
    path = CONFORMANCE / "cdi-upstream" / file
    report = validate_bytes(path.read_bytes(), file)
    assert ("valid" if report.valid else "invalid") == verdict, report.problems
