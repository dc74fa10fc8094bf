"""The Helm chart: lint and render over the values matrix, schema-validate, and policy checks.

Policies are checked on the rendered YAML of every valid combination of runtime x cdi.enabled x
restartMode x distribution; invalid combinations must fail at render time with a message.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.chart import (
    AGENT_LABEL,
    BUILD_SH,
    CHART,
    MATRIX,
    NAMESPACE,
    VALID,
    Combo,
    Doc,
    helm,
    is_hook,
    kinds,
    one,
    parallel,
    pod_spec,
    render,
    set_args,
    template,
)

CONTAINERD_DIRS = {
    "default": "/etc/containerd",
    "k3s": "/var/lib/rancher/k3s/agent/etc/containerd",
    "rke2": "/var/lib/rancher/rke2/agent/etc/containerd",
    "microk8s": "/var/snap/microk8s/current/args",
}
PATH_TAIL = ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What each distribution preset tells the agent (host paths), written out here independently of
# the chart's helpers; tests/deploy/test_distributions.py runs the agent with them.
DISTRIBUTION_ENV: dict[str, dict[str, str]] = {
    "default": {},
    "k3s": {
        "CTK_AGENT_CONFIG": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        "CTK_AGENT_SOCKET": "/run/k3s/containerd/containerd.sock",
        "CTK_AGENT_RESTART_UNIT": "k3s,k3s-agent",
        "CTK_AGENT_HOST_EXEC": "chroot /host /usr/bin/env "
        "PATH=/var/lib/rancher/k3s/data/current/bin" + PATH_TAIL,
        "CTK_AGENT_CONFIGURE": "false",
        "CTK_AGENT_TEMPLATE": "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl,"
        "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
    },
    "rke2": {
        "CTK_AGENT_CONFIG": "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
        "CTK_AGENT_SOCKET": "/run/k3s/containerd/containerd.sock",
        "CTK_AGENT_RESTART_UNIT": "rke2-server,rke2-agent",
        "CTK_AGENT_HOST_EXEC": "chroot /host /usr/bin/env PATH=/var/lib/rancher/rke2/bin"
        + PATH_TAIL,
        "CTK_AGENT_CONFIGURE": "false",
        "CTK_AGENT_TEMPLATE": "/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl,"
        "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
    },
    "microk8s": {
        "CTK_AGENT_CONFIG": "/var/snap/microk8s/current/args/containerd-template.toml",
        "CTK_AGENT_DROP_IN": "/var/snap/microk8s/current/args/conf.d/99-nvidia.toml",
        "CTK_AGENT_SOCKET": "/var/snap/microk8s/common/run/containerd.sock",
        "CTK_AGENT_RESTART_UNIT": "snap.microk8s.daemon-containerd",
        "CTK_AGENT_HOST_EXEC": "chroot /host /usr/bin/env PATH=/snap/microk8s/current/bin"
        + PATH_TAIL,
    },
}
DISTRIBUTION_KEYS = {k for env in DISTRIBUTION_ENV.values() for k in env}
PROM_DIR = "/var/lib/node_exporter/textfile_collector"
NFD_DIR = "/etc/kubernetes/node-feature-discovery/features.d"


@pytest.fixture(scope="session")
def rendered() -> dict[Combo, tuple[str, list[Doc]]]:
    """Every valid combination, rendered once: (YAML text, documents)."""
    out: dict[Combo, tuple[str, list[Doc]]] = {}
    for combo, done in zip(VALID, parallel(lambda c: template(c.sets()), VALID), strict=True):
        assert done.returncode == 0, (combo, done.stderr)
        out[combo] = (done.stdout, [d for d in yaml.safe_load_all(done.stdout) if d])
    return out


def expected_writable(combo: Combo) -> set[str]:
    """The host dirs the agent writes, derived here independently of the chart's helpers."""
    dirs = {"/run/cdi", "/run/ctk", "/var/lib/ctk", "/usr/local/libexec/ctk", PROM_DIR, NFD_DIR}
    if combo.runtime in ("auto", "containerd"):
        dirs.add(CONTAINERD_DIRS[combo.distribution])
    if combo.distribution == "default" and combo.runtime in ("auto", "docker"):
        dirs.add("/etc/docker")
    if combo.distribution == "default" and combo.runtime in ("auto", "crio"):
        dirs.add("/etc/crio")
    return dirs


def host_mounts(spec: Doc, container: Doc) -> dict[str, tuple[str, bool]]:
    """mountPath -> (hostPath, readOnly) for the container's hostPath mounts."""
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    return {
        m["mountPath"]: (host_paths[m["name"]], bool(m.get("readOnly", False)))
        for m in container["volumeMounts"]
        if m["name"] in host_paths
    }


def test_matrix_covers_every_key() -> None:
    assert len(MATRIX) == 4 * 2 * 3 * 4
    assert len(VALID) == 44
    assert {c.distribution for c in VALID} == {"default", "k3s", "rke2", "microk8s"}


def test_lint_every_valid_combination() -> None:
    tool = helm()

    def lint(combo: Combo) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool, "lint", "--strict", str(CHART), *set_args(combo.sets())],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    for combo, done in zip(VALID, parallel(lint, VALID), strict=True):
        assert done.returncode == 0, (combo, done.stdout, done.stderr)


def test_invalid_combinations_fail_with_a_message() -> None:
    refused = [c for c in MATRIX if c.refusal() is not None]
    assert len(refused) == 52
    for combo, done in zip(refused, parallel(lambda c: template(c.sets()), refused), strict=True):
        assert done.returncode == 1, combo
        assert str(combo.refusal()) in done.stderr, (combo, done.stderr)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("runtime", "podman", 'runtime: "podman" is not one of'),
        ("restartMode", "sighup", 'restartMode: "sighup" is not one of'),
        ("distribution", "k0s", 'distribution: "k0s" is not one of'),
        ("driverRoot", "run/nvidia/driver", "driverRoot: must be an absolute host path"),
        ("image.tag", "latest", '"latest" is refused'),
    ],
)
def test_bad_values_fail_with_the_key(key: str, value: str, message: str) -> None:
    done = template({key: value})
    assert done.returncode == 1
    assert message in done.stderr
    assert done.stdout == ""


def test_every_manifest_passes_kubernetes_validate_strict(
    rendered: dict[Combo, tuple[str, list[Doc]]], tmp_path: Path
) -> None:
    tool = shutil.which("kubernetes-validate")
    if tool is None:
        pytest.skip("kubernetes-validate is not installed (.ci/run installs it)")
    files = []
    for i, (text, _) in enumerate(rendered.values()):
        path = tmp_path / f"combo-{i}.yaml"
        path.write_text(text)
        files.append(str(path))
    extras = {
        "options.yaml": {"namespace.create": "true", "outlets.npd.enabled": "true"},
        "off.yaml": {
            "runtimeClass.enabled": "false",
            "uninstall.enabled": "false",
            "outlets.prometheusTextfileDir": "",
            "outlets.nfdFeaturesDir": "",
        },
        "ondelete.yaml": {
            "updateStrategy.type": "OnDelete",
            "updateStrategy.rollingUpdate": "null",
        },
    }
    for name, values in extras.items():
        done = template(values)
        assert done.returncode == 0, done.stderr
        (tmp_path / name).write_text(done.stdout)
        files.append(str(tmp_path / name))
    # A deliberately wrong field proves that strict mode is on and that failures are seen.
    broken = tmp_path / "broken.yaml"
    broken.write_text(next(iter(rendered.values()))[0].replace("hostPath:", "hostPathh:", 1))

    def validate(job: tuple[str, list[str]]) -> subprocess.CompletedProcess[str]:
        version, paths = job
        return subprocess.run(
            [str(tool), "--strict", "--quiet", "-k", version, *paths],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    jobs = [(v, p) for v in ("1.28.0", "1.37.0") for p in (files, [str(broken)])]
    good28, bad28, good37, bad37 = parallel(validate, jobs)
    for version, good, bad in (("1.28", good28, bad28), ("1.37", good37, bad37)):
        assert good.returncode == 0, (version, good.stdout[-3000:], good.stderr[-3000:])
        assert bad.returncode != 0, version


def test_agent_daemonset_policy(rendered: dict[Combo, tuple[str, list[Doc]]]) -> None:
    for combo, (_, docs) in rendered.items():
        for ds in kinds(docs, "DaemonSet"):
            spec = pod_spec(ds)
            where = (combo, ds["metadata"]["name"])
            # hostPID exactly when the engine is signalled.
            assert spec.get("hostPID", False) is (combo.restart_mode == "signal"), where
            assert "hostNetwork" not in spec and "hostIPC" not in spec, where
            assert spec["priorityClassName"] == "system-node-critical", where
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec[
                "tolerations"
            ], where
            terms = spec["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"]
            assert len(terms) == 1, where
            expressions = terms[0]["matchExpressions"]
            assert {
                "key": "feature.node.kubernetes.io/pci-10de.present",
                "operator": "In",
                "values": ["true"],
            } in expressions, where
            assert {
                "key": "ctk.nvidia.com/agent.deploy",
                "operator": "NotIn",
                "values": ["false"],
            } in expressions, where
            assert spec["automountServiceAccountToken"] is False, where
            for container in spec.get("initContainers", []) + spec["containers"]:
                if container["name"] == "done":
                    assert "securityContext" not in container and "volumeMounts" not in container
                    continue
                assert container["securityContext"] == {"privileged": True}, where
                check_mounts(combo, spec, container)


def check_mounts(combo: Combo, spec: Doc, container: Doc) -> None:
    mounts = host_mounts(spec, container)
    where = (combo, container["name"])
    assert mounts.pop("/host") == ("/", True), where
    root = next(m for m in container["volumeMounts"] if m["mountPath"] == "/host")
    assert root["mountPropagation"] == "HostToContainer", where
    # Every other host mount: read-write, at /host + its host path, and exactly the written dirs.
    assert all(not ro for _, ro in mounts.values()), where
    assert all(path == "/host" + host for path, (host, _) in mounts.items()), where
    assert set(h for h, _ in mounts.values()) == expected_writable(combo), where
    types = {
        v["hostPath"]["path"]: v["hostPath"]["type"] for v in spec["volumes"] if "hostPath" in v
    }
    assert types.pop("/") == "Directory"
    assert set(types.values()) == {"DirectoryOrCreate"}, where


def test_agent_container(rendered: dict[Combo, tuple[str, list[Doc]]]) -> None:
    ref = subprocess.run(
        [str(BUILD_SH), "--print-ref"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert ref.endswith(":" + yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])
    for combo, (text, docs) in rendered.items():
        ds = one(docs, "DaemonSet", "ctk")
        spec = pod_spec(ds)
        (agent,) = spec["containers"]
        env = {e["name"]: e["value"] for e in agent["env"]}
        assert env["CTK_AGENT_HOST_ROOT"] == "/host"
        # k3s/RKE2/microk8s run their own containerd: the agent is told so, not left to detect.
        runtime = combo.runtime if combo.distribution == "default" else "containerd"
        assert env["CTK_AGENT_RUNTIME"] == runtime
        assert env["CTK_AGENT_ENABLE_CDI"] == str(combo.cdi).lower()
        expected = dict(DISTRIBUTION_ENV[combo.distribution])
        if not combo.cdi:  # no chart template without CDI: nothing to render
            expected.pop("CTK_AGENT_TEMPLATE", None)
        assert {k: v for k, v in env.items() if k in DISTRIBUTION_KEYS} == expected, combo
        assert env["CTK_AGENT_RESTART_MODE"] == combo.restart_mode
        # Readiness: the probe looks at the ready file the agent keeps, in a pod-local dir.
        probe = agent["readinessProbe"]["exec"]["command"]
        assert probe == ["test", "-f", env["CTK_AGENT_READY_FILE"]]
        pod_dirs = {m["mountPath"] for m in agent["volumeMounts"] if m["name"] == "pod-state"}
        assert str(Path(env["CTK_AGENT_READY_FILE"]).parent) in pod_dirs
        assert agent["resources"]["requests"] and agent["resources"]["limits"]["memory"]
        assert ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"
        # Every image is the one build.sh tags; never "latest".
        images = {
            c["image"]
            for d in kinds(docs, "DaemonSet") + kinds(docs, "Job")
            for c in pod_spec(d).get("initContainers", []) + pod_spec(d)["containers"]
        }
        assert images == {ref}, combo
        assert ":latest" not in text and "latest" not in ref


def test_runtime_classes_select_the_agent_label(
    rendered: dict[Combo, tuple[str, list[Doc]]],
) -> None:
    for combo, (_, docs) in rendered.items():
        classes = {d["metadata"]["name"]: d for d in kinds(docs, "RuntimeClass")}
        assert set(classes) == ({"nvidia", "nvidia-cdi"} if combo.cdi else {"nvidia"}), combo
        for rc in classes.values():
            # ctk configures one engine handler, nvidia.
            assert rc["handler"] == "nvidia"
            assert rc["scheduling"]["nodeSelector"] == {AGENT_LABEL: "true"}
    off = render({"runtimeClass.enabled": "false"})
    assert kinds(off, "RuntimeClass") == []
    unscheduled = render({"runtimeClass.scheduling": "false"})
    assert all("scheduling" not in rc for rc in kinds(unscheduled, "RuntimeClass"))


def test_agent_label_is_the_one_the_agent_publishes() -> None:
    outlets = pytest.importorskip("ctk.agent.outlets", reason="ctk agent is not in this tree yet")
    assert outlets.READY_LABEL == AGENT_LABEL


def test_every_setting_is_an_option_of_ctk_agent() -> None:
    """A CTK_AGENT_* variable the agent does not read would be silently ignored."""
    from ctk.cli.commands import build_app

    agent = build_app().commands.get("agent")  # type: ignore[attr-defined]
    if agent is None:
        pytest.skip("ctk agent is not in this tree yet")
    known = {p.envvar for p in agent.params if p.envvar}
    docs = render({"outlets.npd.enabled": "true"})
    for ds in kinds(docs, "DaemonSet"):
        for container in pod_spec(ds).get("initContainers", []) + pod_spec(ds)["containers"]:
            names = {e["name"] for e in container.get("env", [])}
            assert names <= known, names - known


def test_outlets_are_written_through_their_read_write_mounts() -> None:
    spec = pod_spec(one(render(), "DaemonSet", "ctk"))
    (agent,) = spec["containers"]
    env = {e["name"]: e["value"] for e in agent["env"]}
    mounts = host_mounts(spec, agent)
    for name, host_dir in (
        ("CTK_AGENT_PROMETHEUS_TEXTFILE", PROM_DIR),
        ("CTK_AGENT_NFD_FEATURES_DIR", NFD_DIR),
    ):
        assert env[name] == "/host" + host_dir
        assert mounts[env[name]] == (host_dir, False)
    assert env["CTK_AGENT_CDI_DIR"] == "/var/run/cdi"  # a host path: /run/cdi through the symlink
    assert "/host/run/cdi" in mounts


def test_service_accounts_have_no_api_permissions_outside_uninstall() -> None:
    docs = render()
    assert [
        d
        for d in docs
        if d["kind"] in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
        and not is_hook(d)
    ] == []
    sa = one(docs, "ServiceAccount", "ctk")
    assert sa["automountServiceAccountToken"] is False
    (role,) = kinds(docs, "Role")
    assert role["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
    assert role["rules"] == [
        {
            "apiGroups": ["apps"],
            "resources": ["daemonsets"],
            "resourceNames": ["ctk", "ctk-uninstall"],
            "verbs": ["get", "delete"],
        }
    ]


def test_uninstall_hook_runs_on_every_agent_node_and_waits() -> None:
    docs = render()
    agent = one(docs, "DaemonSet", "ctk")
    undo = one(docs, "DaemonSet", "ctk-uninstall")
    job = one(docs, "Job", "ctk-uninstall-wait")
    hooks = {d["metadata"]["name"]: d["metadata"]["annotations"] for d in docs if is_hook(d)}
    assert {a["helm.sh/hook"] for a in hooks.values()} == {"pre-delete"}
    weight = {name: int(a["helm.sh/hook-weight"]) for name, a in hooks.items()}
    assert weight["ctk-uninstall"] < weight["ctk-uninstall-wait"]
    # Same nodes as the agent, same host view.
    for key in ("affinity", "tolerations", "priorityClassName", "volumes"):
        assert pod_spec(undo)[key] == pod_spec(agent)[key], key
    (init,) = pod_spec(undo)["initContainers"]
    assert "ctk agent --uninstall" in init["command"][-1]
    assert init["env"] == pod_spec(agent)["containers"][0]["env"]
    (wait,) = pod_spec(job)["containers"]
    assert wait["command"][0] == "ctk-uninstall-wait"
    assert f"--namespace={NAMESPACE}" in wait["command"]
    assert {"--agent=ctk", "--uninstall=ctk-uninstall"} <= set(wait["command"])
    assert pod_spec(job)["serviceAccountName"] == "ctk-uninstall"
    assert job["spec"]["backoffLimit"] == 0
    assert kinds(render({"uninstall.enabled": "false"}), "Job") == []


def test_namespace_option_labels_pod_security_privileged() -> None:
    assert kinds(render(), "Namespace") == []
    (ns,) = kinds(render({"namespace.create": "true"}), "Namespace")
    assert ns["metadata"]["name"] == NAMESPACE
    for mode in ("enforce", "audit", "warn"):
        assert ns["metadata"]["labels"][f"pod-security.kubernetes.io/{mode}"] == "privileged"


def test_npd_plugin_config() -> None:
    assert kinds(render(), "ConfigMap") == []
    (cm,) = kinds(render({"outlets.npd.enabled": "true"}), "ConfigMap")
    config: dict[str, Any] = json.loads(cm["data"]["ctk-doctor.json"])
    assert config["plugin"] == "custom"
    assert config["pluginConfig"]["max_output_length"] == 80
    (rule,) = config["rules"]
    assert rule["args"] == ["doctor", "--npd"] and rule["type"] == "permanent"
    assert rule["condition"] in {c["type"] for c in config["conditions"]}


def test_k3s_and_rke2_get_a_containerd_template() -> None:
    for distribution in ("k3s", "rke2"):
        docs = render({"distribution": distribution})
        (cm,) = kinds(docs, "ConfigMap")
        # test_distributions.py renders it with Go's text/template and reads it with containerd.
        assert cm["data"] == {
            "config.toml.tmpl": (CHART / "files/containerd-config.toml.tmpl").read_text(),
            "config-v3.toml.tmpl": (CHART / "files/containerd-config-v3.toml.tmpl").read_text(),
        }
        # Without CDI the nvidia handler is k3s/RKE2's own (they add it when they find
        # nvidia-container-runtime): no template, no init container.
        off = render({"distribution": distribution, "cdi.enabled": "false"})
        assert kinds(off, "ConfigMap") == []
        assert "initContainers" not in pod_spec(one(off, "DaemonSet", "ctk"))
        (init,) = pod_spec(one(docs, "DaemonSet", "ctk"))["initContainers"]
        # Which template it places: test_distributions.py runs its script.
        assert init["command"][:2] == ["/bin/sh", "-c"]
        assert f"d=/host/var/lib/rancher/{distribution}/agent/etc/containerd;" in init["command"][2]
    assert "initContainers" not in pod_spec(one(render(), "DaemonSet", "ctk"))


def test_update_strategy_and_outlets_are_configurable() -> None:
    docs = render(
        {
            "updateStrategy.type": "OnDelete",
            "updateStrategy.rollingUpdate": "null",
            "outlets.prometheusTextfileDir": "",
            "outlets.nfdFeaturesDir": "/srv/nfd",
        }
    )
    ds = one(docs, "DaemonSet", "ctk")
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}
    env = {e["name"]: e["value"] for e in pod_spec(ds)["containers"][0]["env"]}
    assert "CTK_AGENT_PROMETHEUS_TEXTFILE" not in env
    assert env["CTK_AGENT_NFD_FEATURES_DIR"] == "/host/srv/nfd"
    mounted = {v["hostPath"]["path"] for v in pod_spec(ds)["volumes"] if "hostPath" in v}
    assert PROM_DIR not in mounted and "/srv/nfd" in mounted
