"""What `ctk cdi diff` and `refresh` read off a spec: the driver it was made for, its hooks."""

from __future__ import annotations

import pytest

from ctk.cdi.diff import driver_version, hook_programs


def _hook(*args: str, path: str = "/usr/bin/nvidia-cdi-hook") -> dict[str, object]:
    return {"hookName": "createContainer", "path": path, "args": ["hook", *args]}


def _mount(container: str) -> dict[str, object]:
    return {"hostPath": container, "containerPath": container}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, None, id="empty"),
        pytest.param(
            {"containerEdits": {"hooks": [_hook("--host-driver-version=550.54.15")]}},
            "550.54.15",
            id="compat-hook-argument",
        ),
        pytest.param(
            {
                "devices": [
                    {
                        "name": "0",
                        "containerEdits": {"hooks": [_hook("--host-driver-version=535.1")]},
                    }
                ]
            },
            "535.1",
            id="in-a-device",
        ),
        pytest.param(
            {
                "containerEdits": {
                    "mounts": [_mount("/usr/lib64/libnvidia-ml.so.550.54.15")],
                    "hooks": [_hook("--host-driver-version=560.28.03")],
                }
            },
            "560.28.03",
            id="the-hook-before-the-mounts",
        ),
        pytest.param(
            {
                "containerEdits": {
                    "mounts": [_mount("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15")]
                }
            },
            "550.54.15",
            id="libcuda-mount",
        ),
        pytest.param(
            {"containerEdits": {"mounts": [_mount("/usr/lib64/libnvidia-ml.so.535.161")]}},
            "535.161",
            id="nvml-mount-two-part",
        ),
        pytest.param(
            {"containerEdits": {"mounts": [_mount("/usr/lib64/libnvidia-encode.so.550.54.15")]}},
            None,
            id="other-library",
        ),
        pytest.param(
            {"containerEdits": {"mounts": [_mount("/usr/lib64/libcuda.so.1")]}},
            None,
            id="soname-only",
        ),
        pytest.param(
            {"containerEdits": {"hooks": [_hook("--host-driver-version")]}},
            None,
            id="flag-without-value",
        ),
        pytest.param(
            {"containerEdits": {"hooks": "x", "mounts": [None, {"containerPath": 5}]}},
            None,
            id="malformed-parts-ignored",
        ),
    ],
)
def test_driver_version(spec: dict[str, object], expected: str | None) -> None:
    assert driver_version(spec) == expected


def test_hook_programs_each_once_sorted() -> None:
    spec = {
        "containerEdits": {"hooks": [_hook(path="/z/hook"), _hook(path="/a/hook")]},
        "devices": [{"name": "0", "containerEdits": {"hooks": [_hook(path="/z/hook")]}}],
    }
    assert hook_programs(spec) == ("/a/hook", "/z/hook")
    assert hook_programs({}) == ()
