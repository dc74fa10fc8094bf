"""More of the checks' helpers pinned on facts built here: the driver libraries' versions
(driver), the loader lookup (lib), NVML health (gpu), the Kubernetes facts (mig), an engine
that is not installed (engine_config) and the compute-domain node label as a DRA sign (dra)."""

from __future__ import annotations

from ctk.doctor.checks.dra import DOMAIN_LABEL, _signs
from ctk.doctor.checks.driver import _library_versions
from ctk.doctor.checks.engine_config import engine_not_installed
from ctk.doctor.checks.gpu import _health_gpus
from ctk.doctor.checks.lib import _lookup
from ctk.doctor.checks.mig import kube
from ctk.doctor.facts import (
    COMPUTE_DOMAIN_DRIVER,
    GPU_DRIVER,
    EngineFacts,
    KernelFacts,
    LibFacts,
    Library,
    NodeFacts,
    NvmlAnswer,
    Unavailable,
)
from ctk.doctor.model import Evidence, Result, Status, skip, unknown
from ctk.node.nvml import Gpu, GpuHealth, NvmlFacts

# --- driver._library_versions -----------------------------------------------------------------

NVML_SO = "libnvidia-ml.so.1"
CUDA_SO = "libcuda.so.1"


def lib(soname: str, target: str, exists: bool = True) -> Library:
    return Library(
        soname=soname, path=f"/usr/lib/x86_64-linux-gnu/{soname}", target=target, exists=exists
    )


def libs_node(*libraries: Library, **node: object) -> NodeFacts:
    table: dict[str, tuple[Library, ...]] = {}
    for library in libraries:
        table[library.soname] = (*table.get(library.soname, ()), library)
    return NodeFacts(libs=LibFacts(source="/etc/ld.so.cache", libraries=table), **node)  # type: ignore[arg-type]


def test_library_versions_reads_each_drivers_library_version_from_its_target() -> None:
    facts = libs_node(
        lib(NVML_SO, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15"),
        lib(CUDA_SO, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54"),
    )
    assert _library_versions(facts) == {
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": "550.54.15",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54": "550.54",
    }


def test_library_versions_without_libcuda_reads_libnvidia_ml_alone() -> None:
    facts = libs_node(lib(NVML_SO, "/usr/lib/libnvidia-ml.so.535.183.01"))
    assert _library_versions(facts) == {"/usr/lib/libnvidia-ml.so.535.183.01": "535.183.01"}
    facts = libs_node(lib(CUDA_SO, "/usr/lib/libcuda.so.535.183.01"))
    assert _library_versions(facts) == {"/usr/lib/libcuda.so.535.183.01": "535.183.01"}


def test_library_versions_reads_only_the_first_library_of_a_soname() -> None:
    facts = libs_node(
        lib(NVML_SO, "/usr/lib/libnvidia-ml.so.550.54.15"),
        lib(NVML_SO, "/usr/lib32/libnvidia-ml.so.535.183.01"),
    )
    assert _library_versions(facts) == {"/usr/lib/libnvidia-ml.so.550.54.15": "550.54.15"}


def test_library_versions_skips_a_target_without_a_version() -> None:
    facts = libs_node(
        lib(NVML_SO, "/usr/lib/libnvidia-ml.so.1"),
        lib(CUDA_SO, "/usr/lib/libcuda.so"),
    )
    assert _library_versions(facts) == {}


def test_library_versions_without_loader_facts_is_empty() -> None:
    assert _library_versions(NodeFacts(libs=Unavailable("no ld.so.cache"))) == {}
    assert _library_versions(libs_node()) == {}


# --- lib._lookup ------------------------------------------------------------------------------


def test_lookup_of_a_soname_that_resolves_is_none() -> None:
    facts = libs_node(lib(CUDA_SO, "/usr/lib/libcuda.so.550.54.15"))
    assert _lookup(facts, CUDA_SO) is None


def test_lookup_without_loader_facts_is_unknown_with_the_reason() -> None:
    facts = NodeFacts(libs=Unavailable("ld.so.cache unreadable"))
    assert _lookup(facts, CUDA_SO) == unknown(
        "cannot read the loader configuration: ld.so.cache unreadable"
    )


def test_lookup_of_a_missing_soname_names_the_loader_source() -> None:
    facts = libs_node(lib(NVML_SO, "/usr/lib/libnvidia-ml.so.550.54.15"))
    result = _lookup(facts, CUDA_SO)
    assert isinstance(result, Result)
    assert result.status is Status.FAIL
    assert result.evidence == (Evidence("/etc/ld.so.cache", f"no {CUDA_SO}"),)
    assert result.commands == ("sudo ldconfig",)
    assert result.notes == ("install the driver's user-space libraries",)


def test_lookup_of_a_dangling_soname_names_its_missing_target() -> None:
    dangling = lib(CUDA_SO, "/usr/lib/libcuda.so.550.54.15", exists=False)
    facts = libs_node(dangling, kernel=KernelFacts(driver_version="550.54.15"))
    result = _lookup(facts, CUDA_SO)
    assert isinstance(result, Result)
    assert result.evidence == (
        Evidence("/etc/ld.so.cache", f"no {CUDA_SO}"),
        Evidence(dangling.path, "-> /usr/lib/libcuda.so.550.54.15 (missing)"),
    )
    assert result.commands == ("sudo apt-get install libnvidia-compute-550", "sudo ldconfig")
    assert result.notes == ()


# --- gpu._health_gpus -------------------------------------------------------------------------


def test_health_gpus_without_nvml_facts_is_unknown_with_the_reason() -> None:
    facts = NodeFacts(nvml=Unavailable("NVML not loaded", needs_root=True))
    assert _health_gpus(facts) == unknown(
        "NVML facts unavailable: NVML not loaded", needs_root=True
    )
    facts = NodeFacts(nvml=Unavailable("NVML not loaded"))
    assert _health_gpus(facts) == unknown("NVML facts unavailable: NVML not loaded")


def test_health_gpus_where_nvml_refused_skips_to_the_checks_that_name_the_cause() -> None:
    facts = NodeFacts(nvml=NvmlAnswer(error_code=9, error="Driver Not Loaded"))
    assert _health_gpus(facts) == skip(
        "NVML did not initialise (Driver Not Loaded): see the checks that name the cause"
    )


def test_health_gpus_gives_each_gpus_health_in_gpu_order() -> None:
    gpus = tuple(
        Gpu(index=i, minor=i, uuid=f"GPU-{i}", name="NVIDIA H100", pci_bus_id=f"0000:0{i}:00.0")
        for i in (0, 1)
    )
    health = (GpuHealth(1, brand="Hopper"),)
    facts = NodeFacts(
        nvml=NvmlAnswer(
            found=NvmlFacts(driver_version="570.86.15", cuda_driver_version=12080, gpus=gpus),
            health=health,
        )
    )
    assert _health_gpus(facts) == (GpuHealth(0), GpuHealth(1, brand="Hopper"))


# --- mig.kube ---------------------------------------------------------------------------------


def test_kube_without_kubernetes_facts_skips() -> None:
    assert kube(NodeFacts()) == skip(
        "no Kubernetes node facts (not a Kubernetes node or no kubeconfig)"
    )


def test_kube_with_unavailable_facts_is_unknown_passing_needs_root_on() -> None:
    facts = NodeFacts(kubernetes=Unavailable("kubeconfig unreadable", needs_root=True))
    assert kube(facts) == unknown(
        "Kubernetes facts unavailable: kubeconfig unreadable", needs_root=True
    )
    facts = NodeFacts(kubernetes=Unavailable("no access"))
    assert kube(facts) == unknown("Kubernetes facts unavailable: no access")


def test_kube_gives_the_facts() -> None:
    node = {"name": "node-1"}
    assert kube(NodeFacts(kubernetes=node)) is node


# --- engine_config.engine_not_installed -------------------------------------------------------


def test_engine_not_installed_skips_naming_the_engine() -> None:
    assert engine_not_installed(EngineFacts(engine="crio")) == skip("crio is not installed")


def test_engine_not_installed_skips_a_config_that_does_not_parse() -> None:
    engine = EngineFacts(
        engine="docker", installed=True, config_path="/etc/docker/daemon.json", error="bad json"
    )
    assert engine_not_installed(engine) == skip(
        "/etc/docker/daemon.json does not parse (see its config check)"
    )


# --- dra._signs: the compute-domain label -----------------------------------------------------


def test_signs_name_the_compute_domain_label_of_the_node() -> None:
    node = {"labels": {DOMAIN_LABEL: "domain-7", "kubernetes.io/os": "linux"}}
    assert _signs(NodeFacts(), node, COMPUTE_DOMAIN_DRIVER) == [
        Evidence("node labels", f"{DOMAIN_LABEL}=domain-7")
    ]


def test_signs_leave_the_compute_domain_label_to_the_compute_domain_driver() -> None:
    node = {"labels": {DOMAIN_LABEL: "domain-7"}}
    assert _signs(NodeFacts(), node, GPU_DRIVER) == []


def test_signs_need_a_compute_domain_label_with_a_value() -> None:
    for labels in ({DOMAIN_LABEL: ""}, {"kubernetes.io/os": "linux"}, None, ["x"]):
        assert _signs(NodeFacts(), {"labels": labels}, COMPUTE_DOMAIN_DRIVER) == []
