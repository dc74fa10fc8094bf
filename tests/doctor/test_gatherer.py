"""The gatherer never leaves its root and reads odd files as problems, not crashes."""

from __future__ import annotations

import os
from pathlib import Path

from ctk.host.facts.engines import gather_containerd, gather_docker
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot


def test_glob_stays_inside_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "secret.toml"
    outside.write_text("x = 1\n")
    root = tmp_path / "root"
    (root / "etc/containerd/conf.d").mkdir(parents=True)
    (root / "etc/containerd/conf.d/99-nvidia.toml").write_text("version = 2\n")
    (root / "etc/cdi").mkdir()
    os.symlink(str(tmp_path), root / "etc/cdi/host")  # absolute: restarts at the root
    g = Gatherer(HostRoot(root))
    assert g.glob("/etc/containerd/../../../*.toml") == []
    assert g.glob("/etc/cdi/host/*.toml") == []
    assert g.glob("/etc/containerd/conf.d/*.toml") == ["/etc/containerd/conf.d/99-nvidia.toml"]


def test_relative_imports_do_not_escape(tmp_path: Path) -> None:
    (tmp_path / "evil.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        'runtime_type = "io.containerd.runc.v2"\n'
    )
    root = tmp_path / "root"
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(
        'version = 2\nimports = ["../../../evil.toml"]\n'
    )
    facts = gather_containerd(Gatherer(HostRoot(root)), {"containerd": "/usr/bin/containerd"})
    assert (facts.error, dict(facts.runtimes)) == (None, {})


def test_daemon_json_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "etc/docker/daemon.json").mkdir(parents=True)
    facts = gather_docker(
        Gatherer(HostRoot(tmp_path)), "/etc/docker/daemon.json", {}, installed=True
    )
    assert (facts.config_exists, facts.error) == (True, "not a regular file")
