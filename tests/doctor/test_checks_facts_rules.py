"""Check rules pinned on facts built here, without the whole-doctor fixture nodes: what an engine
that reads CDI but names no nvidia runtime is told (`cdi_only`), how a wrong device node is
described, a node that offers its GPUs through DRA, the toolkit-config fix, DeviceClass
selectors, a missing runtime binary (survivors of the facts-level mutation run)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctk.doctor.checks.cdi import cdi_readers_only
from ctk.doctor.checks.dev import _describe, nodes_missing
from ctk.doctor.checks.dra import _current, _plugin_restarts, class_selects
from ctk.doctor.checks.engine_cdi import cdi_only
from ctk.doctor.checks.engine_config import configure_fix, runtime_binary_missing
from ctk.doctor.checks.gpu import _reset
from ctk.doctor.checks.k8s import dra_gpus
from ctk.doctor.checks.mig import spec_device_names
from ctk.doctor.checks.toolkit import set_config
from ctk.doctor.facts import (
    GPU_DRIVER,
    TOOLKIT_CONFIG,
    CdiFacts,
    ConfigFile,
    DevFacts,
    DeviceClass,
    DraApi,
    DraDevice,
    DraFiles,
    DraPod,
    EngineFacts,
    KernelFacts,
    NodeFacts,
    ProcGpu,
    ResourceSlice,
    RuntimeEntry,
    SpecFileFacts,
    ToolkitFacts,
)
from ctk.doctor.fixes import ConfigureRuntime, CreateDeviceNodes, SetToolkitConfig
from ctk.doctor.model import Evidence, Result, Severity, Status
from ctk.node.nvml import GpuHealth
from ctk.runtime_config.engines import Runtime
from tests.doctor.test_checks import node

# --- engine_cdi.cdi_only ----------------------------------------------------------------------

SPEC = SpecFileFacts(
    path="/var/run/cdi/nvidia.yaml",
    kind="nvidia.com/gpu",
    devices=("0", "all"),
    hook_paths=("/usr/local/libexec/ctk/ctk-hook",),
)
CRIO = EngineFacts(engine="crio", installed=True, config_path="/etc/crio/crio.conf")
CONTAINERD_2 = EngineFacts(
    engine="containerd", installed=True, config_path="/etc/containerd/config.toml", version="2.1.0"
)
DOCKER_28_2 = EngineFacts(
    engine="docker", installed=True, config_path="/etc/docker/daemon.json", version="28.2.0"
)
WITH_TOOLKIT = ToolkitFacts(
    binaries={"nvidia-container-runtime": "/usr/bin/nvidia-container-runtime"}
)


def cdi_node(engine: EngineFacts, toolkit: ToolkitFacts = WITH_TOOLKIT) -> NodeFacts:
    """A node running ``engine`` (no nvidia runtime) with SPEC in /var/run/cdi."""
    return NodeFacts(
        engines={Runtime(engine.engine): engine},
        toolkit=toolkit,
        kubelet=True,
        cdi=CdiFacts(dirs=("/etc/cdi", "/var/run/cdi"), specs=(SPEC,)),
    )


def test_cdi_only_by_default_is_an_info_warning_with_the_configure_fix() -> None:
    """CRI-O reads specs by itself and the toolkit is there: nothing shows CDI was chosen, so
    the whole info finding (restart, `runtime configure`, the note that nothing may be needed)."""
    result = cdi_only(cdi_node(CRIO), Runtime.CRIO)
    assert result == Result(
        status=Status.WARN,
        summary="CRI-O has no nvidia runtime: only CDI requests (a device plugin or DRA driver "
        "handing out CDI devices) get GPUs from /var/run/cdi/nvidia.yaml; "
        "NVIDIA_VISIBLE_DEVICES and runtimeClassName nvidia get no GPU",
        evidence=(
            Evidence("/etc/crio/crio.conf", "runtimes: none (no nvidia)"),
            Evidence("/etc/crio/crio.conf", "crio always reads CDI specs"),
            Evidence("/var/run/cdi/nvidia.yaml", "nvidia.com/gpu spec crio reads"),
        ),
        commands=("sudo systemctl restart crio",),
        fixes=(ConfigureRuntime(runtime=Runtime.CRIO),),
        severity=Severity.INFO,
        notes=("nothing to do where every GPU request on this node is a CDI request",),
    )


@pytest.mark.parametrize(
    ("engine", "summary", "restart"),
    [
        pytest.param(
            DOCKER_28_2,
            "Docker has no nvidia runtime: only CDI requests (docker run --device "
            "nvidia.com/gpu=...) get GPUs from /var/run/cdi/nvidia.yaml; `docker run "
            "--runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
            "sudo systemctl restart docker",
            id="docker-28.2",
        ),
        pytest.param(
            CONTAINERD_2,
            "containerd has no nvidia runtime: only CDI requests (a device plugin or DRA "
            "driver handing out CDI devices) get GPUs from /var/run/cdi/nvidia.yaml; "
            "NVIDIA_VISIBLE_DEVICES and runtimeClassName nvidia get no GPU",
            "sudo systemctl restart containerd",
            id="containerd-2",
        ),
    ],
)
def test_cdi_only_names_each_engine_and_its_restart(
    engine: EngineFacts, summary: str, restart: str
) -> None:
    runtime = Runtime(engine.engine)
    result = cdi_only(cdi_node(engine), runtime)
    assert result is not None
    assert (result.status, result.summary, result.commands, result.fixes) == (
        Status.WARN,
        summary,
        (restart,),
        (ConfigureRuntime(runtime=runtime),),
    )
    assert result.evidence[0] == Evidence(engine.config_path, "runtimes: none (no nvidia)")


def test_cdi_only_without_a_toolkit_says_cdi_is_the_only_route() -> None:
    """No NVIDIA Container Toolkit whose runtime could be added: CDI was chosen, ok."""
    result = cdi_only(cdi_node(CRIO, ToolkitFacts()), Runtime.CRIO)
    assert result == Result(
        status=Status.OK,
        summary="no nvidia runtime: GPUs reach containers through CDI (a device plugin or DRA "
        "driver handing out CDI devices) from /var/run/cdi/nvidia.yaml",
        evidence=(
            Evidence("/etc/crio/crio.conf", "runtimes: none (no nvidia)"),
            Evidence("/etc/crio/crio.conf", "crio always reads CDI specs"),
            Evidence("/var/run/cdi/nvidia.yaml", "nvidia.com/gpu spec crio reads"),
            Evidence("/usr/bin", "no NVIDIA Container Toolkit: CDI is the only route"),
        ),
    )


# --- dev._describe ----------------------------------------------------------------------------


DEV = DevFacts(
    nodes={"/dev/nvidia0": node("/dev/nvidia0", 3)},
    not_char=frozenset({"/dev/nvidiactl"}),
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/dev/nvidia0", "char 195:3", id="a-character-device"),
        pytest.param("/dev/nvidiactl", "not a character device", id="not-a-character-device"),
        pytest.param("/dev/nvidia1", "missing", id="missing"),
    ],
)
def test_describe(path: str, expected: str) -> None:
    assert _describe(DEV, path) == expected


def test_nodes_missing_describes_each_wrong_node() -> None:
    """A node with the wrong minor, a regular file in a node's place, a node that is not there."""
    gpus = tuple(
        ProcGpu(bdf=f"0000:0{m}:00.0", minor=m, uuid=f"GPU-{m}", model="H100") for m in (0, 1)
    )
    facts = NodeFacts(kernel=KernelFacts(gpus=gpus), dev=DEV)
    assert nodes_missing(facts) == Result(
        status=Status.FAIL,
        summary="3 NVIDIA device node(s) missing or wrong: /dev/nvidia0, /dev/nvidia1, "
        "/dev/nvidiactl",
        evidence=(
            Evidence("/dev/nvidia0", "char 195:3 (want char 195:0)"),
            Evidence("/dev/nvidia1", "missing (want char 195:1)"),
            Evidence("/dev/nvidiactl", "not a character device (want char 195:255)"),
        ),
        fixes=(CreateDeviceNodes(),),
        notes=("or let the driver create them: sudo nvidia-modprobe -c0 -u",),
    )


# --- k8s.dra_gpus -----------------------------------------------------------------------------


def _slice(*devices: DraDevice, driver: str = GPU_DRIVER) -> ResourceSlice:
    return ResourceSlice(
        name="node-a-gpu",
        driver=driver,
        pool="node-a",
        generation=1,
        slice_count=1,
        devices=devices,
    )


GPU0 = DraDevice(name="gpu-0", type="gpu", uuid="GPU-0")
MIG0 = DraDevice(name="gpu-0-mig-1g", type="mig", parent_uuid="GPU-0")


def test_dra_gpus_counts_the_gpu_devices_of_the_gpu_driver() -> None:
    """GPUs and MIG devices of gpu.nvidia.com count; another driver's slice does not."""
    api = DraApi(slices=(_slice(GPU0, MIG0), _slice(GPU0, driver="compute-domain.nvidia.com")))
    assert dra_gpus(NodeFacts(), {"dra": api, "allocatable": {}}) == Result(
        status=Status.OK,
        summary="the node hands out its GPUs through DRA: 2 device(s) in ResourceSlices of "
        "gpu.nvidia.com",
    )


def test_dra_gpus_leaves_a_registered_plugin_without_slices_to_dra_slices_missing() -> None:
    facts = NodeFacts(
        dra=DraFiles(registered={GPU_DRIVER: "/var/lib/kubelet/plugins_registry/x-reg.sock"})
    )
    assert dra_gpus(facts, {"dra": DraApi(slices=()), "allocatable": {}}) == Result(
        status=Status.SKIP,
        summary="the node hands out GPUs through DRA (gpu.nvidia.com): dra.slices-missing "
        "judges whether it publishes them",
    )


def test_dra_gpus_none_without_a_dra_driver() -> None:
    assert dra_gpus(NodeFacts(), {"dra": DraApi(slices=()), "allocatable": {}}) is None
    assert dra_gpus(NodeFacts(), {"allocatable": {}}) is None


# --- toolkit.set_config -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "config"),
    [
        pytest.param(TOOLKIT_CONFIG, None, id="the-default-file"),
        pytest.param("/opt/ncr/config.toml", "/opt/ncr/config.toml", id="another-file"),
    ],
)
def test_set_config_edits_the_file_the_doctor_read(path: str, config: str | None) -> None:
    """The fix names the config only where NVIDIA_CTK_CONFIG_FILE_PATH chose another one."""
    facts = NodeFacts(toolkit=ToolkitFacts(config=ConfigFile(path=path)))
    settings = (("nvidia-container-runtime.mode", "cdi"), ("nvidia-container-cli.debug", "x"))
    assert set_config(facts, *settings) == SetToolkitConfig(settings=settings, config=config)


# --- dra.class_selects, dra._current, dra._plugin_restarts ------------------------------------

BY_DRIVER = "device.driver == 'gpu.nvidia.com'"
BY_TYPE = "device.attributes['gpu.nvidia.com'].type == 'gpu'"


@pytest.mark.parametrize(
    ("expressions", "driver", "expected"),
    [
        pytest.param((), "other.example.com", True, id="no-selector-selects-all"),
        pytest.param((BY_DRIVER,), GPU_DRIVER, True, id="its-driver"),
        pytest.param((BY_DRIVER,), "other.example.com", False, id="another-driver"),
        pytest.param((BY_DRIVER, BY_TYPE), GPU_DRIVER, True, id="driver-and-type"),
        pytest.param(
            (BY_DRIVER, "device.attributes['gpu.nvidia.com'].type == 'mig'"),
            GPU_DRIVER,
            False,
            id="one-selector-says-no",
        ),
    ],
)
def test_class_selects(expressions: tuple[str, ...], driver: str, expected: bool) -> None:
    """Every selector of the class must allow the device."""
    device_class = DeviceClass(name="gpu.nvidia.com", expressions=expressions)
    assert class_selects(device_class, driver, GPU0) is expected


def test_current_keeps_each_pools_newest_generation_whatever_the_order() -> None:
    newer = ResourceSlice(name="a2", driver=GPU_DRIVER, pool="a", generation=2, slice_count=1)
    older = replace(newer, name="a1", generation=1)
    other = replace(newer, name="b1", pool="b", generation=1)
    assert _current((newer, older, other)) == (newer, other)
    assert _current((older, newer)) == (newer,)


def test_plugin_restarts_deletes_the_drivers_plugin_pods() -> None:
    pods = (
        DraPod(namespace="nvidia-dra", name="plugin-gpu", drivers=(GPU_DRIVER,)),
        DraPod(namespace="nvidia-dra", name="plugin-cd", drivers=("compute-domain.nvidia.com",)),
    )
    assert _plugin_restarts({"dra_pods": pods}, GPU_DRIVER) == (
        "kubectl -n nvidia-dra delete pod plugin-gpu",
    )
    assert _plugin_restarts({}, GPU_DRIVER) == ()


# --- engine_config: runtime_binary_missing, configure_fix -------------------------------------


def test_runtime_binary_missing_from_a_package_says_how_to_get_it_back() -> None:
    binary = "/usr/bin/nvidia-container-runtime"
    engine = EngineFacts(
        engine="crio",
        installed=True,
        config_path="/etc/crio/crio.conf",
        runtimes={
            "nvidia": RuntimeEntry(
                name="nvidia",
                binary=binary,
                binary_exists=False,
                source="/etc/crio/crio.conf.d/99-nvidia.toml",
            )
        },
    )
    result = runtime_binary_missing(engine, "sudo systemctl restart crio")
    assert result == Result(
        status=Status.FAIL,
        summary="/etc/crio/crio.conf.d/99-nvidia.toml names the nvidia runtime "
        f"{binary}, which does not exist: GPU containers fail to start",
        evidence=(
            Evidence("/etc/crio/crio.conf.d/99-nvidia.toml", f"nvidia -> {binary} (missing)"),
        ),
        commands=(
            "sudo apt-get install -y nvidia-container-toolkit",
            "sudo systemctl restart crio",
        ),
        notes=("or point the runtime at the binary's real path",),
    )


def test_configure_fix_by_default_neither_sets_the_default_nor_enables_cdi() -> None:
    assert configure_fix("containerd") == ConfigureRuntime(
        runtime=Runtime.CONTAINERD, set_as_default=False, enable_cdi=False
    )


# --- small helpers: cdi.cdi_readers_only, mig.spec_device_names, gpu._reset -------------------


def test_cdi_readers_only_lists_the_readers_nobody_switched_on() -> None:
    """CRI-O reads specs by itself (listed); Docker with features.cdi = true was asked to."""
    docker = replace(DOCKER_28_2, cdi_enabled=True)
    facts = NodeFacts(engines={Runtime.CRIO: CRIO, Runtime.DOCKER: docker}, kubelet=True)
    assert cdi_readers_only(facts) == [
        Evidence("/etc/crio/crio.conf", "crio always reads CDI specs")
    ]


def test_spec_device_names_of_one_kind() -> None:
    specs = (
        SpecFileFacts(path="/etc/cdi/a.yaml", kind="nvidia.com/gpu", devices=("0", "all")),
        SpecFileFacts(path="/etc/cdi/b.yaml", kind="nvidia.com/gpu", devices=("1",)),
        SpecFileFacts(path="/etc/cdi/c.yaml", kind="example.com/nic", devices=("eth0",)),
    )
    facts = NodeFacts(cdi=CdiFacts(specs=specs))
    assert spec_device_names(facts) == {"0", "1", "all"}
    assert spec_device_names(facts, "example.com/nic") == {"eth0"}


def test_reset_resets_each_gpu_by_index() -> None:
    gpus = [GpuHealth(index=0), GpuHealth(index=3)]
    assert _reset(gpus) == ("sudo nvidia-smi -r -i 0", "sudo nvidia-smi -r -i 3")
