# ruff: noqa: E501  (the summaries are data, compared whole)
"""The catalog's scenario matrix: one fixture node per scenario, each problem and its summary.

Each node is a real tree (real device nodes, a real tmpfs for /dev/shm) read by the real
gatherer, with NVML answered by the real pynvml talking to the fake libnvidia-ml.so.1 placed in
the node's library directory. A check that is removed or fires wrongly fails these tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import DOCTOR_NODES, FakeNode, names


def _json_error(text: str) -> str:
    """Python's own words for why ``text`` is not JSON (3.13 names a trailing comma)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    raise AssertionError("valid JSON")


SCENARIOS = [
    pytest.param(
        "healthy",
        {},
        set(),
        id="healthy",
    ),
    pytest.param(
        "no-driver",
        {
            "driver.not-loaded": "no NVIDIA kernel module is loaded",
        },
        set(),
        id="no-driver",
    ),
    pytest.param(
        "nouveau",
        {
            "driver.nouveau-loaded": "the open-source nouveau driver is loaded, so the nvidia module cannot bind the GPU",
            "driver.not-loaded": "no NVIDIA kernel module is loaded; nouveau holds the GPU (see driver.nouveau-loaded)",
        },
        set(),
        id="nouveau",
    ),
    pytest.param(
        "secure-boot",
        {
            "driver.secure-boot-blocked": "Secure Boot is on and the nvidia module built for this kernel is not loaded: the firmware most likely rejects its signature",
        },
        set(),
        id="secure-boot",
    ),
    pytest.param(
        "mismatch-after-upgrade",
        {
            "driver.library-mismatch": "kernel module 550.54.15 is loaded but the driver libraries are 550.90.07: the driver was upgraded without a reboot",
        },
        set(),
        id="mismatch-after-upgrade",
    ),
    pytest.param(
        "cdi-missing",
        {
            "toolkit.mode-mismatch": "the toolkit is in mode cdi but no nvidia.com/gpu CDI spec exists: every GPU container fails with 'unresolvable CDI devices'",
            "cdi.spec-missing": "no nvidia.com/gpu CDI spec in /etc/cdi, /var/run/cdi: CDI requests fail with 'unresolvable CDI devices nvidia.com/gpu=all'",
        },
        set(),
        id="cdi-missing",
    ),
    pytest.param(
        "podman-installed-legacy-docker",
        {
            "cdi.spec-missing": "no nvidia.com/gpu CDI spec in /etc/cdi, /var/run/cdi: CDI requests fail with 'unresolvable CDI devices nvidia.com/gpu=all' (nothing here is set up to request them yet)",
        },
        set(),
        id="podman-installed-is-not-a-cdi-user",
    ),
    pytest.param(
        "cdi-stale",
        {
            "cdi.spec-stale": "/var/run/cdi/nvidia.yaml was generated for driver 535.104.05 but driver 550.54.15 is loaded: containers fail at creation or get mismatched libraries",
        },
        set(),
        id="cdi-stale",
    ),
    pytest.param(
        "cdi-conflict",
        {
            "cdi.spec-conflict": "10 CDI device definition(s) clash within one spec directory; runtimes drop those devices (unresolvable CDI devices)",
        },
        set(),
        id="cdi-same-directory-conflict",
    ),
    pytest.param(
        "cdi-conflict-stale",
        {
            "cdi.spec-conflict": "6 CDI device definition(s) clash within one spec directory; runtimes drop those devices (unresolvable CDI devices)",
        },
        set(),
        id="cdi-conflict-with-a-stale-copy",
    ),
    pytest.param(
        "cdi-conflict-json",
        {
            "cdi.spec-conflict": "6 CDI device definition(s) clash within one spec directory; runtimes drop those devices (unresolvable CDI devices)",
        },
        set(),
        id="cdi-conflict-keeps-the-generated-json",
    ),
    pytest.param(
        "cdi-conflict-incomplete",
        {
            "cdi.spec-incomplete": "the CDI spec does not match the node's GPUs: GPU 1 (GPU-9221d5d1-b60b-a624-bf14-0a1819cfda31) has no CDI device; no device named all",
            "cdi.spec-conflict": "2 CDI device definition(s) clash within one spec directory; runtimes drop those devices (unresolvable CDI devices)",
        },
        set(),
        id="cdi-conflict-and-incomplete-for-another-reason",
    ),
    pytest.param(
        "cdi-override",
        {},
        set(),
        id="cdi-override-across-directories",
    ),
    pytest.param(
        "cdi-incomplete",
        {
            "cdi.spec-incomplete": "the CDI spec does not match the node's GPUs: GPU 1 (GPU-9221d5d1-b60b-a624-bf14-0a1819cfda31) has no CDI device; no device named all",
        },
        set(),
        id="cdi-incomplete",
    ),
    pytest.param(
        "cdi-gpu-replaced",
        {
            "cdi.spec-incomplete": "the CDI spec does not match the node's GPUs: GPU 1 (GPU-5e2c0a44-0d1f-4c7e-9b1a-77f3a9c4e001) has no CDI device; device GPU-9221d5d1-b60b-a624-bf14-0a1819cfda31 names no device of this node (replaced or removed)",
        },
        set(),
        id="cdi-gpu-replaced",
    ),
    pytest.param(
        "cdi-wrong-minor",
        {
            "cdi.spec-incomplete": "the CDI spec does not match the node's GPUs: device 0 gives /dev/nvidia1 but GPU 0 is /dev/nvidia0; device 1 gives /dev/nvidia0 but GPU 1 is /dev/nvidia1",
        },
        set(),
        id="cdi-index-names-moved",
    ),
    pytest.param(
        "dev-nodes-missing",
        {
            "dev.nodes-missing": "1 NVIDIA device node(s) missing or wrong: /dev/nvidia1",
        },
        set(),
        id="dev-nodes-missing",
    ),
    pytest.param(
        "a100-mig-no-instances",
        {
            "mig.enabled-without-instances": "MIG is enabled on GPU 0 but no GPU instance exists: the GPU is unusable until instances are created (they do not survive reboot)",
        },
        set(),
        id="mig-enabled-without-instances",
    ),
    pytest.param(
        "a100-mig-not-in-spec",
        {
            "mig.not-in-cdi-spec": "2 MIG device(s) are not in the CDI spec: requests for them fail with 'unresolvable CDI devices' (the refresh unit does not run on MIG changes)",
        },
        set(),
        id="mig-missing-from-spec",
    ),
    pytest.param(
        "docker-no-runtime",
        {
            "docker.runtime-not-configured": "Docker has no usable nvidia runtime: `docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
        },
        set(),
        id="docker-not-configured",
    ),
    pytest.param(
        "nvidia-ctk-only",
        {
            "docker.runtime-not-configured": "Docker has no usable nvidia runtime: `docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
        },
        set(),
        id="docker-not-configured-nvidia-ctk-only",
    ),
    pytest.param(
        "docker-invalid-json",
        {
            "docker.daemon-json-invalid": "/etc/docker/daemon.json does not parse: /etc/docker/daemon.json: not valid JSON: "
            + _json_error(
                '{\n  "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},\n}\n'
            ),
        },
        set(),
        id="docker-invalid-json",
    ),
    pytest.param(
        "docker-snap",
        {
            "docker.snap": "Docker is installed as a snap: its confinement hides the host driver libraries and the NVIDIA runtime",
        },
        set(),
        id="docker-snap",
    ),
    pytest.param(
        "containerd-docker-certs",
        {},
        set(),
        id="docker-certs-dir-on-containerd-node-healthy",
    ),
    pytest.param(
        "docker-cdi-only",
        {},
        set(),
        id="docker-cdi-only-no-runtime-healthy",
    ),
    pytest.param(
        "ctk-cdi-only",
        {},
        set(),
        id="ctk-cdi-only-no-toolkit-healthy",
    ),
    pytest.param(
        "vm-from-image",
        {},
        set(),
        id="vm-from-an-image-is-a-host",
    ),
    pytest.param(
        "ctk-cdi-no-engine",
        {},
        set(),
        id="ctk-cdi-no-engine-yet",
    ),
    pytest.param(
        "crio-cdi-only",
        {},
        set(),
        id="crio-cdi-only-no-toolkit-healthy",
    ),
    pytest.param(
        "containerd-cdi-only",
        {},
        set(),
        id="containerd-cdi-only-no-nvidia-runtime-healthy",
    ),
    pytest.param(
        "containerd-2-cdi-only",
        {
            "containerd.runtime-not-configured": "containerd has no nvidia runtime: only CDI requests (a device plugin or DRA driver handing out CDI devices) get GPUs from /var/run/cdi/nvidia.yaml; NVIDIA_VISIBLE_DEVICES and runtimeClassName nvidia get no GPU",
        },
        set(),
        id="containerd-2-cdi-by-default-no-nvidia-runtime-info",
    ),
    pytest.param(
        "crio-cdi-only-no-handler",
        {},
        set(),
        id="crio-cdi-only-no-handler-no-toolkit-healthy",
    ),
    pytest.param(
        "crio-no-runtime-dir-unread",
        {
            "crio.runtime-not-configured": "CRI-O has no usable nvidia runtime",
        },
        set(),
        id="crio-no-runtime-spec-outside-its-dirs",
    ),
    pytest.param(
        "docker-cdi-default-no-runtime",
        {
            "docker.runtime-not-configured": "Docker has no nvidia runtime: only CDI requests (docker run --device nvidia.com/gpu=...) get GPUs from /var/run/cdi/nvidia.yaml; `docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
        },
        set(),
        id="docker-28.2-cdi-by-default-no-nvidia-runtime-info",
    ),
    pytest.param(
        "docker-cdi-dirs-empty",
        {
            "docker.runtime-not-configured": "Docker has no usable nvidia runtime: `docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
        },
        set(),
        id="docker-cdi-spec-dirs-empty-list-reads-none",
    ),
    pytest.param(
        "docker-cdi-dirs-blank",
        {
            "docker.runtime-not-configured": "Docker has no usable nvidia runtime: `docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'",
        },
        set(),
        id="docker-cdi-spec-dirs-blank-entry-reads-none",
    ),
    pytest.param(
        "containerd-cdi-only-dir-unread",
        {
            "containerd.runtime-not-configured": "containerd has no usable nvidia runtime: pods fail with 'no runtime for \"nvidia\" is configured'",
        },
        set(),
        id="containerd-cdi-only-spec-outside-its-dirs",
    ),
    pytest.param(
        "ctk-cdi-dir-unread",
        {
            "toolkit.not-installed": "the NVIDIA Container Toolkit is not installed: no engine can inject GPUs",
        },
        set(),
        id="ctk-cdi-spec-in-a-dir-no-engine-reads",
    ),
    pytest.param(
        "ctk-cdi-engine-off",
        {
            "toolkit.not-installed": "the NVIDIA Container Toolkit is not installed: no engine can inject GPUs",
        },
        set(),
        id="ctk-cdi-engine-off",
    ),
    pytest.param(
        "docker-host",
        {},
        set(),
        id="docker-host-containerd-cri-off-healthy",
    ),
    pytest.param(
        "docker-host-cri-leftover",
        {},
        set(),
        id="docker-host-containerd-cri-config-unused-healthy",
    ),
    pytest.param(
        "rootless-docker",
        {
            "toolkit.rootless-no-cgroups": "a rootless Docker daemon is configured but the toolkit still programs device cgroups: containers fail with 'bpf_prog_query(BPF_CGROUP_DEVICE) failed'",
            "docker.rootless-config": "rootless Docker reads /home/alice/.config/docker/daemon.json, which has no nvidia runtime",
        },
        set(),
        id="rootless-docker",
    ),
    pytest.param(
        "systemd-legacy",
        {
            "dev.char-symlinks-missing": "containers will lose GPU access after `systemctl daemon-reload` (NVML: Unknown Error): the systemd cgroup driver rebuilds device rules from /dev/char and 5 NVIDIA link(s) are missing",
        },
        set(),
        id="dev-char-links",
    ),
    pytest.param(
        "docker-cgroupfs-containerd-cri",
        {},
        set(),
        id="dev-char-links-not-needed-docker-cgroupfs-containerd-serves-docker",
    ),
    pytest.param(
        "legacy-nvidia-docker2",
        {
            "toolkit.legacy-nvidia-docker2": "the deprecated nvidia-docker2 stack is still installed (archived project; upgrades from it often lose the nvidia runtime in daemon.json)",
        },
        set(),
        id="nvidia-docker2",
    ),
    pytest.param(
        "containerd-dropin-orphan",
        {
            "containerd.drop-in-not-imported": "containerd ignores /etc/containerd/conf.d/99-nvidia.toml: /etc/containerd/config.toml does not import it",
            "containerd.runtime-not-configured": "containerd has no usable nvidia runtime: pods fail with 'no runtime for \"nvidia\" is configured'",
        },
        set(),
        id="containerd-drop-in-not-imported",
    ),
    pytest.param(
        "containerd-dropin-stale-copy",
        {
            "containerd.drop-in-copy-stale": "/etc/containerd/conf.d/99-nvidia.toml carries an old copy of containerd's CRI settings: containerd uses the copy's containerd.runtimes.runc.options.SystemdCgroup, restrict_oom_score_adj, not what /etc/containerd/config.toml and the files before the drop-in say now",
        },
        set(),
        id="containerd-drop-in-copy-stale",
    ),
    pytest.param(
        "containerd-config-invalid",
        {
            "containerd.runtime-not-configured": "/etc/containerd/config.toml does not parse: /etc/containerd/config.toml: not valid TOML: Expected ']' at the end of a table declaration (at line 6, column 9)",
        },
        set(),
        id="containerd-config-does-not-parse",
    ),
    pytest.param(
        "containerd-cgroup-mismatch",
        {
            "containerd.systemd-cgroup-mismatch": "the nvidia runtime's SystemdCgroup differs from runc's: pods fail with 'expected cgroupsPath to be of format \"slice:prefix:name\"' or land in the wrong hierarchy",
        },
        set(),
        id="containerd-systemd-cgroup",
    ),
    pytest.param(
        "kubelet-cgroupfs",
        {
            "containerd.systemd-cgroup-mismatch": "the nvidia runtime's SystemdCgroup differs from kubelet's: pods fail with 'expected cgroupsPath to be of format \"slice:prefix:name\"' or land in the wrong hierarchy",
        },
        set(),
        id="kubelet-cgroupfs-vs-systemd",
    ),
    pytest.param(
        "ldconfig-real-on-rhel",
        {
            "toolkit.ldconfig-path": "the toolkit runs ldconfig from /sbin/ldconfig.real, which does not exist: containers fail with 'ldcache error: open failed: /sbin/ldconfig.real: no such file or directory'",
        },
        set(),
        id="ldconfig-real-on-rhel",
    ),
    pytest.param(
        "toolkit-config-env",
        {
            "toolkit.ldconfig-path": "the toolkit runs ldconfig from /sbin/ldconfig.real, which does not exist: containers fail with 'ldcache error: open failed: /sbin/ldconfig.real: no such file or directory'",
        },
        set(),
        id="toolkit-config-from-env",
    ),
    pytest.param(
        "ldconfig-usr-sbin",
        {
            "toolkit.ldconfig-path": "the toolkit runs ldconfig from /sbin/ldconfig, which does not exist: containers fail with 'ldcache error: open failed: /sbin/ldconfig: no such file or directory'",
        },
        set(),
        id="ldconfig-usr-sbin",
    ),
    pytest.param(
        "toolkit-config-dir",
        {
            "toolkit.config-invalid": "/etc/nvidia-container-runtime/config.toml does not parse: a directory; remove it first",
        },
        set(),
        id="toolkit-config-dir",
    ),
    pytest.param(
        "old-toolkit-cgroupv2",
        {
            "toolkit.too-old": "libnvidia-container 1.7.0 is too old: cgroup v2 needs >= 1.8; drivers that split the GSP firmware into several files need >= 1.13; drivers that ship libnvidia-gpucomp.so need >= 1.14",
            "toolkit.security-outdated": "toolkit 1.7.0 is affected by CVE-2024-0132, CVE-2025-23359, CVE-2025-23266 (container escape)",
            "host.cgroup-v2-legacy-stack": "cgroup v2 host with libnvidia-container 1.7.0: containers fail with 'cgroup subsystem devices not found'",
        },
        set(),
        id="old-toolkit-cgroup-v2",
    ),
    pytest.param(
        "toolkit-config-invalid",
        {
            "toolkit.config-invalid": "/etc/nvidia-container-runtime/config.toml does not parse: Invalid value (at line 2, column 8)",
        },
        set(),
        id="toolkit-config-invalid",
    ),
    pytest.param(
        "container",
        {},
        set(),
        id="container-healthy",
    ),
    pytest.param(
        "container-shm-64m",
        {
            "container.shm-too-small": "/dev/shm is 64 MiB (the 64 MiB Docker default or less): PyTorch DataLoader workers die with 'Bus error' and NCCL's shared-memory transport fails",
        },
        set(),
        id="container-shm-64m",
    ),
    pytest.param(
        "container-driver-in-image",
        {
            "container.driver-in-image": "the image ships its own driver libraries (/usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01) that shadow the host driver 550.54.15: expect 'Driver/library version mismatch'",
        },
        set(),
        id="container-driver-in-image",
    ),
    pytest.param(
        "container-535",
        {},
        set(),
        id="container-535-no-requirement",
    ),
    pytest.param(
        "container-old-driver",
        {
            "cuda.driver-too-old": "the workload needs CUDA 12.8 but driver 535.104.05 supports 12.2: the runtime refuses the container (unsatisfied condition: cuda>=12.8); it would probably run under minor-version compatibility with NVIDIA_DISABLE_REQUIRE=1 (no PTX JIT, no newer APIs)",
        },
        set(),
        id="container-old-driver",
    ),
    pytest.param(
        "rtx-forward-compat",
        {
            "cuda.driver-too-old": "the workload needs CUDA 12.8 but driver 535.104.05 supports 12.2: the runtime refuses the container (unsatisfied condition: cuda>=12.8); it would probably run under minor-version compatibility with NVIDIA_DISABLE_REQUIRE=1 (no PTX JIT, no newer APIs)",
        },
        set(),
        id="geforce-old-driver",
    ),
    pytest.param(
        "container-compat-geforce",
        {
            "cuda.driver-too-old": "the workload needs CUDA 12.8 but driver 535.104.05 supports 12.2: the runtime refuses the container (unsatisfied condition: cuda>=12.8); it would probably run under minor-version compatibility with NVIDIA_DISABLE_REQUIRE=1 (no PTX JIT, no newer APIs)",
            "cuda.forward-compat-unusable": "the image's compat libcuda 570.124.06 cannot work on this host: LD_LIBRARY_PATH forces it first, so CUDA fails with error 804",
        },
        set(),
        id="cuda-compat-on-geforce",
    ),
    pytest.param(
        "container-compat-datacenter",
        {
            "cuda.driver-too-old": "the workload needs CUDA 12.8 but driver 535.104.05 supports 12.2: the runtime refuses the container (unsatisfied condition: cuda>=12.8); it would probably run under minor-version compatibility with NVIDIA_DISABLE_REQUIRE=1 (no PTX JIT, no newer APIs)",
        },
        set(),
        id="cuda-compat-on-h100-usable",
    ),
    pytest.param(
        "container-fwd-compat-missing",
        {
            "cuda.driver-too-old": "the workload needs CUDA 10.2 but driver 418.87.01 supports 10.1; the requirement holds only through brand=tesla,driver>=418,driver<419, which counts on forward compatibility: the image has no cuda-compat libraries, so CUDA fails with 'CUDA driver version is insufficient for CUDA runtime version'",
        },
        set(),
        id="cuda-10.2-on-418-without-compat",
    ),
    pytest.param(
        "container-fwd-compat-unused",
        {
            "cuda.driver-too-old": "the workload needs CUDA 10.2 but driver 418.87.01 supports 10.1; the requirement holds only through brand=tesla,driver>=418,driver<419, which counts on forward compatibility: nothing shows it applies here, and without it CUDA fails with 'CUDA driver version is insufficient for CUDA runtime version'",
        },
        set(),
        id="cuda-10.2-on-418-compat-not-used",
    ),
    pytest.param(
        "container-fwd-compat-used",
        {},
        set(),
        id="cuda-10.2-on-418-compat-mounted",
    ),
    pytest.param(
        "container-new-major",
        {
            "cuda.driver-too-old": "the workload needs CUDA 13.0 but driver 535.104.05 supports 12.2: the runtime refuses the container (unsatisfied condition: cuda>=13.0)",
        },
        set(),
        id="container-new-major",
    ),
    pytest.param(
        "container-mvc",
        {
            "cuda.minor-compat-only": "CUDA 12.6 runs on driver 535.104.05 only through minor-version compatibility: kernels shipped as PTX fail to JIT and newer APIs return 'not supported'",
            "cuda.requirement-check-disabled": "NVIDIA_DISABLE_REQUIRE is set: the runtime does not refuse this container although the driver does not meet its CUDA requirement",
        },
        set(),
        id="container-mvc",
    ),
    pytest.param(
        "container-no-gpu",
        {
            "container.no-gpu-attached": "this container has no GPU: no /dev/nvidia* device node was injected",
        },
        set(),
        id="container-no-gpu",
    ),
    pytest.param(
        "container-stub",
        {
            "lib.libcuda-stub": "libcuda resolves to the CUDA toolkit's link-time stub: CUDA will fail with error 34 (CUDA driver is a stub library)",
        },
        set(),
        id="container-libcuda-stub",
    ),
    pytest.param(
        "debug-pod",
        {
            "container.no-gpu-attached": "this container has no GPU: no /dev/nvidia* device node was injected",
        },
        set(),
        id="node-debug-pod",
    ),
    pytest.param(
        "pod-cgroupv2",
        {
            "container.shm-too-small": "/dev/shm is 64 MiB (the 64 MiB Docker default or less): PyTorch DataLoader workers die with 'Bus error' and NCCL's shared-memory transport fails",
        },
        set(),
        id="cri-pod-found-by-overlay-root",
    ),
    pytest.param(
        "pod-unrequested",
        {
            "k8s.unrequested-gpu-access": "the pod sees 2 GPU(s) through NVIDIA_VISIBLE_DEVICES=all without a device plugin allocation: it bypasses the scheduler",
        },
        set(),
        id="pod-unrequested",
    ),
    pytest.param(
        "pod-hami-no-preload",
        {
            "hami.libvgpu-not-loaded": "HAMi limits are set but libvgpu.so is not preloaded: nothing enforces them",
        },
        set(),
        id="pod-hami-no-preload",
    ),
    pytest.param(
        "pod-hami-limit-ignored",
        {
            "hami.memory-limit-not-enforced": "NVML reports the full GPU memory, not HAMi's limit: the limit is not enforced",
        },
        set(),
        id="pod-hami-nvml-reports-full-memory",
    ),
    pytest.param(
        "nvml-unknown-host",
        {
            "gpu.lost": "NVML fails with 'Unknown Error' (999) although the driver is loaded: a GPU fell off the bus or the driver lost it; GPU containers cannot start",
        },
        set(),
        id="nvml-unknown-error-on-host",
    ),
    pytest.param(
        "nvml-not-found",
        {
            "lib.nvml-not-found": "the dynamic loader cannot find libnvidia-ml.so.1: the driver's user-space libraries are missing or ldconfig was not run",
        },
        set(),
        id="nvml-not-found",
    ),
    pytest.param(
        "libcuda-not-found",
        {
            "lib.libcuda-not-found": "the dynamic loader cannot find libcuda.so.1: the driver's user-space libraries are missing or ldconfig was not run",
        },
        set(),
        id="libcuda-not-found",
    ),
    pytest.param(
        "gpu-leftover",
        {
            "gpu.leftover-processes": "GPU memory is held by dead, stuck or missing processes",
        },
        set(),
        id="gpu-leftover-zombie",
    ),
    pytest.param(
        "gpu-leftover-nvml",
        {
            "gpu.leftover-processes": "GPU memory is held by dead, stuck or missing processes",
        },
        set(),
        id="gpu-leftover-gone-and-orphaned",
    ),
    pytest.param(
        "a100-mig-pending",
        {
            "mig.mode-pending": "MIG mode change pending on GPU 0: it takes effect after a GPU reset or reboot",
        },
        set(),
        id="a100-mig-pending",
    ),
    pytest.param(
        "a100-mig-leftover-unprivileged",
        {
            "gpu.leftover-processes": "GPU memory is held by dead, stuck or missing processes",
        },
        set(),
        id="mig-leftover-found-through-mig-handles",
    ),
    pytest.param(
        "blackwell-proprietary",
        {
            "driver.kernel-module-flavor": "the proprietary kernel module is loaded but NVIDIA B200 needs the open modules: the driver cannot initialise it (RmInitAdapter failed)",
        },
        set(),
        id="blackwell-needs-open-modules",
    ),
    pytest.param(
        "gpu-vfio",
        {
            "driver.gpu-not-enumerated": "1 of 2 NVIDIA GPU(s) on the PCI bus are not enumerated by the driver",
        },
        set(),
        id="gpu-bound-to-vfio",
    ),
    pytest.param(
        "toolkit-cve",
        {
            "toolkit.security-outdated": "toolkit 1.17.3 is affected by CVE-2025-23359, CVE-2025-23266 (container escape)",
        },
        set(),
        id="toolkit-1.17.3-cves",
    ),
    pytest.param(
        "envvar-default",
        {
            "toolkit.unprivileged-envvar-accepted": "nvidia is the default runtime and unprivileged containers may set NVIDIA_VISIBLE_DEVICES: any container can take every GPU, bypassing the scheduler",
        },
        set(),
        id="unprivileged-envvar-with-nvidia-default",
    ),
    pytest.param(
        "cdi-invalid",
        {
            "cdi.spec-invalid": "1 CDI spec file(s) are invalid: /etc/cdi/broken.yaml",
        },
        set(),
        id="cdi-invalid",
    ),
    pytest.param(
        "crio-no-runtime",
        {
            "crio.runtime-not-configured": "CRI-O has no nvidia runtime: only CDI requests (a device plugin or DRA driver handing out CDI devices) get GPUs from /var/run/cdi/nvidia.yaml; NVIDIA_VISIBLE_DEVICES and runtimeClassName nvidia get no GPU",
        },
        set(),
        id="crio-no-runtime",
    ),
    pytest.param(
        "k3s",
        {
            "containerd.managed-config": "containerd's config is generated by k3s at every start: edits to config.toml are lost",
        },
        set(),
        id="k3s-managed-config",
    ),
    pytest.param(
        "k3s-agent-no-runtimeclass",
        {
            "containerd.managed-config": "containerd's config is generated by k3s at every start: edits to config.toml are lost",
        },
        {
            "cdi.management-spec-missing",
            "containerd.not-default-no-runtimeclass",
            "k8s.gpu-not-allocatable",
            "k8s.runtimeclass-handler-missing",
            "k8s.device-list-strategy-invalid",
            "mig.device-plugin-stale",
            "mig.strategy-mismatch",
        },
        id="k3s-agent-kubelet-kubeconfig-read",
    ),
    pytest.param(
        "rke2-agent-no-runtimeclass",
        {
            "containerd.managed-config": "containerd's config is generated by rke2 at every start: edits to config.toml are lost",
        },
        {
            "cdi.management-spec-missing",
            "containerd.not-default-no-runtimeclass",
            "k8s.gpu-not-allocatable",
            "k8s.runtimeclass-handler-missing",
            "k8s.device-list-strategy-invalid",
            "mig.device-plugin-stale",
            "mig.strategy-mismatch",
        },
        id="rke2-agent-kubelet-kubeconfig-read",
    ),
    pytest.param(
        "microk8s-no-runtimeclass",
        {},
        {
            "cdi.management-spec-missing",
            "containerd.not-default-no-runtimeclass",
            "k8s.gpu-not-allocatable",
            "k8s.runtimeclass-handler-missing",
            "k8s.device-list-strategy-invalid",
            "mig.device-plugin-stale",
            "mig.strategy-mismatch",
        },
        id="microk8s-kubelet-kubeconfig-read",
    ),
    pytest.param(
        "crio-cdi-no-management-spec",
        {},
        {
            "cdi.management-spec-missing",
            "k8s.gpu-not-allocatable",
            "k8s.runtimeclass-handler-missing",
            "k8s.device-list-strategy-invalid",
            "mig.device-plugin-stale",
            "mig.strategy-mismatch",
        },
        id="crio-kubeadm-node-api-unreachable",
    ),
    pytest.param(
        "toolkit-missing",
        {
            "toolkit.not-installed": "the NVIDIA Container Toolkit is not installed: no engine can inject GPUs",
            "cdi.spec-stale": "/var/run/cdi/nvidia.yaml refers to host files that no longer exist: containers fail at creation or get mismatched libraries",
        },
        set(),
        id="toolkit-missing-spec-hook-gone",
    ),
    pytest.param(
        "oci-hook-and-cdi",
        {
            "toolkit.conflicting-oci-hook": "an old NVIDIA OCI hook is installed next to a CDI spec: devices are injected twice",
        },
        set(),
        id="oci-hook-and-cdi",
    ),
    pytest.param(
        "docker-cdi-off",
        {
            "docker.cdi-not-enabled": "the toolkit uses CDI but Docker's CDI support is off: `--device nvidia.com/gpu=...` fails with 'could not select device driver \"cdi\"'",
        },
        set(),
        id="docker-cdi-off",
    ),
    pytest.param(
        "docker-cdi-default",
        {},
        set(),
        id="docker-28.2-reads-cdi-by-default-healthy",
    ),
    pytest.param(
        "docker-cdi-on-no-dirs",
        {
            "docker.cdi-not-enabled": "Docker's CDI support is on but cdi-spec-dirs names no directory: `--device nvidia.com/gpu=...` fails with 'CDI device injection failed: no CDI specification directories specified'",
        },
        set(),
        id="docker-cdi-on-spec-dirs-empty-list-reads-none",
    ),
    pytest.param(
        "docker-cdi-default-blank-dirs",
        {
            "docker.cdi-not-enabled": "Docker's CDI support is on but cdi-spec-dirs names no directory: `--device nvidia.com/gpu=...` fails with 'CDI device injection failed: no CDI specification directories specified'",
        },
        set(),
        id="docker-28.2-cdi-by-default-spec-dirs-blank-entry-reads-none",
    ),
    pytest.param(
        "docker-cdi-before-default",
        {
            "docker.cdi-not-enabled": "the toolkit uses CDI but Docker's CDI support is off: `--device nvidia.com/gpu=...` fails with 'could not select device driver \"cdi\"'",
        },
        set(),
        id="docker-28.1-cdi-off-without-setting",
    ),
    pytest.param(
        "docker-cdi-default-off",
        {
            "docker.cdi-not-enabled": "the toolkit uses CDI but Docker's CDI support is off: `--device nvidia.com/gpu=...` fails with 'could not select device driver \"cdi\"'",
        },
        set(),
        id="docker-28.2-cdi-turned-off",
    ),
    pytest.param(
        "refresh-disabled",
        {
            "cdi.refresh-disabled": "no CDI refresh unit is enabled: /var/run/cdi/nvidia.yaml lives in a tmpfs and disappears at reboot",
        },
        set(),
        id="refresh-disabled",
    ),
    pytest.param(
        "uvm-missing",
        {
            "driver.uvm-missing": "the nvidia_uvm module or its device node is missing: CUDA will report no device",
        },
        set(),
        id="uvm-missing",
    ),
    pytest.param(
        "mig-cap-nodes-missing",
        {
            "dev.mig-cap-nodes-missing": "6 MIG capability device node(s) missing: containers cannot use their MIG devices",
        },
        set(),
        id="mig-cap-nodes-missing",
    ),
    pytest.param(
        "a100-mig-mixed",
        {},
        set(),
        id="a100-mig-mixed-healthy",
    ),
    pytest.param(
        "selinux",
        {
            "dev.selinux-blocks": "SELinux is enforcing: containers without a device-allowing label get 'Insufficient Permissions' from NVML",
        },
        set(),
        id="selinux-enforcing",
    ),
    pytest.param(
        "container-visible-misuse",
        {
            "container.visible-devices-misuse": "GPU selection variables name GPUs this container does not have",
        },
        set(),
        id="cuda-visible-devices-out-of-range",
    ),
    pytest.param(
        "containerd-default-config",
        {},
        set(),
        id="containerd-1.7-default-config-healthy",
    ),
    pytest.param(
        "containerd-cdi-off",
        {
            "containerd.cdi-disabled": "containerd is set up for CDI (cdi_spec_dirs) but enable_cdi is not true",
        },
        set(),
        id="containerd-cdi-disabled",
    ),
    pytest.param(
        "containerd-2-cdi-default",
        {},
        set(),
        id="containerd-2-config-v3-reads-cdi-by-default-healthy",
    ),
    pytest.param(
        "containerd-2-cdi-off",
        {
            "containerd.cdi-disabled": "containerd is set up for CDI (cdi_spec_dirs) but enable_cdi is not true",
        },
        set(),
        id="containerd-2-cdi-turned-off",
    ),
    pytest.param(
        "pod-nvml-unknown",
        {
            "container.nvml-unknown-error": "NVML fails with 'Unknown Error' although /dev/nvidiactl exists: the container lost its device cgroup access (typically after a host `systemctl daemon-reload`)",
        },
        {"mig.whole-gpu-in-container"},
        id="pod-nvml-unknown",
    ),
    pytest.param(
        "containerd-dropin-orphan-docker",
        {
            "containerd.drop-in-not-imported": "containerd ignores /etc/containerd/conf.d/99-nvidia.toml: /etc/containerd/config.toml does not import it",
        },
        set(),
        id="containerd-drop-in-not-imported-on-a-docker-host",
    ),
    pytest.param(
        "containerd-dropin-orphan-kubelet",
        {
            "containerd.drop-in-not-imported": "containerd ignores /etc/containerd/conf.d/99-nvidia.toml: /etc/containerd/config.toml does not import it",
            "containerd.runtime-not-configured": "containerd has no usable nvidia runtime: pods fail with 'no runtime for \"nvidia\" is configured'",
        },
        set(),
        id="containerd-drop-in-not-imported-with-kubelet",
    ),
    pytest.param(
        "dev-node-wrong-minor",
        {
            "dev.nodes-missing": "1 NVIDIA device node(s) missing or wrong: /dev/nvidia1",
        },
        set(),
        id="dev-node-with-the-wrong-minor",
    ),
    pytest.param(
        "dev-node-not-char",
        {
            "dev.nodes-missing": "1 NVIDIA device node(s) missing or wrong: /dev/nvidia1",
        },
        set(),
        id="dev-node-a-regular-file",
    ),
    pytest.param(
        "nouveau-builtin",
        {
            "driver.nouveau-loaded": "the open-source nouveau driver is loaded, so the nvidia module cannot bind the GPU",
            "driver.not-loaded": "no NVIDIA kernel module is loaded; nouveau holds the GPU (see driver.nouveau-loaded)",
        },
        set(),
        id="nouveau-bound-in-sysfs-not-in-proc-modules",
    ),
    pytest.param(
        "cdi-no-all",
        {
            "cdi.spec-incomplete": "the CDI spec does not match the node's GPUs: no device named all",
        },
        set(),
        id="cdi-spec-lacking-only-all",
    ),
    pytest.param(
        "cdi-libraries-gone",
        {
            "cdi.spec-stale": "/var/run/cdi/nvidia.yaml refers to host files that no longer exist: containers fail at creation or get mismatched libraries",
        },
        set(),
        id="cdi-spec-for-the-running-driver-libraries-gone",
    ),
    pytest.param(
        "refresh-old-toolkit",
        {
            "cdi.refresh-disabled": "no CDI refresh unit is enabled: /var/run/cdi/nvidia.yaml lives in a tmpfs and disappears at reboot",
        },
        set(),
        id="refresh-volatile-spec-toolkit-before-1.18",
    ),
    pytest.param(
        "docker-runtime-binary-missing",
        {
            "docker.runtime-not-configured": "/etc/docker/daemon.json names the nvidia runtime nvidia-container-runtime, which does not exist: GPU containers fail to start",
        },
        set(),
        id="docker-nvidia-runtime-binary-missing",
    ),
    pytest.param(
        "containerd-runtime-binary-missing",
        {
            "containerd.runtime-not-configured": "/etc/containerd/conf.d/99-nvidia.toml names the nvidia runtime /usr/bin/nvidia-container-runtime, which does not exist: GPU containers fail to start",
        },
        set(),
        id="containerd-nvidia-runtime-binary-missing",
    ),
    pytest.param(
        "nvml-no-permission",
        {
            "dev.permission-denied": "the current user cannot open the NVIDIA device nodes",
        },
        set(),
        id="nvml-no-permission-alone",
    ),
    pytest.param(
        "gpu-ecc",
        {
            "gpu.ecc-uncorrectable": "GPU 0 had uncorrectable ECC errors since the driver loaded: its work may have failed, and CUDA contexts on it can be lost",
        },
        set(),
        id="gpu-uncorrectable-ecc",
    ),
    pytest.param(
        "gpu-remap-pending",
        {
            "gpu.memory-remap-pending": "GPU 0 has a memory repair pending: it takes effect at the next GPU reset, until then the bad memory stays in use",
        },
        set(),
        id="gpu-row-remap-pending",
    ),
    pytest.param(
        "gpu-remap-failed",
        {
            "gpu.memory-remap-pending": "row remapping failed on GPU 0: the GPU has memory it cannot repair and should be replaced",
        },
        set(),
        id="gpu-row-remap-failed",
    ),
    pytest.param(
        "gpu-retired-pending",
        {
            "gpu.memory-remap-pending": "GPU 0 has a memory repair pending: it takes effect at the next GPU reset, until then the bad memory stays in use",
        },
        set(),
        id="gpu-page-retirement-pending",
    ),
    pytest.param(
        "gpu-throttled",
        {
            "gpu.clocks-throttled": "GPU 0 runs below its clocks now because of hardware thermal slowdown",
        },
        set(),
        id="gpu-thermal-slowdown-now",
    ),
    pytest.param(
        "persistence-off",
        {
            "driver.persistence-off": "persistence mode is off on GPU 0, 1 and nvidia-persistenced is not running: the driver tears the GPU down whenever no process uses it (slow job starts, lost settings)",
        },
        set(),
        id="persistence-off-on-a-server",
    ),
    pytest.param(
        "persistence-daemon",
        {},
        set(),
        id="persistence-off-but-daemon-runs-healthy",
    ),
    pytest.param(
        "dra-healthy",
        {},
        set(),
        id="dra-kubelet-plugin-healthy",
    ),
    pytest.param(
        "dra-mig",
        {},
        set(),
        id="dra-kubelet-plugin-mig-healthy",
    ),
    pytest.param(
        "dra-compute-domain",
        {},
        set(),
        id="dra-compute-domain-healthy",
    ),
    pytest.param(
        "dra-not-registered",
        {
            "dra.plugin-not-registered": "gpu.nvidia.com has no registration socket in /var/lib/kubelet/plugins_registry: the kubelet does not know the driver, and pods with its claims fail to start ('DRA driver gpu.nvidia.com is not registered')",
        },
        set(),
        id="dra-plugin-not-registered",
    ),
    pytest.param(
        "dra-cdi-off",
        {
            "dra.engine-cdi-unresolvable": "containerd does not read CDI specs: pods with GPU claims fail with 'unresolvable CDI devices k8s.gpu.nvidia.com/claim=...'",
        },
        set(),
        id="dra-containerd-cdi-off",
    ),
    pytest.param(
        "dra-cdi-dir-unread",
        {
            "dra.engine-cdi-unresolvable": "the DRA plugin writes its CDI specs to /var/run/cdi, which containerd does not read: pods with GPU claims fail with 'unresolvable CDI devices'",
        },
        set(),
        id="dra-cdi-dir-not-read",
    ),
    pytest.param(
        "dra-claim-spec-invalid",
        {
            "dra.claim-spec-invalid": "/var/run/cdi/k8s.gpu.nvidia.com-claim_6a4d0f57-2c1e-4b8e-9d3a-0c5b7e1f2a90.yaml of the DRA plugin is not a usable CDI spec (line 5: device name '6a4d0f57-2c1e-4b8e-9d3a-0c5b7e1f2a90/gpu-0' contains '/'; allowed are ASCII letters, digits, '_', '-', '.', ':'): the pod of its claim fails to start",
        },
        set(),
        id="dra-claim-spec-invalid",
    ),
    pytest.param(
        "dra-claim-spec-clash",
        {
            "dra.claim-spec-invalid": "/etc/cdi/gpu-claims.yaml defines CDI devices of kind k8s.gpu.nvidia.com/claim, which the DRA plugin owns: the runtime drops clashing devices and claims' pods fail",
        },
        set(),
        id="dra-claim-spec-kind-clash",
    ),
    pytest.param(
        "dra-imex-no-channels",
        {
            "dra.imex-channels-missing": "the driver has no nvidia-caps-imex-channels device (not in /proc/devices): the compute-domain plugin cannot prepare IMEX channels, and compute domain workloads do not start",
        },
        set(),
        id="dra-imex-no-channels",
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
def test_scenario(
    node: str,
    problems: dict[str, str],
    unknowns: set[str],
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = fake_node(node)
    code, document = run_doctor(built.root, capsys)
    found = {c["id"]: c["summary"] for c in document["checks"] if c["status"] in ("fail", "warn")}
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
    ("node", "check_id", "evidence"),
    [
        pytest.param(
            "docker-cdi-dirs-empty",
            "docker.runtime-not-configured",
            [
                "runtimes: none (no nvidia)",
                "features.cdi = true, reading no directory: no usable nvidia.com/gpu spec there",
            ],
            id="docker-reads-no-directory",
        ),
        pytest.param(
            "containerd-cdi-only-dir-unread",
            "containerd.runtime-not-configured",
            [
                "runtimes: runc (no nvidia)",
                "enable_cdi = true, reading /etc/cdi: no usable nvidia.com/gpu spec there",
            ],
            id="containerd-reads-another-directory",
        ),
        pytest.param(
            "crio-no-runtime-dir-unread",
            "crio.runtime-not-configured",
            [
                "runtimes: crun (no nvidia)",
                "crio always reads CDI specs, reading /etc/cdi: no usable nvidia.com/gpu spec there",
            ],
            id="crio-reads-another-directory",
        ),
        pytest.param(
            "containerd-cdi-only",
            "containerd.runtime-not-configured",
            [
                "runtimes: runc (no nvidia)",
                "enable_cdi = true",
                "nvidia.com/gpu spec containerd reads",
            ],
            id="containerd-cdi-only",
        ),
    ],
)
def test_runtime_check_says_where_the_engine_looks_for_cdi_specs(
    node: str,
    check_id: str,
    evidence: list[str],
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An engine without the nvidia runtime that reads CDI specs: the evidence names its
    setting and, when it fails, the directories it reads, which hold no usable GPU spec."""
    built = fake_node(node)
    _, document = run_doctor(built.root, capsys, "--check", check_id)
    [finding] = document["checks"]
    assert [e["value"] for e in finding["evidence"]] == evidence


@pytest.mark.parametrize(
    ("node", "evidence"),
    [
        pytest.param(
            "docker-cdi-on-no-dirs",
            ["features.cdi = true", "cdi-spec-dirs = []"],
            id="empty-list",
        ),
        pytest.param(
            "docker-cdi-default-blank-dirs",
            ["docker 28.2.0: CDI on by default since 28.2", 'cdi-spec-dirs = [""]'],
            id="blank-entry",
        ),
    ],
)
def test_docker_cdi_reading_no_directory_is_an_error(
    node: str,
    evidence: list[str],
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """CDI on, no spec directory: CDI requests fail now (error), and the remedy says which key
    to drop; the nvidia runtime is there, so docker.runtime-not-configured has nothing to say."""
    built = fake_node(node)
    code, document = run_doctor(built.root, capsys, "--check", "docker.cdi-not-enabled")
    [finding] = document["checks"]
    assert (code, finding["status"], finding["severity"]) == (1, "fail", "error")
    assert [e["value"] for e in finding["evidence"]] == evidence
    assert finding["remedy"]["notes"] == [
        'remove "cdi-spec-dirs" from /etc/docker/daemon.json (dockerd then reads /etc/cdi and '
        "/var/run/cdi) or list the directories that hold the spec"
    ]


@pytest.mark.parametrize(
    "node",
    [
        "docker-cdi-off",
        "docker-cdi-before-default",
        "docker-cdi-default-off",
        "docker-cdi-on-no-dirs",
        "docker-cdi-default-blank-dirs",
    ],
)
def test_every_way_docker_cannot_serve_cdi_is_an_error_alike(
    node: str,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The toolkit in CDI mode: CDI off (by setting or by version) and CDI on reading no
    directory each fail every CDI request, so each is the same finding's error (issue 23, 6)."""
    built = fake_node(node)
    code, document = run_doctor(built.root, capsys, "--check", "docker.cdi-not-enabled")
    [finding] = document["checks"]
    assert (code, finding["status"], finding["severity"]) == (1, "fail", "error")


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
        pytest.param(
            "cdi-conflict-json",
            "skipped: the spec is complete once cdi.spec-conflict is fixed",
            id="stale-copy-of-a-json-spec",
        ),
    ],
)
def test_a_clash_blocks_spec_incomplete(
    node: str,
    summary: str,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What a same-directory clash drops is cdi.spec-conflict's finding, not a second one."""
    built = fake_node(node)
    _, document = run_doctor(built.root, capsys, "--check", "cdi.spec-incomplete")
    [finding] = document["checks"]
    assert (finding["status"], finding["summary"], finding["blocked_by"]) == (
        "skip",
        summary,
        ["cdi.spec-conflict"],
    )


def test_a_clash_keeps_the_generated_spec_which_regenerating_rewrites(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The copy goes, the generated nvidia.json stays: the file `cdi generate` would rewrite."""
    built = fake_node("cdi-conflict-json")
    _, document = run_doctor(built.root, capsys, "--check", "cdi.spec-conflict")
    [finding] = document["checks"]
    assert (finding["remedy"]["commands"], finding["remedy"]["notes"]) == (
        ["sudo rm /var/run/cdi/a-copy.yaml"],
        ["/var/run/cdi/a-copy.yaml duplicates /var/run/cdi/nvidia.json"],
    )


def test_every_scenario_is_in_the_table() -> None:
    listed = {p.values[0] for p in SCENARIOS}
    assert set(names(DOCTOR_NODES)) - {"base"} == listed
