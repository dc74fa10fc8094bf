"""The gatherer never leaves its root and reads odd files as problems, not crashes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ctk.doctor.facts import DevFacts
from ctk.host.facts import gather
from ctk.host.facts.cdi import gather_cdi
from ctk.host.facts.engine_configs import (
    ENGINE_FACTS,
    gather_containerd,
    gather_docker,
    gather_toolkit,
)
from ctk.host.facts.gatherer import Gatherer
from ctk.host.facts.kernel import gather_dev
from ctk.host.packages import upstream_version
from ctk.host.root import HostRoot
from ctk.node import CharDevice
from ctk.runtime_config.engines import Runtime


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


def _package(name: str, version: str, status: str = "install ok installed") -> str:
    return f"Package: {name}\nStatus: {status}\nVersion: {version}\n\n"


@pytest.mark.parametrize(
    ("status", "docker", "containerd"),
    [
        pytest.param(
            _package("docker-ce", "5:28.2.0-1~ubuntu.24.04~noble")
            + _package("containerd.io", "1.7.27-1"),
            "28.2.0",
            "1.7.27",
            id="docker-ce",
        ),
        pytest.param(
            _package("docker.io", "28.2.2-0ubuntu1~24.04.1")
            + _package("containerd", "2.1.3-0ubuntu1"),
            "28.2.2",
            "2.1.3",
            id="ubuntu",
        ),
        pytest.param(
            _package("docker-ce", "5:28.2.0-1", "deinstall ok config-files"),
            None,
            None,
            id="removed",
        ),
        pytest.param("", None, None, id="no-package"),
    ],
)
def test_engine_versions_come_from_their_packages(
    tmp_path: Path, status: str, docker: str | None, containerd: str | None
) -> None:
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text(status)
    g = Gatherer(HostRoot(tmp_path))
    binaries = {"dockerd": "/usr/bin/dockerd", "containerd": "/usr/bin/containerd"}
    found = (
        gather_docker(g, "/etc/docker/daemon.json", binaries, installed=True).version,
        gather_containerd(g, binaries).version,
    )
    assert found == (docker, containerd)


def test_dpkg_status_is_read_once_for_the_toolkit_and_every_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = (
        "Package: docker-ce\nStatus: install ok installed\nVersion: 5:28.2.0-1\n\n"
        "Package: containerd.io\nStatus: install ok installed\nVersion: 1.7.27-1\n\n"
        "Package: nvidia-container-toolkit\nStatus: install ok installed\nVersion: 1.17.8-1\n"
    )
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text(status)
    g = Gatherer(HostRoot(tmp_path))
    read = Gatherer.text
    seen: list[str] = []

    def counted(self: Gatherer, path: str) -> str | None:
        seen.append(path)
        return read(self, path)

    monkeypatch.setattr(Gatherer, "text", counted)
    binaries = {"dockerd": "/usr/bin/dockerd", "containerd": "/usr/bin/containerd"}
    toolkit = gather_toolkit(g, {})
    docker = gather_docker(g, "/etc/docker/daemon.json", binaries, installed=True)
    containerd = gather_containerd(g, binaries)
    assert (docker.version, containerd.version) == ("28.2.0", "1.7.27")
    assert toolkit.packages == {"nvidia-container-toolkit": "1.17.8-1"}
    assert seen.count("/var/lib/dpkg/status") == 1


@pytest.mark.parametrize(
    ("package", "upstream"),
    [("5:28.2.0-1~ubuntu.24.04~noble", "28.2.0"), ("1.7.27-1", "1.7.27"), ("28.2.0", "28.2.0")],
)
def test_upstream_version(package: str, upstream: str) -> None:
    assert upstream_version(package) == upstream


SPEC = """cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
"""


@pytest.mark.parametrize(
    ("files", "conflicts"),
    [
        pytest.param(("etc/cdi/nvidia.yaml", "var/run/cdi/nvidia.yaml"), (), id="override"),
        pytest.param(
            ("var/run/cdi/a.yaml", "var/run/cdi/b.yaml"),
            (
                "/var/run/cdi/a.yaml line 4: device nvidia.com/gpu=0 is also defined by "
                "/var/run/cdi/b.yaml at the same priority; CDI runtimes drop it from both",
                "/var/run/cdi/b.yaml line 4: device nvidia.com/gpu=0 is also defined by "
                "/var/run/cdi/a.yaml at the same priority; CDI runtimes drop it from both",
            ),
            id="same-directory",
        ),
    ],
)
def test_cdi_conflicts_are_the_registry_s(
    tmp_path: Path, files: tuple[str, ...], conflicts: tuple[str, ...]
) -> None:
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SPEC)
    facts = gather_cdi(Gatherer(HostRoot(tmp_path)), ())
    clashing = tuple(f"/{name}" for name in files) if conflicts else ()
    assert (facts.conflicts, facts.conflict_files) == (conflicts, clashing)


@pytest.mark.parametrize(
    ("entries", "imports", "orphans"),
    [
        pytest.param(
            '["./conf.d/*.toml"]', ("/etc/containerd/conf.d/*.toml",), [], id="dot-relative"
        ),
        pytest.param(
            '["conf.d//*.toml"]', ("/etc/containerd/conf.d/*.toml",), [], id="doubled-slash"
        ),
        pytest.param(
            '["/etc/containerd/../containerd/conf.d/*.toml"]',
            ("/etc/containerd/conf.d/*.toml",),
            [],
            id="dot-dot",
        ),
        pytest.param(
            '["/etc/containerd/*"]',
            ("/etc/containerd/*",),
            ["/etc/containerd/conf.d/99-nvidia.toml"],
            id="star-does-not-cross-a-slash",
        ),
    ],
)
def test_containerd_imports_as_containerd_resolves_them(
    tmp_path: Path, entries: str, imports: tuple[str, ...], orphans: list[str]
) -> None:
    """The evidence shows each import as containerd reads it; drop-ins match by Go's glob."""
    from ctk.doctor.checks.containerd import drop_in_not_imported
    from ctk.doctor.facts import NodeFacts
    from ctk.doctor.model import Evidence, Status

    (tmp_path / "etc/containerd/conf.d").mkdir(parents=True)
    (tmp_path / "etc/containerd/config.toml").write_text(f"version = 2\nimports = {entries}\n")
    (tmp_path / "etc/containerd/conf.d/99-nvidia.toml").write_text("version = 2\n")
    facts = gather_containerd(Gatherer(HostRoot(tmp_path)), {"containerd": "/usr/bin/containerd"})
    assert (facts.imports, facts.drop_ins) == (imports, ("/etc/containerd/conf.d/99-nvidia.toml",))
    result = drop_in_not_imported(NodeFacts(engines={Runtime.CONTAINERD: facts}, kubelet=True))
    expected = (
        (
            Status.FAIL,
            (
                Evidence("/etc/containerd/config.toml", f"imports: {', '.join(imports)}"),
                *(Evidence(path, "exists, not imported") for path in orphans),
            ),
        )
        if orphans
        else (Status.OK, ())
    )
    assert (result.status, result.evidence) == expected


def test_dev_is_the_device_node_adapter_s_scan(tmp_path: Path) -> None:
    """The doctor's /dev facts come from `ctk.host.devnodes`: char devices, odd entries, links."""
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    dev = tmp_path / "dev"
    (dev / "char").mkdir(parents=True)
    os.mknod(dev / "nvidiactl", 0o600 | stat.S_IFCHR, os.makedev(195, 255))
    (dev / "nvidia0").write_text("")  # a regular file where the GPU's node belongs
    (dev / "nvidia-caps").mkdir()
    os.symlink("../nvidiactl", dev / "char/195:255")
    os.symlink("../null", dev / "char/1:3")
    found = gather_dev(Gatherer(HostRoot(tmp_path)))
    assert found == DevFacts(
        nodes={
            "/dev/nvidiactl": CharDevice(
                container_path="/dev/nvidiactl",
                host_path=str(dev / "nvidiactl"),
                major=195,
                minor=255,
                file_mode=0o600,
            )
        },
        not_char=frozenset({"/dev/nvidia0"}),
        char_links={"195:255": "/dev/nvidiactl"},
    )


def test_every_engine_has_one_entry_in_the_doctor_table() -> None:
    assert list(ENGINE_FACTS) == [Runtime.DOCKER, Runtime.CONTAINERD, Runtime.CRIO]
    assert set(ENGINE_FACTS) == set(Runtime)


def test_gather_reads_every_engine_of_the_table(tmp_path: Path) -> None:
    (tmp_path / "etc/crio").mkdir(parents=True)
    (tmp_path / "etc/crio/crio.conf").write_text('[crio.runtime]\ncdi_spec_dirs = ["/opt/cdi"]\n')
    facts, timings = gather(tmp_path, nvml_timeout=0.1)
    engines = {runtime: (e.engine, e.installed) for runtime, e in facts.engines.items()}
    assert engines == {
        Runtime.DOCKER: ("docker", False),
        Runtime.CONTAINERD: ("containerd", False),
        Runtime.CRIO: ("crio", True),
    }
    assert [t.step for t in timings if t.step in set(Runtime)] == ["docker", "containerd", "crio"]
    # CRI-O's own spec directories are read like Docker's and containerd's
    assert facts.cdi.dirs == ("/etc/cdi", "/var/run/cdi", "/opt/cdi")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param({}, "/etc/nvidia-container-runtime/config.toml", id="unset"),
        pytest.param(
            {"NVIDIA_CTK_CONFIG_FILE_PATH": ""},
            "/etc/nvidia-container-runtime/config.toml",
            id="empty",
        ),
        pytest.param({"NVIDIA_CTK_CONFIG_FILE_PATH": "/opt/tk.toml"}, "/opt/tk.toml", id="named"),
    ],
)
def test_the_toolkit_config_is_the_one_the_environment_names(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    """As the toolkit reads it: NVIDIA_CTK_CONFIG_FILE_PATH when set and not empty."""
    from ctk.host.facts.engine_configs import gather_toolkit

    for path in ("etc/nvidia-container-runtime/config.toml", "opt/tk.toml"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f'# {path}\n[nvidia-container-runtime]\nmode = "{path[:3]}"\n')
    config = gather_toolkit(Gatherer(HostRoot(tmp_path)), env).config
    assert (config.path, config.data) == (
        expected,
        {"nvidia-container-runtime": {"mode": expected[1:4]}},
    )


def test_a_rootless_docker_has_its_user_cdi_dirs(tmp_path: Path) -> None:
    """The user unit's defaults: ~/.config/cdi and /run/user/<uid>/cdi, the uid from /etc/passwd
    (no entry for the home: the runtime directory is unknown, only ~/.config/cdi)."""
    from ctk.host.facts.engine_configs import gather_rootless_docker
    from ctk.host.facts.gatherer import Gatherer
    from ctk.host.root import HostRoot

    unit = tmp_path / "home/alice/.config/systemd/user/docker.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/usr/bin/dockerd-rootless.sh\n")
    (tmp_path / "etc").mkdir()
    passwd = tmp_path / "etc/passwd"
    passwd.write_text("root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice/:/bin/sh\n")
    found = gather_rootless_docker(Gatherer(HostRoot(tmp_path)), {})
    assert found is not None
    assert found.user_cdi_dirs == ("/home/alice/.config/cdi", "/run/user/1000/cdi")
    passwd.write_text("root:x:0:0::/root:/bin/sh\n")
    found = gather_rootless_docker(Gatherer(HostRoot(tmp_path)), {})
    assert found is not None and found.user_cdi_dirs == ("/home/alice/.config/cdi",)


def test_specs_in_a_rootless_dockers_user_dirs_are_read(tmp_path: Path) -> None:
    """The doctor reads the spec files of every directory a reader reads, a rootless Docker's
    ~/.config/cdi too, so its checks judge the spec that daemon injects."""
    unit = tmp_path / "home/alice/.config/systemd/user/docker.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/usr/bin/dockerd-rootless.sh\n")
    spec = tmp_path / "home/alice/.config/cdi/nvidia.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n  - name: '0'\n"
        "    containerEdits:\n      deviceNodes: [{path: /dev/nvidia0}]\n"
    )
    facts, _ = gather(tmp_path, nvml_timeout=5)
    assert [s.path for s in facts.cdi.specs] == ["/home/alice/.config/cdi/nvidia.yaml"]
