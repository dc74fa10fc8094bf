"""Checks whose facts no fixture file carries (Kubernetes, NVML fields, permissions); the runner.

Facts are built directly; each case names the check and the whole expected result.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from ctk.cli import doctor_render
from ctk.doctor.facts import (
    CdiFacts,
    CompatLibrary,
    ConfigFile,
    ContainerFacts,
    DevFacts,
    EngineFacts,
    KernelFacts,
    NodeFacts,
    NvmlAnswer,
    ProcGpu,
    RuntimeEntry,
    SpecFileFacts,
    ToolkitFacts,
    Unavailable,
)
from ctk.doctor.fixes import ConfigureRuntime
from ctk.doctor.model import REGISTRY, Evidence, Result, Severity, Status, Where, check
from ctk.doctor.run import diagnose, summarize
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot
from ctk.node import CharDevice
from ctk.node.nvml import ComputeProcess, Gpu, GpuHealth, MigDevice, MigMode, NvmlFacts
from ctk.runtime_config.engines import Runtime

GIB = 1 << 30
GPU = Gpu(index=0, minor=0, uuid="GPU-0", name="NVIDIA A100-SXM4-80GB", pci_bus_id="")
MIG = MigDevice(
    parent_index=0, index=0, gpu_instance=1, compute_instance=0, uuid="MIG-1", profile="3g.40gb"
)
MIG_ON = replace(GPU, mig_mode=MigMode.ENABLED)
DRIVER = KernelFacts(
    driver_version="550.54.15",
    gpus=(ProcGpu(bdf="0000:62:00.0", minor=0, uuid="GPU-0", model="A100"),),
    char_majors={"nvidia-uvm": 510},
)


CONTAINERD_CDI_OFF = EngineFacts(
    engine="containerd",
    installed=True,
    config_path="/etc/containerd/config.toml",
    cdi_enabled=False,
)
"""containerd 1.7 as `containerd config default` leaves it: default directories, CDI off."""


OPERATOR_LABELS = {"nvidia.com/gpu.deploy.container-toolkit": "true"}
"""The label the GPU Operator puts on the nodes its toolkit DaemonSet runs on."""
OPERATOR_LABELLED = Evidence("node labels", "nvidia.com/gpu.deploy.container-toolkit=true")


def nvml(*gpus: Gpu, health: Iterable[GpuHealth] = ()) -> NvmlAnswer:
    found = NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=gpus)
    return NvmlAnswer(found=found, health=tuple(health))


def node(path: str, minor: int) -> CharDevice:
    return CharDevice(container_path=path, host_path=path, major=195, minor=minor, file_mode=0o660)


def run(check_id: str, facts: NodeFacts) -> Result:
    return REGISTRY[check_id].run(facts)


LEGACY_DOCKER_NODE = NodeFacts(
    kernel=replace(DRIVER, char_majors={"nvidia-frontend": 195}),
    dev=DevFacts(nodes={"/dev/nvidia0": node("/dev/nvidia0", 0)}),
    engines={
        Runtime.DOCKER: EngineFacts(
            engine="docker",
            installed=True,
            config_path="/etc/docker/daemon.json",
            cgroup_driver="cgroupfs",
        ),
        Runtime.CONTAINERD: EngineFacts(
            engine="containerd",
            installed=True,
            config_path="/etc/containerd/config.toml",
            needs_root=True,
        ),
    },
    toolkit=ToolkitFacts(
        binaries={"nvidia-container-runtime": "/usr/bin/nvidia-container-runtime"},
        config=ConfigFile(
            path="/etc/nvidia-container-runtime/config.toml",
            exists=True,
            data={"nvidia-container-runtime": {"mode": "legacy"}},
        ),
    ),
)
"""Docker on cgroupfs with legacy injection, a /dev/char link missing, containerd's config
root-only: whether containerd's runtimes use the systemd driver matters only under a kubelet."""


CASES = [
    pytest.param(
        "dev.permission-denied",
        NodeFacts(
            kernel=replace(DRIVER, params={"DeviceFileMode": "432"}),
            dev=DevFacts(
                nodes={
                    "/dev/nvidiactl": node("/dev/nvidiactl", 255),
                    "/dev/nvidia0": node("/dev/nvidia0", 0),
                },
                inaccessible=frozenset({"/dev/nvidiactl"}),
            ),
        ),
        Result(
            status=Status.FAIL,
            summary="the current user cannot open the NVIDIA device nodes",
            evidence=(
                Evidence("/dev/nvidiactl", "mode 0660, no access"),
                Evidence("/proc/driver/nvidia/params", "DeviceFileMode 0660"),
            ),
            notes=(
                "add the user to the device nodes' group (sudo usermod -aG GROUP USER)",
                "or set `options nvidia NVreg_DeviceFileMode=0666` in "
                "/etc/modprobe.d/nvidia.conf and reload the module",
            ),
        ),
        id="permission-denied",
    ),
    pytest.param(
        "mig.mode-pending",
        NodeFacts(nvml=nvml(GPU, health=(GpuHealth(0, mig_current=0, mig_pending=1),))),
        Result(
            status=Status.WARN,
            summary="MIG mode change pending on GPU 0: it takes effect after a GPU reset or reboot",
            evidence=(Evidence("NVML GPU 0", "MIG current 0, pending 1"),),
            commands=(
                "sudo systemctl stop nvidia-persistenced nvidia-dcgm",
                "sudo nvidia-smi -i 0 -r",
            ),
        ),
        id="mig-mode-pending",
    ),
    pytest.param(
        "gpu.leftover-processes",
        NodeFacts(
            nvml=nvml(
                GPU,
                health=(
                    GpuHealth(
                        0,
                        memory_total=80 * GIB,
                        memory_used=5 * GIB,  # 4 GiB unaccounted: under max(2 GiB, 5 % = 4 GiB)
                        processes=(ComputeProcess(pid=7, used_memory=GIB),),
                    ),
                ),
            ),
            nvml_process_states={7: "R"},
        ),
        Result(
            status=Status.OK,
            summary="0 process(es) hold the device nodes, 1 compute process(es) in NVML; none "
            "dead, stuck or leaking",
        ),
        id="leftover-driver-reservation-is-not-a-leak",
    ),
    pytest.param(
        "gpu.leftover-processes",
        NodeFacts(
            nvml=nvml(
                GPU,
                health=(
                    GpuHealth(
                        0,
                        memory_total=80 * GIB,
                        memory_used=30 * GIB,
                        processes=(ComputeProcess(pid=7, used_memory=None),),
                    ),
                ),
            ),
            nvml_process_states=Unavailable("no process list under /proc"),
        ),
        Result(
            status=Status.OK,
            summary="0 process(es) hold the device nodes, 1 compute process(es) in NVML; none "
            "dead, stuck or leaking",
        ),
        id="leftover-unknown-memory-and-no-proc-cannot-judge",
    ),
    pytest.param(
        "gpu.leftover-processes",
        NodeFacts(
            nvml=nvml(
                GPU, health=(GpuHealth(0, processes=(ComputeProcess(pid=9, used_memory=2 * GIB),)),)
            ),
            nvml_process_states={9: "D"},
        ),
        Result(
            status=Status.WARN,
            summary="GPU memory is held by dead, stuck or missing processes",
            evidence=(Evidence("NVML GPU 0 PID 9", "2048 MiB, uninterruptible sleep"),),
            commands=("sudo fuser -v /dev/nvidia*", "sudo kill -9 9"),
            notes=("memory still held with no process: reset that GPU (nvidia-smi --gpu-reset)",),
        ),
        id="leftover-nvml-process-stuck-in-d-state",
    ),
    pytest.param(
        "cuda.forward-compat-unusable",
        NodeFacts(
            where=Where.CONTAINER,
            kernel=DRIVER,
            nvml=nvml(GPU, health=(GpuHealth(0, brand="nvidia"),)),
            container=ContainerFacts(
                compat=CompatLibrary(
                    path="/usr/local/cuda/compat/libcuda.so.580.65.06",
                    version="580.65.06",
                    driver_branches=(535, 570, 575, 580),
                )
            ),
        ),
        Result(
            status=Status.WARN,
            summary="the image's compat libcuda 580.65.06 cannot work on this host (CUDA error "
            "804 if it is used)",
            evidence=(
                Evidence(
                    "/usr/local/cuda/compat/libcuda.so.580.65.06",
                    "supports driver branches 535, 570, 575, 580; the host runs 550",
                ),
            ),
            notes=("upgrade the host driver to >= 580.65.06 (then the compat libs are unused)",),
        ),
        id="forward-compat-branch-not-listed",
    ),
    pytest.param(
        "cuda.forward-compat-unusable",
        NodeFacts(
            where=Where.CONTAINER,
            kernel=DRIVER,
            nvml=nvml(GPU, health=(GpuHealth(0, brand="geforce"),)),
            container=ContainerFacts(
                compat=CompatLibrary(
                    path="/usr/local/cuda-12.2/compat/libcuda.so.535.104.05",
                    version="535.104.05",
                    on_path="LD_LIBRARY_PATH",
                )
            ),
        ),
        Result(
            status=Status.OK,
            summary="the host driver 550.54.15 is not older than the image's compat libcuda "
            "535.104.05: the compat libraries are not used",
        ),
        id="forward-compat-older-than-driver-unused",
    ),
    pytest.param(
        "mig.strategy-mismatch",
        NodeFacts(
            nvml=nvml(replace(MIG_ON, migs=(MIG, replace(MIG, profile="1g.10gb")))),
            kubernetes={"labels": {"nvidia.com/mig.strategy": "single"}},
        ),
        Result(
            status=Status.FAIL,
            summary="MIG strategy 'single' with a mixed layout: the device plugin advertises "
            "nothing",
            evidence=(
                Evidence("node label nvidia.com/mig.strategy", "single"),
                Evidence("NVML", "profiles 1g.10gb, 3g.40gb"),
            ),
            notes=(
                "switch the device plugin to the mixed strategy (Helm: --set mig.strategy=mixed)",
            ),
        ),
        id="mig-strategy-single-mixed",
    ),
    pytest.param(
        "mig.device-plugin-stale",
        NodeFacts(
            nvml=nvml(replace(MIG_ON, migs=(MIG,))),
            kubernetes={"allocatable": {"nvidia.com/gpu": "1"}},
        ),
        Result(
            status=Status.WARN,
            summary="the node advertises a MIG layout that differs from the GPUs' current one",
            evidence=(
                Evidence("node allocatable", "{}"),
                Evidence("NVML", "{'nvidia.com/mig-3g.40gb': 1}"),
            ),
            notes=("restart the device plugin's DaemonSet (kubectl rollout restart)",),
        ),
        id="device-plugin-stale",
    ),
    pytest.param(
        "dev.char-symlinks-missing",
        LEGACY_DOCKER_NODE,
        Result(status=Status.OK, summary="no engine uses the systemd cgroup driver"),
        id="char-links-containerd-only-serves-docker",
    ),
    pytest.param(
        "dev.char-symlinks-missing",
        replace(LEGACY_DOCKER_NODE, kubelet=True),
        Result(
            status=Status.UNKNOWN,
            summary="1 /dev/char link(s) are missing, and whether the systemd cgroup driver "
            "needs them is unknown: /etc/containerd/config.toml is not readable without root",
            needs_root=True,
        ),
        id="char-links-containerd-of-a-kubelet-unread",
    ),
    pytest.param(
        "containerd.cdi-disabled",
        NodeFacts(
            engines={
                Runtime.CONTAINERD: EngineFacts(
                    engine="containerd",
                    installed=True,
                    config_path="/etc/containerd/config.toml",
                    cdi_enabled=False,
                    cdi_spec_dirs=("/var/run/cdi/", "/etc/cdi/"),
                )
            },
        ),
        Result(status=Status.OK, summary="native CDI is not requested"),
        id="cdi-disabled-default-dirs-spelled-otherwise",
    ),
    pytest.param(
        "containerd.cdi-disabled",
        NodeFacts(
            engines={Runtime.CONTAINERD: CONTAINERD_CDI_OFF},
            kubernetes={"device_list_strategy": "cdi-annotations,cdi-cri"},
        ),
        Result(
            status=Status.WARN,
            summary="the device plugin hands out GPUs as CDI devices (cdi-cri) but enable_cdi "
            "is not true",
            evidence=(
                Evidence("/etc/containerd/config.toml", "enable_cdi = false"),
                Evidence("device plugin", "deviceListStrategy=cdi-annotations,cdi-cri"),
            ),
            commands=("sudo systemctl restart containerd",),
            fixes=(ConfigureRuntime(runtime=Runtime.CONTAINERD, enable_cdi=True),),
        ),
        id="cdi-disabled-cdi-cri-in-the-device-plugin-list",
    ),
    pytest.param(
        "containerd.cdi-disabled",
        NodeFacts(
            engines={Runtime.CONTAINERD: CONTAINERD_CDI_OFF},
            kubernetes={"device_list_strategy": "envvar, cdi-annotations"},
        ),
        Result(status=Status.OK, summary="native CDI is not requested"),
        id="cdi-disabled-device-plugin-list-without-cdi-cri",
    ),
    pytest.param(
        "containerd.not-default-no-runtimeclass",
        NodeFacts(
            engines={
                Runtime.CONTAINERD: EngineFacts(
                    engine="containerd",
                    installed=True,
                    config_path="/etc/containerd/config.toml",
                    default_runtime="runc",
                    runtimes={"nvidia": RuntimeEntry(name="nvidia", binary="/usr/bin/nvidia-ctr")},
                )
            },
            kubernetes={"runtimeclass_handlers": ["kata"]},
        ),
        Result(
            status=Status.FAIL,
            summary="nvidia is neither containerd's default runtime nor the handler of a "
            "RuntimeClass: GPU pods run under runc and see no GPU",
            evidence=(
                Evidence("/etc/containerd/config.toml", "default_runtime_name = runc"),
                Evidence("RuntimeClasses", "kata"),
            ),
            commands=("sudo systemctl restart containerd",),
            fixes=(ConfigureRuntime(runtime=Runtime.CONTAINERD, set_as_default=True),),
            notes=("or create a RuntimeClass named nvidia with handler nvidia",),
        ),
        id="no-default-no-runtimeclass",
    ),
    pytest.param(
        "containerd.not-default-no-runtimeclass",
        NodeFacts(
            engines={
                Runtime.CONTAINERD: EngineFacts(
                    engine="containerd",
                    installed=True,
                    config_path="/etc/containerd/config.toml",
                    default_runtime="runc",
                )
            },
            kubernetes={"runtimeclass_handlers": ["kata"]},
        ),
        Result(
            status=Status.SKIP,
            summary="containerd has no nvidia runtime (see containerd.runtime-not-configured)",
        ),
        id="no-nvidia-runtime-to-reach",
    ),
    pytest.param(
        "k8s.runtimeclass-handler-missing",
        NodeFacts(
            engines={
                Runtime.CONTAINERD: EngineFacts(
                    engine="containerd", installed=True, config_path="/etc/containerd/config.toml"
                )
            },
            kubernetes={"runtimeclass_handlers": ["nvidia"]},
        ),
        Result(
            status=Status.FAIL,
            summary="a RuntimeClass sends pods to handler nvidia, which this node's runtime does "
            "not define: they fail with 'no runtime for \"nvidia\" is configured'",
            evidence=(
                Evidence("RuntimeClasses", "handler nvidia"),
                Evidence("/etc/containerd/config.toml", "runtimes: none (no nvidia)"),
            ),
            commands=("sudo systemctl restart containerd",),
            fixes=(ConfigureRuntime(runtime=Runtime.CONTAINERD),),
        ),
        id="runtimeclass-handler-missing",
    ),
    pytest.param(
        "k8s.gpu-not-allocatable",
        NodeFacts(
            kernel=DRIVER,
            kubernetes={"node": "n1", "allocatable": {"nvidia.com/gpu": "0"}},
        ),
        Result(
            status=Status.FAIL,
            summary="the node has 1 GPU(s) but offers none to the scheduler: GPU pods stay "
            "Pending with 'Insufficient nvidia.com/gpu'",
            evidence=(
                Evidence("node n1", "allocatable: no nvidia.com/gpu or mig-*"),
                Evidence("/proc/driver/nvidia/gpus", "1 GPU(s)"),
            ),
            notes=(
                "look at the device plugin pod on this node and its log (NVML errors, "
                "'No devices found', a MIG strategy error)",
            ),
        ),
        id="gpu-not-allocatable",
    ),
    pytest.param(
        "cdi.management-spec-missing",
        NodeFacts(kubernetes={"device_list_strategy": "cdi-cri", "labels": OPERATOR_LABELS}),
        Result(
            status=Status.FAIL,
            summary="the device plugin uses CDI but no management.nvidia.com/gpu spec exists",
            evidence=(Evidence("", "no management.nvidia.com/gpu spec"), OPERATOR_LABELLED),
            commands=(
                "kubectl -n gpu-operator rollout restart "
                "daemonset/nvidia-container-toolkit-daemonset",
            ),
        ),
        id="management-spec-missing",
    ),
    *(
        pytest.param(
            "cdi.management-spec-missing",
            NodeFacts(kubernetes={"device_list_strategy": strategies, "labels": OPERATOR_LABELS}),
            Result(
                status=Status.FAIL,
                summary="the device plugin uses CDI but no management.nvidia.com/gpu spec exists",
                evidence=(Evidence("", "no management.nvidia.com/gpu spec"), OPERATOR_LABELLED),
                commands=(
                    "kubectl -n gpu-operator rollout restart "
                    "daemonset/nvidia-container-toolkit-daemonset",
                ),
            ),
            id=f"management-spec-missing-{strategies.replace(',', '-')}",
        )
        for strategies in ("cdi-annotations,cdi-cri", "envvar,cdi-cri")
    ),
    pytest.param(
        "cdi.management-spec-missing",
        NodeFacts(kubernetes={"device_list_strategy": "envvar,volume-mounts"}),
        Result(status=Status.SKIP, summary="no Kubernetes device plugin in CDI mode"),
        id="management-spec-not-needed-without-cdi-strategies",
    ),
    pytest.param(
        "k8s.device-list-strategy-invalid",
        NodeFacts(kubernetes={"device_list_strategy": "envvar, cdi"}),
        Result(
            status=Status.FAIL,
            summary="the device plugin's DEVICE_LIST_STRATEGY names cdi, which it does not know: "
            "it exits at start with 'invalid strategy: cdi' and the node offers no GPUs",
            evidence=(Evidence("device plugin", "DEVICE_LIST_STRATEGY=envvar, cdi"),),
            notes=(
                "the strategies are cdi-annotations, cdi-cri, envvar, volume-mounts "
                "(comma-separated, several allowed)",
            ),
        ),
        id="device-list-strategy-unknown-name",
    ),
    pytest.param(
        "k8s.device-list-strategy-invalid",
        NodeFacts(kubernetes={"device_list_strategy": " , "}),
        Result(
            status=Status.FAIL,
            summary="the device plugin's DEVICE_LIST_STRATEGY names no strategy: it exits at "
            "start ('no device list strategy specified') and the node offers no GPUs",
            evidence=(Evidence("device plugin", "DEVICE_LIST_STRATEGY= , "),),
            notes=(
                "name one or more of cdi-annotations, cdi-cri, envvar, volume-mounts, "
                "comma-separated",
            ),
        ),
        id="device-list-strategy-none",
    ),
    pytest.param(
        "k8s.device-list-strategy-invalid",
        NodeFacts(kubernetes={"device_list_strategy": "volume-mounts,cdi-annotations"}),
        Result(status=Status.OK, summary="DEVICE_LIST_STRATEGY=cdi-annotations,volume-mounts"),
        id="device-list-strategy-known",
    ),
    pytest.param(
        "k8s.device-list-strategy-invalid",
        NodeFacts(kubernetes={"labels": {}}),
        Result(
            status=Status.SKIP, summary="no device plugin on this node sets DEVICE_LIST_STRATEGY"
        ),
        id="device-list-strategy-unset",
    ),
    pytest.param(
        "hami.memory-limit-not-enforced",
        NodeFacts(
            where=Where.POD,
            nvml=nvml(GPU, health=(GpuHealth(0, memory_total=80 * 1024**3),)),
            container=replace(NodeFacts().container, env={"CUDA_DEVICE_MEMORY_LIMIT_0": "4096m"}),
        ),
        Result(
            status=Status.FAIL,
            summary="NVML reports the full GPU memory, not HAMi's limit: the limit is not enforced",
            evidence=(Evidence("NVML GPU 0", "total 81920 MiB > limit 4096 MiB"),),
            notes=("see hami.libvgpu-not-loaded",),
        ),
        id="hami-memory",
    ),
    pytest.param(
        "mig.whole-gpu-in-container",
        NodeFacts(where=Where.CONTAINER, nvml=nvml(MIG_ON)),
        Result(
            status=Status.WARN,
            summary="the container sees MIG-enabled GPU(s) without MIG devices: CUDA finds no "
            "usable device",
            evidence=(Evidence("NVML GPU 0", "GPU-0: MIG enabled, no MIG device"),),
            notes=("request a MIG device: NVIDIA_VISIBLE_DEVICES=MIG-<uuid> or nvidia.com/mig-*",),
        ),
        id="whole-gpu-in-container",
    ),
    pytest.param(
        "docker.daemon-json-invalid",
        NodeFacts(
            engines={
                Runtime.DOCKER: EngineFacts(
                    engine="docker",
                    installed=True,
                    config_path="/etc/docker/daemon.json",
                    config_exists=True,
                    needs_root=True,
                )
            }
        ),
        Result(
            status=Status.UNKNOWN,
            summary="/etc/docker/daemon.json is not readable without root",
            needs_root=True,
        ),
        id="unreadable-daemon-json-is-unknown",
    ),
    pytest.param(
        "cdi.spec-missing",
        NodeFacts(
            kernel=DRIVER,
            cdi=CdiFacts(
                unreadable=Unavailable("/etc/cdi: cannot list: Permission denied", needs_root=True)
            ),
        ),
        Result(
            status=Status.UNKNOWN,
            summary="cannot read the CDI spec directories: /etc/cdi: cannot list: Permission "
            "denied",
            needs_root=True,
        ),
        id="unreadable-spec-dir-is-unknown",
    ),
    pytest.param(
        "mig.enabled-without-instances",
        NodeFacts(nvml=Unavailable("NVML did not answer within 5 s")),
        Result(
            status=Status.UNKNOWN,
            summary="NVML facts unavailable: NVML did not answer within 5 s",
        ),
        id="nvml-timeout-is-unknown",
    ),
]


def test_conflict_fix_names_the_files_and_keeps_the_generated_spec() -> None:
    clash = "/var/run/cdi/nvidia-copy.yaml line 5: device nvidia.com/gpu=0 is also defined by ..."
    files = (
        "/etc/cdi/a.yaml",
        "/etc/cdi/b.yaml",
        "/var/run/cdi/nvidia-copy.yaml",
        "/var/run/cdi/nvidia.yaml",
    )
    result = run(
        "cdi.spec-conflict", NodeFacts(cdi=CdiFacts(conflicts=(clash,), conflict_files=files))
    )
    assert (result.commands, result.notes) == (
        ("sudo rm /etc/cdi/b.yaml", "sudo rm /var/run/cdi/nvidia-copy.yaml"),
        (
            "/etc/cdi/b.yaml duplicates /etc/cdi/a.yaml",
            "/var/run/cdi/nvidia-copy.yaml duplicates /var/run/cdi/nvidia.yaml",
        ),
    )
    assert result.evidence == (
        Evidence("CDI", clash),
        *(Evidence(path, "takes part in the clash") for path in files),
    )
    assert (result.status, result.severity) == (Status.FAIL, None)


@pytest.mark.parametrize(("check_id", "facts", "expected"), CASES)
def test_check(check_id: str, facts: NodeFacts, expected: Result) -> None:
    assert run(check_id, facts) == expected


def test_every_check_is_tested_failing() -> None:
    """Each check fires in a scenario or a case above, so removing one fails a test."""
    from tests.doctor.test_dra import CASES as DRA_CASES
    from tests.doctor.test_scenarios import SCENARIOS

    fired = {c for p in SCENARIOS for c in cast("Iterable[str]", p.values[1])}
    fired |= {cast("str", p.values[0]) for p in CASES}
    fired |= {c for case in DRA_CASES.values() for c in case.problems}
    informational = {"docker.cgroup-driver"}
    assert set(REGISTRY) - fired == informational


def test_a_crashing_check_is_unknown_not_fatal() -> None:
    registry = dict(REGISTRY)

    @check("driver.crash-test", severity=Severity.ERROR, title="t", remedy="r")
    def crash(facts: NodeFacts) -> Result:
        raise KeyError("boom")

    registry["driver.crash-test"] = REGISTRY.pop("driver.crash-test")
    findings = diagnose(NodeFacts(), show=["driver.crash-test"], registry=registry)
    assert [(f.check, f.status, f.summary) for f in findings] == [
        ("driver.crash-test", Status.UNKNOWN, "check crashed (KeyError: 'boom'); please report it")
    ]


def test_needs_root_is_summarised(capsys: pytest.CaptureFixture[str]) -> None:
    facts = cast("NodeFacts", CASES[-3].values[1])
    findings = diagnose(facts, show=["docker.daemon-json-invalid"])
    assert summarize(findings).needs_root == 1
    doctor_render.report(facts, findings, verbose=False, strict=False)
    assert capsys.readouterr().out == (
        "ctk doctor: host, root /, root, ctk 0.1.0\n"
        "\n"
        "docker\n"
        "  [?]    docker.daemon-json-invalid  /etc/docker/daemon.json is not readable without "
        "root\n"
        "\n"
        "0 error(s), 0 warning(s), 0 ok, 0 skipped, 1 unknown.\n"
        "1 check(s) need root; rerun with sudo for a full report.\n"
    )
    assert summarize(findings, strict=True).exit_code == 1


def test_a_hanging_step_is_bounded(tmp_path: Path) -> None:
    release = threading.Event()
    gatherer = Gatherer(HostRoot(tmp_path))
    got = gatherer.bounded("nvml", lambda: "late" if release.wait(5) else "never", "default", 0.05)
    release.set()
    assert (got, gatherer.timings[0].step, gatherer.timings[0].timed_out) == (
        "default",
        "nvml",
        True,
    )


@pytest.mark.parametrize(
    ("env", "marks"),
    [
        pytest.param(
            {"FORCE_COLOR": "1"},
            ["\x1b[32m\u2713\x1b[0m", "\x1b[31m\u2717\x1b[0m"],
            id="terminal-symbols",
        ),
        pytest.param({"FORCE_COLOR": "1", "NO_COLOR": "1"}, ["[ok]", "[FAIL]"], id="no-color"),
        pytest.param(
            {"FORCE_COLOR": "1", "NO_COLOR": ""},
            ["\x1b[32m\u2713\x1b[0m", "\x1b[31m\u2717\x1b[0m"],
            id="empty-no-color-is-unset",
        ),
    ],
)
def test_symbols_only_on_a_colour_terminal(
    env: dict[str, str],
    marks: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("TERM", raising=False)
    findings = diagnose(NodeFacts(), show=["driver.nouveau-loaded", "driver.not-loaded"])
    doctor_render.report(NodeFacts(), findings, verbose=True, strict=False)
    lines = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("  ") and (" driver." in line or "nouveau" in line)
    ]
    assert [line.split()[0] for line in lines] == marks


def test_no_color_means_no_escape_codes_at_all(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("TERM", raising=False)
    findings = diagnose(NodeFacts(), show=["driver.nouveau-loaded", "driver.not-loaded"])
    doctor_render.report(NodeFacts(), findings, verbose=False, strict=False)
    out = capsys.readouterr().out
    assert ("\x1b" in out, "\ndriver\n" in out) == (False, True)


@pytest.mark.parametrize(
    ("where", "code", "status"),
    [
        pytest.param(Where.HOST, 15, Status.FAIL, id="lost-on-host"),
        pytest.param(Where.CONTAINER, 15, Status.FAIL, id="lost-in-container"),
        pytest.param(Where.HOST, 999, Status.FAIL, id="unknown-error-on-host"),
        pytest.param(Where.CONTAINER, 999, Status.SKIP, id="unknown-error-in-container"),
        pytest.param(Where.HOST, 4, Status.SKIP, id="other-init-error"),
        pytest.param(Where.HOST, None, Status.OK, id="nvml-fine"),
    ],
)
def test_gpu_lost(where: Where, code: int | None, status: Status) -> None:
    facts = NodeFacts(where=where, kernel=DRIVER, nvml=NvmlAnswer(error_code=code, error="x"))
    assert run("gpu.lost", facts).status is status


REFRESH_SPEC = SpecFileFacts(path="/etc/cdi/nvidia.yaml", kind="nvidia.com/gpu")


@pytest.mark.parametrize(
    ("packages", "specs", "summary"),
    [
        pytest.param(
            {},
            (REFRESH_SPEC,),
            "no refresh unit needed (/etc/cdi/nvidia.yaml is not in a tmpfs; no toolkit package)",
            id="no-toolkit",
        ),
        pytest.param(
            {"nvidia-container-toolkit": "1.17.8-1"},
            (REFRESH_SPEC,),
            "no refresh unit needed (/etc/cdi/nvidia.yaml is not in a tmpfs; "
            "toolkit 1.17.8 < 1.18)",
            id="toolkit-1.17",
        ),
        pytest.param(
            {"nvidia-container-toolkit": "1.17.8-1"},
            (),
            "no refresh unit needed (no nvidia.com/gpu spec)",
            id="no-spec",
        ),
    ],
)
def test_refresh_not_needed_says_why(
    packages: dict[str, str], specs: tuple[SpecFileFacts, ...], summary: str
) -> None:
    """cdi.refresh-disabled names the toolkit's version only where a toolkit is installed."""
    facts = NodeFacts(
        toolkit=ToolkitFacts(packages=packages), cdi=CdiFacts(dirs=("/etc/cdi",), specs=specs)
    )
    result = run("cdi.refresh-disabled", facts)
    assert (result.status, result.summary) == (Status.OK, summary)
