"""How the registry words a same-priority conflict among several spec files, and an unreadable
file with no reason given (issue 26: the mutation run found these unpinned)."""

from __future__ import annotations

import pytest

from ctk.cdi.problems import Problem
from ctk.cdi.registry import SpecSource, build_registry

KIND = "example.com/x"
DROPPED = "at the same priority; CDI runtimes drop it from both"


def _spec(*names: str) -> bytes:
    devices = "".join(f"- name: {n}\n  containerEdits:\n    env: [A=1]\n" for n in names)
    return f"cdiVersion: 0.3.0\nkind: {KIND}\ndevices:\n{devices}".encode()


def _sources(*paths: str) -> list[SpecSource]:
    return [
        SpecSource(p, 0, _spec("dup", p.rsplit("/", 1)[1].removesuffix(".yaml"))) for p in paths
    ]


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        pytest.param(("/etc/cdi/a.yaml", "/etc/cdi/b.yaml"), "/etc/cdi/b.yaml", id="one-other"),
        pytest.param(
            ("/etc/cdi/a.yaml", "/etc/cdi/b.yaml", "/etc/cdi/c.yaml"),
            "/etc/cdi/b.yaml, /etc/cdi/c.yaml",
            id="two-others-listed",
        ),
        pytest.param(
            ("/etc/cdi/a.yaml", "/etc/cdi/b.yaml", "/etc/cdi/c.yaml", "/etc/cdi/d.yaml"),
            "/etc/cdi/b.yaml, /etc/cdi/c.yaml and 1 more",
            id="three-others-two-listed",
        ),
        pytest.param(
            tuple(f"/etc/cdi/{n}.yaml" for n in "abcde"),
            "/etc/cdi/b.yaml, /etc/cdi/c.yaml and 2 more",
            id="four-others-two-listed",
        ),
    ],
)
def test_conflict_names_the_other_files(paths: tuple[str, ...], expected: str) -> None:
    registry = build_registry(_sources(*paths))
    first = registry.files[0]
    assert first.conflicts == (
        Problem(
            "registry.conflict",
            f"device {KIND}=dup is also defined by {expected} {DROPPED}",
            ("devices", 0, "name"),
            4,
            9,
        ),
    )
    assert registry.device(f"{KIND}=dup") is None
    assert registry.device(f"{KIND}=a") is not None  # the rest of each file still resolves
    assert registry.clashes[f"{KIND}=dup"] == paths


def test_a_file_listed_twice_conflicts_with_itself() -> None:
    source = SpecSource("/etc/cdi/a.yaml", 0, _spec("dup"))
    registry = build_registry([source, source])
    message = f"device {KIND}=dup is also defined by this same file {DROPPED}"
    assert [p.message for f in registry.files for p in f.conflicts] == [message, message]
    assert registry.devices == ()


def test_unreadable_file_without_a_reason() -> None:
    registry = build_registry([SpecSource("/etc/cdi/x.yaml", 0, None)])
    assert registry.files[0].problems == (Problem("read.error", "cannot be read"),)
    assert not registry.valid
