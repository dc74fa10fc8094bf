"""How `ctk cdi generate` grows with the number of devices: synthetic nodes, one table.

Run: `python benchmarks/bench_generate.py [--runs N]` (root and gcc needed: the nodes have real
character devices and the fake libnvidia-ml.so.1 from tests/fake_nvml, read by the real pynvml).
Nodes: 1, 8 and 64 full GPUs, and 8 GPUs with 7 MIG devices each. Each phase is the median of N
in-process runs: gather (NVML + one scan of the driver and dev roots), build (the pure core),
write (render YAML + validate), and the whole command through `ctk.cli.app.main`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import stat
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ctk.cdi.generate import GenerateOptions, build_spec  # noqa: E402
from ctk.cdi.options import Mode, SpecFormat  # noqa: E402
from ctk.cdi.serialize import render  # noqa: E402
from ctk.cdi.validate import validate_text  # noqa: E402
from ctk.cli.app import main  # noqa: E402
from ctk.host.driver import gather  # noqa: E402
from tests.fake_nvml import ROOTS, TOPOLOGY_ENV, build_library, topology_text  # noqa: E402

VERSION = "550.54.15"
NODES = (("1 GPU", 1, 0), ("8 GPUs", 8, 0), ("64 GPUs", 64, 0), ("8 GPUs x 7 MIG", 8, 7))
CAPS_PER_GPU = 15 * 9  # 15 GPU instances, each with its own and 8 compute-instance caps


def _char(path: Path, major: int, minor: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))


def _cap(gpu: int, gi: int, ci: int | None) -> int:
    base = 3 + gpu * CAPS_PER_GPU + gi * 9
    return base if ci is None else base + 1 + ci


def make_node(base: Path, library: Path, gpus: int, migs: int) -> Path:
    """A node tree: the dgx fixture's driver files, `gpus` GPUs, `migs` 1g MIG devices each."""
    root = base / "root"
    shutil.copytree(
        ROOTS / "dgx-a100", root, symlinks=True, ignore=shutil.ignore_patterns("node.yaml", "dev")
    )
    os.link(library, root / f"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{VERSION}")
    for name, (major, minor) in {
        "nvidiactl": (195, 255),
        "nvidia-uvm": (510, 0),
        "nvidia-uvm-tools": (510, 1),
        "nvidia-modeset": (195, 254),
    }.items():
        _char(root / "dev" / name, major, minor)
    minors = ["config 1", "monitor 2"]
    gpu_list = []
    for index in range(gpus):
        _char(root / f"dev/nvidia{index}", 195, index)
        mig_rows = []
        for slot in range(migs):
            gi = 7 + slot
            for ci in (None, 0):
                _char(
                    root / f"dev/nvidia-caps/nvidia-cap{_cap(index, gi, ci)}",
                    508,
                    _cap(index, gi, ci),
                )
            uuid = f"MIG-{index:04x}{slot:04x}-0000-4000-8000-000000000000"
            mig_rows.append([slot, gi, 0, 1, 1, 9728, uuid, "1g.10gb"])
        gpu_list.append(
            {
                "minor": index,
                "mig": "on" if migs else "off",
                "uuid": f"GPU-{index:08x}-0000-4000-8000-000000000000",
                "pci": f"00000000:{index + 1:02X}:00.0",
                "name": "NVIDIA A100-SXM4-80GB",
                "migs": mig_rows,
            }
        )
        for gi in range(15):
            minors.append(f"gpu{index}/gi{gi}/access {_cap(index, gi, None)}")
            minors += [f"gpu{index}/gi{gi}/ci{ci}/access {_cap(index, gi, ci)}" for ci in range(8)]
    (root / "proc/driver/nvidia-caps/mig-minors").write_text("\n".join(minors) + "\n")
    topology = base / "topology.txt"
    topology.write_text(topology_text({"driver": VERSION, "cuda": 12040, "gpus": gpu_list}))
    os.environ[TOPOLOGY_ENV] = str(topology)
    return root


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(root: Path, runs: int) -> tuple[int, float, float, float, float]:
    options = GenerateOptions()
    node = gather(root, root, Mode.NVML)
    spec = build_spec(node.nvml, node.driver, options, version=node.driver_version)
    text = render(spec, SpecFormat.YAML)
    gather_ms = median_ms(lambda: gather(root, root, Mode.NVML), runs)
    build_ms = median_ms(
        lambda: build_spec(node.nvml, node.driver, options, version=node.driver_version), runs
    )
    write_ms = median_ms(lambda: validate_text(render(spec, SpecFormat.YAML), "nvidia.yaml"), runs)
    argv = [
        "cdi",
        "generate",
        "--driver-root",
        str(root),
        "--hook-path",
        "/usr/bin/nvidia-cdi-hook",
    ]

    def whole() -> None:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(argv) == 0
        assert out.getvalue() == text

    return len(spec.devices), gather_ms, build_ms, write_ms, median_ms(whole, runs)


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    if os.geteuid() != 0 or shutil.which("gcc") is None:
        sys.stderr.write("bench_generate: needs root (mknod) and gcc (the fake NVML)\n")
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="ctk-bench-generate-") as tmp:
        library = build_library(Path(tmp) / "lib")
        for label, gpus, migs in NODES:
            root = make_node(Path(tmp) / label.replace(" ", "-"), library, gpus, migs)
            rows.append((label, gpus * max(migs, 1), *measure(root, runs)))
    print(f"`ctk cdi generate`, median of {runs} in-process runs, milliseconds:\n")
    print(
        "| node | GPU/MIG devices | spec devices | gather | build | render+validate | whole "
        "command | whole per device |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, units, devices, gather_ms, build_ms, write_ms, whole_ms in rows:
        print(
            f"| {label} | {units} | {devices} | {gather_ms:.1f} | {build_ms:.1f} | "
            f"{write_ms:.1f} | {whole_ms:.1f} | {whole_ms / units:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main_bench())
