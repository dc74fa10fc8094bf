"""deploy/manifests/ is what deploy/render-manifests.sh makes of the chart, byte for byte."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.deploy.chart import REPO, helm


def test_committed_manifests_match_the_chart(tmp_path: Path) -> None:
    env = {**os.environ, "HELM": helm()}
    done = subprocess.run(
        [str(REPO / "deploy" / "render-manifests.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    committed = REPO / "deploy" / "manifests"
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(p.name for p in committed.iterdir()) == ["ctk.yaml", "uninstall.yaml"]
    stale = [n for n in names if (tmp_path / n).read_bytes() != (committed / n).read_bytes()]
    assert stale == [], "run deploy/render-manifests.sh and commit deploy/manifests/"


def test_plain_manifests_carry_no_helm_hooks_and_create_the_namespace() -> None:
    text = (REPO / "deploy" / "manifests" / "ctk.yaml").read_text()
    assert "helm.sh/hook" not in text
    assert "kind: Namespace" in text and "pod-security.kubernetes.io/enforce: privileged" in text
    assert "kind: Job" not in text


def test_render_script_without_helm_says_so(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(REPO / "deploy" / "render-manifests.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "HELM": str(tmp_path / "no-helm")},
    )
    assert done.returncode == 2
    assert "helm not found" in done.stderr
    assert list(tmp_path.iterdir()) == []
