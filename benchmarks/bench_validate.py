"""Benchmark: `ctk cdi validate` on 1,000 realistic specs against merely parsing them.

Generates 1,000 nvidia-style CDI specs (8 GPUs, an `all` device, ~60 mounts, hooks, env) into a
temporary directory, then times whole processes, median of several runs:

- `python -c pass` (interpreter start-up),
- `ctk --version`,
- a plain `yaml.load(..., Loader=yaml.CSafeLoader)` of every file,
- `ctk cdi validate <every file>`,

and prints the ratio validate / parse (the target is at most 2.0). The parse and validate runs
alternate, and besides wall-clock time each process's CPU time (user + system) is measured: on a
shared machine other load disturbs wall time much more than CPU time. Run from the repository
root: `python benchmarks/bench_validate.py [--runs N] [--specs N]`.

Optionally the reference library takes its turn too: set `CTK_BENCH_GO_VALIDATE` to a program
that takes spec files as arguments, checks each with the Go library
tags.cncf.io/container-device-interface (`cdi.ReadSpec` with `cdi.SetSpecValidator` set to the
`schema` package's built-in schema, then `specs.ValidateVersion`), prints one line per file and
exits 0 when every spec is valid. Such a program is not part of this repository (the library's
code stays outside it): build it yourself with Go, the library and its dependencies. Then the
ratio validate / Go is printed as well (`benchmarks/run.py` shows the same case).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LIBRARIES = [
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-allocator.so",
    "libnvidia-cfg.so",
    "libnvidia-eglcore.so",
    "libnvidia-fatbinaryloader.so",
    "libnvidia-glcore.so",
    "libnvidia-glsi.so",
    "libnvidia-glvkspirv.so",
    "libnvidia-gpucomp.so",
    "libnvidia-ml.so",
    "libnvidia-nvvm.so",
    "libnvidia-opencl.so",
    "libnvidia-pkcs11.so",
    "libnvidia-ptxjitcompiler.so",
    "libnvidia-rtcore.so",
    "libnvidia-tls.so",
    "libnvoptix.so",
    "libEGL_nvidia.so",
    "libGLESv1_CM_nvidia.so",
    "libGLESv2_nvidia.so",
    "libGLX_nvidia.so",
    "libnvidia-encode.so",
    "libnvidia-opticalflow.so",
    "libnvcuvid.so",
    "libnvidia-ngx.so",
    "libnvidia-vksc-core.so",
    "libnvidia-egl-wayland.so",
    "libnvidia-egl-gbm.so",
    "libnvidia-api.so",
]
BINARIES = [
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
]
FIRMWARE_AND_CONFIG = [
    "/lib/firmware/nvidia/{v}/gsp_ga10x.bin",
    "/lib/firmware/nvidia/{v}/gsp_tu10x.bin",
    "/run/nvidia-persistenced/socket",
    "/run/nvidia-fabricmanager/socket",
    "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json",
    "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json",
    "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json",
    "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
    "/etc/vulkan/icd.d/nvidia_icd.json",
]


def _mount(path: str) -> str:
    return (
        f"  - hostPath: {path}\n"
        f"    containerPath: {path}\n"
        "    options:\n    - ro\n    - nosuid\n    - nodev\n    - bind\n"
    )


def spec_text(index: int) -> str:
    """One nvidia-style spec; ``index`` varies the driver version so that every file differs."""
    version = f"550.{index % 100}.{index // 100:02d}"
    lib = "/usr/lib/x86_64-linux-gnu"
    mounts = [f"{lib}/{name}.{version}" for name in LIBRARIES]
    mounts += [f"/usr/bin/{name}" for name in BINARIES]
    mounts += [path.format(v=version) for path in FIRMWARE_AND_CONFIG]
    mounts += [f"{lib}/gbm/nvidia-drm_gbm.so.{n}" for n in range(15)]
    out = ["---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ncontainerEdits:\n"]
    out.append("  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n  - NVIDIA_CTK_LIBCUDA_DIR=" + lib + "\n")
    out.append("  deviceNodes:\n")
    for node in (
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidia-modeset",
    ):
        out.append(f"  - path: {node}\n")
    out.append("  hooks:\n")
    out.append(
        "  - hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n    args:\n"
        "    - nvidia-cdi-hook\n    - create-symlinks\n"
        f"    - --link\n    - libcuda.so.{version}::{lib}/libcuda.so\n"
        "    env:\n    - NVIDIA_CTK_DEBUG=false\n"
    )
    out.append(
        "  - hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n    args:\n"
        f"    - nvidia-cdi-hook\n    - update-ldcache\n    - --folder\n    - {lib}\n"
    )
    out.append("  mounts:\n")
    out.extend(_mount(path) for path in mounts)
    out.append("devices:\n")
    all_nodes = []
    for gpu in range(8):
        uuid = f"GPU-{index:08x}-{gpu:04x}-4c3a-9f1e-{gpu * 7919 + index:012x}"
        nodes = [f"/dev/nvidia{gpu}", f"/dev/dri/card{gpu + 1}", f"/dev/dri/renderD{128 + gpu}"]
        all_nodes += nodes
        for name in (str(gpu), uuid):
            out.append(f'- name: "{name}"\n  containerEdits:\n    deviceNodes:\n')
            out.extend(f"    - path: {node}\n" for node in nodes)
    out.append("- name: all\n  containerEdits:\n    deviceNodes:\n")
    out.extend(f"    - path: {node}\n" for node in all_nodes)
    return "".join(out)


def _run(command: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{command[:4]} failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _median(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds per command, the commands taking turns in each round."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            samples[name].append(_run(command))
    return {
        name: (
            statistics.median(wall for wall, _ in values),
            statistics.median(cpu for _, cpu in values),
        )
        for name, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--specs", type=int, default=1000)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="ctk-bench-") as tmp:
        files = []
        for index in range(args.specs):
            path = Path(tmp) / f"nvidia-{index:04d}.yaml"
            path.write_text(spec_text(index), encoding="utf-8")
            files.append(str(path))
        size = sum(Path(f).stat().st_size for f in files)
        parse = (
            "import sys, yaml\n"
            "for f in sys.argv[1:]:\n"
            "    with open(f, 'rb') as s: yaml.load(s, Loader=yaml.CSafeLoader)\n"
        )
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "ctk --version": [py, "-m", "ctk.cli.app", "--version"],
            "CSafeLoader parse": [py, "-c", parse, *files],
            "ctk cdi validate": [py, "-m", "ctk.cli.app", "cdi", "validate", *files],
        }
        go_program = os.environ.get("CTK_BENCH_GO_VALIDATE")
        if go_program:
            commands["Go reference library"] = [go_program, *files]
        times = _median(commands, args.runs)
    print(f"{args.specs} specs, {size / 1e6:.1f} MB, median of {args.runs} runs")
    print(f"{'':26}{'wall':>9}{'cpu':>9}")
    for name, (wall, cpu) in times.items():
        print(f"{name:26}{wall:8.3f}s{cpu:8.3f}s")
    parse_wall, parse_cpu = times["CSafeLoader parse"]
    check_wall, check_cpu = times["ctk cdi validate"]
    print(
        f"{'validate / parse':26}{check_wall / parse_wall:8.2f}x{check_cpu / parse_cpu:8.2f}x"
        "  (target <= 2.00)"
    )
    if "Go reference library" in times:
        go_wall, go_cpu = times["Go reference library"]
        print(f"{'validate / Go':26}{check_wall / go_wall:8.2f}x{check_cpu / go_cpu:8.2f}x")


if __name__ == "__main__":
    main()
