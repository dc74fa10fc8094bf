"""The cdi checks' findings on facts built here, where they join or count several items (driver
versions, missing host paths, device nodes, spec files, clashing files in sibling directories),
and the legacy injection dev.char-symlinks-missing names (survivors of issue 26's mutation run)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import ctk.doctor.checks  # noqa: F401  (fills the registry)
from ctk.doctor.checks.cdi import conflict_losers
from ctk.doctor.facts import (
    CdiFacts,
    ConfigFile,
    DevFacts,
    EngineFacts,
    KernelFacts,
    NodeFacts,
    NvmlAnswer,
    ProcGpu,
    SpecFileFacts,
    ToolkitFacts,
)
from ctk.doctor.fixes import CreateCharLinks, EnableRefresh, GenerateSpec
from ctk.doctor.model import REGISTRY, Evidence, Result, Status
from ctk.node import CharDevice
from ctk.node.nvml import Gpu, NvmlFacts
from ctk.runtime_config.engines import Runtime

KERNEL = KernelFacts(
    driver_version="550.54.15",
    gpus=(
        ProcGpu(bdf="0000:62:00.0", minor=0, uuid="GPU-aaaa", model="H100"),
        ProcGpu(bdf="0000:63:00.0", minor=1, uuid="GPU-bbbb", model="H100"),
    ),
)
NVML = NvmlAnswer(
    found=NvmlFacts(
        driver_version="550.54.15",
        cuda_driver_version=12040,
        gpus=(
            Gpu(index=0, minor=0, uuid="GPU-aaaa", name="NVIDIA H100", pci_bus_id=""),
            Gpu(index=1, minor=1, uuid="GPU-bbbb", name="NVIDIA H100", pci_bus_id=""),
        ),
    )
)
ETC = "/etc/cdi/nvidia.yaml"
RUN = "/var/run/cdi/nvidia.yaml"
LIBS = tuple(
    f"/usr/lib/x86_64-linux-gnu/libnvidia-{name}.so.535.104.05"
    for name in ("ml", "cfg", "gpucomp", "ptxjitcompiler")
)


def test_a_stale_spec_names_every_driver_and_counts_the_paths_left_out() -> None:
    spec = SpecFileFacts(
        path=ETC,
        kind="nvidia.com/gpu",
        devices=("all",),
        driver_versions=frozenset({"545.23.08", "535.104.05", "550.54.15"}),
        missing_host_paths=LIBS,
    )
    facts = NodeFacts(kernel=KERNEL, cdi=CdiFacts(dirs=("/etc/cdi",), specs=(spec,)))
    assert REGISTRY["cdi.spec-stale"].run(facts) == Result(
        status=Status.FAIL,
        summary=f"{ETC} was generated for driver 535.104.05, 545.23.08 but driver 550.54.15 is "
        "loaded: containers fail at creation or get mismatched libraries",
        evidence=(
            Evidence("/proc/driver/nvidia/version", "550.54.15"),
            Evidence(ETC, "generated for driver 535.104.05, 545.23.08"),
            *(Evidence(ETC, f"mounts {path} (missing)") for path in LIBS[:3]),
            Evidence(ETC, "... and 1 more missing host paths"),
        ),
        fixes=(GenerateSpec(output=ETC), EnableRefresh()),
    )


def _incomplete(facts: NodeFacts, *specs: SpecFileFacts) -> tuple[Evidence, ...]:
    dirs = tuple(sorted({spec.path.rsplit("/", 1)[0] for spec in specs}))
    result = REGISTRY["cdi.spec-incomplete"].run(
        replace(facts, cdi=CdiFacts(dirs=dirs, specs=specs))
    )
    assert result.status is Status.FAIL, result
    assert result.summary == "the CDI spec does not match the node's GPUs: " + "; ".join(
        e.value for e in result.evidence
    )
    return result.evidence


BOTH = f"{ETC}, {RUN}"


@pytest.mark.parametrize(
    ("facts", "specs", "expected"),
    [
        pytest.param(
            NodeFacts(kernel=KERNEL),
            (
                SpecFileFacts(path=ETC, kind="nvidia.com/gpu", devices=("GPU-aaaa",)),
                SpecFileFacts(path=RUN, kind="nvidia.com/gpu", devices=("GPU-bbbb", "GPU-cccc")),
            ),
            (
                Evidence(BOTH, "device GPU-cccc names no GPU of this node (replaced or removed)"),
                Evidence(BOTH, "no device named all"),
            ),
            id="without-nvml-a-replaced-gpu",
        ),
        pytest.param(
            NodeFacts(kernel=KERNEL, nvml=NVML),
            (
                SpecFileFacts(path=ETC, kind="nvidia.com/gpu", devices=("0", "1")),
                SpecFileFacts(path=RUN, kind="nvidia.com/gpu", devices=("GPU-aaaa", "GPU-bbbb")),
            ),
            (Evidence(BOTH, "no device named all"),),
            id="with-nvml-no-all",
        ),
        pytest.param(
            NodeFacts(kernel=KERNEL, nvml=NVML),
            (
                SpecFileFacts(
                    path=RUN,
                    kind="nvidia.com/gpu",
                    devices=("0", "1", "GPU-aaaa", "GPU-bbbb", "all"),
                    device_node_paths={
                        "0": ("/dev/nvidia1", "/dev/nvidia2", "/dev/nvidiactl"),
                        "GPU-bbbb": ("/dev/nvidia1",),
                    },
                ),
            ),
            (
                Evidence(
                    "GPU", "device 0 gives /dev/nvidia1, /dev/nvidia2 but GPU 0 is /dev/nvidia0"
                ),
            ),
            id="a-device-with-other-gpus-nodes",
        ),
    ],
)
def test_spec_incomplete_names_every_spec_and_node(
    facts: NodeFacts, specs: tuple[SpecFileFacts, ...], expected: tuple[Evidence, ...]
) -> None:
    assert _incomplete(facts, *specs) == expected


def test_clashing_files_in_sibling_directories_are_kept_apart() -> None:
    """Each directory keeps one file of its own: the generated one, else the first by name."""
    files = (
        "/opt/cdi/gpu/nvidia.yaml",
        "/opt/cdi/gpu/copy.yaml",
        "/opt/cdi/extra/b.yaml",
        "/opt/cdi/extra/a.yaml",
    )
    assert conflict_losers(files) == {
        "/opt/cdi/extra/b.yaml": "/opt/cdi/extra/a.yaml",
        "/opt/cdi/gpu/copy.yaml": "/opt/cdi/gpu/nvidia.yaml",
    }


def test_char_links_missing_names_the_legacy_mode() -> None:
    """The toolkit's mode legacy injects device nodes the systemd cgroup driver forgets."""
    nvidia0 = CharDevice(
        container_path="/dev/nvidia0", host_path="/dev/nvidia0", major=195, minor=0, file_mode=0o660
    )
    facts = NodeFacts(
        kernel=replace(KERNEL, gpus=KERNEL.gpus[:1], char_majors={"nvidia-frontend": 195}),
        dev=DevFacts(nodes={"/dev/nvidia0": nvidia0}),
        engines={
            Runtime.DOCKER: EngineFacts(
                engine="docker",
                installed=True,
                config_path="/etc/docker/daemon.json",
                cgroup_driver="systemd",
            )
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
    result = REGISTRY["dev.char-symlinks-missing"].run(facts)
    assert (result.status, result.evidence, result.fixes) == (
        Status.WARN,
        (
            Evidence("/etc/docker/daemon.json", "cgroup driver systemd"),
            Evidence("nvidia-container-runtime.mode", "legacy"),
            Evidence("/dev/char", "missing /dev/char/195:0"),
        ),
        (CreateCharLinks(),),
    )
