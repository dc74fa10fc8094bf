"""`ctk cdi transform root`'s path rules, each on its own: which paths move and which stay
(issue 26's mutation run found them unpinned; tests/cdi/test_tools.py has the whole-spec case).
"""

from __future__ import annotations

import pytest

from ctk.cdi.transform import RelativeTo, rebase, transform_root


@pytest.mark.parametrize(
    ("path", "old", "new", "expected"),
    [
        pytest.param("usr/lib", "/", "/host", "usr/lib", id="a-relative-path-stays"),
        pytest.param("/usr/lib", "/", "/", "/usr/lib", id="slash-to-slash-stays"),
        pytest.param("/usr/lib", "/", "/host/", "/host/usr/lib", id="to-a-folder-with-a-slash"),
        pytest.param("/", "/", "/host", "/host", id="the-root-itself"),
        pytest.param("/Xorg/modules", "/", "/host", "/host/Xorg/modules", id="from-slash"),
        pytest.param("/usr/lib/", "/", "/host", "/host/usr/lib", id="trailing-slash-dropped"),
        pytest.param("/usr/lib/x.so", "/usr", "/opt/BOX", "/opt/BOX/lib/x.so", id="under-old"),
        pytest.param("/usr/lib/x.so", "/usr", "/opt/BOX/", "/opt/BOX/lib/x.so", id="new-slash"),
    ],
)
def test_rebase(path: str, old: str, new: str, expected: str) -> None:
    assert rebase(path, old, new) == expected


def _spec(*nodes: dict[str, object]) -> dict[str, object]:
    return {
        "cdiVersion": "0.5.0",
        "kind": "example.com/gpu",
        "devices": [{"name": "0", "containerEdits": {"deviceNodes": list(nodes)}}],
    }


@pytest.mark.parametrize(
    ("node", "side", "expected"),
    [
        pytest.param(
            {"path": "/dev/nvidia0"},
            RelativeTo.HOST,
            {"path": "/dev/nvidia0", "hostPath": "/host/dev/nvidia0"},
            id="no-host-path-the-path-is-the-host-path",
        ),
        pytest.param(
            {"path": "/dev/nvidia1", "hostPath": "/dev/nvidia0"},
            RelativeTo.HOST,
            {"path": "/dev/nvidia1", "hostPath": "/host/dev/nvidia0"},
            id="the-host-path-moves-not-the-path",
        ),
        pytest.param(
            {"path": "/dev/nvidia1", "hostPath": "/opt/nvidia0"},
            RelativeTo.HOST,
            {"path": "/dev/nvidia1", "hostPath": "/opt/nvidia0"},
            id="a-host-path-outside-stays",
        ),
        pytest.param(
            {"path": "/dev/nvidia1", "hostPath": "/opt/nvidia0"},
            RelativeTo.CONTAINER,
            {"path": "/host/dev/nvidia1", "hostPath": "/opt/nvidia0"},
            id="container-side-moves-the-path",
        ),
        pytest.param({"path": "/opt/x", "hostPath": ""}, RelativeTo.HOST,
                     {"path": "/opt/x", "hostPath": ""}, id="empty-host-path-stays"),
        pytest.param({"path": "/dev/x", "hostPath": ""}, RelativeTo.HOST,
                     {"path": "/dev/x", "hostPath": "/host/dev/x"}, id="empty-host-path-moves"),
        pytest.param({"path": 7}, RelativeTo.HOST, {"path": 7}, id="not-a-path-stays"),
        pytest.param({"hostPath": None, "path": 7}, RelativeTo.HOST, {"hostPath": None, "path": 7},
                     id="null-host-path-stays"),
    ],
)  # fmt: skip
def test_device_node_paths(
    node: dict[str, object], side: RelativeTo, expected: dict[str, object]
) -> None:
    """From /dev to /host/dev: a node's host path is its `hostPath`, else its `path` (which
    then gains a `hostPath`, the container keeping its path)."""
    out = transform_root(_spec(node), from_root="/dev", to_root="/host/dev", relative_to=side)
    assert out == _spec(expected)
