"""A fake host (a fixture node plus an engine config) with a real engine the test supervises."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctk.host.agent import docker_runtimes
from ctk.host.root import HostRoot
from tests import engines
from tests.agent import supervisor
from tests.engines import DOCKERD_ISOLATED, DOCKERD_PRIVATE, Engine
from tests.fake_nvml import FakeNode, SkipNode, materialise
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
SUPERVISOR = Path(supervisor.__file__)

# What a node's containerd config looks like before any GPU tooling touched it (version 2).
CONTAINERD_CONFIG = """\
# the node's own containerd config (kubespray would write this)
version = 2
root = "{root}"
state = "{state}"

[grpc]
  address = "/run/containerd/containerd.sock"

[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""

# The same node on containerd 2.x: its config is version 3, with the CRI plugin split into
# io.containerd.cri.v1.runtime and .images, in the single quotes `containerd config default` of
# 2.x writes.
CONTAINERD_CONFIG_V3 = """\
# the node's own containerd config (containerd 2.x, as kubespray would write it)
version = 3
root = '{root}'
state = '{state}'

[grpc]
  address = '/run/containerd/containerd.sock'

[ttrpc]
  address = '/run/containerd/containerd.sock.ttrpc'

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = 'registry.k8s.io/pause:3.10'

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
"""

DAEMON_JSON = '{\n  "log-level": "warn"\n}\n'
HOOK = "#!/bin/sh\nexit 0\n"


@dataclass
class Host:
    """The fake host, its supervisor's control directory, and the engine's first PID."""

    root: Path
    ctl: Path
    node: FakeNode
    engine: str
    build: Engine | None = None  # the real engine the supervisor runs (None: no engine)

    @property
    def containerd_2(self) -> bool:
        """Whether the engine is containerd 2.x, whose node config is version 3."""
        return self.build is not None and self.build.version >= (2,)

    @property
    def config_version(self) -> int:
        """The `version` of the host's own containerd config."""
        return 3 if self.containerd_2 else 2

    @property
    def cri(self) -> str:
        """The id of the CRI plugin table holding the runtimes in this containerd's config."""
        return "io.containerd.cri.v1.runtime" if self.containerd_2 else "io.containerd.grpc.v1.cri"

    @property
    def pid(self) -> int:
        return int((self.ctl / "engine.pid").read_text())

    @property
    def restarts(self) -> int:
        log = self.ctl / "restarts.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def path(self, inside: str) -> Path:
        return self.root / inside.lstrip("/")

    def agent(
        self, *args: str, check: bool = False, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run `ctk agent --host-root <host> ...` as its own process, as a DaemonSet does."""
        return subprocess.run(
            [sys.executable, "-m", "ctk.cli.app", "agent", *self.args(*args)],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=check,
        )

    def args(self, *args: str) -> list[str]:
        return ["--host-root", str(self.root), "--host-exec", self.host_exec, *args]

    @property
    def host_exec(self) -> str:
        return f"{sys.executable} {SUPERVISOR} {self.ctl}"

    def env(self) -> dict[str, str]:
        env = {**os.environ, **self.node.env, "PYTHONPATH": str(REPO)}
        return {k: v for k, v in env.items() if not k.startswith("CTK_AGENT_")}

    def dump(self) -> subprocess.CompletedProcess[str]:
        """`containerd config dump` of the host's config, as the host resolves it."""
        return subprocess.run(
            [
                sys.executable,
                str(SUPERVISOR),
                str(self.ctl),
                "containerd",
                "--config",
                "/etc/containerd/config.toml",
                "config",
                "dump",
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )


def wait_socket(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(str(path))
                return
            except OSError:
                time.sleep(0.05)
    raise AssertionError(f"{path} did not come up within {timeout} s")


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary directory with a short path: unix socket paths are limited to 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="ctk-agent-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def workstation(
    short_tmp: Path,
    fake_nvml_library: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> FakeNode:
    """The workstation fixture node, materialised under a short path."""
    try:
        node = materialise("workstation", short_tmp / "n", fake_nvml_library)
    except SkipNode as exc:
        pytest.skip(str(exc))
    for key, value in node.env.items():
        monkeypatch.setenv(key, value)
    return node


# A stand-in for nvidia-container-toolkit's runtime on the host (the agent checks it is there).
NVIDIA_RUNTIME = '#!/bin/sh\nexec runc "$@"\n'


def _make_host(
    tmp: Path, node: FakeNode, engine: str, *, toolkit: bool = True, build: Engine | None = None
) -> Host:
    root = node.root
    if toolkit:
        runtime = root / "usr/bin/nvidia-container-runtime"
        runtime.parent.mkdir(parents=True, exist_ok=True)
        runtime.write_text(NVIDIA_RUNTIME)
        runtime.chmod(0o755)
    ctl = tmp / "ctl"
    ctl.mkdir()
    (ctl / "host").write_text(str(root))
    if packaged() is None:  # no native hook built here: the agent must find one on the host
        hook = root / "usr/local/libexec/ctk/ctk-hook"
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text(HOOK)
        hook.chmod(0o755)
    if build is not None:  # the engine and the host's commands run this build's binaries
        (ctl / "engine.path").write_text(build.path)
    return Host(root, ctl, node, engine, build)


def packaged() -> bytes | None:
    """The native hook of this ctk (what the agent installs), None when it was not built."""
    from ctk.errors import CtkError
    from ctk.host.hook_program import packaged_hook

    try:
        return packaged_hook().read_bytes()
    except CtkError:
        return None


def running(host: Host) -> Path:
    """The binary of the engine process the supervisor started: the build the test asked for."""
    return Path(os.readlink(f"/proc/{host.pid}/exe"))


def _params(found: list[Engine]) -> list[object]:
    return [pytest.param(e, id=e.id, marks=pytest.mark.integration) for e in found]


# The engines the hosts run, one test parameter each: this machine's own, then today's where
# CTK_ENGINES names them (tests/engines.py).
CONTAINERDS = engines.containerds()
DOCKERS = engines.dockers()


@pytest.fixture(params=_params(CONTAINERDS))
def containerd_host(
    request: pytest.FixtureRequest, tmp_path: Path, short_tmp: Path, workstation: FakeNode
) -> Iterator[Host]:
    """The workstation node with a real containerd (each version in turn) on the host's own
    config: version 2 for 1.x, version 3 for 2.x, as each writes it."""
    build: Engine = request.param
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    host = _make_host(tmp_path, workstation, "containerd", build=build)
    config = host.path("/etc/containerd/config.toml")
    config.parent.mkdir(parents=True)
    short = short_tmp
    text = CONTAINERD_CONFIG_V3 if host.containerd_2 else CONTAINERD_CONFIG
    config.write_text(text.format(root=short / "root", state=short / "state"))
    host.path("/run/containerd").mkdir(parents=True)
    # All of the host's /run: containerd 2.x also serves NRI there (/var/run/nri/nri.sock).
    argv = supervisor.namespaced(
        host.root,
        [str(build.daemon), "--config", "/etc/containerd/config.toml"],
        bound=("etc/containerd", "run"),
    )
    (host.ctl / "engine.argv").write_text(json.dumps(argv))
    supervisor.start(host.ctl)
    wait_socket(host.path("/run/containerd/containerd.sock"))
    assert running(host) == build.daemon.resolve()
    yield host
    supervisor.stop(host.ctl)


@pytest.fixture(params=_params(DOCKERS))
def docker_host(
    request: pytest.FixtureRequest, tmp_path: Path, short_tmp: Path, workstation: FakeNode
) -> Iterator[Host]:
    """The workstation node with a real dockerd (each version in turn) on the host's own
    daemon.json. A fetched dockerd starts its own containerd: the 2.x that `Engine.path` puts
    first on PATH."""
    build: Engine = request.param
    host = _make_host(tmp_path, workstation, "docker", build=build)
    daemon_json = host.path("/etc/docker/daemon.json")
    daemon_json.parent.mkdir(parents=True)
    daemon_json.write_text(DAEMON_JSON)
    short = short_tmp
    sock = host.path("/var/run/docker.sock")
    sock.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        *DOCKERD_PRIVATE,  # not the machine's /run and /etc/docker (key.json, NRI's socket)
        str(build.daemon),
        "--config-file",
        str(daemon_json),
        "--data-root",
        str(short / "data"),
        "--exec-root",
        str(short / "exec"),
        "--pidfile",
        str(short / "pid"),
        "-H",
        f"unix://{sock}",
        *DOCKERD_ISOLATED,
    ]
    (host.ctl / "engine.argv").write_text(json.dumps(argv))
    supervisor.start(host.ctl)
    wait_socket(sock)
    deadline = time.monotonic() + 60
    while docker_runtimes(HostRoot(host.root)) is None:  # the API answers once dockerd is up
        assert time.monotonic() < deadline, (host.ctl / "engine.log").read_text()
        time.sleep(0.1)
    assert running(host) == build.daemon.resolve()
    yield host
    supervisor.stop(host.ctl)
