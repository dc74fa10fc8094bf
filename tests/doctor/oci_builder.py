"""Small OCI image layouts and archives for tests: blobs written under their sha256 digests."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"


@dataclass
class Layout:
    """An OCI layout being written in ``root``."""

    root: Path
    blobs: dict[str, bytes] = field(default_factory=dict)

    def blob(self, data: bytes | dict[str, Any], media_type: str) -> dict[str, Any]:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        path = self.root / "blobs" / "sha256" / digest.split(":")[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        self.blobs[digest] = raw
        return {"mediaType": media_type, "digest": digest, "size": len(raw)}

    def image(self, env: list[str] | None, *, arch: str = "amd64") -> dict[str, Any]:
        """A config with ``env`` and the manifest naming it; returns the manifest's descriptor."""
        config: dict[str, Any] = {"architecture": arch, "os": "linux", "rootfs": {}}
        if env is not None:
            config["config"] = {"Env": env}
        manifest = {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": self.blob(config, CONFIG),
            "layers": [],
        }
        described = self.blob(manifest, MANIFEST)
        described["platform"] = {"os": "linux", "architecture": arch}
        return described

    def index(self, manifests: list[dict[str, Any]], *, top: bool = True) -> dict[str, Any]:
        body = {"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests}
        if top:
            (self.root / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
            (self.root / "index.json").write_text(json.dumps(body))
            return body
        return self.blob(body, INDEX)


def tagged(descriptor: dict[str, Any], tag: str) -> dict[str, Any]:
    return {**descriptor, "annotations": {"org.opencontainers.image.ref.name": tag}}


def archive(layout: Path, target: Path, *, extra: list[tarfile.TarInfo] | None = None) -> Path:
    """``layout`` as an oci-archive tar (members relative, as skopeo writes them)."""
    with tarfile.open(target, "w") as tar:
        for path in sorted(layout.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(layout)))
        for info in extra or []:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return target
