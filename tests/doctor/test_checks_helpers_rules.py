"""The checks' helpers pinned on facts built here: legacy device injection and MIG mode (dev),
the compute-domain node and the API view (dra), a DRA plugin's spec file, the CUDA evidence,
NVML health and unaccounted GPU memory (gpu), toolkit versions (survivors of the facts-level
mutation run)."""

from __future__ import annotations

import pytest

from ctk.doctor import cuda as compat
from ctk.doctor.checks.cdi_readers import dra_plugin_spec
from ctk.doctor.checks.cuda import _evidence
from ctk.doctor.checks.dev import _legacy_injection, _mig_enabled
from ctk.doctor.checks.dra import _api, _domain_node
from ctk.doctor.checks.gpu import ORPHAN_MIN_BYTES, _nvml_health, _unaccounted
from ctk.doctor.checks.toolkit import dotted, package_version
from ctk.doctor.facts import (
    COMPUTE_DOMAIN_DRIVER,
    GPU_DRIVER,
    ConfigFile,
    CudaNeed,
    DraApi,
    DraFiles,
    DraPod,
    EngineFacts,
    NodeFacts,
    NvmlAnswer,
    ToolkitFacts,
    Unavailable,
)
from ctk.doctor.model import Evidence, Result, Status
from ctk.node.nvml import ComputeProcess, Gpu, GpuHealth, MigMode, NvmlFacts
from ctk.runtime_config.engines import Runtime

# --- dev._legacy_injection --------------------------------------------------------------------

DOCKER = EngineFacts(engine="docker", installed=True, config_path="/etc/docker/daemon.json")
HOOK = {
    "nvidia-ctk": "/usr/bin/nvidia-ctk",
    "nvidia-container-runtime-hook": "/usr/bin/nvidia-container-runtime-hook",
}
GPUS_FLAG = Evidence("docker --gpus", "injects devices through nvidia-container-runtime-hook")


def toolkit_node(
    mode: str | None, binaries: dict[str, str] = HOOK, docker: bool = True
) -> NodeFacts:
    data = {} if mode is None else {"nvidia-container-runtime": {"mode": mode}}
    config = ConfigFile(path="/etc/nvidia-container-runtime/config.toml", exists=True, data=data)
    return NodeFacts(
        engines={Runtime.DOCKER: DOCKER} if docker else {},
        toolkit=ToolkitFacts(binaries=binaries, config=config),
    )


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param(toolkit_node(None), GPUS_FLAG, id="auto-by-default-docker-gpus"),
        pytest.param(toolkit_node("auto"), GPUS_FLAG, id="auto-docker-gpus"),
        pytest.param(
            toolkit_node("legacy"),
            Evidence("nvidia-container-runtime.mode", "legacy"),
            id="legacy-mode",
        ),
        pytest.param(toolkit_node("cdi"), None, id="cdi-mode-docker-gpus"),
        pytest.param(toolkit_node("csv"), None, id="csv-mode"),
        pytest.param(toolkit_node("auto", docker=False), None, id="no-docker"),
        pytest.param(
            toolkit_node("auto", {"nvidia-ctk": "/usr/bin/nvidia-ctk"}), None, id="no-hook"
        ),
    ],
)
def test_legacy_injection(facts: NodeFacts, expected: Evidence | None) -> None:
    """Docker's `--gpus` goes through nvidia-container-runtime-hook, which injects devices the
    legacy way unless the toolkit's mode is cdi (or csv)."""
    assert _legacy_injection(facts) == expected


# --- dev._mig_enabled, gpu._nvml_health -------------------------------------------------------


def gpu(index: int, mig: MigMode = MigMode.UNSUPPORTED) -> Gpu:
    return Gpu(
        index=index,
        minor=index,
        uuid=f"GPU-{index}",
        name="NVIDIA A100",
        pci_bus_id=f"00000000:0{index}:00.0",
        mig_mode=mig,
    )


def answer(*gpus: Gpu, error_code: int | None = None) -> NvmlAnswer:
    found = NvmlFacts(driver_version="570.86.15", cuda_driver_version=12080, gpus=gpus)
    return NvmlAnswer(error_code=error_code, found=found)


@pytest.mark.parametrize(
    ("nvml", "expected"),
    [
        pytest.param(answer(gpu(0, MigMode.ENABLED)), True, id="enabled"),
        pytest.param(answer(gpu(0, MigMode.DISABLED), gpu(1, MigMode.ENABLED)), True, id="one"),
        pytest.param(answer(gpu(0, MigMode.DISABLED)), False, id="disabled"),
        pytest.param(answer(), False, id="no-gpu"),
        pytest.param(answer(gpu(0, MigMode.ENABLED), error_code=9), None, id="nvml-refused"),
        pytest.param(Unavailable("libnvidia-ml.so.1 not found"), None, id="no-nvml"),
    ],
)
def test_mig_enabled(nvml: NvmlAnswer | Unavailable, expected: bool | None) -> None:
    assert _mig_enabled(NodeFacts(nvml=nvml)) is expected


@pytest.mark.parametrize(
    ("nvml", "expected"),
    [
        pytest.param(answer(gpu(0), gpu(1)), (GpuHealth(0), GpuHealth(1)), id="answered"),
        pytest.param(answer(gpu(0), error_code=9), (), id="nvml-refused"),
        pytest.param(Unavailable("libnvidia-ml.so.1 not found"), (), id="no-nvml"),
    ],
)
def test_nvml_health(nvml: NvmlAnswer | Unavailable, expected: tuple[GpuHealth, ...]) -> None:
    assert _nvml_health(NodeFacts(nvml=nvml)) == expected


# --- gpu._unaccounted -------------------------------------------------------------------------

GIB = 1 << 30


@pytest.mark.parametrize(
    ("health", "expected"),
    [
        pytest.param(
            GpuHealth(0, processes=(), memory_used=5 * GIB, memory_total=80 * GIB),
            5 * GIB,
            id="used-by-no-listed-process",
        ),
        pytest.param(
            GpuHealth(0, processes=(), memory_used=5 * GIB, memory_total=None),
            None,
            id="total-unknown",
        ),
        pytest.param(
            GpuHealth(0, processes=None, memory_used=5 * GIB, memory_total=80 * GIB),
            None,
            id="processes-unknown",
        ),
        pytest.param(
            GpuHealth(0, processes=(), memory_used=None, memory_total=80 * GIB),
            None,
            id="used-unknown",
        ),
        pytest.param(
            GpuHealth(
                0,
                processes=(ComputeProcess(pid=7, used_memory=4 * GIB),),
                memory_used=5 * GIB,
                memory_total=80 * GIB,
            ),
            None,
            id="accounted-for",
        ),
    ],
)
def test_unaccounted(health: GpuHealth, expected: int | None) -> None:
    assert ORPHAN_MIN_BYTES < 5 * GIB
    assert _unaccounted(health) == expected


# --- dra._domain_node, dra._api ---------------------------------------------------------------

DOMAIN_POD = DraPod(namespace="nvidia-dra", name="cd-plugin", drivers=(COMPUTE_DOMAIN_DRIVER,))
NO_DOMAIN_PLUGIN = Result(
    status=Status.SKIP, summary="no compute-domain.nvidia.com kubelet plugin on this node"
)


def test_domain_node_without_a_plugin_skips() -> None:
    assert _domain_node(NodeFacts()) == NO_DOMAIN_PLUGIN
    gpu_only = {"dra_pods": (DraPod(namespace="n", name="p", drivers=(GPU_DRIVER,)),)}
    assert _domain_node(NodeFacts(kubernetes=gpu_only)) == NO_DOMAIN_PLUGIN


def test_domain_node_shows_the_plugin_pod_from_the_api() -> None:
    node = {"dra_pods": (DOMAIN_POD,)}
    assert _domain_node(NodeFacts(kubernetes=node)) == (
        node,
        [
            Evidence(
                "pods on this node",
                "nvidia-dra/cd-plugin (compute-domain.nvidia.com kubelet plugin)",
            )
        ],
    )


def test_domain_node_without_kubernetes_facts_goes_by_the_registration() -> None:
    socket = "/var/lib/kubelet/plugins_registry/compute-domain.nvidia.com-reg.sock"
    facts = NodeFacts(
        kubernetes=Unavailable("no kubeconfig"),
        dra=DraFiles(registered={COMPUTE_DOMAIN_DRIVER: socket}),
    )
    assert _domain_node(facts) == (None, [Evidence(socket, "registration socket")])


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param({"dra": DraApi(versions=("v1",))}, DraApi(versions=("v1",)), id="api"),
        pytest.param({}, None, id="absent"),
        pytest.param({"dra": Unavailable("forbidden")}, None, id="not-an-api-view"),
    ],
)
def test_api(node: dict[str, object], expected: DraApi | None) -> None:
    assert _api(node) == expected


# --- cdi_readers.dra_plugin_spec --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/var/run/cdi/k8s.gpu.nvidia.com-claim_1234.yaml", GPU_DRIVER, id="gpu"),
        pytest.param(
            "/var/run/cdi/k8s.compute-domain.nvidia.com-device.yaml",
            COMPUTE_DOMAIN_DRIVER,
            id="compute-domain",
        ),
        pytest.param("/var/run/cdi/nvidia.yaml", None, id="ctk-spec"),
        pytest.param("/k8s.gpu.nvidia.com-x/nvidia.yaml", None, id="only-the-file-name-counts"),
    ],
)
def test_dra_plugin_spec(path: str, expected: str | None) -> None:
    assert dra_plugin_spec(path) == expected


# --- cuda._evidence ---------------------------------------------------------------------------

HOST = compat.HostCuda(driver=(570, 86, 15), driver_text="570.86.15", cuda=(12, 8))


def test_evidence_names_every_part_of_the_need() -> None:
    need = CudaNeed(
        source="image nvcr.io/nvidia/cuda:12.9.0-base",
        requirements=("cuda>=12.9",),
        cuda_version="12.9.0",
        disable_require=True,
    )
    assert _evidence(need, HOST) == (
        Evidence("/proc/driver/nvidia/version", "570.86.15"),
        Evidence("driver CUDA version", "12.8"),
        Evidence("image nvcr.io/nvidia/cuda:12.9.0-base", "NVIDIA_REQUIRE: cuda>=12.9"),
        Evidence("image nvcr.io/nvidia/cuda:12.9.0-base", "CUDA_VERSION=12.9.0"),
        Evidence("image nvcr.io/nvidia/cuda:12.9.0-base", "NVIDIA_DISABLE_REQUIRE=true"),
    )


def test_evidence_of_a_bare_need() -> None:
    assert _evidence(CudaNeed(source="--cuda-version"), HOST) == (
        Evidence("/proc/driver/nvidia/version", "570.86.15"),
        Evidence("driver CUDA version", "12.8"),
    )


# --- toolkit.dotted, toolkit.package_version --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("1.17.8-1", (1, 17, 8), id="deb"),
        pytest.param("1:1.7.0~rc.1-1", (1, 7, 0), id="epoch-and-rc"),
        pytest.param("unknown", None, id="not-a-version"),
    ],
)
def test_package_version(text: str, expected: tuple[int, ...] | None) -> None:
    assert package_version(text) == expected


def test_dotted() -> None:
    assert dotted((1, 17, 8)) == "1.17.8"
    assert dotted((2,)) == "2"
