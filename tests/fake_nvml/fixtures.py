"""pytest fixtures for the fake driver; a conftest.py imports them by name.

from tests.fake_nvml.fixtures import fake_nvml_library, fake_node  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fake_nvml import build_library
from tests.nodes import FakeNode, SkipNode, materialise, release


@pytest.fixture(scope="session")
def fake_nvml_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake `libnvidia-ml.so.1`, built once per test session."""
    try:
        return build_library(tmp_path_factory.mktemp("fake-nvml"))
    except SkipNode as exc:
        pytest.skip(str(exc))


@pytest.fixture
def fake_node(
    tmp_path: Path, fake_nvml_library: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], FakeNode]]:
    """Materialise a fixture node by name (`tests.nodes`), with the fake NVML's environment set
    for this test; released (its tmpfs unmounted) after it."""
    made: list[FakeNode] = []

    def make(name: str) -> FakeNode:
        try:
            node = materialise(name, tmp_path / name, fake_nvml_library)
        except SkipNode as exc:
            pytest.skip(str(exc))
        made.append(node)
        for key, value in node.env.items():
            monkeypatch.setenv(key, value)
        return node

    yield make
    for node in made:
        release(node)
