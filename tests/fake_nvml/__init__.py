"""A fake NVIDIA driver for tests: the C library behind the real pynvml.

`build_library()` compiles `fake_nvml.c` into a `libnvidia-ml.so.1`; `tests.nodes` places it in a
fixture node's driver root where its `node.yaml` says (so ctk loads it from the driver root like
a real driver container's library, with no test-only code path) and writes the topology file the
library reads at `nvmlInit`. Point `CTK_FAKE_NVML_TOPOLOGY` at `FakeNode.topology` (see
`FakeNode.env`). The node names here are `tests.nodes`' own, kept for the tests that import them
from this package.

A process keeps the first `libnvidia-ml.so.1` it loads; the library therefore re-reads the
topology at every `nvmlInit`, and nodes get hard links to one built file where possible.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.nodes import (
    NODE_DIRS,
    TOPOLOGY_ENV,
    FakeNode,
    SkipNode,
    materialise,
    names,
    topology_text,
)

__all__ = [
    "ROOTS",
    "TOPOLOGY_ENV",
    "FakeNode",
    "SkipNode",
    "build_library",
    "materialise",
    "nodes",
    "topology_text",
]

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "fake_nvml.c"
ROOTS = NODE_DIRS[0]
GCC_FLAGS = ("-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wl,-soname,libnvidia-ml.so.1")


def nodes() -> list[str]:
    """Names of the fixture nodes of `tests/fixtures/roots`."""
    return names(ROOTS)


def build_library(out_dir: Path) -> Path:
    """Compile the fake NVML into ``out_dir/libnvidia-ml.so.1`` and return its path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SkipNode("gcc is not installed: cannot build the fake libnvidia-ml.so.1")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "libnvidia-ml.so.1"
    subprocess.run(
        [gcc, *GCC_FLAGS, "-o", str(target), str(SOURCE)],
        check=True,
    )
    return target
