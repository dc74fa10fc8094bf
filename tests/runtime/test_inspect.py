"""The read-only views that `ctk doctor` checks."""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.engines import Runtime
from ctk.runtime_config.inspect import (
    EngineView,
    PluginMerge,
    RuntimeView,
    inspect_containerd,
    inspect_crio,
    inspect_docker,
)

MAIN_V2 = """\
version = 2
imports = ["/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
"""

DROP_IN = """\
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
"""

RUNC = RuntimeView("runc", None, "io.containerd.runc.v2", True, "/etc/containerd/config.toml")
NVIDIA = RuntimeView(
    "nvidia",
    "/usr/bin/nvidia-container-runtime",
    "io.containerd.runc.v2",
    None,
    "/etc/containerd/conf.d/99-nvidia.toml",
)


def test_containerd_main_file_only() -> None:
    view = inspect_containerd([("/etc/containerd/config.toml", MAIN_V2)])
    assert view == EngineView(
        runtime=Runtime.CONTAINERD,
        files=("/etc/containerd/config.toml",),
        version=2,
        runtimes=(RUNC,),
        default_runtime="runc",
        cdi_enabled=True,
        cdi_spec_dirs=("/etc/cdi",),
        imports=("/etc/containerd/conf.d/*.toml",),
        cgroup_driver=None,
    )
    assert view.runtime_named("runc") == RUNC
    assert view.runtime_named("nvidia") is None


@pytest.mark.parametrize(
    ("merge", "runtimes", "default", "cdi"),
    [
        pytest.param(PluginMerge.REPLACE, (NVIDIA,), None, None, id="containerd-1.x-replaces"),
        pytest.param(PluginMerge.DEEP, (NVIDIA, RUNC), "runc", True, id="containerd-2.1-merges"),
    ],
)
def test_containerd_drop_in_merge(
    merge: PluginMerge, runtimes: tuple[RuntimeView, ...], default: str | None, cdi: bool | None
) -> None:
    files = [
        ("/etc/containerd/config.toml", MAIN_V2),
        ("/etc/containerd/conf.d/99-nvidia.toml", DROP_IN),
    ]
    view = inspect_containerd(files, merge=merge)
    assert (view.runtimes, view.default_runtime, view.cdi_enabled) == (runtimes, default, cdi)
    assert view.runtime_names == tuple(r.name for r in runtimes)


@pytest.mark.parametrize(
    ("text", "version", "plugin_text"),
    [
        pytest.param("", 2, "", id="empty-is-v2"),
        pytest.param(
            '[plugins.cri.containerd.runtimes.runc]\nruntime_type = "x"\n', 1, "", id="no-key-is-v1"
        ),
        pytest.param(
            'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
            'runtime_type = "x"\n',
            3,
            "",
            id="v3-runtime-plugin",
        ),
    ],
)
def test_containerd_versions(text: str, version: int, plugin_text: str) -> None:
    view = inspect_containerd([("c.toml", text + plugin_text)])
    assert view.version == version
    expected = () if not text else (RuntimeView("runc", None, "x", None, "c.toml"),)
    assert view.runtimes == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "version = 2\n[plugins\n",
            "c.toml: not valid TOML: Expected ']' at the end of a table declaration"
            " (at line 2, column 9)",
            id="malformed",
        ),
        pytest.param(
            'version = "2"\n',
            "c.toml: `version` must be an integer (1, 2 or 3), found a string",
            id="version-string",
        ),
        pytest.param("version = 7\n", "c.toml: unsupported containerd config version 7", id="v7"),
        pytest.param(
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = 3\n',
            'c.toml: `plugins."io.containerd.grpc.v1.cri".containerd.runtimes` must be a table,'
            " found a number",
            id="runtimes-not-table",
        ),
    ],
)
def test_containerd_errors(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        inspect_containerd([("c.toml", text)])
    assert info.value.message == message


def test_docker() -> None:
    text = """{
  "exec-opts": ["native.cgroupdriver=systemd"],
  "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}},
  "default-runtime": "nvidia",
  "features": {"cdi": true, "buildkit": true},
  "cdi-spec-dirs": ["/etc/cdi"]
}
"""
    assert inspect_docker(text, name="d.json") == EngineView(
        runtime=Runtime.DOCKER,
        files=("d.json",),
        version=None,
        runtimes=(RuntimeView("nvidia", "nvidia-container-runtime", None, None, "d.json"),),
        default_runtime="nvidia",
        cdi_enabled=True,
        cdi_spec_dirs=("/etc/cdi",),
        imports=(),
        cgroup_driver="systemd",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("{}", None, id="absent"),
        pytest.param('{"cdi-spec-dirs": null}', None, id="null"),
        pytest.param('{"cdi-spec-dirs": []}', (), id="empty-list"),
        pytest.param('{"cdi-spec-dirs": [""]}', ("",), id="blank-entry"),
    ],
)
def test_docker_cdi_spec_dirs_set_or_not(text: str, expected: tuple[str, ...] | None) -> None:
    """An empty list is not an absent key: dockerd reads no directory for it, the defaults for
    an absent one (the doctor's `engine_config.spec_dirs`)."""
    assert inspect_docker(text, name="d.json").cdi_spec_dirs == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "d.json: empty file, expected a JSON object", id="empty"),
        pytest.param(
            '{"a": 1,\n "b": }',
            "d.json: not valid JSON: Expecting value (line 2, column 7)",
            id="truncated",
        ),
        pytest.param("[]", "d.json: expected a JSON object at the top, found an array", id="list"),
        pytest.param(
            '{"runtimes": []}', "d.json: `runtimes` must be an object, found an array", id="rt-list"
        ),
        pytest.param(
            '{"a": 1, "a": 2}',
            "d.json: not valid JSON: key 'a' appears twice in one object",
            id="duplicate",
        ),
    ],
)
def test_docker_errors(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        inspect_docker(text, name="d.json")
    assert info.value.message == message


def test_crio_drop_ins_merge_key_by_key() -> None:
    main = """\
[crio.runtime]
default_runtime = "runc"
cgroup_manager = "systemd"
[crio.runtime.runtimes.runc]
runtime_path = "/usr/bin/runc"
runtime_type = "oci"
"""
    drop_in = """\
[crio.runtime]
default_runtime = "nvidia"
[crio.runtime.runtimes.nvidia]
runtime_path = "/usr/bin/nvidia-container-runtime"
runtime_type = "oci"
"""
    view = inspect_crio([("crio.conf", main), ("crio.conf.d/99-nvidia.toml", drop_in)])
    assert view == EngineView(
        runtime=Runtime.CRIO,
        files=("crio.conf", "crio.conf.d/99-nvidia.toml"),
        version=None,
        runtimes=(
            RuntimeView(
                "nvidia",
                "/usr/bin/nvidia-container-runtime",
                "oci",
                None,
                "crio.conf.d/99-nvidia.toml",
            ),
            RuntimeView("runc", "/usr/bin/runc", "oci", None, "crio.conf"),
        ),
        default_runtime="nvidia",
        cdi_enabled=None,
        cdi_spec_dirs=None,
        imports=(),
        cgroup_driver="systemd",
    )
