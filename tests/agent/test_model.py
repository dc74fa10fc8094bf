"""The agent's pure decisions: engine detection, restarts, drift, state, host paths in the spec."""

from __future__ import annotations

import pytest

from ctk.agent.model import (
    OwnFile,
    Presence,
    Restart,
    RestartKind,
    RestartMode,
    State,
    Written,
    after_write,
    check_restart_mode,
    decide_restart,
    detect_runtime,
    digest,
    drifted,
    dump_state,
    load_state,
    made_folders,
    own_file,
)
from ctk.agent.spec import host_paths
from ctk.cdi.model import ContainerEdits, Device, DeviceNode, Hook, Mount, Spec
from ctk.errors import CtkError, UsageError
from ctk.runtime_config.engines import Runtime

UP = Presence(socket=True, config=True)
CONFIG_ONLY = Presence(config=True)
DOCKERS_CONTAINERD = Presence(socket=True, config=True, cri_disabled=True)


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        pytest.param({Runtime.CONTAINERD: UP}, Runtime.CONTAINERD, id="containerd"),
        pytest.param(
            {Runtime.DOCKER: UP, Runtime.CONTAINERD: DOCKERS_CONTAINERD},
            Runtime.DOCKER,
            id="docker-with-its-own-containerd",
        ),
        pytest.param(
            {Runtime.CONTAINERD: UP, Runtime.DOCKER: CONFIG_ONLY},
            Runtime.CONTAINERD,
            id="socket-beats-config",
        ),
        pytest.param({Runtime.CRIO: CONFIG_ONLY}, Runtime.CRIO, id="config-when-no-socket"),
    ],
)
def test_detect_runtime(present: dict[Runtime, Presence], expected: Runtime) -> None:
    assert detect_runtime(present) is expected


@pytest.mark.parametrize(
    ("present", "message", "hint"),
    [
        pytest.param(
            {Runtime.CONTAINERD: UP, Runtime.DOCKER: UP},
            "found more than one container engine on the host (containerd and docker); "
            "ctk agent configures one",
            "pass --runtime (or CTK_AGENT_RUNTIME) with the engine Kubernetes uses",
            id="two",
        ),
        pytest.param(
            {Runtime.CONTAINERD: CONFIG_ONLY, Runtime.CRIO: CONFIG_ONLY},
            "found more than one container engine on the host (containerd and crio); "
            "ctk agent configures one",
            "pass --runtime (or CTK_AGENT_RUNTIME) with the engine Kubernetes uses",
            id="two-configs",
        ),
        pytest.param(
            {},
            "no container engine found on the host (no containerd, dockerd or CRI-O socket or "
            "config under --host-root)",
            "check --host-root, or pass --runtime",
            id="none",
        ),
    ],
)
def test_detect_runtime_refuses(present: dict[Runtime, Presence], message: str, hint: str) -> None:
    with pytest.raises(UsageError) as caught:
        detect_runtime(present)
    assert (caught.value.message, caught.value.hint) == (message, hint)


@pytest.mark.parametrize(
    ("runtime", "mode", "changed", "live", "removal", "expected"),
    [
        pytest.param(
            Runtime.CONTAINERD, RestartMode.SYSTEMD, False, False, False,
            Restart(RestartKind.NOTHING), id="no-change",
        ),
        pytest.param(
            Runtime.CONTAINERD, RestartMode.SYSTEMD, True, True, False,
            Restart(RestartKind.NOTHING), id="drift-while-engine-kept-nvidia",
        ),
        pytest.param(
            Runtime.CONTAINERD, RestartMode.SYSTEMD, True, False, False,
            Restart(RestartKind.SYSTEMCTL, ("systemctl", "restart", "containerd")),
            id="systemd",
        ),
        pytest.param(
            Runtime.DOCKER, RestartMode.SYSTEMD, True, True, True,
            Restart(RestartKind.SYSTEMCTL, ("systemctl", "restart", "docker")),
            id="removal-always-restarts",
        ),
        pytest.param(
            Runtime.DOCKER, RestartMode.SIGNAL, True, False, False,
            Restart(RestartKind.SIGHUP), id="docker-reload-after-addition",
        ),
        pytest.param(
            Runtime.DOCKER, RestartMode.SIGNAL, True, False, True,
            Restart(
                RestartKind.REPORT,
                reason="restart needed: systemctl restart docker (dockerd keeps removed "
                "runtimes across a SIGHUP reload)",
            ),
            id="docker-no-reload-after-removal",
        ),
        pytest.param(
            Runtime.CRIO, RestartMode.NONE, True, False, False,
            Restart(RestartKind.REPORT, reason="restart needed: systemctl restart crio"),
            id="none-reports",
        ),
    ],
)  # fmt: skip
def test_decide_restart(  # noqa: PLR0917
    runtime: Runtime, mode: RestartMode, changed: bool, live: bool, removal: bool, expected: Restart
) -> None:
    assert decide_restart(runtime, mode, changed=changed, live_ok=live, removal=removal) == expected


def test_signal_mode_is_refused_for_containerd_and_crio() -> None:
    check_restart_mode(Runtime.DOCKER, RestartMode.SIGNAL)
    for runtime in Runtime:  # every other mode suits every engine
        for mode in RestartMode:
            if mode is not RestartMode.SIGNAL:
                check_restart_mode(runtime, mode)
    refused = {}
    for runtime in (Runtime.CONTAINERD, Runtime.CRIO):
        with pytest.raises(UsageError) as caught:
            check_restart_mode(runtime, RestartMode.SIGNAL)
        refused[runtime] = (caught.value.message, caught.value.hint)
    assert refused == {
        Runtime.CONTAINERD: (
            "--restart-mode signal cannot apply a containerd config: containerd does not "
            "reload on SIGHUP, it exits (status 129) and stays down until systemd restarts it",
            "use --restart-mode systemd (a restart keeps running containers) or none",
        ),
        Runtime.CRIO: (
            "--restart-mode signal is not supported for crio: it does not reload on SIGHUP",
            "use --restart-mode systemd or none",
        ),
    }


def test_drift_makes_the_overwritten_file_the_original() -> None:
    state = after_write(State(), "/etc/c.toml", "a", "a+nvidia")
    assert state.configs["/etc/c.toml"] == Written(original="a", left=digest("a+nvidia"))
    assert not drifted(state, "/etc/c.toml", "a+nvidia")
    assert drifted(state, "/etc/c.toml", "b")
    state = after_write(state, "/etc/c.toml", "b", "b+nvidia")
    assert state.configs["/etc/c.toml"] == Written(original="b", left=digest("b+nvidia"))
    state = after_write(state, "/etc/c.toml", "b+nvidia", "b+nvidia+more")
    assert state.configs["/etc/c.toml"].original == "b"


def test_state_round_trip() -> None:
    state = State(
        runtime=Runtime.DOCKER,
        drift_repairs=2,
        engine_restarts=3,
        ready_pid=42,
        restart_pending=True,
        configs={"/etc/docker/daemon.json": Written(original=None, left=digest("{}"))},
        record='{"changes": []}',
        spec="/var/run/cdi/nvidia.yaml",
        spec_inputs=digest("nvml facts"),
        spec_digest=digest("spec"),
        driver="550.54.15",
        hook=True,
        runtime_path="/usr/bin/nvidia-container-runtime",
        template=digest("config.toml.tmpl"),
        created={  # in order
            OwnFile("/run/ctk/ready", on_host=True): None,
            OwnFile("/outlets/ctk.prom"): digest("# HELP"),
        },
        folders=("/etc/containerd/conf.d",),
    )
    assert load_state("s", dump_state(state)) == state
    assert dump_state(state).startswith('{\n  "configs": {\n')  # indented: a person reads it
    assert digest(None) is None
    # every field differs from its default, so a field not read back (or read from another
    # key) fails the round trip
    defaults = State()
    unset = [f for f in State.__dataclass_fields__ if getattr(state, f) == getattr(defaults, f)]
    assert unset == []
    assert '"host": true' in dump_state(state)
    assert load_state("s", None) == State()
    legacy = '{"version": 1, "created": ["/outlets/ctk.prom"]}'  # an earlier version's list
    assert load_state("s", legacy).created == {OwnFile("/outlets/ctk.prom"): None}
    older = '{"version": 1, "created": [{"path": "/host/run/ctk/ready", "digest": null}]}'
    assert load_state("s", older) == State(created={OwnFile("/host/run/ctk/ready"): None})


@pytest.mark.parametrize(
    ("host_root", "seen", "own"),
    [
        pytest.param("/host", "/host/run/ctk/ready", OwnFile("/run/ctk/ready", True), id="under"),
        pytest.param("/host/", "/host/run/ready", OwnFile("/run/ready", True), id="slash"),
        pytest.param("/host", "/hostile/ready", OwnFile("/hostile/ready"), id="prefix-only"),
        pytest.param("/host", "/run/ctk-pod/ready", OwnFile("/run/ctk-pod/ready"), id="pod"),
        pytest.param("/", "/run/ctk/ready", OwnFile("/run/ctk/ready", True), id="on-the-host"),
        pytest.param("/srvX", "/srvX/run/r", OwnFile("/run/r", True), id="only-slashes-go"),
    ],
)
def test_own_file_names_the_hosts_path(host_root: str, seen: str, own: OwnFile) -> None:
    assert own_file(host_root, seen) == own


def test_made_folders_deepest_first() -> None:
    assert made_folders(("/etc/a", "/etc/a/b/c", "/etc/a/b"), ("/var/x",)) == (
        "/etc/a/b/c",
        "/etc/a/b",
        "/etc/a",
        "/var/x",
    )
    assert made_folders(("/var/x",), ("/var/x",)) == ("/var/x",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("", "Expecting value: line 1 column 1 (char 0)", id="empty"),
        pytest.param("[]", "not a version 1 agent state", id="array"),
        pytest.param('{"version": 9}', "not a version 1 agent state", id="version"),
        pytest.param(
            '{"version": 1, "configs": {"/x": {"original": 1, "left": null}}}',
            "configs./x.original: 1 is not of type 'string', 'null'",
            id="config-original",
        ),
        pytest.param(
            '{"version": 1, "configs": []}', "configs: [] is not of type 'object'", id="configs"
        ),
        pytest.param(
            '{"version": 1, "folders": ["etc/x"]}',
            "folders[0]: 'etc/x' does not match '^/'",
            id="relative-folder",
        ),
        pytest.param(
            '{"version": 1, "created": [{"path": "/x", "digest": null, "host": 1}]}',
            "created[0].host: 1 is not of type 'boolean'",
            id="created-host",
        ),
        pytest.param(
            '{"version": 1, "configs": {"etc/x": {"original": null, "left": null}}}',
            "configs: 'etc/x' does not match '^/'",
            id="relative-config",
        ),
        pytest.param(
            '{"version": 1, "ready_pid": true}',
            "ready_pid: True is not of type 'integer', 'null'",
            id="ready-pid-bool",
        ),
        pytest.param(
            '{"version": 1, "engine_restarts": 1.5}',
            "engine_restarts: 1.5 is not of type 'integer'",
            id="restarts-fraction",
        ),
        pytest.param(
            '{"version": 1, "drift_repairs": -1}',
            "drift_repairs: -1 is less than the minimum of 0",
            id="repairs-negative",
        ),
        pytest.param(
            '{"version": 1, "spec": "/var/run/cdi/../../etc/passwd"}',
            "spec: '/var/run/cdi/../../etc/passwd' should not be valid under "
            "{'pattern': '(^|/)\\\\.\\\\.(/|$)'}",
            id="spec-dotdot",
        ),
        pytest.param(
            '{"version": 1, "created": [{"path": "/x", "digest": "not-a-digest"}]}',
            "created[0].digest: 'not-a-digest' does not match '^[0-9a-f]{64}$'",
            id="created-digest",
        ),
        pytest.param(
            '{"version": 1, "restarts": 1}',
            "the document: Additional properties are not allowed ('restarts' was unexpected)",
            id="unknown-key",
        ),
    ],
)
def test_state_unreadable(text: str, problem: str) -> None:
    """Anything the schema (ctk/schemas/agent-state.json) does not allow is refused, naming
    where: the agent restores, overwrites and deletes files by what the state says."""
    with pytest.raises(CtkError) as caught:
        load_state("/host/var/lib/ctk/agent/state.json", text)
    assert caught.value.message == (
        f"/host/var/lib/ctk/agent/state.json: not a ctk agent state file ({problem})"
    )
    assert caught.value.hint == (
        "move it away; the next pass starts afresh (its counters restart at 0)"
    )


def test_host_paths_strip_the_agents_view_of_the_host() -> None:
    def edits(prefix: str) -> ContainerEdits:
        return ContainerEdits(
            device_nodes=(
                DeviceNode(path="/dev/nvidia0", host_path=f"{prefix}/dev/nvidia0"),
                DeviceNode(path="/dev/nvidiactl"),  # no hostPath: the same path on the host
            ),
            mounts=(
                Mount(host_path=f"{prefix}/run/nvidia/driver/usr/lib64/libcuda.so.1",
                      container_path="/usr/lib64/libcuda.so.1"),
            ),
            hooks=(
                Hook(hook_name="createContainer", path="/usr/local/libexec/ctk/ctk-hook",
                     args=("ctk-hook", "update-ldcache", "--ldconfig-path",
                           f"@{prefix}/run/nvidia/driver/sbin/ldconfig")),
                Hook(hook_name="createContainer", path=f"{prefix}/opt/hook/nvidia-cdi-hook",
                     args=("nvidia-cdi-hook",)),
            ),
        )  # fmt: skip

    def spec(prefix: str) -> Spec:
        return Spec(
            cdi_version="0.5.0",
            kind="nvidia.com/gpu",
            devices=(Device(name="0", edits=edits(prefix), annotations=(("a.b/c", "d"),)),),
            edits=edits(prefix),
        )

    assert host_paths(spec("/host"), "/host/") == spec("")
    assert host_paths(spec("/hostX"), "/hostX") == spec("")  # only a trailing / is dropped
    assert host_paths(spec(""), "/") == spec("")
    assert host_paths(spec("/hostile"), "/host") == spec("/hostile")
