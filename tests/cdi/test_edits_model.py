"""`ContainerEdits`' `-` and truth, and `simplify` (a device's edits without what the common edits
already give) built on them; issue 26's mutation run found them unpinned.
"""

from __future__ import annotations

import pytest

from ctk.cdi.generate import simplify
from ctk.cdi.model import ContainerEdits, DeviceNode, Hook, Mount

NODE = DeviceNode(path="/dev/nvidia0")
HOOK = Hook(hook_name="createContainer", path="/usr/bin/nvidia-cdi-hook", args=("x", "y"))
MOUNT = Mount(host_path="/usr/lib/libcuda.so.1", container_path="/usr/lib/libcuda.so.1")

ONE_OF_EACH = [
    pytest.param(ContainerEdits(env=("A=1",)), id="env"),
    pytest.param(ContainerEdits(device_nodes=(NODE,)), id="device-nodes"),
    pytest.param(ContainerEdits(hooks=(HOOK,)), id="hooks"),
    pytest.param(ContainerEdits(mounts=(MOUNT,)), id="mounts"),
    pytest.param(ContainerEdits(additional_gids=(44,)), id="additional-gids"),
]


@pytest.mark.parametrize("edits", ONE_OF_EACH)
def test_edits_with_anything_are_true(edits: ContainerEdits) -> None:
    assert edits
    assert not ContainerEdits()


@pytest.mark.parametrize("edits", ONE_OF_EACH)
def test_edits_minus_themselves_are_empty(edits: ContainerEdits) -> None:
    assert edits - edits == ContainerEdits()
    assert edits - ContainerEdits() == edits


def test_minus_keeps_what_the_other_lacks_in_order() -> None:
    node1 = DeviceNode(path="/dev/nvidia1")
    mount2 = Mount(host_path="/h/2", container_path="/c/2")
    edits = ContainerEdits(
        env=("B=2", "A=1", "C=3"),
        device_nodes=(node1, NODE),
        hooks=(HOOK,),
        mounts=(mount2, MOUNT),
        additional_gids=(45, 44),
    )
    common = ContainerEdits(
        env=("A=1",), device_nodes=(NODE,), mounts=(MOUNT,), additional_gids=(44,)
    )
    assert edits - common == ContainerEdits(
        env=("B=2", "C=3"),
        device_nodes=(node1,),
        hooks=(HOOK,),
        mounts=(mount2,),
        additional_gids=(45,),
    )


@pytest.mark.parametrize(
    ("edits", "common", "expected"),
    [
        pytest.param(
            ContainerEdits(device_nodes=(NODE,), additional_gids=(44,)),
            ContainerEdits(device_nodes=(NODE,)),
            ContainerEdits(additional_gids=(44,)),
            id="only-gids-left",
        ),
        pytest.param(
            ContainerEdits(env=("A=1",), mounts=(MOUNT,)),
            ContainerEdits(env=("A=1",)),
            ContainerEdits(mounts=(MOUNT,)),
            id="only-mounts-left",
        ),
        pytest.param(
            ContainerEdits(env=("A=1",), hooks=(HOOK,)),
            ContainerEdits(env=("A=1",)),
            ContainerEdits(hooks=(HOOK,)),
            id="only-hooks-left",
        ),
        pytest.param(
            ContainerEdits(env=("A=1",), device_nodes=(NODE,)),
            ContainerEdits(env=("A=1",)),
            ContainerEdits(device_nodes=(NODE,)),
            id="only-nodes-left",
        ),
        pytest.param(
            ContainerEdits(env=("A=1", "B=2"), device_nodes=(NODE,)),
            ContainerEdits(device_nodes=(NODE,)),
            ContainerEdits(env=("A=1", "B=2")),
            id="only-env-left",
        ),
        pytest.param(
            ContainerEdits(device_nodes=(NODE,), mounts=(MOUNT,)),
            ContainerEdits(device_nodes=(NODE,), mounts=(MOUNT,), env=("A=1",)),
            ContainerEdits(device_nodes=(NODE,), mounts=(MOUNT,)),
            id="all-given-by-common-kept-whole",
        ),
    ],
)
def test_simplify(edits: ContainerEdits, common: ContainerEdits, expected: ContainerEdits) -> None:
    """A device keeps only what the common edits lack, unless that leaves it empty."""
    assert simplify(edits, common) == expected
