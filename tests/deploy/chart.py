"""Rendering the chart for the deploy tests: helm found or the test skipped, values as --set."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "ctk"
BUILD_SH = REPO / "packaging" / "image" / "build.sh"
NAMESPACE = "gpu-system"
RELEASE = "ctk"
# The label `ctk agent` publishes (NFD features.d) once the engine has the nvidia handler.
AGENT_LABEL = "ctk.nvidia.com/runtime.configured"

RUNTIMES = ("auto", "containerd", "docker", "crio")
RESTART_MODES = ("systemd", "signal", "none")
DISTRIBUTIONS = ("default", "k3s", "rke2", "microk8s")

Doc = dict[str, Any]
T = TypeVar("T")
R = TypeVar("R")


def parallel(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``function`` over ``items`` in a few threads: each call mostly waits for a helm process."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(function, items))


@dataclass(frozen=True)
class Combo:
    runtime: str
    cdi: bool
    restart_mode: str
    distribution: str

    def sets(self) -> dict[str, str]:
        return {
            "runtime": self.runtime,
            "cdi.enabled": str(self.cdi).lower(),
            "restartMode": self.restart_mode,
            "distribution": self.distribution,
        }

    def refusal(self) -> str | None:
        """The message the chart must fail with, None when the combination is valid."""
        if self.distribution != "default" and self.runtime in ("docker", "crio"):
            return "runs its own containerd"
        if self.restart_mode == "signal" and (
            self.runtime in ("containerd", "crio") or self.distribution != "default"
        ):
            return "restartMode signal works for dockerd only"
        return None


MATRIX = tuple(
    Combo(*c) for c in itertools.product(RUNTIMES, (True, False), RESTART_MODES, DISTRIBUTIONS)
)
VALID = tuple(c for c in MATRIX if c.refusal() is None)


def helm() -> str:
    found = os.environ.get("HELM") or shutil.which("helm")
    if not found:
        pytest.skip("helm is not installed (.ci/run installs it)")
    return found


def set_args(values: dict[str, str]) -> list[str]:
    return [arg for key, value in values.items() for arg in ("--set", f"{key}={value}")]


def template(values: dict[str, str] | None = None, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            helm(),
            "template",
            RELEASE,
            str(CHART),
            "--namespace",
            NAMESPACE,
            *set_args(values or {}),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def render(values: dict[str, str] | None = None, *extra: str) -> list[Doc]:
    done = template(values, *extra)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def kinds(docs: list[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    found = [d for d in kinds(docs, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, [d["metadata"]["name"] for d in kinds(docs, kind)])
    return found[0]


def pod_spec(daemonset: Doc) -> Doc:
    spec: Doc = daemonset["spec"]["template"]["spec"]
    return spec


def is_hook(doc: Doc) -> bool:
    return "helm.sh/hook" in doc["metadata"].get("annotations", {})
