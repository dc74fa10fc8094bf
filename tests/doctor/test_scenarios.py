"""The catalog's scenario matrix: one fixture node per scenario, the exact set of problems.

Each node is a real tree (real device nodes, a real tmpfs for /dev/shm) read by the real
gatherer, with NVML answered by the real pynvml talking to the fake libnvidia-ml.so.1 placed in
the node's library directory. A check that is removed or fires wrongly fails these tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctk.cli.app import main
from tests.doctor.nodes import materialise, scenario_names
from tests.fake_nvml import TOPOLOGY_ENV, SkipNode
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401  (pytest fixture)

SCENARIOS = [
    pytest.param("healthy", set(), set(), id="healthy"),
    pytest.param("no-driver", {"driver.not-loaded"}, set(), id="no-driver"),
    pytest.param("nouveau", {"driver.nouveau-loaded", "driver.not-loaded"}, set(), id="nouveau"),
    pytest.param("secure-boot", {"driver.secure-boot-blocked"}, set(), id="secure-boot"),
    pytest.param(
        "mismatch-after-upgrade", {"driver.library-mismatch"}, set(), id="mismatch-after-upgrade"
    ),
    pytest.param(
        "cdi-missing", {"cdi.spec-missing", "toolkit.mode-mismatch"}, set(), id="cdi-missing"
    ),
    pytest.param("cdi-stale", {"cdi.spec-stale"}, set(), id="cdi-stale"),
    pytest.param("cdi-conflict", {"cdi.spec-conflict"}, set(), id="cdi-same-directory-conflict"),
    pytest.param(
        "cdi-conflict-stale", {"cdi.spec-conflict"}, set(), id="cdi-conflict-with-a-stale-copy"
    ),
    pytest.param(
        "cdi-conflict-incomplete",
        {"cdi.spec-conflict", "cdi.spec-incomplete"},
        set(),
        id="cdi-conflict-and-incomplete-for-another-reason",
    ),
    pytest.param("cdi-override", set(), set(), id="cdi-override-across-directories"),
    pytest.param("cdi-incomplete", {"cdi.spec-incomplete"}, set(), id="cdi-incomplete"),
    pytest.param("cdi-gpu-replaced", {"cdi.spec-incomplete"}, set(), id="cdi-gpu-replaced"),
    pytest.param("cdi-wrong-minor", {"cdi.spec-incomplete"}, set(), id="cdi-index-names-moved"),
    pytest.param("dev-nodes-missing", {"dev.nodes-missing"}, set(), id="dev-nodes-missing"),
    pytest.param(
        "a100-mig-no-instances",
        {"mig.enabled-without-instances"},
        set(),
        id="mig-enabled-without-instances",
    ),
    pytest.param(
        "a100-mig-not-in-spec", {"mig.not-in-cdi-spec"}, set(), id="mig-missing-from-spec"
    ),
    pytest.param(
        "docker-no-runtime", {"docker.runtime-not-configured"}, set(), id="docker-not-configured"
    ),
    pytest.param(
        "docker-invalid-json", {"docker.daemon-json-invalid"}, set(), id="docker-invalid-json"
    ),
    pytest.param("docker-snap", {"docker.snap"}, set(), id="docker-snap"),
    pytest.param(
        "containerd-docker-certs", set(), set(), id="docker-certs-dir-on-containerd-node-healthy"
    ),
    pytest.param("docker-cdi-only", set(), set(), id="docker-cdi-only-no-runtime-healthy"),
    pytest.param("docker-host", set(), set(), id="docker-host-containerd-cri-off-healthy"),
    pytest.param(
        "rootless-docker",
        {"docker.rootless-config", "toolkit.rootless-no-cgroups"},
        set(),
        id="rootless-docker",
    ),
    pytest.param("systemd-legacy", {"dev.char-symlinks-missing"}, set(), id="dev-char-links"),
    pytest.param(
        "legacy-nvidia-docker2", {"toolkit.legacy-nvidia-docker2"}, set(), id="nvidia-docker2"
    ),
    pytest.param(
        "containerd-dropin-orphan",
        {"containerd.drop-in-not-imported", "containerd.runtime-not-configured"},
        set(),
        id="containerd-drop-in-not-imported",
    ),
    pytest.param(
        "containerd-config-invalid",
        {"containerd.runtime-not-configured"},
        set(),
        id="containerd-config-does-not-parse",
    ),
    pytest.param(
        "containerd-cgroup-mismatch",
        {"containerd.systemd-cgroup-mismatch"},
        set(),
        id="containerd-systemd-cgroup",
    ),
    pytest.param(
        "kubelet-cgroupfs",
        {"containerd.systemd-cgroup-mismatch"},
        set(),
        id="kubelet-cgroupfs-vs-systemd",
    ),
    pytest.param(
        "ldconfig-real-on-rhel", {"toolkit.ldconfig-path"}, set(), id="ldconfig-real-on-rhel"
    ),
    pytest.param("ldconfig-usr-sbin", {"toolkit.ldconfig-path"}, set(), id="ldconfig-usr-sbin"),
    pytest.param("toolkit-config-dir", {"toolkit.config-invalid"}, set(), id="toolkit-config-dir"),
    pytest.param(
        "old-toolkit-cgroupv2",
        {"host.cgroup-v2-legacy-stack", "toolkit.too-old", "toolkit.security-outdated"},
        set(),
        id="old-toolkit-cgroup-v2",
    ),
    pytest.param(
        "toolkit-config-invalid", {"toolkit.config-invalid"}, set(), id="toolkit-config-invalid"
    ),
    pytest.param("container", set(), set(), id="container-healthy"),
    pytest.param("container-shm-64m", {"container.shm-too-small"}, set(), id="container-shm-64m"),
    pytest.param(
        "container-driver-in-image",
        {"container.driver-in-image"},
        set(),
        id="container-driver-in-image",
    ),
    pytest.param("container-535", set(), set(), id="container-535-no-requirement"),
    pytest.param("container-old-driver", {"cuda.driver-too-old"}, set(), id="container-old-driver"),
    pytest.param("rtx-forward-compat", {"cuda.driver-too-old"}, set(), id="geforce-old-driver"),
    pytest.param(
        "container-compat-geforce",
        {"cuda.driver-too-old", "cuda.forward-compat-unusable"},
        set(),
        id="cuda-compat-on-geforce",
    ),
    pytest.param(
        "container-compat-datacenter",
        {"cuda.driver-too-old"},
        set(),
        id="cuda-compat-on-h100-usable",
    ),
    pytest.param("container-new-major", {"cuda.driver-too-old"}, set(), id="container-new-major"),
    pytest.param(
        "container-mvc",
        {"cuda.minor-compat-only", "cuda.requirement-check-disabled"},
        set(),
        id="container-mvc",
    ),
    pytest.param("container-no-gpu", {"container.no-gpu-attached"}, set(), id="container-no-gpu"),
    pytest.param("container-stub", {"lib.libcuda-stub"}, set(), id="container-libcuda-stub"),
    pytest.param("debug-pod", {"container.no-gpu-attached"}, set(), id="node-debug-pod"),
    pytest.param(
        "pod-cgroupv2", {"container.shm-too-small"}, set(), id="cri-pod-found-by-overlay-root"
    ),
    pytest.param("pod-unrequested", {"k8s.unrequested-gpu-access"}, set(), id="pod-unrequested"),
    pytest.param(
        "pod-hami-no-preload", {"hami.libvgpu-not-loaded"}, set(), id="pod-hami-no-preload"
    ),
    pytest.param(
        "pod-hami-limit-ignored",
        {"hami.memory-limit-not-enforced"},
        set(),
        id="pod-hami-nvml-reports-full-memory",
    ),
    pytest.param("nvml-unknown-host", {"gpu.lost"}, set(), id="nvml-unknown-error-on-host"),
    pytest.param("nvml-not-found", {"lib.nvml-not-found"}, set(), id="nvml-not-found"),
    pytest.param("libcuda-not-found", {"lib.libcuda-not-found"}, set(), id="libcuda-not-found"),
    pytest.param("gpu-leftover", {"gpu.leftover-processes"}, set(), id="gpu-leftover-zombie"),
    pytest.param(
        "gpu-leftover-nvml", {"gpu.leftover-processes"}, set(), id="gpu-leftover-gone-and-orphaned"
    ),
    pytest.param("a100-mig-pending", {"mig.mode-pending"}, set(), id="a100-mig-pending"),
    pytest.param(
        "a100-mig-leftover-unprivileged",
        {"gpu.leftover-processes"},
        set(),
        id="mig-leftover-found-through-mig-handles",
    ),
    pytest.param(
        "blackwell-proprietary",
        {"driver.kernel-module-flavor"},
        set(),
        id="blackwell-needs-open-modules",
    ),
    pytest.param("gpu-vfio", {"driver.gpu-not-enumerated"}, set(), id="gpu-bound-to-vfio"),
    pytest.param("toolkit-cve", {"toolkit.security-outdated"}, set(), id="toolkit-1.17.3-cves"),
    pytest.param(
        "envvar-default",
        {"toolkit.unprivileged-envvar-accepted"},
        set(),
        id="unprivileged-envvar-with-nvidia-default",
    ),
    pytest.param("cdi-invalid", {"cdi.spec-invalid"}, set(), id="cdi-invalid"),
    pytest.param("crio-no-runtime", {"crio.runtime-not-configured"}, set(), id="crio-no-runtime"),
    pytest.param("k3s", {"containerd.managed-config"}, set(), id="k3s-managed-config"),
    pytest.param(
        "toolkit-missing",
        {"toolkit.not-installed", "cdi.spec-stale"},
        set(),
        id="toolkit-missing-spec-hook-gone",
    ),
    pytest.param(
        "oci-hook-and-cdi", {"toolkit.conflicting-oci-hook"}, set(), id="oci-hook-and-cdi"
    ),
    pytest.param("docker-cdi-off", {"docker.cdi-not-enabled"}, set(), id="docker-cdi-off"),
    pytest.param("refresh-disabled", {"cdi.refresh-disabled"}, set(), id="refresh-disabled"),
    pytest.param("uvm-missing", {"driver.uvm-missing"}, set(), id="uvm-missing"),
    pytest.param(
        "mig-cap-nodes-missing", {"dev.mig-cap-nodes-missing"}, set(), id="mig-cap-nodes-missing"
    ),
    pytest.param("a100-mig-mixed", set(), set(), id="a100-mig-mixed-healthy"),
    pytest.param("selinux", {"dev.selinux-blocks"}, set(), id="selinux-enforcing"),
    pytest.param(
        "container-visible-misuse",
        {"container.visible-devices-misuse"},
        set(),
        id="cuda-visible-devices-out-of-range",
    ),
    pytest.param(
        "containerd-cdi-off", {"containerd.cdi-disabled"}, set(), id="containerd-cdi-disabled"
    ),
    pytest.param(
        "pod-nvml-unknown",
        {"container.nvml-unknown-error"},
        {"mig.whole-gpu-in-container"},
        id="pod-nvml-unknown",
    ),
]


def run_doctor(
    root: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    """`ctk doctor --json --root ROOT`: the exit code and the parsed document."""
    code = main(["doctor", "--json", "--root", str(root), *extra])
    captured = capsys.readouterr()
    assert captured.err == ""
    return code, json.loads(captured.out)


@pytest.mark.parametrize(("node", "problems", "unknowns"), SCENARIOS)
def test_scenario(  # noqa: PLR0917  (pytest passes parameters and fixtures by position)
    node: str,
    problems: set[str],
    unknowns: set[str],
    fake_nvml_library: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        with materialise(node, tmp_path, fake_nvml_library) as built:
            monkeypatch.setenv(TOPOLOGY_ENV, str(built.topology))
            code, document = run_doctor(built.root, capsys)
    except SkipNode as exc:
        pytest.skip(str(exc))
    found = {c["id"] for c in document["checks"] if c["status"] in ("fail", "warn")}
    unknown = {c["id"] for c in document["checks"] if c["status"] == "unknown"}
    assert (found, unknown) == (problems, unknowns)
    errors = [c for c in document["checks"] if c["status"] == "fail" and c["severity"] == "error"]
    assert code == (1 if errors else 0)
    assert document["summary"]["root_cause"] == (
        errors[0]["id"]
        if errors
        else next(
            (
                c["id"]
                for c in document["checks"]
                if c["status"] in ("fail", "warn") and c["severity"] != "info"
            ),
            None,
        )
    )


@pytest.mark.parametrize(
    ("node", "summary"),
    [
        pytest.param(
            "cdi-conflict",
            "skipped: the spec is complete once cdi.spec-conflict is fixed",
            id="identical-copy",
        ),
        pytest.param(
            "cdi-conflict-stale",
            "skipped: the spec is complete once cdi.spec-conflict is fixed",
            id="stale-copy",
        ),
    ],
)
def test_a_clash_blocks_spec_incomplete(  # noqa: PLR0917
    node: str,
    summary: str,
    fake_nvml_library: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What a same-directory clash drops is cdi.spec-conflict's finding, not a second one."""
    try:
        with materialise(node, tmp_path, fake_nvml_library) as built:
            monkeypatch.setenv(TOPOLOGY_ENV, str(built.topology))
            _, document = run_doctor(built.root, capsys, "--check", "cdi.spec-incomplete")
    except SkipNode as exc:
        pytest.skip(str(exc))
    [finding] = document["checks"]
    assert (finding["status"], finding["summary"], finding["blocked_by"]) == (
        "skip",
        summary,
        ["cdi.spec-conflict"],
    )


def test_every_scenario_is_in_the_table() -> None:
    listed = {p.values[0] for p in SCENARIOS}
    assert set(scenario_names()) - {"base"} == listed
