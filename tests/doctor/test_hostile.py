"""Issue 15's doctor items: a FIFO or /dev/zero at every path, deep and huge input, one deadline.

For each case: the documented exit code (0/1, 2 for bad flags, never 3), one JSON document,
within the doctor's one deadline.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot
from tests.doctor.test_robustness import FILES
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

DEADLINE_S = 6.0
DEEP = 100_000
HUGE_INT = "9" * 5000
EXTRA = (
    "var/lib/kubelet/config.yaml",
    "etc/containerd/conf.d/99-nvidia.toml",
    "var/run/cdi/nvidia.yaml",
    "etc/ld.so.cache",
)


@pytest.fixture
def healthy(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node("healthy")


def _replace(root: Path, path: str, make: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    if make == "fifo":
        os.mkfifo(target)
    elif make == "zero":
        os.symlink("/dev/zero", target)
    else:
        target.write_text(make)


def _doctor(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, float]:
    start = time.monotonic()
    code = main(["doctor", "--json", "--root", str(root), *extra])
    elapsed = time.monotonic() - start
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert (document["schema"], captured.err) == ("ctk.doctor/v1", "")
    return code, elapsed


@pytest.mark.parametrize("make", ["fifo", "zero"])
def test_a_special_file_at_every_path(
    make: str, healthy: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in (*FILES, *EXTRA):
        _replace(healthy.root, path, make)
    code, elapsed = _doctor(healthy.root, capsys)
    assert (code in (0, 1), elapsed < DEADLINE_S) == (True, True)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        pytest.param(
            "etc/nvidia-container-runtime/config.toml", "a = " + "[" * DEEP, id="deep-toolkit-toml"
        ),
        pytest.param("etc/containerd/config.toml", "a = " + "[" * DEEP, id="deep-containerd"),
        pytest.param("var/lib/kubelet/config.yaml", "a: " + "[" * DEEP, id="deep-kubelet"),
        pytest.param("etc/docker/daemon.json", "[" * DEEP, id="deep-daemon-json"),
        pytest.param("etc/docker/daemon.json", f'{{"x": {HUGE_INT}}}', id="huge-int-json"),
        pytest.param(
            "etc/nvidia-container-runtime/config.toml", f"x = {HUGE_INT}\n", id="huge-int-toml"
        ),
        pytest.param("etc/containerd/config.toml", f"version = {HUGE_INT}\n", id="huge-int-ctrd"),
        pytest.param("var/run/cdi/nvidia.yaml", f"cdiVersion: {HUGE_INT}\n", id="huge-int-spec"),
        pytest.param(
            "var/lib/kubelet/config.yaml", f"cgroupDriver: {HUGE_INT}\n", id="huge-int-kubelet"
        ),
    ],
)
def test_deep_or_huge_content_gives_findings(
    path: str, text: str, healthy: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    _replace(healthy.root, path, text)
    code, elapsed = _doctor(healthy.root, capsys)
    assert (code in (0, 1), elapsed < DEADLINE_S) == (True, True)


@pytest.mark.parametrize(
    "text", [pytest.param("[" * DEEP, id="deep"), pytest.param(f'["X={HUGE_INT}"', id="huge")]
)
def test_a_hostile_image_env_is_an_error_line(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "env"
    env.write_text(text)
    code = main(["doctor", "--image-env", str(env), "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert (code, err.startswith(f"error: {env}: not valid JSON"), err.count("\n")) == (1, True, 2)


def test_a_fifo_image_env_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "env"
    os.mkfifo(env)
    start = time.monotonic()
    code = main(["doctor", "--image-env", str(env), "--root", str(tmp_path)])
    assert (code, time.monotonic() - start < 2) == (2, True)
    assert capsys.readouterr().err.startswith(f"error: --image-env {env}: not a regular file")


def _hang() -> str:
    time.sleep(30)
    return "answered"


def test_one_deadline_for_every_step(tmp_path: Path) -> None:
    """Ten hanging steps end by the shared deadline, not 10 x the step bound."""
    g = Gatherer(HostRoot(tmp_path), deadline=time.monotonic() + 1.0)
    start = time.monotonic()
    results = [g.bounded(f"step {i}", _hang, "gave up", 5.0) for i in range(10)]
    elapsed = time.monotonic() - start
    assert (results, elapsed < 1.0 + 10 * 0.05 + 0.3) == (["gave up"] * 10, True)
    assert [t.timed_out for t in g.timings] == [True] * 10
