"""The fixture nodes of every test area share one format (`tests/nodes.py`): names, keys, bases."""

from __future__ import annotations

from collections import Counter

from tests.nodes import NODE_DIRS, load_spec, names

KEYS = frozenset(
    {
        "base",
        "driver_root",
        "dev_root",
        "nvml",
        "devices",
        "sockets",
        "remove",
        "files",
        "links",
        "environ",
        "shm",
        "kernel_module",
        "cuda_compat",
        "ld_cache",
    }
)
"""Every key a node.yaml may hold (tests/nodes.py says what each means)."""


def test_node_names_are_unique_across_the_fixture_directories() -> None:
    counts = Counter(name for directory in NODE_DIRS for name in names(directory))
    assert [name for name, count in counts.items() if count > 1] == []


def test_every_node_uses_only_the_format_keys_and_its_base_exists() -> None:
    unknown = {
        name: sorted(set(load_spec(name)) - KEYS - {"tree"})
        for name in names()
        if set(load_spec(name)) - KEYS - {"tree"}
    }
    assert unknown == {}


def test_a_node_starts_from_its_base_with_its_devices_merged() -> None:
    spec = load_spec("system-two-gpus-no-nodes")
    assert (spec["tree"], spec["devices"]) == (
        ["system-two-gpus", "system-two-gpus-no-nodes"],
        {
            "dev/null": [1, 3, "0666", 0],
            "dev/nvidia0": None,
            "dev/nvidiactl": None,
            "dev/nvidia-uvm": None,
            "dev/nvidia-caps/nvidia-cap1": None,
        },
    )
