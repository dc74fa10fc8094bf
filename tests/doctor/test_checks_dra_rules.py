"""The dra checks on facts built here: a node whose DRA view the API left out, slices listed
together, and the log commands for a kubelet plugin pod that serves both NVIDIA drivers
(survivors of issue 26's mutation run)."""

from __future__ import annotations

import pytest

import ctk.doctor.checks  # noqa: F401  (fills the registry)
from ctk.doctor.facts import DraApi, DraDevice, DraFiles, DraPod, NodeFacts, ResourceSlice
from ctk.doctor.model import REGISTRY, Evidence, Result, Status

REGISTERED = DraFiles(
    registered={"gpu.nvidia.com": "/var/lib/kubelet/plugins_registry/gpu.nvidia.com-reg.sock"}
)


@pytest.mark.parametrize(
    "check_id", ["dra.api-not-served", "dra.slices-missing", "dra.device-class-missing"]
)
def test_a_node_without_the_apis_dra_view_is_unknown(check_id: str) -> None:
    """The gatherer leaves `dra` out when the API's DRA part fails: the plugin's socket still
    shows the driver, and what needs the API is unknown."""
    facts = NodeFacts(dra=REGISTERED, kubernetes={"node": "n", "dra_pods": ()})
    assert REGISTRY[check_id].run(facts) == Result(
        status=Status.UNKNOWN,
        summary="the API server did not return this node (no node name, or no access)",
    )


def _slice(name: str, uuid: str) -> ResourceSlice:
    return ResourceSlice(
        name=name,
        driver="gpu.nvidia.com",
        pool="n",
        generation=3,
        slice_count=2,
        devices=(DraDevice(name=f"gpu-{uuid[-1]}", type="gpu", uuid=uuid),),
    )


def test_slices_are_listed_each_with_its_pool_and_generation() -> None:
    api = DraApi(versions=("v1",), slices=(_slice("n-a", "GPU-0"), _slice("n-b", "GPU-1")))
    facts = NodeFacts(dra=REGISTERED, kubernetes={"node": "n", "dra": api, "dra_pods": ()})
    assert REGISTRY["dra.slices-missing"].run(facts) == Result(
        status=Status.OK,
        summary="2 GPU device(s) in n-a (pool n, generation 3, 1 devices), "
        "n-b (pool n, generation 3, 1 devices)",
    )


def test_an_unregistered_plugin_pod_gets_a_log_command_per_driver_container() -> None:
    """The driver's kubelet plugin pod runs a container per driver (gpus, compute-domains)."""
    pod = DraPod(
        namespace="nvidia-dra-driver-gpu",
        name="kubelet-plugin-x7k2p",
        phase="Running",
        ready=True,
        drivers=("gpu.nvidia.com", "compute-domain.nvidia.com"),
    )
    api = DraApi(versions=("v1",), slices=())
    facts = NodeFacts(kubernetes={"node": "n", "dra": api, "dra_pods": (pod,)})
    result = REGISTRY["dra.plugin-not-registered"].run(facts)
    assert (result.status, result.evidence, result.commands) == (
        Status.FAIL,
        (
            Evidence("/var/lib/kubelet/plugins_registry", "no gpu.nvidia.com-reg.sock"),
            Evidence("/var/lib/kubelet/plugins_registry", "no compute-domain.nvidia.com-reg.sock"),
            Evidence(
                "pods on this node",
                "nvidia-dra-driver-gpu/kubelet-plugin-x7k2p (gpu.nvidia.com kubelet plugin)",
            ),
            Evidence(
                "pods on this node",
                "nvidia-dra-driver-gpu/kubelet-plugin-x7k2p (compute-domain.nvidia.com kubelet "
                "plugin)",
            ),
        ),
        (
            "kubectl -n nvidia-dra-driver-gpu logs kubelet-plugin-x7k2p -c gpus",
            "kubectl -n nvidia-dra-driver-gpu logs kubelet-plugin-x7k2p -c compute-domains",
        ),
    )
