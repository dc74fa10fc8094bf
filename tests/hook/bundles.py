"""OCI bundles made in a test: state JSON, config.json and a root filesystem."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hook.native import run_native

Snapshot = dict[str, tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Bundle:
    """A bundle under ``tmp_path``: ``outside`` stands for host files the hook must not touch."""

    path: Path
    rootfs: Path
    outside: Path

    @property
    def state(self) -> str:
        return json.dumps(
            {
                "ociVersion": "1.0.2",
                "id": "c1",
                "status": "creating",
                "pid": 1,
                "bundle": str(self.path),
            }
        )


def make_bundle(tmp_path: Path, root_path: str = "rootfs") -> Bundle:
    """Create a bundle whose config.json names ``root_path`` (relative to the bundle)."""
    bundle = tmp_path / "bundle"
    rootfs = bundle / "rootfs"
    for directory in ("etc", "usr/lib/x86_64-linux-gnu", "dev/dri"):
        (rootfs / directory).mkdir(parents=True)
    (rootfs / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (bundle / "config.json").write_text(
        json.dumps({"ociVersion": "1.0.2", "root": {"path": root_path}})
    )
    outside = tmp_path / "host"
    (outside / "etc").mkdir(parents=True)
    (outside / "etc/passwd").write_text("host secrets\n")
    (outside / "lib").mkdir()
    os.chmod(outside / "lib", 0o700)
    return Bundle(bundle, rootfs, outside)


def snapshot(top: Path) -> Snapshot:
    """Every entry under ``top``: kind, and content, link target or mode."""
    seen: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            rel = str(path.relative_to(top))
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = ("dir", oct(stat.S_IMODE(info.st_mode)))
            else:
                seen[rel] = ("file", path.read_text(errors="replace") + oct(info.st_mode))
    return seen


def run_hook(monkeypatch: pytest.MonkeyPatch, bundle: Bundle, *args: str) -> int:
    """Run the native ctk-hook with the bundle's state on stdin, as an OCI runtime does
    (``monkeypatch`` carries a CTK_HOOK_SWAP set by a race test into the hook's environment)."""
    del monkeypatch
    return run_native(list(args), bundle.state)
