"""The `dra` checks' rules on facts built here (what no fixture node carries: a 403, an API of
1.31, CEL selectors the chart does not write) and the facts adapter's parsing of the driver's
files and objects."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ctk.doctor.checks.dra import selects
from ctk.doctor.facts import (
    DraApi,
    DraDevice,
    DraFiles,
    DraPod,
    NodeFacts,
    NvmlAnswer,
    ResourceSlice,
    Unavailable,
)
from ctk.doctor.model import REGISTRY, Evidence, Status
from ctk.host.facts.gatherer import Gatherer
from ctk.host.facts.kubernetes import _claims, _dra_pods, _slices, gather_dra_files
from ctk.host.root import HostRoot
from ctk.node.nvml import Gpu, MigDevice, MigMode, NvmlFacts

GPU = DraDevice(name="gpu-0", type="gpu", uuid="GPU-0")
MIG = DraDevice(name="gpu-0-mig-1g10gb-19-0", type="mig", uuid="MIG-1", parent_uuid="GPU-0")
CHART_GPU = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"


@pytest.mark.parametrize(
    ("expression", "device", "expected"),
    [
        pytest.param(CHART_GPU, GPU, True, id="chart-gpu-class-selects-a-gpu"),
        pytest.param(CHART_GPU, MIG, False, id="chart-gpu-class-not-a-mig-device"),
        pytest.param("device.driver == 'other.example.com'", GPU, False, id="other-driver"),
        pytest.param(
            "device.attributes['other.example.com'].type == 'gpu'", GPU, False, id="other-domain"
        ),
        pytest.param(
            f"({CHART_GPU}) || device.attributes['gpu.nvidia.com'].type == 'mig'",
            MIG,
            True,
            id="or-may-hold",
        ),
        pytest.param(
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].id == 0",
            GPU,
            True,
            id="a-term-not-read-may-hold",
        ),
        pytest.param(
            'device.driver == "gpu.nvidia.com" && '
            "device.attributes[\"gpu.nvidia.com\"].productName == 'NVIDIA H100 80GB HBM3'",
            GPU,
            True,
            id="an-attribute-not-read-may-hold",
        ),
        pytest.param(
            "device.attributes['gpu.nvidia.com'].uuid == 'GPU-1'", GPU, False, id="uuid-differs"
        ),
        pytest.param(
            "device.driver == 'other.example.com' && device.attributes['x'].y == 'z' || "
            "device.driver == 'gpu.nvidia.com'",
            GPU,
            True,
            id="or-binds-looser-than-and",
        ),
        pytest.param(
            "device.driver == 'other.example.com' && !(device.attributes['gpu.nvidia.com'].type "
            "== 'mig')",
            GPU,
            True,
            id="an-expression-with-not-is-not-judged",
        ),
        pytest.param(
            "device.attributes['gpu.nvidia.com'].parentUUID == 'GPU-9'",
            MIG,
            False,
            id="parent-uuid-differs",
        ),
        pytest.param(
            "device.attributes['gpu.nvidia.com'].parentUUID == 'GPU-0'",
            MIG,
            True,
            id="parent-uuid-matches",
        ),
        pytest.param(
            "(device.driver == 'gpu.nvidia.com') && (device.attributes['gpu.nvidia.com'].type "
            "== 'mig')",
            GPU,
            False,
            id="terms-in-parentheses",
        ),
    ],
)
def test_a_selector_says_no_only_when_it_surely_does_not_select(
    expression: str, device: DraDevice, expected: bool
) -> None:
    assert selects(expression, "gpu.nvidia.com", device) is expected


def _bind(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(f"/proc/self/fd/{directory}/{path.name}")
    finally:
        os.close(directory)


def test_the_registration_socket_is_found_by_the_kubelets_names(tmp_path: Path) -> None:
    """`<driver>-<uid>-reg.sock` (rolling updates) counts; a plain file of the name, or another
    driver's socket, does not; the plugin directory is a sign of its own."""
    registry = tmp_path / "var/lib/kubelet/plugins_registry"
    _bind(registry / "gpu.nvidia.com-0b6f1c3e-7d2a-4e59-8f10-2c4d6e8fa001-reg.sock")
    _bind(registry / "gpu.nvidia.com.old-reg.sock")
    (registry / "compute-domain.nvidia.com-reg.sock").write_text("")
    (tmp_path / "var/lib/kubelet/plugins/compute-domain.nvidia.com").mkdir(parents=True)
    found = gather_dra_files(Gatherer(HostRoot(tmp_path)))
    assert found == DraFiles(
        registered={
            "gpu.nvidia.com": "/var/lib/kubelet/plugins_registry/"
            "gpu.nvidia.com-0b6f1c3e-7d2a-4e59-8f10-2c4d6e8fa001-reg.sock"
        },
        plugin_dirs={
            "compute-domain.nvidia.com": "/var/lib/kubelet/plugins/compute-domain.nvidia.com"
        },
    )


def test_a_node_without_the_plugin_has_no_dra_files(tmp_path: Path) -> None:
    (tmp_path / "var/lib/kubelet/plugins_registry").mkdir(parents=True)
    assert gather_dra_files(Gatherer(HostRoot(tmp_path))) == DraFiles()


def test_v1beta1_devices_and_qualified_attribute_names_read_alike() -> None:
    """1.32 keeps a device's attributes under `basic`; a name qualified with the driver's own
    domain is the same attribute."""
    listed = {
        "items": [
            {
                "metadata": {"name": "s"},
                "spec": {
                    "driver": "gpu.nvidia.com",
                    "pool": {"name": "n", "generation": 4, "resourceSliceCount": 1},
                    "devices": [
                        {
                            "name": "gpu-0",
                            "basic": {
                                "attributes": {
                                    "type": {"string": "gpu"},
                                    "gpu.nvidia.com/uuid": {"string": "GPU-0"},
                                    "driverVersion": {"version": "550.54.15"},
                                }
                            },
                        }
                    ],
                },
            }
        ]
    }
    assert _slices(listed) == (
        ResourceSlice(
            name="s",
            driver="gpu.nvidia.com",
            pool="n",
            generation=4,
            slice_count=1,
            devices=(
                DraDevice(name="gpu-0", type="gpu", uuid="GPU-0", driver_version="550.54.15"),
            ),
        ),
    )


def test_only_the_claims_of_this_node_are_kept() -> None:
    """A claim a pod here uses, or one allocated from this node's pool; not another node's."""
    pods = _dra_pods(
        {
            "items": [
                {
                    "metadata": {"name": "job", "namespace": "ml", "uid": "u1"},
                    "status": {
                        "phase": "Pending",
                        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c1"}],
                    },
                },
                {"metadata": {"name": "web", "namespace": "ml"}, "spec": {"containers": []}},
            ]
        }
    )
    assert pods == (DraPod(namespace="ml", name="job", uid="u1", phase="Pending", claims=("c1",)),)

    def claim(name: str, pool: str | None) -> dict[str, object]:
        status = (
            {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "r",
                                "driver": "gpu.nvidia.com",
                                "pool": pool,
                                "device": "d",
                            }
                        ]
                    }
                }
            }
            if pool
            else {}
        )
        return {"metadata": {"name": name, "namespace": "ml"}, "spec": {}, "status": status}

    listed = {"items": [claim("c1", None), claim("c2", "node-1"), claim("c3", "node-2")]}
    assert [c.name for c in _claims(listed, "node-1", pods)] == ["c1", "c2"]


DRA_NODE = NodeFacts(
    dra=DraFiles(registered={"gpu.nvidia.com": "/var/lib/kubelet/plugins_registry/x-reg.sock"}),
    kubernetes={
        "node": "n",
        "allocatable": {},
        "dra": DraApi(versions=("v1",)),
        "dra_pods": (),
    },
)


@pytest.mark.parametrize(
    ("check_id", "kubernetes", "status", "summary"),
    [
        pytest.param(
            "dra.slices-missing",
            {"dra": DraApi(versions=("v1",), slices=None)},
            Status.UNKNOWN,
            "the API server refused to list this node's ResourceSlices",
            id="slices-403",
        ),
        pytest.param(
            "dra.device-class-missing",
            {
                "dra": DraApi(
                    versions=("v1",),
                    slices=(
                        ResourceSlice(
                            name="s",
                            driver="gpu.nvidia.com",
                            pool="n",
                            generation=1,
                            slice_count=1,
                            devices=(GPU,),
                        ),
                    ),
                    classes=None,
                )
            },
            Status.UNKNOWN,
            "the API server refused to list DeviceClasses",
            id="classes-403",
        ),
        pytest.param(
            "dra.plugin-not-running",
            {"dra_pods": None},
            Status.UNKNOWN,
            "the pods on this node could not be listed",
            id="pods-403",
        ),
        pytest.param(
            "dra.api-not-served",
            {"dra": DraApi(versions=("v1alpha3",))},
            Status.FAIL,
            "the API server does not serve resource.k8s.io v1, v1beta2 or v1beta1: the NVIDIA "
            "DRA driver can publish no devices and pods' ResourceClaims are never allocated",
            id="1.31-alpha-only",
        ),
        pytest.param(
            "dra.api-not-served",
            {"dra": DraApi(versions=("v1beta2", "v1beta1"))},
            Status.OK,
            "resource.k8s.io/v1beta2 is served (1.33)",
            id="1.33-beta2",
        ),
    ],
)
def test_what_the_api_withholds_is_unknown_not_a_failure(
    check_id: str, kubernetes: dict[str, object], status: Status, summary: str
) -> None:
    base = DRA_NODE.kubernetes
    assert isinstance(base, dict)
    facts = NodeFacts(dra=DRA_NODE.dra, kubernetes={**base, **kubernetes})
    result = REGISTRY[check_id].run(facts)
    assert (result.status, result.summary) == (status, summary)


def test_an_unreachable_api_leaves_the_file_checks_running() -> None:
    """The plugin's files still speak; what needs the API is unknown."""
    facts = NodeFacts(dra=DRA_NODE.dra, kubernetes=Unavailable("API at x not reachable"))
    assert REGISTRY["dra.plugin-not-registered"].run(facts).status is Status.OK
    assert REGISTRY["dra.slices-missing"].run(facts).status is Status.UNKNOWN


def test_the_v1alpha3_evidence_names_what_is_served() -> None:
    base = DRA_NODE.kubernetes
    assert isinstance(base, dict)
    facts = NodeFacts(dra=DRA_NODE.dra, kubernetes={**base, "dra": DraApi(versions=("v1alpha3",))})
    result = REGISTRY["dra.api-not-served"].run(facts)
    assert result.evidence == (Evidence("/apis/resource.k8s.io", "resource.k8s.io/v1alpha3"),)


def _slice(*devices: DraDevice) -> ResourceSlice:
    return ResourceSlice(
        name="s", driver="gpu.nvidia.com", pool="n", generation=1, slice_count=1, devices=devices
    )


@pytest.mark.parametrize(
    ("devices", "status"),
    [
        pytest.param((GPU,), Status.OK, id="dynamic-mig-publishes-the-full-gpu"),
        pytest.param((MIG,), Status.OK, id="static-mig-publishes-its-mig-devices"),
        pytest.param((), Status.SKIP, id="nothing-published"),
        pytest.param(
            (DraDevice(name="gpu-0-mig-1g10gb-19-1", type="mig", uuid="MIG-2"),),
            Status.FAIL,
            id="a-mig-device-of-no-gpu",
        ),
    ],
)
def test_a_gpu_in_mig_mode_counts_as_its_mig_devices_or_itself(
    devices: tuple[DraDevice, ...], status: Status
) -> None:
    """With DynamicMIG the plugin publishes a MIG-mode GPU itself (its partitions are made at
    claim time); statically it publishes the GPU's MIG devices: either matches NVML."""
    mig = MigDevice(
        parent_index=0, index=0, gpu_instance=1, compute_instance=0, uuid="MIG-1", profile="1g.10gb"
    )
    gpu = Gpu(
        index=0,
        minor=0,
        uuid="GPU-0",
        name="H100",
        pci_bus_id="",
        mig_mode=MigMode.ENABLED,
        migs=(mig,),
    )
    found = NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=(gpu,))
    base = DRA_NODE.kubernetes
    assert isinstance(base, dict)
    facts = NodeFacts(
        dra=DRA_NODE.dra,
        nvml=NvmlAnswer(found=found),
        kubernetes={**base, "dra": DraApi(versions=("v1",), slices=(_slice(*devices),))},
    )
    assert REGISTRY["dra.slices-mismatch"].run(facts).status is status


@pytest.mark.parametrize(
    ("published", "status"),
    [
        pytest.param("535.104.5", Status.OK, id="semver-of-the-loaded-driver"),
        pytest.param("550.54.15", Status.FAIL, id="another-driver"),
    ],
)
def test_the_slices_driver_version_compares_as_numbers(published: str, status: Status) -> None:
    """The plugin publishes `driverVersion` as semver: NVML's 535.104.05 is 535.104.5 there."""
    found = NvmlFacts(driver_version="535.104.05", cuda_driver_version=12020, gpus=())
    device = DraDevice(name="gpu-0", type="gpu", uuid="GPU-0", driver_version=published)
    base = DRA_NODE.kubernetes
    assert isinstance(base, dict)
    facts = NodeFacts(
        dra=DRA_NODE.dra,
        nvml=NvmlAnswer(found=found),
        kubernetes={**base, "dra": DraApi(versions=("v1",), slices=(_slice(device),))},
    )
    assert REGISTRY["dra.slices-stale"].run(facts).status is status
