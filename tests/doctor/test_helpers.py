"""The doctor checks' small helpers, each at its edges (survivors of the mutation run of
ctk/doctor/checks, issue 26): what they return for nothing, for one case and for the other."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctk.doctor import cuda as compat
from ctk.doctor.checks.cuda import _evidence
from ctk.doctor.checks.dra import PLUGIN_CDI_ROOT, _cdi_root
from ctk.doctor.checks.engine_config import docker_cgroup_driver
from ctk.doctor.checks.gpu import _mib
from ctk.doctor.checks.installers import restart_operator_toolkit
from ctk.doctor.checks.mig import spec_output
from ctk.doctor.facts import (
    CdiFacts,
    CudaNeed,
    DraPod,
    EngineFacts,
    KernelFacts,
    NodeFacts,
    SpecFileFacts,
    Unavailable,
)
from ctk.doctor.model import Evidence, Status
from ctk.runtime_config.engines import Runtime
from tests.doctor.test_boundaries import in_container
from tests.doctor.test_checks import run

DEFAULT_TOOLKIT = (
    "kubectl -n gpu-operator rollout restart daemonset/nvidia-container-toolkit-daemonset"
)


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(None, DEFAULT_TOOLKIT, id="no-kubernetes-facts"),
        pytest.param({}, DEFAULT_TOOLKIT, id="no-toolkit-pod-seen"),
        pytest.param(
            {"gpu_operator_toolkit": {"namespace": "nvidia"}},
            "kubectl -n nvidia rollout restart daemonset/nvidia-container-toolkit-daemonset",
            id="namespace-only",
        ),
        pytest.param(
            {"gpu_operator_toolkit": {"daemonset": "toolkit"}},
            "kubectl -n gpu-operator rollout restart daemonset/toolkit",
            id="daemonset-only",
        ),
        pytest.param(
            {"gpu_operator_toolkit": {"namespace": "", "daemonset": ""}},
            DEFAULT_TOOLKIT,
            id="blank-names",
        ),
    ],
)
def test_restart_operator_toolkit(node: dict[str, object] | None, expected: str) -> None:
    assert restart_operator_toolkit(node) == expected


@pytest.mark.parametrize(
    ("configured", "cgroup", "systemd", "expected"),
    [
        pytest.param("systemd", 1, False, "systemd", id="exec-opts-wins"),
        pytest.param(None, 2, True, "systemd", id="v2-under-systemd"),
        pytest.param(None, 2, False, "cgroupfs", id="v2-without-systemd"),
        pytest.param(None, 1, True, "cgroupfs", id="v1-under-systemd"),
    ],
)
def test_docker_cgroup_driver(
    configured: str | None, cgroup: int, systemd: bool, expected: str
) -> None:
    docker = EngineFacts(engine="docker", installed=True, cgroup_driver=configured)
    facts = NodeFacts(
        engines={Runtime.DOCKER: docker},
        kernel=KernelFacts(cgroup_version=cgroup, systemd_init=systemd),
    )
    assert docker_cgroup_driver(facts) == expected


def _spec(path: str) -> SpecFileFacts:
    return SpecFileFacts(path=path, kind="nvidia.com/gpu", devices=("0", "all"))


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        pytest.param((), "/var/run/cdi/nvidia.yaml", id="none-the-default"),
        pytest.param(("/etc/cdi/nvidia.yaml",), "/etc/cdi/nvidia.yaml", id="the-nodes-own"),
    ],
)
def test_spec_output(paths: tuple[str, ...], expected: str) -> None:
    facts = NodeFacts(cdi=CdiFacts(specs=tuple(_spec(p) for p in paths)))
    assert spec_output(facts) == expected


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        pytest.param(None, "memory unknown", id="unknown"),
        pytest.param(0, "0 MiB", id="zero"),
        pytest.param((80 << 20) + (1 << 20) - 1, "80 MiB", id="rounded-down"),
    ],
)
def test_mib(size: int | None, expected: str) -> None:
    assert _mib(size) == expected


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(None, PLUGIN_CDI_ROOT, id="no-kubernetes-facts"),
        pytest.param((), PLUGIN_CDI_ROOT, id="no-plugin-pod"),
        pytest.param(
            (DraPod(namespace="n", name="p", drivers=("gpu.nvidia.com",), cdi_root="/etc/cdi/"),),
            "/etc/cdi",
            id="the-plugins-cdi-root",
        ),
        pytest.param(
            (DraPod(namespace="n", name="p", drivers=("example.com",), cdi_root="/etc/cdi"),),
            PLUGIN_CDI_ROOT,
            id="another-drivers-pod",
        ),
        pytest.param(
            (
                DraPod(namespace="n", name="p", drivers=("gpu.nvidia.com",)),
                DraPod(
                    namespace="n",
                    name="q",
                    drivers=("compute-domain.nvidia.com",),
                    cdi_root="/run/cdi",
                ),
            ),
            "/run/cdi",
            id="the-compute-domain-plugins",
        ),
    ],
)
def test_cdi_root(pods: tuple[DraPod, ...] | None, expected: str) -> None:
    assert _cdi_root(None if pods is None else {"dra_pods": pods}) == expected


@pytest.mark.parametrize(
    ("cuda", "shown"),
    [pytest.param((12, 4), "12.4", id="known"), pytest.param(None, "unknown", id="unknown")],
)
def test_cuda_evidence_names_the_drivers_cuda(cuda: tuple[int, ...] | None, shown: str) -> None:
    host = compat.HostCuda(driver=(550, 54, 15), driver_text="550.54.15", cuda=cuda)
    need = CudaNeed(source="image", requirements=("cuda>=12.4",), cuda_version="12.4.1")
    assert _evidence(need, host) == (
        Evidence("/proc/driver/nvidia/version", "550.54.15"),
        Evidence("driver CUDA version", shown),
        Evidence("image", "NVIDIA_REQUIRE: cuda>=12.4"),
        Evidence("image", "CUDA_VERSION=12.4.1"),
    )


@pytest.mark.parametrize("value", ["", "void", "none", "all"])
def test_visible_devices_words_that_name_no_index(value: str) -> None:
    """NVIDIA_VISIBLE_DEVICES '' / void / none / all are the runtime's words, not indices."""
    result = run(
        "container.visible-devices-misuse", in_container(2, {"NVIDIA_VISIBLE_DEVICES": value})
    )
    assert result.status is not Status.WARN, result
    assert not any(e.source == "NVIDIA_VISIBLE_DEVICES" for e in result.evidence)


@pytest.mark.parametrize(
    ("runtime", "engine", "on", "setting"),
    [
        pytest.param(
            Runtime.CRIO,
            EngineFacts(engine="crio", installed=True),
            True,
            "crio always reads CDI specs",
            id="crio-always",
        ),
        pytest.param(
            Runtime.DOCKER,
            EngineFacts(engine="docker", installed=True, version="20.10.24", cdi_enabled=True),
            False,
            "docker 20.10.24 has no CDI support (it came in 25.0)",
            id="docker-20.10-setting-ignored",
        ),
        pytest.param(
            Runtime.DOCKER,
            EngineFacts(engine="docker", installed=True, version="26.1.5", cdi_enabled=False),
            False,
            "features.cdi = false",
            id="docker-26-off",
        ),
        pytest.param(
            Runtime.CONTAINERD,
            EngineFacts(engine="containerd", installed=True, version="1.7.24"),
            False,
            "enable_cdi not set",
            id="containerd-1.7-default",
        ),
    ],
)
def test_cdi_on_and_its_evidence(
    runtime: Runtime, engine: EngineFacts, on: bool, setting: str
) -> None:
    from ctk.doctor.checks.engine_config import cdi_on, cdi_setting

    assert (cdi_on(runtime, engine), cdi_setting(runtime, engine)) == (on, setting)


@pytest.mark.parametrize(
    ("kubernetes", "facts_given"),
    [
        pytest.param({}, False, id="no-facts"),
        pytest.param(Unavailable("the API refused"), True, id="kubernetes-unreadable"),
    ],
)
def test_runtime_binary_missing_without_kubernetes_facts(
    kubernetes: object, facts_given: bool
) -> None:
    from ctk.doctor.checks.engine_config import runtime_binary_missing
    from ctk.doctor.facts import RuntimeEntry

    binary = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    runtime = RuntimeEntry(name="nvidia", binary=binary, binary_exists=False)
    engine = EngineFacts(engine="crio", installed=True, runtimes={"nvidia": runtime})
    facts = NodeFacts(kubernetes=kubernetes) if facts_given else None  # type: ignore[arg-type]
    result = runtime_binary_missing(engine, "sudo systemctl restart crio", facts=facts)
    assert result is not None and result.commands == (DEFAULT_TOOLKIT,)


def test_cdi_route_names_each_hook_or_none() -> None:
    from ctk.doctor.checks.toolkit import cdi_route

    two = SpecFileFacts(
        path="/etc/cdi/nvidia.yaml",
        kind="nvidia.com/gpu",
        devices=("all",),
        hook_paths=("/usr/bin/nvidia-cdi-hook", "/usr/local/libexec/ctk/ctk-hook"),
    )
    none = replace(two, path="/var/run/cdi/nvidia.yaml", hook_paths=())
    crio = EngineFacts(engine="crio", installed=True, config_path="/etc/crio/crio.conf")
    for spec, hooks in (
        (two, "/usr/bin/nvidia-cdi-hook, /usr/local/libexec/ctk/ctk-hook"),
        (none, "none"),
    ):
        facts = NodeFacts(
            engines={Runtime.CRIO: crio},
            cdi=CdiFacts(dirs=("/etc/cdi", "/var/run/cdi"), specs=(spec,)),
        )
        assert (
            cdi_route(facts) == f"{spec.path} (hooks: {hooks}; crio: crio always reads CDI specs)"
        )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param({"CUDA_DEVICE_SM_LIMIT": "50"}, {"CUDA_DEVICE_SM_LIMIT": "50"}, id="sm"),
        pytest.param(
            {"CUDA_DEVICE_MEMORY_LIMIT_0": "8g", "CUDA_DEVICE_SM_LIMIT_X": "1"},
            {"CUDA_DEVICE_MEMORY_LIMIT_0": "8g"},
            id="memory-per-device",
        ),
    ],
)
def test_hami_limits(env: dict[str, str], expected: dict[str, str]) -> None:
    from ctk.doctor.checks.hami import hami_limits
    from ctk.doctor.facts import ContainerFacts

    assert hami_limits(NodeFacts(container=ContainerFacts(env=env))) == expected
