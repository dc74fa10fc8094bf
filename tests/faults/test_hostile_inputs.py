"""Every command, every hostile input: exit 0/1/2, an answer in seconds, bounded memory, and no
file touched that the user did not name (issue 15).

The cases are independent processes, so the selected ones run side by side (one per CPU) in a
session fixture; each test then checks its own case's result.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from tests.fake_nvml import SkipNode, materialise
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401
from tests.faults.cases import CONTENTS, UNPRIVILEGED, Slot, case_ids, known
from tests.faults.harness import Outcome, changes, problems, run_ctk, snapshot


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome | None
    found: list[str]
    skipped: str | None = None


def _params() -> list[object]:
    params: list[object] = []
    for slot, content in case_ids():
        case_id = f"{slot.name}:{content}"
        marks = []
        if (failing := known(case_id)) is not None:
            reason = f"issue 15 item {failing.item} ({failing.owner})"
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        params.append(pytest.param(slot, content, id=case_id, marks=marks))
    return params


def _run_case(slot: Slot, content: str, top: Path, library: Path) -> Result:
    case = top / "case"
    case.mkdir(parents=True)
    env = {"CTK_STATE_DIR": str(case / "state")}
    if slot.node:
        try:
            node = materialise("workstation", case, library)
        except SkipNode as exc:
            return Result(None, [], skipped=str(exc))
        shutil.move(node.topology, top / "topology")  # outside the snapshot
        env.update({k: str(top / "topology") for k in node.env})
    if slot.setup is not None:
        slot.setup(case)
    target = case / slot.file
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    try:
        CONTENTS[content](target, slot.kind)
    except PermissionError as exc:  # mknod needs root
        return Result(None, [], skipped=f"cannot make {content} here: {exc.strerror}")
    prefix: tuple[str, ...] = ()
    if content == "eacces" and os.geteuid() == 0:  # root reads anything: drop the capabilities
        if shutil.which(UNPRIVILEGED[0]) is None:
            return Result(
                None, [], skipped="needs setpriv (util-linux) to drop root's capabilities"
            )
        prefix = UNPRIVILEGED
    before = snapshot(case)
    outcome = run_ctk(slot.argv(case), cwd=case, env=env, prefix=prefix)
    found = problems(outcome, changes(before, snapshot(case)), named=slot.named)
    if slot.json_out and outcome.code in (0, 1):
        try:
            json.loads(outcome.stdout)
        except ValueError:
            found.append("no JSON document on stdout")
    if report := os.environ.get("CTK_FAULTS_REPORT"):  # benchmarks/run.py: slowest, biggest
        line = {"case": f"{slot.name}:{content}", "problems": found, **asdict(outcome)}
        del line["stdout"], line["stderr"]
        with open(report, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
    shutil.rmtree(case, ignore_errors=True)
    return Result(outcome, found)


@pytest.fixture(scope="session")
def results(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    fake_nvml_library: Path,  # noqa: F811
) -> dict[str, Result]:
    """Run every selected case of `test_hostile_input`, side by side."""
    wanted = [
        item.callspec.params
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_hostile_input"
    ]
    top = tmp_path_factory.mktemp("hostile")

    def one(index: int, params: dict[str, object]) -> tuple[str, Result]:
        slot, content = params["slot"], params["content"]
        assert isinstance(slot, Slot) and isinstance(content, str)
        return f"{slot.name}:{content}", _run_case(
            slot, content, top / str(index), fake_nvml_library
        )

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(one, range(len(wanted)), wanted))


@pytest.mark.parametrize(("slot", "content"), _params())
def test_hostile_input(slot: Slot, content: str, results: dict[str, Result]) -> None:
    result = results[f"{slot.name}:{content}"]
    if result.skipped is not None:
        pytest.skip(result.skipped)
    assert result.outcome is not None
    assert result.found == [], f"{result.found}\n{result.outcome.stderr[-1500:]}"
