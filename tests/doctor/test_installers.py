"""Remedies that follow what installed the node: k3s, RKE2 and microk8s run containerd (and the
kubelet) in units of their own from configs they render; the GPU Operator installs the toolkit and
writes the CDI specs from its DaemonSets. Facts built directly, for what no fixture node says."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.doctor.facts import Distribution, EngineFacts, NodeFacts, RuntimeEntry
from ctk.doctor.fixes import ConfigureRuntime
from ctk.doctor.model import Evidence, Result, Status
from ctk.host.facts.gatherer import DISTRIBUTIONS
from ctk.runtime_config.engines import Runtime
from tests.doctor.test_checks import run
from tests.doctor.test_remedies import case_remedy_problems
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

BY_NAME = {d.name: d for d in DISTRIBUTIONS}
K3S = replace(
    BY_NAME["k3s"],
    unit="k3s-agent",
    template="/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
)
RKE2 = replace(
    BY_NAME["rke2"],
    unit="rke2-agent",
    template="/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl",
)
MICROK8S = replace(BY_NAME["microk8s"], unit="snap.microk8s.daemon-containerd")
NVIDIA = RuntimeEntry(name="nvidia", binary="/usr/bin/nvidia-container-runtime")


def containerd_of(distribution: Distribution, **changes: object) -> dict[Runtime, EngineFacts]:
    engine = EngineFacts(
        engine="containerd",
        installed=True,
        config_path=distribution.containerd_config,
        managed_by=distribution.name,
    )
    return {Runtime.CONTAINERD: replace(engine, **changes)}  # type: ignore[arg-type]


def on(distribution: Distribution, **changes: object) -> NodeFacts:
    """A node whose containerd ``distribution`` runs, with these containerd facts."""
    return NodeFacts(
        engines=containerd_of(distribution, **changes),
        distribution=distribution,
        kubelet=True,
        kubernetes={"runtimeclass_handlers": []},
    )


K3S_NOT_DEFAULT = on(K3S, runtimes={"nvidia": NVIDIA})
NOT_DEFAULT_SUMMARY = (
    "nvidia is neither containerd's default runtime nor the handler of a RuntimeClass: GPU pods "
    "run under runc and see no GPU"
)
NO_RUNTIME_SUMMARY = (
    'containerd has no usable nvidia runtime: pods fail with \'no runtime for "nvidia" is '
    "configured'"
)
OPERATOR_BINARY = "/usr/local/nvidia/toolkit/nvidia-container-runtime"

CASES = [
    pytest.param(
        "containerd.not-default-no-runtimeclass",
        on(MICROK8S, runtimes={"nvidia": NVIDIA}, default_runtime="runc"),
        Result(
            status=Status.FAIL,
            summary=NOT_DEFAULT_SUMMARY,
            evidence=(
                Evidence(MICROK8S.containerd_config, "default_runtime_name = runc"),
                Evidence("RuntimeClasses", "none"),
                Evidence(MICROK8S.containerd_config, "microk8s's containerd"),
            ),
            commands=("sudo systemctl restart snap.microk8s.daemon-containerd",),
            fixes=(
                ConfigureRuntime(
                    runtime=Runtime.CONTAINERD,
                    set_as_default=True,
                    config=MICROK8S.containerd_config,
                ),
            ),
            notes=("or create a RuntimeClass named nvidia with handler nvidia",),
        ),
        id="microk8s-not-default-edits-its-template",
    ),
    pytest.param(
        "containerd.runtime-not-configured",
        on(K3S, runtimes={"runc": RuntimeEntry(name="runc")}),
        Result(
            status=Status.FAIL,
            summary=NO_RUNTIME_SUMMARY,
            evidence=(Evidence(K3S.containerd_config, "runtimes: runc (no nvidia)"),),
            commands=("sudo systemctl restart k3s-agent",),
            notes=(
                "k3s adds the nvidia runtime itself when it finds nvidia-container-runtime at "
                "start: install the NVIDIA Container Toolkit and restart k3s-agent",
                f"add the nvidia runtime in {K3S.template}: k3s renders {K3S.containerd_config} "
                f"from {K3S.template} at every start, so an edit of config.toml is lost (ctk "
                "does not edit Go templates)",
            ),
        ),
        id="k3s-no-runtime-no-configure-fix",
    ),
    pytest.param(
        "containerd.runtime-not-configured",
        on(
            RKE2,
            runtimes={"nvidia": replace(NVIDIA, binary=OPERATOR_BINARY, binary_exists=False)},
        ),
        Result(
            status=Status.FAIL,
            summary=f"{RKE2.containerd_config} names the nvidia runtime {OPERATOR_BINARY}, which "
            "does not exist: GPU containers fail to start",
            evidence=(Evidence(RKE2.containerd_config, f"nvidia -> {OPERATOR_BINARY} (missing)"),),
            commands=(
                "kubectl -n gpu-operator rollout restart "
                "daemonset/nvidia-container-toolkit-daemonset",
            ),
            notes=(
                "the GPU Operator's toolkit DaemonSet installs it: look at its pod on this node "
                "(kubectl get pods -o wide) and its log",
            ),
        ),
        id="operator-runtime-gone-restarts-its-daemonset-not-apt",
    ),
    pytest.param(
        "containerd.systemd-cgroup-mismatch",
        on(
            RKE2,
            runtimes={
                "nvidia": replace(NVIDIA, systemd_cgroup=False),
                "runc": RuntimeEntry(name="runc", systemd_cgroup=True),
            },
        ),
        Result(
            status=Status.FAIL,
            summary="the nvidia runtime's SystemdCgroup differs from runc's: pods fail with "
            "'expected cgroupsPath to be of format \"slice:prefix:name\"' or land in the wrong "
            "hierarchy",
            evidence=(
                Evidence(RKE2.containerd_config, "nvidia SystemdCgroup = false"),
                Evidence(RKE2.containerd_config, "runc SystemdCgroup = true"),
            ),
            commands=("sudo systemctl restart rke2-agent",),
            notes=(
                f"set SystemdCgroup = true under the nvidia runtime's options in {RKE2.template}",
            ),
        ),
        id="rke2-cgroup-mismatch-restarts-rke2",
    ),
    pytest.param(
        "containerd.cdi-disabled",
        replace(
            on(MICROK8S, runtimes={"nvidia": NVIDIA}, cdi_enabled=False),
            kubernetes={"device_list_strategy": "cdi-cri"},
        ),
        Result(
            status=Status.WARN,
            summary="the device plugin hands out GPUs as CDI devices (cdi-cri) but enable_cdi is "
            "not true",
            evidence=(
                Evidence(MICROK8S.containerd_config, "enable_cdi = false"),
                Evidence("device plugin", "deviceListStrategy=cdi-cri"),
            ),
            commands=("sudo systemctl restart snap.microk8s.daemon-containerd",),
            fixes=(
                ConfigureRuntime(
                    runtime=Runtime.CONTAINERD, enable_cdi=True, config=MICROK8S.containerd_config
                ),
            ),
        ),
        id="microk8s-cdi-off",
    ),
    pytest.param(
        "k8s.runtimeclass-handler-missing",
        replace(on(K3S), kubernetes={"runtimeclass_handlers": ["nvidia"]}),
        Result(
            status=Status.FAIL,
            summary="a RuntimeClass sends pods to handler nvidia, which this node's runtime does "
            "not define: they fail with 'no runtime for \"nvidia\" is configured'",
            evidence=(
                Evidence("RuntimeClasses", "handler nvidia"),
                Evidence(K3S.containerd_config, "runtimes: none (no nvidia)"),
            ),
            commands=("sudo systemctl restart k3s-agent",),
            notes=(
                f"add the nvidia runtime in {K3S.template}: k3s renders {K3S.containerd_config} "
                f"from {K3S.template} at every start, so an edit of config.toml is lost (ctk "
                "does not edit Go templates)",
            ),
        ),
        id="k3s-runtimeclass-handler-missing",
    ),
    pytest.param(
        "containerd.managed-config",
        on(MICROK8S),
        Result(
            status=Status.OK,
            summary=f"containerd's config is microk8s's {MICROK8S.containerd_config}, the file "
            "to edit",
        ),
        id="microk8s-template-is-the-config",
    ),
    pytest.param(
        "containerd.not-default-no-runtimeclass",
        NodeFacts(kubernetes={"runtimeclass_handlers": []}),
        Result(status=Status.SKIP, summary="containerd is not installed"),
        id="not-default-says-nothing-on-a-node-without-containerd",
    ),
    pytest.param(
        "cdi.management-spec-missing",
        NodeFacts(
            kubernetes={"device_list_strategy": "cdi-cri"},
            gpu_operator="/run/nvidia/validations",
        ),
        Result(
            status=Status.FAIL,
            summary="the device plugin uses CDI but no management.nvidia.com/gpu spec exists",
            evidence=(
                Evidence("", "no management.nvidia.com/gpu spec"),
                Evidence("/run/nvidia/validations", "left by the GPU Operator"),
            ),
            commands=(
                "kubectl -n gpu-operator rollout restart "
                "daemonset/nvidia-container-toolkit-daemonset",
            ),
        ),
        id="management-spec-operator-seen-on-the-host",
    ),
]


@pytest.mark.parametrize(("check_id", "facts", "expected"), CASES)
def test_remedy_follows_the_installer(check_id: str, facts: NodeFacts, expected: Result) -> None:
    assert run(check_id, facts) == expected


def test_k3s_not_default_names_its_own_option_not_configure() -> None:
    """k3s/RKE2 refuse config.toml edits (ctk runtime configure refuses them too): their remedy
    is a RuntimeClass or their own default-runtime option, with their unit's restart."""
    result = run("containerd.not-default-no-runtimeclass", K3S_NOT_DEFAULT)
    assert (result.status, result.fixes, result.commands) == (
        Status.FAIL,
        (),
        ("sudo systemctl restart k3s-agent",),
    )


def test_every_case_remedy_runs_as_written() -> None:
    assert case_remedy_problems(CASES) == []


def test_the_distributions_are_the_agents_presets() -> None:
    """The doctor's distribution table and the chart's presets (`ctk.distribution`) name the same
    containerd config, units and template directory: one layout, read by both."""
    helpers = Path(__file__).resolve().parents[2] / "deploy/helm/ctk/templates/_helpers.tpl"
    presets = {
        name: dict(re.findall(r'"(\w+)" "([^"]*)"', body))
        for name, body in re.findall(r'^\s+"(\w+)" \(dict (.*)\)$', helpers.read_text(), re.M)
    }
    chart = {
        name: (
            preset["config"],
            tuple(preset["units"].split(",")),
            preset["template"].rsplit("/", 1)[0] if preset["template"] else None,
        )
        for name, preset in presets.items()
        if name != "default"
    }
    ours = {
        d.name: (
            d.containerd_config,
            d.units,
            d.templates[0].rsplit("/", 1)[0] if d.templates else None,
        )
        for d in DISTRIBUTIONS
    }
    assert ours == chart


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(
            "k3s-agent-no-runtimeclass",
            (
                ["sudo systemctl restart k3s-agent"],
                [
                    "put custom settings in "
                    "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl"
                ],
            ),
            id="k3s-agent-version-2",
        ),
        pytest.param(
            "rke2-agent-no-runtimeclass",
            (
                ["sudo systemctl restart rke2-agent"],
                [
                    "put custom settings in "
                    "/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl"
                ],
            ),
            id="rke2-agent-tarball-unit-version-3",
        ),
    ],
)
def test_the_managed_config_names_the_nodes_unit_and_template(
    node: str,
    expected: tuple[list[str], list[str]],
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The unit the node has a unit file for (a k3s agent runs k3s-agent; RKE2's tarball puts
    rke2-agent under /usr/local), and the template the distribution reads for the version it
    rendered (version 3: config-v3.toml.tmpl)."""
    built = fake_node(node)
    main(["doctor", "--json", "--root", str(built.root), "--check", "containerd.managed-config"])
    [finding] = json.loads(capsys.readouterr().out)["checks"]
    assert (finding["remedy"]["commands"], finding["remedy"]["notes"]) == expected
