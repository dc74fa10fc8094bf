"""`ctk agent` against a real containerd whose config lives in a fake host tree: this machine's
1.6 and today's 2.1 and 1.7 where CTK_ENGINES names them (tests/engines.py), each on a config of
its own version (conftest.py)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctk.host import agent as host_agent
from ctk.host.root import HostRoot
from ctk.toml_compat import loads as toml_loads
from tests.agent import supervisor
from tests.agent.conftest import Host, packaged, wait_socket

pytestmark = pytest.mark.integration

IMPORT = "/etc/containerd/conf.d/99-nvidia.toml"


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every regular file of the host tree but the engine's run dir, the agent's lock included
    (a pass with nothing to do writes nothing): bytes and mtime."""
    found = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if name.startswith("run/containerd/"):
            continue
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found


def runtimes(host: Host) -> dict[str, object]:
    """The CRI runtimes in `config dump`, from this version's CRI plugin table."""
    found = dumped(host)["plugins"][host.cri]["containerd"]["runtimes"]
    assert isinstance(found, dict)
    return found


def assert_drop_in_shape(host: Host, drop_in: dict[str, Any]) -> None:
    """ctk's drop-in as this containerd version needs it (docs/runtime.md, "The drop-in, by
    containerd version"), and the main file's settings still in effect beside it."""
    cri = drop_in["plugins"][host.cri]
    if host.containerd_2:  # merged key by key: only what ctk adds
        assert set(drop_in["plugins"]) == {host.cri}
        assert cri == {
            "containerd": {"runtimes": {"nvidia": cri["containerd"]["runtimes"]["nvidia"]}}
        }
    else:  # the import replaces the whole CRI table: a copy of the main file's settings
        assert cri["sandbox_image"] == "registry.k8s.io/pause:3.9"
        assert cri["containerd"]["default_runtime_name"] == "runc"
        assert set(cri["containerd"]["runtimes"]) == {"runc", "nvidia"}
    nvidia = cri["containerd"]["runtimes"]["nvidia"]
    assert nvidia["options"] == {
        "SystemdCgroup": True,  # runc's options, copied
        "BinaryName": "/usr/bin/nvidia-container-runtime",
    }
    plugins = dumped(host)["plugins"]  # the main file's settings, in effect on every version
    if host.containerd_2:
        sandbox = plugins["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"]
        assert sandbox == "registry.k8s.io/pause:3.10"
    else:
        assert plugins[host.cri]["sandbox_image"] == "registry.k8s.io/pause:3.9"
    assert runtimes(host)["runc"]["options"]["SystemdCgroup"] is True  # type: ignore[index]


def dumped(host: Host) -> dict[str, Any]:
    done = host.dump()
    assert done.returncode == 0, done.stderr
    return toml_loads(done.stdout)


def state(host: Host) -> dict[str, object]:
    data = json.loads(host.path("/var/lib/ctk/agent/state.json").read_text())
    assert isinstance(data, dict)
    return data


def test_once_configures_then_does_nothing_then_repairs_then_uninstalls(
    containerd_host: Host, tmp_path: Path
) -> None:
    host = containerd_host
    config = host.path("/etc/containerd/config.toml")
    original = config.read_bytes()
    first_pid = host.pid
    ready = tmp_path / "ready"

    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    main = toml_loads(config.read_text())
    assert main["imports"] == [IMPORT]  # the host's path, never the agent's view of it
    drop_in = toml_loads(host.path(IMPORT).read_text())
    assert drop_in["version"] == main["version"] == host.config_version  # never above it
    assert host.restarts == 1
    assert host.pid != first_pid
    assert "\nrestarted containerd (systemctl restart containerd); down " in done.stderr
    assert runtimes(host)["nvidia"] == {
        **runtimes(host)["nvidia"],  # type: ignore[dict-item]
        "runtime_type": "io.containerd.runc.v2",
    }
    assert_drop_in_shape(host, drop_in)
    assert ready.exists()
    spec = host.path("/var/run/cdi/nvidia.yaml").read_text()
    assert "hostPath: /dev/nvidia0\n" in spec
    assert str(host.root) not in spec
    assert "path: /usr/local/libexec/ctk/ctk-hook\n" in spec
    native = packaged()
    if native is not None:  # step 5: the native hook, installed as `ctk install --root` does
        assert host.path("/usr/local/libexec/ctk/ctk-hook").read_bytes() == native

    # A second pass writes no byte and leaves the engine alone.
    before = snapshot(host.root)
    pid = host.pid
    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert snapshot(host.root) == before
    assert (host.pid, host.restarts) == (pid, 1)
    assert done.stderr == "pass: nothing changed; ready\n"

    # The config is overwritten (kubespray): repaired, counted, no restart (the engine kept
    # running with the nvidia runtime it loaded).
    config.write_bytes(original)
    prom = tmp_path / "textfile"
    done = host.agent("--once", "--ready-file", str(ready), "--prometheus-textfile", str(prom))
    assert done.returncode == 0, done.stderr
    assert toml_loads(config.read_text())["imports"] == [IMPORT]
    assert state(host)["drift_repairs"] == 1
    assert (host.pid, host.restarts) == (pid, 1)
    parser = pytest.importorskip("prometheus_client.parser")
    families = {
        f.name: f for f in parser.text_string_to_metric_families((prom / "ctk.prom").read_text())
    }
    assert [s.value for s in families["ctk_drift_repairs"].samples] == [1.0]
    assert [s.value for s in families["ctk_engine_restarts"].samples] == [1.0]
    assert [s.value for s in families["ctk_ready"].samples] == [1.0]
    assert len(families["ctk_check_status"].samples) >= 20

    done = host.agent("--uninstall", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert config.read_bytes() == original
    assert not host.path(IMPORT).exists()
    assert not host.path("/var/run/cdi/nvidia.yaml").exists()
    assert not ready.exists()
    assert "nvidia" not in runtimes(host)
    assert host.restarts == 2
    if native is not None:
        assert not host.path("/usr/local/libexec/ctk").exists()
    # nothing of the agent is left: its lock, its state, the conf.d it made for its drop-in
    assert not host.path("/etc/containerd/conf.d").exists()
    assert not host.path("/run/ctk").exists()
    assert not host.path("/var/lib/ctk").exists()


def test_sigterm_in_the_loop_exits_0_without_reverting(
    containerd_host: Host, tmp_path: Path
) -> None:
    host = containerd_host
    ready = tmp_path / "ready"
    log = (tmp_path / "agent.log").open("w")
    argv = host.args("--interval", "0.2", "--ready-file", str(ready))
    agent = subprocess.Popen(
        [sys.executable, "-m", "ctk.cli.app", "agent", *argv], env=host.env(), stderr=log
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists()
        configured = host.path("/etc/containerd/config.toml").read_bytes()
        second = subprocess.run(
            [sys.executable, "-m", "ctk.cli.app", "agent", *host.args("--once")],
            env=host.env(),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert second.returncode == 1
        assert second.stderr.startswith(
            f"error: another ctk agent is running on this node (PID {agent.pid} holds "
        )
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=30) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        log.close()
    said = (tmp_path / "agent.log").read_text()  # the pass under way finishes; nothing reverted
    assert "SIGTERM: stopping without reverting anything\n" in said
    assert "restored" not in said
    assert "removed" not in said
    assert host.path("/etc/containerd/config.toml").read_bytes() == configured
    assert host.path(IMPORT).exists()
    assert host.restarts == 1
    assert "nvidia" in runtimes(host)


def test_containerd_exits_on_sighup(containerd_host: Host) -> None:
    """The measured fact behind refusing --restart-mode signal for containerd."""
    pid = containerd_host.pid
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + 15
    while (status := os.waitpid(pid, os.WNOHANG))[0] != pid:  # the fixture started it: a child
        assert time.monotonic() < deadline, "containerd outlived SIGHUP by 15 s"
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status[1]) == -signal.SIGHUP  # a shell shows 128 + 1 = 129
    done = containerd_host.agent("--once", "--restart-mode", "signal")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "error: --restart-mode signal cannot apply a containerd config: containerd does not "
        "reload on SIGHUP, it exits (status 129) and stays down until systemd restarts it"
    )


def upgrade_driver(host: Host, old: str, new: str) -> None:
    """Replace the fixture's driver files ``old`` by ``new`` (names, links, /proc, fake NVML)."""
    for path in sorted(host.root.rglob(f"*{old}*"), key=lambda p: -len(p.parts)):
        path.rename(path.with_name(path.name.replace(old, new)))
    for path in host.root.rglob("*"):
        if path.is_symlink() and old in os.readlink(path):
            target = os.readlink(path).replace(old, new)
            path.unlink()
            path.symlink_to(target)
    version = host.path("/proc/driver/nvidia/version")
    version.write_text(version.read_text().replace(old, new))
    host.node.topology.write_text(host.node.topology.read_text().replace(old, new))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_loop(host: Host, log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "ctk.cli.app", "agent", *host.args("--interval", "0.2", *args)],
            env=host.env(),
            stderr=out,
        )


def test_lifecycle_restarts_the_engine_exactly_twice(containerd_host: Host, tmp_path: Path) -> None:
    """install -> upgrade (SIGTERM, new agent) -> config overwritten -> driver upgraded ->
    uninstall: two restarts (configure, uninstall), the spec fresh, the config repaired, and
    finally the original bytes (docs/agent.md)."""
    host = containerd_host
    config = host.path("/etc/containerd/config.toml")
    original = config.read_bytes()
    ready, nfd = tmp_path / "ready", tmp_path / "features.d"
    outlets = ("--ready-file", str(ready), "--nfd-features-dir", str(nfd))
    spec = host.path("/var/run/cdi/nvidia.yaml")

    first = start_loop(host, tmp_path / "first.log", *outlets)  # install
    wait_until(ready.exists, "the first agent's ready file")
    assert host.restarts == 1
    configured, pid = config.read_bytes(), host.pid
    first.send_signal(signal.SIGTERM)  # upgrade: the old agent goes, a new one comes
    assert first.wait(30) == 0
    assert config.read_bytes() == configured
    second = start_loop(host, tmp_path / "second.log", *outlets)
    try:
        log = tmp_path / "second.log"
        wait_until(lambda: log.read_text().count("pass: nothing changed; ready") >= 2, "passes")
        assert (host.restarts, host.pid) == (1, pid)

        config.write_bytes(original)  # kubespray, a package upgrade
        wait_until(
            lambda: state(host)["drift_repairs"] == 1 and config.read_bytes() == configured,
            "the drift repair",
        )
        assert "libcuda.so.550.54.15" in spec.read_text()

        upgrade_driver(host, "550.54.15", "560.35.03")
        wait_until(lambda: "libcuda.so.560.35.03" in spec.read_text(), "the spec refresh")
        assert "550.54.15" not in spec.read_text()
        wait_until(
            lambda: "ctk.nvidia.com/driver.version=560.35.03\n" in (nfd / "ctk").read_text(),
            "the NFD label",
        )
        assert (host.restarts, host.pid) == (1, pid)
        assert ready.exists()
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    finally:
        if second.poll() is None:
            second.kill()

    done = host.agent("--uninstall", *outlets)
    assert done.returncode == 0, done.stderr
    assert config.read_bytes() == original
    assert not host.path(IMPORT).exists()
    assert not spec.exists()
    assert not ready.exists()
    assert not (nfd / "ctk").exists()
    assert "nvidia" not in runtimes(host)
    assert host.restarts == 2
    assert not host.path("/var/lib/ctk/agent").exists()


def test_no_running_engine_no_ready_file(containerd_host: Host, tmp_path: Path) -> None:
    host = containerd_host
    ready = tmp_path / "ready"
    assert host.agent("--once", "--ready-file", str(ready)).returncode == 0
    assert ready.exists()
    supervisor.stop(host.ctl)
    done = host.agent("--once", "--ready-file", str(ready))
    assert (done.returncode, done.stderr) == (
        0,
        f"not ready: removed {ready}\npass: nothing changed; not ready\n",
    )
    assert not ready.exists()
    supervisor.start(host.ctl)
    wait_socket(host.path("/run/containerd/containerd.sock"))
    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert ready.exists()  # a new engine process reading ctk's unchanged files has nvidia


def test_every_option_reads_its_environment_variable(containerd_host: Host) -> None:
    """DaemonSets pass settings as CTK_AGENT_* variables."""
    host = containerd_host
    env = {
        **host.env(),
        "CTK_AGENT_HOST_ROOT": str(host.root),
        "CTK_AGENT_HOST_EXEC": host.host_exec,
        "CTK_AGENT_RESTART_MODE": "none",
        "CTK_AGENT_ONCE": "true",
        "CTK_AGENT_CDI_DIR": "/etc/cdi",
    }
    done = subprocess.run(
        [sys.executable, "-m", "ctk.cli.app", "agent"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "restart needed: systemctl restart containerd\n" in done.stderr
    assert host.restarts == 0
    assert host.path("/etc/cdi/nvidia.yaml").exists()
    assert not host.path("/var/run/cdi/nvidia.yaml").exists()


def test_uninstall_after_a_persons_edit_removes_only_ctks_entries(
    containerd_host: Host,
) -> None:
    host = containerd_host
    config = host.path("/etc/containerd/config.toml")
    original = config.read_text()
    assert host.agent("--once").returncode == 0
    images = "'io.containerd.cri.v1.images'" if host.containerd_2 else '"io.containerd.grpc.v1.cri"'
    registry = f'\n[plugins.{images}.registry]\n  config_path = "/etc/containerd/certs.d"\n'
    config.write_text(config.read_text() + registry)  # a person's edit after ctk's
    done = host.agent("--uninstall")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        "warning: /etc/containerd/config.toml changed since ctk wrote it: removing only ctk's "
        "entries, keeping the rest\n"
    )
    assert config.read_text() == original + registry
    assert not host.path(IMPORT).exists()
    assert "nvidia" not in runtimes(host)
    assert host.restarts == 2


def test_once_exits_1_when_the_host_cannot_be_put_right(
    containerd_host: Host, tmp_path: Path
) -> None:
    host = containerd_host
    ready = tmp_path / "ready"
    config = host.path("/etc/containerd/config.toml")
    broken = config.read_text() + "[grpc\n"
    config.write_text(broken)
    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 1
    assert done.stderr.startswith("error: /etc/containerd/config.toml: not valid TOML")
    assert config.read_text() == broken
    assert not ready.exists()
    assert host.restarts == 0

    spec = host.path("/var/run/cdi/nvidia.yaml").read_bytes()  # the spec step still ran
    config.write_text(broken.removesuffix("[grpc\n"))
    library = host.path("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    library.unlink()  # no NVML: no new spec (the last one stays), not ready, the pass failed
    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 1
    assert "cdi: cannot generate the spec: " in done.stderr
    assert host.path("/var/run/cdi/nvidia.yaml").read_bytes() == spec
    assert not ready.exists()
    assert host.restarts == 1


def test_config_and_socket_can_be_named(containerd_host: Host) -> None:
    """--config and --socket: distributions whose containerd lives elsewhere."""
    host = containerd_host
    config = host.path("/etc/containerd/config.toml")
    original = config.read_bytes()
    other = host.path("/etc/containerd/main.toml")
    other.write_bytes(original)
    done = host.agent(
        "--once",
        "--restart-mode",
        "none",
        "--config",
        "/etc/containerd/main.toml",
        "--socket",
        "/run/containerd/containerd.sock",
    )
    assert done.returncode == 0, done.stderr
    assert toml_loads(other.read_text())["imports"] == [IMPORT]
    assert config.read_bytes() == original
    assert host.path(IMPORT).exists()
    done = host.agent("--once", "--socket", "relative.sock")
    assert (done.returncode, done.stderr) == (
        2,
        "error: --socket 'relative.sock': must be an absolute path on the host\n",
    )


def test_a_spec_kept_in_its_own_layout_is_recognised_next_pass(containerd_host: Host) -> None:
    """Same spec, other bytes (JSON in the .yaml file): kept, not rewritten, and remembered by
    its own bytes, so the next pass finds it fresh instead of rebuilding it to keep it again."""
    host = containerd_host
    assert host.agent("--once").returncode == 0
    spec = host.path("/var/run/cdi/nvidia.yaml")
    as_json = json.dumps(yaml.safe_load(spec.read_text()), indent=4) + "\n"
    spec.write_text(as_json)
    done = host.agent("--once")
    assert done.returncode == 0, done.stderr
    assert spec.read_text() == as_json
    state = host_agent.read_state(HostRoot(host.root))
    assert state.spec_digest == hashlib.sha256(as_json.encode()).hexdigest()


def test_a_persons_edit_of_the_main_files_cri_settings_reaches_containerd(
    containerd_host: Host,
) -> None:
    """On 2.x the drop-in holds only ctk's keys, so an edit of config.toml takes effect as it
    is; on 1.x the drop-in's copy hides it until the agent's next pass copies it again (without
    restarting containerd: the person who edits the config restarts it)."""
    host = containerd_host
    config = host.path("/etc/containerd/config.toml")
    drop_in = host.path(IMPORT)
    assert host.agent("--once").returncode == 0
    copied, pid = drop_in.read_bytes(), host.pid
    text = config.read_text()
    if host.containerd_2:
        text += "\n[plugins.'io.containerd.cri.v1.runtime']\n  restrict_oom_score_adj = true\n"
    else:
        line = '  sandbox_image = "registry.k8s.io/pause:3.9"\n'
        assert line in text
        text = text.replace(line, line + "  restrict_oom_score_adj = true\n")
    config.write_text(text)
    restrict = dumped(host)["plugins"][host.cri]["restrict_oom_score_adj"]
    assert restrict is host.containerd_2  # 1.x: still the drop-in's copy, false

    done = host.agent("--once")
    assert done.returncode == 0, done.stderr
    if host.containerd_2:
        assert done.stderr == "pass: nothing changed; ready\n"
        assert drop_in.read_bytes() == copied
    else:
        assert f"updated {IMPORT}\n" in done.stderr
        cri = toml_loads(drop_in.read_text())["plugins"][host.cri]
        assert cri["restrict_oom_score_adj"] is True
    assert dumped(host)["plugins"][host.cri]["restrict_oom_score_adj"] is True
    assert config.read_text() == text
    assert (host.restarts, host.pid) == (1, pid)
