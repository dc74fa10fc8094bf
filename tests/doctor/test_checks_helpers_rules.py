"""The checks' helpers pinned on facts built here: legacy device injection and MIG mode (dev),
the compute-domain node and the API view (dra), a DRA plugin's spec file, the CUDA evidence,
NVML health and unaccounted GPU memory (gpu), toolkit versions (survivors of the facts-level
mutation run)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctk.doctor import cuda as compat
from ctk.doctor.checks.cdi import _incomplete, _stale_evidence
from ctk.doctor.checks.cdi_readers import dra_plugin_spec
from ctk.doctor.checks.cuda import _evidence
from ctk.doctor.checks.dev import _legacy_injection, _mig_enabled, _systemd_cgroups
from ctk.doctor.checks.dra import _api, _domain_node, _dra_node, _signs
from ctk.doctor.checks.engine_config import containerd_unused, nvidia_runtime_entry
from ctk.doctor.checks.gpu import ORPHAN_MIN_BYTES, _nvml_health, _unaccounted
from ctk.doctor.checks.toolkit import config_table, dotted, package_version, runtime_mode
from ctk.doctor.facts import (
    COMPUTE_DOMAIN_DRIVER,
    GPU_DRIVER,
    ConfigFile,
    CudaNeed,
    DraApi,
    DraDevice,
    DraFiles,
    DraPod,
    EngineFacts,
    NodeFacts,
    NvmlAnswer,
    ResourceSlice,
    RuntimeEntry,
    SpecFileFacts,
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


# --- cdi._incomplete, cdi._stale_evidence -----------------------------------------------------


def test_incomplete_names_missing_gpus_and_stale_uuids_together() -> None:
    """NVML has GPUs 0 and 1; the spec names GPU 0 by UUID, a replaced GPU's UUID and all."""
    spec = SpecFileFacts(
        path="/etc/cdi/nvidia.yaml", kind="nvidia.com/gpu", devices=("GPU-0", "GPU-gone", "all")
    )
    facts = NodeFacts(nvml=answer(gpu(0), gpu(1)))
    assert _incomplete(facts, (spec,)) == [
        Evidence("GPU", "GPU 1 (GPU-1) has no CDI device"),
        Evidence(
            "/etc/cdi/nvidia.yaml",
            "device GPU-gone names no device of this node (replaced or removed)",
        ),
    ]


def test_stale_evidence_lists_missing_hooks() -> None:
    spec = SpecFileFacts(
        path="/etc/cdi/nvidia.yaml",
        driver_versions=frozenset({"570.86.15"}),
        missing_hook_paths=("/usr/bin/nvidia-cdi-hook", "/usr/bin/nvidia-ctk"),
    )
    assert _stale_evidence(spec, "570.86.15") == [
        Evidence("/etc/cdi/nvidia.yaml", "hook /usr/bin/nvidia-cdi-hook (missing)"),
        Evidence("/etc/cdi/nvidia.yaml", "hook /usr/bin/nvidia-ctk (missing)"),
    ]


# --- dev._systemd_cgroups ---------------------------------------------------------------------


def test_systemd_cgroups_names_docker_and_each_containerd_runtime() -> None:
    docker = EngineFacts(engine="docker", installed=True, cgroup_driver="systemd")
    containerd = EngineFacts(
        engine="containerd",
        installed=True,
        config_path="/etc/containerd/config.toml",
        runtimes={
            "runc": RuntimeEntry(name="runc", systemd_cgroup=True),
            "nvidia": RuntimeEntry(name="nvidia", systemd_cgroup=True),
            "kata": RuntimeEntry(name="kata", systemd_cgroup=False),
        },
    )
    facts = NodeFacts(
        engines={Runtime.DOCKER: docker, Runtime.CONTAINERD: containerd}, kubelet=True
    )
    assert _systemd_cgroups(facts) == [
        Evidence("docker", "cgroup driver systemd"),
        Evidence("/etc/containerd/config.toml", "nvidia: SystemdCgroup = true"),
        Evidence("/etc/containerd/config.toml", "runc: SystemdCgroup = true"),
    ]


# --- dra._dra_node, dra._signs ----------------------------------------------------------------

GPU_POD = DraPod(namespace="nvidia-dra", name="gpu-plugin", drivers=(GPU_DRIVER,))


def test_dra_node_without_kubernetes_facts_or_a_plugin_skips() -> None:
    assert _dra_node(NodeFacts()) == Result(
        status=Status.SKIP, summary="no gpu.nvidia.com kubelet plugin here"
    )


def test_dra_node_without_a_plugin_on_the_node_skips() -> None:
    facts = NodeFacts(kubernetes={"dra": DraApi(slices=()), "dra_pods": ()})
    assert _dra_node(facts) == Result(
        status=Status.SKIP,
        summary="no gpu.nvidia.com kubelet plugin on this node (no registration, pod or slice)",
    )


def test_dra_node_found_by_its_plugin_pod_alone() -> None:
    api = DraApi(slices=())
    node = {"dra": api, "dra_pods": (GPU_POD,)}
    assert _dra_node(NodeFacts(kubernetes=node)) == (node, api)


def test_signs_leave_out_a_plugin_directory_where_the_pods_are_known() -> None:
    """An uninstalled driver leaves its directory: with the pod list known, none is no sign."""
    files = DraFiles(plugin_dirs={GPU_DRIVER: "/var/lib/kubelet/plugins/gpu.nvidia.com"})
    facts = NodeFacts(dra=files)
    assert _signs(facts, {"dra_pods": ()}, GPU_DRIVER) == []
    assert _signs(facts, {}, GPU_DRIVER) == [
        Evidence("/var/lib/kubelet/plugins/gpu.nvidia.com", "plugin directory")
    ]


# --- engine_config.containerd_unused, nvidia_runtime_entry ------------------------------------

CONTAINERD = EngineFacts(
    engine="containerd", installed=True, config_path="/etc/containerd/config.toml"
)


@pytest.mark.parametrize(
    ("engines", "kubelet", "summary"),
    [
        pytest.param({}, True, "containerd is not installed", id="not-installed"),
        pytest.param(
            {
                Runtime.CONTAINERD: EngineFacts(
                    engine="containerd", installed=True, cri_disabled=True
                )
            },
            True,
            "containerd's CRI plugin is disabled: it only serves Docker",
            id="cri-disabled",
        ),
        pytest.param(
            {Runtime.CONTAINERD: CONTAINERD, Runtime.DOCKER: DOCKER},
            False,
            "containerd serves Docker here (no kubelet): see the docker checks",
            id="under-docker",
        ),
        pytest.param(
            {Runtime.CONTAINERD: CONTAINERD, Runtime.DOCKER: DOCKER}, True, None, id="kubelet"
        ),
    ],
)
def test_containerd_unused(
    engines: dict[Runtime, EngineFacts], kubelet: bool, summary: str | None
) -> None:
    result = containerd_unused(NodeFacts(engines=engines, kubelet=kubelet))
    expected = None if summary is None else Result(status=Status.SKIP, summary=summary)
    assert result == expected


DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"


@pytest.mark.parametrize(
    ("runtimes", "found", "evidence"),
    [
        pytest.param(
            {"runc": RuntimeEntry(name="runc"), "crun": RuntimeEntry(name="crun")},
            False,
            Evidence("/etc/containerd/config.toml", "runtimes: crun, runc (no nvidia)"),
            id="no-nvidia",
        ),
        pytest.param(
            {"nvidia": RuntimeEntry(name="nvidia", binary="/usr/bin/ncr", binary_exists=False)},
            False,
            Evidence(
                "/etc/containerd/config.toml", "nvidia runtime binary /usr/bin/ncr is missing"
            ),
            id="binary-missing",
        ),
        pytest.param(
            {"nvidia": RuntimeEntry(name="nvidia", binary="/usr/bin/ncr", source=DROP_IN)},
            True,
            Evidence(DROP_IN, "nvidia -> /usr/bin/ncr"),
            id="from-a-drop-in",
        ),
        pytest.param(
            {"nvidia": RuntimeEntry(name="nvidia")},
            True,
            Evidence("/etc/containerd/config.toml", "nvidia -> default binary"),
            id="default-binary",
        ),
    ],
)
def test_nvidia_runtime_entry(
    runtimes: dict[str, RuntimeEntry], found: bool, evidence: Evidence
) -> None:
    engine = replace(CONTAINERD, runtimes=runtimes)
    entry, shown = nvidia_runtime_entry(engine)
    assert entry is (runtimes["nvidia"] if found else None)
    assert shown == [evidence]


# --- gpu._unaccounted with a process of no memory, toolkit.config_table, runtime_mode ---------


def test_unaccounted_counts_a_process_of_no_memory_as_none() -> None:
    health = GpuHealth(
        0,
        processes=(ComputeProcess(pid=7, used_memory=0),),
        memory_used=5 * GIB,
        memory_total=80 * GIB,
    )
    assert _unaccounted(health) == 5 * GIB


def test_config_table_and_runtime_mode_ignore_values_of_the_wrong_type() -> None:
    data = {"nvidia-container-runtime": {"mode": 3}, "nvidia-container-cli": "oops"}
    config = ConfigFile(path="/etc/nvidia-container-runtime/config.toml", exists=True, data=data)
    facts = NodeFacts(toolkit=ToolkitFacts(binaries=HOOK, config=config))
    assert config_table(facts, "nvidia-container-cli") == {}
    assert config_table(facts, "nvidia-container-runtime") == {"mode": 3}
    assert config_table(facts, "absent") == {}
    assert runtime_mode(facts) is None


def test_signs_name_the_drivers_resource_slices() -> None:
    """Only ``driver``'s slices count, each with its pool, generation and device count."""
    devices = (DraDevice(name="gpu-0", type="gpu"), DraDevice(name="gpu-1", type="gpu"))
    slices = (
        ResourceSlice(
            name="node-a-gpu",
            driver=GPU_DRIVER,
            pool="node-a",
            generation=3,
            slice_count=1,
            devices=devices,
        ),
        ResourceSlice(
            name="node-a-cd",
            driver=COMPUTE_DOMAIN_DRIVER,
            pool="node-a",
            generation=1,
            slice_count=1,
        ),
    )
    node = {"dra": DraApi(slices=slices), "dra_pods": ()}
    assert _signs(NodeFacts(), node, GPU_DRIVER) == [
        Evidence("ResourceSlices", "node-a-gpu (pool node-a, generation 3, 2 devices)")
    ]
