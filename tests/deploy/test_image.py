"""The image build.sh makes: an OCI layout and an oci-archive with the agent as entrypoint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.deploy.chart import BUILD_SH, REPO

SIZE_GOAL = 150 * 1000 * 1000  # bytes, uncompressed


def skopeo_inspect(image_dir: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        ["skopeo", "inspect", *extra, f"oci-archive:{image_dir / 'ctk.oci.tar'}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def blob(layout: Path, digest: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((layout / "blobs" / digest.replace(":", "/")).read_text())
    return data


def test_layout_archive_config_and_annotations(image_dir: Path) -> None:
    ref = subprocess.run(
        [str(BUILD_SH), "--print-ref"], capture_output=True, text=True, check=True
    ).stdout.strip()
    version = ref.rsplit(":", 1)[1]
    layout = image_dir / "oci"
    index = json.loads((layout / "index.json").read_text())
    (entry,) = index["manifests"]
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == version
    manifest = blob(layout, entry["digest"])
    notes = manifest["annotations"]
    assert notes["org.opencontainers.image.version"] == version
    assert notes["org.opencontainers.image.ref.name"] == ref
    revision = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    assert notes["org.opencontainers.image.revision"].startswith(revision or "unknown")
    assert "org.opencontainers.image.source" not in notes  # no made-up address (CTK_IMAGE_SOURCE)
    config = blob(layout, manifest["config"]["digest"])
    assert config["config"]["Entrypoint"] == ["ctk", "agent"]
    assert not config["config"].get("Cmd")
    assert config["created"] == notes["org.opencontainers.image.created"]
    assert len(manifest["layers"]) == 2
    size = sum(layer["size"] for layer in manifest["layers"])
    assert size < SIZE_GOAL, f"{size / 1e6:.0f} MB"
    # The archive is what skopeo (and ctr import) read: same config, the full reference as name.
    inspected = skopeo_inspect(image_dir, "--config")
    assert inspected["config"]["Entrypoint"] == ["ctk", "agent"]
    archive_index = subprocess.run(
        ["tar", "-xOf", str(image_dir / "ctk.oci.tar"), "index.json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = [
        m["annotations"]["org.opencontainers.image.ref.name"]
        for m in json.loads(archive_index)["manifests"]
    ]
    assert names == [ref]
