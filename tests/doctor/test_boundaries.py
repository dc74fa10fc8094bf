"""The doctor checks at their limits: equal to a limit, one below, one above.

Each table pins a comparison that a one-character change (`>=` for `>`, `all` for `any`) would
break without any other test noticing (issue 26: hand-made mutations that survived the suite).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctk.doctor.checks.cdi import MAX_EVIDENCE
from ctk.doctor.facts import (
    CdiFacts,
    CompatLibrary,
    ContainerFacts,
    CudaRow,
    DevFacts,
    EngineFacts,
    KernelFacts,
    NodeFacts,
    NvmlAnswer,
    PciGpu,
    ProcGpu,
    RuntimeEntry,
    SpecFileFacts,
    ToolkitFacts,
)
from ctk.doctor.model import Evidence, Status, Where
from ctk.node.nvml import GpuHealth, MigMode, NvmlFacts
from ctk.runtime_config.engines import Runtime
from tests.doctor.test_checks import GPU, MIG, node, run

MIB = 1 << 20


def in_container(gpus: int, env: dict[str, str]) -> NodeFacts:
    """A container that sees ``gpus`` GPU device nodes, with ``env``."""
    nodes = {f"/dev/nvidia{i}": node(f"/dev/nvidia{i}", i) for i in range(gpus)}
    return NodeFacts(
        where=Where.CONTAINER, dev=DevFacts(nodes=nodes), container=ContainerFacts(env=env)
    )


# container.visible-devices-misuse: an index is flagged from the GPU count on (indices count
# from 0), and CUDA_VISIBLE_DEVICES only when *every* index is past the count.
@pytest.mark.parametrize(
    ("env", "flagged"),
    [
        pytest.param({"NVIDIA_VISIBLE_DEVICES": "1"}, None, id="nvidia-index-one-below-count"),
        pytest.param(
            {"NVIDIA_VISIBLE_DEVICES": "2"},
            Evidence("NVIDIA_VISIBLE_DEVICES", "2: index 2 does not exist"),
            id="nvidia-index-equal-to-count",
        ),
        pytest.param(
            {"NVIDIA_VISIBLE_DEVICES": "0,3"},
            Evidence("NVIDIA_VISIBLE_DEVICES", "0,3: index 3 does not exist"),
            id="nvidia-index-above-count",
        ),
        pytest.param({"CUDA_VISIBLE_DEVICES": "1"}, None, id="cuda-index-one-below-count"),
        pytest.param(
            {"CUDA_VISIBLE_DEVICES": "2"},
            Evidence(
                "CUDA_VISIBLE_DEVICES",
                "2: counts inside the container, which has 2 GPU(s); this hides every GPU",
            ),
            id="cuda-index-equal-to-count",
        ),
        pytest.param(
            {"CUDA_VISIBLE_DEVICES": "0,2"}, None, id="cuda-one-index-valid-one-past-count"
        ),
        pytest.param(
            {"CUDA_VISIBLE_DEVICES": "2,3"},
            Evidence(
                "CUDA_VISIBLE_DEVICES",
                "2,3: counts inside the container, which has 2 GPU(s); this hides every GPU",
            ),
            id="cuda-every-index-past-count",
        ),
    ],
)
def test_visible_devices_limits(env: dict[str, str], flagged: Evidence | None) -> None:
    result = run("container.visible-devices-misuse", in_container(2, env))
    if flagged is None:
        assert result.status is Status.OK, result
    else:
        assert result.status is Status.WARN
        assert result.evidence == (flagged,)


# cuda.forward-compat-unusable: a compat libcuda as new as the host driver is not used.
@pytest.mark.parametrize(
    ("compat_version", "status"),
    [
        pytest.param("550.54.14", Status.OK, id="compat-one-below-driver"),
        pytest.param("550.54.15", Status.OK, id="compat-equal-to-driver"),
        pytest.param("550.54.16", Status.FAIL, id="compat-one-above-driver"),
    ],
)
def test_forward_compat_against_the_driver(compat_version: str, status: Status) -> None:
    facts = NodeFacts(
        where=Where.CONTAINER,
        kernel=KernelFacts(driver_version="550.54.15"),
        nvml=NvmlAnswer(
            found=NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=(GPU,)),
            health=(GpuHealth(0, brand="geforce"),),
        ),
        container=ContainerFacts(
            compat=CompatLibrary(
                path=f"/usr/local/cuda/compat/libcuda.so.{compat_version}",
                version=compat_version,
                on_path="LD_LIBRARY_PATH",
            )
        ),
    )
    result = run("cuda.forward-compat-unusable", facts)
    assert result.status is status, result
    if status is Status.OK:
        assert "the compat libraries are not used" in result.summary


# mig.strategy-mismatch: `single` takes exactly one profile (or none).
@pytest.mark.parametrize(
    ("profiles", "status"),
    [
        pytest.param((), Status.OK, id="no-profile"),
        pytest.param(("3g.40gb",), Status.OK, id="one-profile"),
        pytest.param(("3g.40gb", "3g.40gb"), Status.OK, id="one-profile-twice"),
        pytest.param(("3g.40gb", "1g.10gb"), Status.FAIL, id="two-profiles"),
    ],
)
def test_single_strategy_profiles(profiles: tuple[str, ...], status: Status) -> None:
    migs = tuple(replace(MIG, index=i, profile=p) for i, p in enumerate(profiles))
    gpu = replace(GPU, mig_mode=MigMode.ENABLED, migs=migs)
    facts = NodeFacts(
        nvml=NvmlAnswer(
            found=NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=(gpu,))
        ),
        kubernetes={"labels": {"nvidia.com/mig.strategy": "single"}},
    )
    assert run("mig.strategy-mismatch", facts).status is status


# toolkit.too-old: a rule applies from its driver branch on (530: 1.13, 545: 1.14).
@pytest.mark.parametrize(
    ("driver", "library", "status"),
    [
        pytest.param("529.11", "1.12.1-1", Status.OK, id="branch-one-below-530"),
        pytest.param("530.30.02", "1.12.1-1", Status.FAIL, id="branch-equal-to-530"),
        pytest.param("531.18", "1.12.1-1", Status.FAIL, id="branch-one-above-530"),
        pytest.param("530.30.02", "1.13-1", Status.OK, id="library-equal-to-1.13"),
        pytest.param("544.01", "1.13.5-1", Status.OK, id="branch-one-below-545"),
        pytest.param("545.23.06", "1.13.5-1", Status.FAIL, id="branch-equal-to-545"),
        pytest.param("545.23.06", "1.14-1", Status.OK, id="library-equal-to-1.14"),
    ],
)
def test_toolkit_driver_rules(driver: str, library: str, status: Status) -> None:
    facts = NodeFacts(
        kernel=KernelFacts(driver_version=driver, cgroup_version=1),
        toolkit=ToolkitFacts(packages={"libnvidia-container1": library}),
    )
    assert run("toolkit.too-old", facts).status is status


# host.cgroup-v2-legacy-stack: 1.8 is enough, whether written 1.8.0 or 1.8.
@pytest.mark.parametrize(
    ("library", "status"),
    [
        pytest.param("1.7.0-1", Status.FAIL, id="one-below"),
        pytest.param("1.8-1", Status.OK, id="two-part-equal"),
        pytest.param("1.8.0-1", Status.OK, id="three-part-equal"),
        pytest.param("1.9-1", Status.OK, id="one-above"),
    ],
)
def test_cgroup_v2_minimum(library: str, status: Status) -> None:
    facts = NodeFacts(
        kernel=KernelFacts(cgroup_version=2),
        toolkit=ToolkitFacts(packages={"libnvidia-container1": library}),
    )
    assert run("host.cgroup-v2-legacy-stack", facts).status is status


# hami.memory-limit-not-enforced: NVML's total equal to the limit is the limit enforced.
@pytest.mark.parametrize(
    ("total_mib", "status"),
    [
        pytest.param(4095, Status.OK, id="total-one-below-limit"),
        pytest.param(4096, Status.OK, id="total-equal-to-limit"),
        pytest.param(4097, Status.FAIL, id="total-one-above-limit"),
    ],
)
def test_hami_memory_limit(total_mib: int, status: Status) -> None:
    facts = NodeFacts(
        where=Where.POD,
        nvml=NvmlAnswer(
            found=NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=(GPU,)),
            health=(GpuHealth(0, memory_total=total_mib * MIB),),
        ),
        container=ContainerFacts(env={"CUDA_DEVICE_MEMORY_LIMIT_0": "4096m"}),
    )
    assert run("hami.memory-limit-not-enforced", facts).status is status


def test_rootless_config_that_does_not_parse_fails_even_with_a_runtime() -> None:
    """The runtimes read from a broken daemon.json are not what Docker will load."""
    rootless = EngineFacts(
        engine="docker",
        installed=True,
        config_path="/home/u/.config/docker/daemon.json",
        runtimes={"nvidia": RuntimeEntry(name="nvidia", binary="nvidia-container-runtime")},
        error="line 3 column 1: trailing comma",
    )
    result = run("docker.rootless-config", NodeFacts(docker_rootless=rootless))
    assert result.status is Status.FAIL
    assert result.evidence == (
        Evidence("/home/u/.config/docker/daemon.json", "line 3 column 1: trailing comma"),
    )
    fine = replace(rootless, error=None)
    assert run("docker.rootless-config", NodeFacts(docker_rootless=fine)).status is Status.OK


# cdi.spec-stale: MAX_EVIDENCE missing paths are listed; the rest are counted.
@pytest.mark.parametrize(
    ("missing", "more"),
    [
        pytest.param(MAX_EVIDENCE - 1, None, id="one-below-limit"),
        pytest.param(MAX_EVIDENCE, None, id="equal-to-limit"),
        pytest.param(MAX_EVIDENCE + 1, "... and 1 more missing host paths", id="one-above-limit"),
    ],
)
def test_stale_spec_evidence_limit(missing: int, more: str | None) -> None:
    paths = tuple(f"/usr/lib/libnvidia-{i}.so.550.54.15" for i in range(missing))
    spec = SpecFileFacts(
        path="/etc/cdi/nvidia.yaml",
        kind="nvidia.com/gpu",
        devices=("0",),
        host_paths=paths,
        missing_host_paths=paths,
        driver_versions=frozenset({"550.54.15"}),
    )
    facts = NodeFacts(
        kernel=KernelFacts(driver_version="550.54.15"),
        cdi=CdiFacts(dirs=("/etc/cdi",), specs=(spec,)),
    )
    result = run("cdi.spec-stale", facts)
    assert result.status is Status.FAIL
    listed = [e.value for e in result.evidence if e.value.endswith("(missing)")]
    assert len(listed) == min(missing, MAX_EVIDENCE)
    counted = [e.value for e in result.evidence if e.value.startswith("...")]
    assert counted == ([more] if more else [])


# cdi.refresh-disabled: the refresh unit matters from toolkit 1.18 on, also written `1.18-1`.
@pytest.mark.parametrize(
    ("toolkit", "status"),
    [
        pytest.param("1.17.8-1", Status.OK, id="one-below"),
        pytest.param("1.18-1", Status.WARN, id="two-part-equal"),
        pytest.param("1.18.0-1", Status.WARN, id="three-part-equal"),
        pytest.param("1.19-1", Status.WARN, id="one-above"),
    ],
)
def test_refresh_toolkit_version(toolkit: str, status: Status) -> None:
    spec = SpecFileFacts(path="/etc/cdi/nvidia.yaml", kind="nvidia.com/gpu", devices=("0",))
    facts = NodeFacts(
        cdi=CdiFacts(dirs=("/etc/cdi",), specs=(spec,)),
        toolkit=ToolkitFacts(packages={"nvidia-container-toolkit": toolkit}),
    )
    assert run("cdi.refresh-disabled", facts).status is status


# dev.char-symlinks-missing: mode auto is CDI (no /dev/char links needed) from 1.18 on.
@pytest.mark.parametrize(
    ("toolkit", "status"),
    [
        pytest.param("1.17.8-1", Status.WARN, id="one-below"),
        pytest.param("1.18-1", Status.OK, id="two-part-equal"),
        pytest.param("1.18.0-1", Status.OK, id="three-part-equal"),
        pytest.param("1.19-1", Status.OK, id="one-above"),
    ],
)
def test_auto_mode_is_cdi_from_1_18(toolkit: str, status: Status) -> None:
    facts = NodeFacts(
        kernel=KernelFacts(
            driver_version="550.54.15",
            gpus=(ProcGpu(bdf="0000:62:00.0", minor=0, uuid="GPU-0", model="A100"),),
            char_majors={"nvidia-frontend": 195},
        ),
        dev=DevFacts(nodes={"/dev/nvidia0": node("/dev/nvidia0", 0)}),
        engines={
            Runtime.DOCKER: EngineFacts(
                engine="docker",
                installed=True,
                config_path="/etc/docker/daemon.json",
                cgroup_driver="systemd",
            )
        },
        toolkit=ToolkitFacts(packages={"nvidia-container-toolkit": toolkit}),
    )
    result = run("dev.char-symlinks-missing", facts)
    assert result.status is status, result
    if status is Status.WARN:
        assert Evidence("toolkit", "1.17.8 resolves mode auto to legacy") in result.evidence


# cdi.spec-incomplete without NVML's answer: the kernel's GPUs (/proc/driver/nvidia/gpus) count,
# each covered by a device named by its UUID or one that mounts its device node.
KERNEL_GPUS = (
    ProcGpu(bdf="0000:62:00.0", minor=0, uuid="GPU-aaaa", model="H100"),
    ProcGpu(bdf="0000:63:00.0", minor=1, uuid="GPU-bbbb", model="H100"),
)


@pytest.mark.parametrize(
    ("devices", "nodes", "problems"),
    [
        pytest.param(("all", "GPU-aaaa", "GPU-bbbb"), {}, [], id="both-by-uuid"),
        pytest.param(
            ("all", "0", "1"),
            {"0": ("/dev/nvidia0",), "1": ("/dev/nvidia1",)},
            [],
            id="both-by-device-node",
        ),
        pytest.param(
            ("all", "GPU-aaaa"),
            {},
            [Evidence("GPU", "0000:63:00.0 (GPU-bbbb) has no CDI device")],
            id="one-missing",
        ),
        pytest.param(
            ("all", "GPU-aaaa", "GPU-bbbb", "GPU-cccc"),
            {},
            [
                Evidence(
                    "/etc/cdi/nvidia.yaml",
                    "device GPU-cccc names no GPU of this node (replaced or removed)",
                )
            ],
            id="a-replaced-gpu",
        ),
        pytest.param(
            ("GPU-aaaa", "GPU-bbbb"),
            {},
            [Evidence("/etc/cdi/nvidia.yaml", "no device named all")],
            id="no-all",
        ),
    ],
)
def test_spec_incomplete_without_nvml(
    devices: tuple[str, ...], nodes: dict[str, tuple[str, ...]], problems: list[Evidence]
) -> None:
    spec = SpecFileFacts(
        path="/etc/cdi/nvidia.yaml",
        kind="nvidia.com/gpu",
        devices=devices,
        device_node_paths=nodes,
    )
    facts = NodeFacts(
        kernel=KernelFacts(driver_version="550.54.15", gpus=KERNEL_GPUS),
        cdi=CdiFacts(dirs=("/etc/cdi",), specs=(spec,)),
    )
    result = run("cdi.spec-incomplete", facts)
    assert (result.status, list(result.evidence)) == (
        (Status.FAIL if problems else Status.OK),
        problems,
    )
    if problems:
        assert result.summary == "the CDI spec does not match the node's GPUs: " + "; ".join(
            e.value for e in problems
        )


# The CUDA checks' host side and their remedies: the driver's CUDA from NVML (else the table),
# brands from NVML; forward compatibility offered only where the GPU brand allows it.
def _nvml(brands: tuple[str | None, ...], cuda: int = 12040) -> NvmlAnswer:
    gpus = tuple(replace(GPU, index=i, minor=i, uuid=f"GPU-{i}") for i in range(len(brands)))
    return NvmlAnswer(
        found=NvmlFacts(driver_version="550.54.15", cuda_driver_version=cuda, gpus=gpus),
        health=tuple(GpuHealth(index=i, brand=b) for i, b in enumerate(brands)),
    )


ROW = CudaRow(
    cuda=(12, 6), min_driver=(560, 28, 3), min_driver_mvc=(525,), min_driver_text="560.28.03"
)


def test_host_cuda_reads_nvml_then_the_table() -> None:
    from ctk.doctor.checks.cuda import host_cuda

    kernel = KernelFacts(driver_version="550.54.15")
    table = (CudaRow(cuda=(12, 4), min_driver=(550, 54, 14), min_driver_mvc=(525,)),)
    assert host_cuda(NodeFacts(kernel=KernelFacts())) is None  # no driver, no answer
    got = host_cuda(NodeFacts(kernel=kernel, nvml=_nvml(("Tesla", None, "NvidiaRTX"))))
    assert got is not None
    assert (got.driver, got.driver_text, got.cuda, got.brands) == (
        (550, 54, 15),
        "550.54.15",
        (12, 4),
        frozenset({"tesla", "nvidiartx"}),
    )
    refused = NvmlAnswer(error_code=9, error="Driver Not Loaded", found=None)
    got = host_cuda(NodeFacts(kernel=kernel, nvml=refused, cuda_table=table))
    assert got is not None
    assert (got.cuda, got.brands) == ((12, 4), frozenset())  # the table's; no brands
    refused_but_found = replace(_nvml(("Tesla",), cuda=12080), error_code=999)
    got = host_cuda(NodeFacts(kernel=kernel, nvml=refused_but_found, cuda_table=table))
    assert got is not None
    assert (got.cuda, got.brands) == ((12, 4), frozenset())  # an error: NVML's answer not used


@pytest.mark.parametrize(
    ("brands", "row", "host_cuda", "expected"),
    [
        pytest.param(
            frozenset({"tesla"}),
            ROW,
            (12, 4),
            (
                "upgrade the driver to >= 560.28.03: sudo apt-get install nvidia-driver-560 && "
                "sudo reboot",
                "or use an image built for CUDA 12.4 or older",
                "or add cuda-compat-12-6 to the image (forward compatibility; the driver branch "
                "must be one the compat package lists)",
            ),
            id="data-center",
        ),
        pytest.param(
            frozenset({"tesla", "nvidiartx", "unknown"}),
            replace(ROW, verified=False),
            None,
            (
                "upgrade the driver to >= 560.28.03 (unverified table value): sudo apt-get "
                "install nvidia-driver-560 && sudo reboot",
                "or add cuda-compat-12-6 to the image (only NGC-ready RTX SKUs; forward "
                "compatibility; the driver branch must be one the compat package lists)",
            ),
            id="some-rtx-skus",
        ),
        pytest.param(
            frozenset({"geforce", "titan", "tesla"}),
            None,
            (12, 4),
            (
                "or use an image built for CUDA 12.4 or older",
                "forward compatibility (cuda-compat) does not work on geforce, titan GPUs "
                "(CUDA error 804)",
            ),
            id="consumer",
        ),
        pytest.param(frozenset({"unknown"}), None, None, (), id="brand-unknown"),
        pytest.param(
            frozenset({"tesla", "nvidia"}),
            None,
            None,
            (
                "or add cuda-compat-12-6 to the image (forward compatibility; the driver branch "
                "must be one the compat package lists)",
            ),
            id="every-data-center-brand",
        ),
    ],
)
def test_cuda_upgrade_commands(
    brands: frozenset[str],
    row: CudaRow | None,
    host_cuda: tuple[int, int] | None,
    expected: tuple[str, ...],
) -> None:
    from ctk.doctor import cuda as compat
    from ctk.doctor.checks.cuda import _upgrade_commands

    verdict = compat.Verdict(
        satisfied=False, required=(12, 6, 1), row=row, mvc_applies=False, beyond_table=False
    )
    host = compat.HostCuda(
        driver=(550, 54, 15), driver_text="550.54.15", cuda=host_cuda, brands=brands
    )
    assert _upgrade_commands(verdict, host) == expected
    assert not any("cuda-compat" in c for c in _upgrade_commands(verdict, host, offer_compat=False))
    no_minimum = replace(verdict, row=replace(ROW, min_driver=None))
    assert not any(c.startswith("upgrade") for c in _upgrade_commands(no_minimum, host))


# container.shm-too-small: Docker's 64 MiB default (and less) is flagged, more is not; with
# PyTorch installed the floor is 1 GiB (flagged below it, not at it).
@pytest.mark.parametrize(
    ("size", "torch", "status"),
    [
        pytest.param(64 * MIB - 1, False, Status.WARN, id="below-the-docker-default"),
        pytest.param(64 * MIB, False, Status.WARN, id="the-docker-default"),
        pytest.param(64 * MIB + 1, False, Status.OK, id="above-the-docker-default"),
        pytest.param(64 * MIB, True, Status.WARN, id="torch-docker-default"),
        pytest.param(1024 * MIB - 1, True, Status.WARN, id="torch-below-1-gib"),
        pytest.param(1024 * MIB, True, Status.OK, id="torch-at-1-gib"),
        pytest.param(1024 * MIB - 1, False, Status.OK, id="no-torch-below-1-gib"),
    ],
)
def test_shm_limits(size: int, torch: bool, status: Status) -> None:
    facts = NodeFacts(
        where=Where.CONTAINER, container=ContainerFacts(shm_size=size, has_torch=torch)
    )
    result = run("container.shm-too-small", facts)
    assert result.status is status, result.summary
    if status is Status.WARN:
        why = "below 1 GiB with PyTorch installed" if size > 64 * MIB else "the 64 MiB Docker"
        assert why in result.summary
        assert (Evidence("python packages", "torch installed") in result.evidence) is torch


def test_shm_of_the_host_is_never_too_small() -> None:
    facts = NodeFacts(
        where=Where.CONTAINER, container=ContainerFacts(shm_size=MIB, shm_is_host=True)
    )
    assert run("container.shm-too-small", facts).status is Status.OK


# driver.not-loaded: modprobe is the remedy only where there is a GPU for the module to bind.
@pytest.mark.parametrize(
    ("kernel", "first_command", "noted"),
    [
        pytest.param(
            KernelFacts(pci_gpus=(PciGpu(bdf="0000:62:00.0", driver=None),)),
            "sudo modprobe nvidia",
            False,
            id="gpu-on-the-bus",
        ),
        pytest.param(KernelFacts(), "lspci -nnk -d 10de:", True, id="no-gpu-on-the-bus"),
        pytest.param(
            KernelFacts(module_built=False, kernel_release="6.1.0-9"),
            "sudo dkms autoinstall",
            False,
            id="module-not-built",
        ),
    ],
)
def test_driver_not_loaded_remedy_fits_the_bus(
    kernel: KernelFacts, first_command: str, noted: bool
) -> None:
    result = run("driver.not-loaded", NodeFacts(kernel=kernel))
    assert result.status is Status.FAIL
    assert result.commands[0] == first_command
    assert bool(result.notes) is noted


# runtime_binary_missing (the engines' runtime checks): only a named binary that is missing
# fails; the GPU Operator's comes back by restarting its toolkit DaemonSet, in the namespace
# the API reported.
OPERATOR_NCR = "/usr/local/nvidia/toolkit/nvidia-container-runtime"


@pytest.mark.parametrize(
    ("runtime", "kubernetes", "command"),
    [
        pytest.param(None, {}, None, id="no-nvidia-runtime"),
        pytest.param(RuntimeEntry(name="nvidia"), {}, None, id="no-binary-named"),
        pytest.param(
            RuntimeEntry(name="nvidia", binary="/usr/bin/nvidia-container-runtime"),
            {},
            None,
            id="binary-there",
        ),
        pytest.param(
            RuntimeEntry(
                name="nvidia", binary="/usr/bin/nvidia-container-runtime", binary_exists=False
            ),
            {},
            "sudo apt-get install -y nvidia-container-toolkit",
            id="package-binary-gone",
        ),
        pytest.param(
            RuntimeEntry(name="nvidia", binary=OPERATOR_NCR, binary_exists=False),
            {},
            "kubectl -n gpu-operator rollout restart daemonset/nvidia-container-toolkit-daemonset",
            id="operator-binary-gone",
        ),
        pytest.param(
            RuntimeEntry(name="nvidia", binary=OPERATOR_NCR, binary_exists=False),
            {"gpu_operator_toolkit": {"namespace": "nvidia", "daemonset": "toolkit"}},
            "kubectl -n nvidia rollout restart daemonset/toolkit",
            id="operator-in-its-own-namespace",
        ),
    ],
)
def test_runtime_binary_missing(
    runtime: RuntimeEntry | None, kubernetes: dict[str, object], command: str | None
) -> None:
    from ctk.doctor.checks.engine_config import runtime_binary_missing

    engine = EngineFacts(
        engine="containerd",
        installed=True,
        config_path="/etc/containerd/config.toml",
        runtimes={} if runtime is None else {"nvidia": runtime},
    )
    facts = NodeFacts(engines={Runtime.CONTAINERD: engine}, kubernetes=kubernetes)
    result = runtime_binary_missing(engine, "sudo systemctl restart containerd", facts=facts)
    if command is None:
        assert result is None
        return
    assert runtime is not None and result is not None and result.status is Status.FAIL
    assert result.commands[0] == command
    assert result.evidence == (
        Evidence("/etc/containerd/config.toml", f"nvidia -> {runtime.binary} (missing)"),
    )


# cuda._bridge_gaps: what keeps forward compatibility from bridging a driver's CUDA gap.
HOST_535 = "535.104.05"
LIB = "/usr/local/cuda/compat/libcuda.so.570.124.06"


def _gaps(
    brands: frozenset[str],
    *,
    assumed: bool = False,
    version: str = "570.124.06",
    branches: tuple[int, ...] = (535, 550),
) -> tuple[Evidence, ...]:
    from ctk.doctor import cuda as compat
    from ctk.doctor.checks.cuda import _bridge_gaps

    host = compat.HostCuda(driver=(535, 104, 5), driver_text=HOST_535, cuda=(12, 2), brands=brands)
    bridge = compat.ForwardCompat(
        clause="brand=tesla,driver>=535,driver<536",
        brands=("tesla",),
        branch_cuda=(12, 2),
        brand_assumed=assumed,
    )
    lib = CompatLibrary(
        path=LIB, version=version, driver_branches=branches, on_path="LD_LIBRARY_PATH"
    )
    facts = NodeFacts(where=Where.CONTAINER, container=ContainerFacts(compat=lib))
    return _bridge_gaps(facts, host, bridge)


UNKNOWN_BRAND = Evidence("NVML brand", "unknown: forward compatibility needs a data-center GPU")


@pytest.mark.parametrize(
    ("brands", "assumed", "expected"),
    [
        pytest.param(frozenset({"tesla"}), False, (), id="tesla"),
        pytest.param(frozenset({"tesla", "nvidia"}), False, (), id="every-data-center-brand"),
        pytest.param(frozenset({"unknown"}), False, (UNKNOWN_BRAND,), id="brand-unknown"),
        pytest.param(frozenset(), False, (UNKNOWN_BRAND,), id="no-brand"),
        pytest.param(frozenset({"tesla"}), True, (UNKNOWN_BRAND,), id="brand-assumed"),
        pytest.param(frozenset({"tesla", "unknown"}), False, (), id="unknown-beside-a-known-brand"),
        pytest.param(
            frozenset({"tesla", "geforce", "titan"}),
            False,
            (Evidence("NVML brand", "geforce, titan: not a data-center brand (tesla, nvidia)"),),
            id="consumer-brands-named",
        ),
    ],
)
def test_bridge_gaps_by_brand(
    brands: frozenset[str], assumed: bool, expected: tuple[Evidence, ...]
) -> None:
    assert _gaps(brands, assumed=assumed) == expected


@pytest.mark.parametrize(
    ("version", "branches", "expected"),
    [
        pytest.param("535.104.06", (535,), [], id="compat-one-above-the-driver"),
        pytest.param(
            HOST_535, (535,), [f"not newer than driver {HOST_535}: unused"], id="compat-equal"
        ),
        pytest.param(
            "535.104.04", (535,), [f"not newer than driver {HOST_535}: unused"], id="compat-below"
        ),
        pytest.param(
            "570.124.06",
            (550, 560),
            ["supports driver branches 550, 560, not 535"],
            id="branch-not-listed",
        ),
    ],
)
def test_bridge_gaps_by_library(
    version: str, branches: tuple[int, ...], expected: list[str]
) -> None:
    gaps = _gaps(frozenset({"tesla"}), version=version, branches=branches)
    assert [g.value for g in gaps] == expected
