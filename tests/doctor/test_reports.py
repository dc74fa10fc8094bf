"""The doctor's whole report on every fixture node, against a reviewed golden file.

test_scenarios pins which checks fail or warn and their summaries; these files pin the rest of
what a user reads and a program parses: every check's status, summary, evidence and remedy
(with its commands), and the summary counts. A message, evidence line or fix that changes by
accident fails here. Golden files: tests/fixtures/doctor-expected/<node>.jsonl (JSON lines:
the summary, then a line per check), the node's temporary root written as `/ROOT`. After a
deliberate change regenerate them with `CTK_UPDATE_GOLDEN=1 pytest tests/doctor/test_reports.py`
and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import DOCTOR_NODES, FakeNode, names

EXPECTED = Path(__file__).resolve().parent.parent / "fixtures" / "doctor-expected"
UPDATE = os.environ.get("CTK_UPDATE_GOLDEN") == "1"
KEPT = ("id", "status", "summary", "evidence", "remedy", "blocked_by")


def report(document: dict[str, Any], root: Path) -> str:
    """The parts of the JSON document that do not depend on the machine or the clock: the
    summary, then one line per check (a diff names the check that changed)."""
    lines = [json.dumps(document["summary"], ensure_ascii=False)]
    lines += [
        json.dumps({key: check[key] for key in KEPT}, ensure_ascii=False)
        for check in document["checks"]
    ]
    text = "\n".join(lines) + "\n"
    # the node's temporary root, and the running kernel (modules are looked up by its release)
    return text.replace(str(root), "/ROOT").replace(os.uname().release, "<uname -r>")


@pytest.mark.integration
@pytest.mark.parametrize("node", names(DOCTOR_NODES))
def test_report(
    node: str,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = fake_node(node)
    code = main(["doctor", "--json", "--root", str(built.root)])
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert code == document["summary"]["exit_code"]
    text = report(document, built.root)
    golden = EXPECTED / f"{node}.jsonl"
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert _python_words(text) == _python_words(golden.read_text())


# What Python's own json module says of a bad file changes by release (3.13: "Illegal trailing
# comma before end of object"; 3.11: "Expecting property name enclosed in double quotes"), with
# the position it points at: the golden files hold 3.11's, the comparison neither.
_JSON_MESSAGE = re.compile(r"(valid JSON: )[^\"]*? \(line \d+, column \d+\)")


def _python_words(text: str) -> str:
    return _JSON_MESSAGE.sub(r"\1<json's message>", text)


def test_every_golden_file_has_its_node() -> None:
    """A node that is removed takes its golden file with it."""
    assert sorted(p.stem for p in EXPECTED.glob("*.jsonl")) == names(DOCTOR_NODES)
