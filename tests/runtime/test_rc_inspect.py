"""The readers' edges: which settings of ctk's containerd copy count as stale (runtimes the files
define that the copy lacks, a runtime's own settings, NVIDIA's runtime by its binary's name), the
errors naming the file they are in, and CRI-O with no file at all.

(issue 26: survivors of the mutation run in `inspect.stale_copy`, `_differing`, `_is_nvidia`,
`_at` and `inspect_crio`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.engines import Runtime
from ctk.runtime_config.inspect import EngineView, inspect_crio, inspect_docker, stale_copy

CRI = 'plugins."io.containerd.grpc.v1.cri"'
OWN = "# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
CONFIG = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
NVIDIA = (
    f"[{CRI}.containerd.runtimes.nvidia.options]\n"
    '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
)
MAIN = f"version = 2\n[{CRI}]\n  enable_selinux = true\n"
COPY = OWN + MAIN + f"  enable_cdi = true\n{NVIDIA}"


def _runtime(name: str, binary: str, cgroup: bool) -> str:
    return (
        f"[{CRI}.containerd.runtimes.{name}.options]\n"
        f'  BinaryName = "{binary}"\n  SystemdCgroup = {str(cgroup).lower()}\n'
    )


@pytest.mark.parametrize(
    ("main_text", "copy", "expected"),
    [
        pytest.param(
            MAIN + f'[{CRI}.containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n',
            COPY,
            ("containerd.runtimes.kata.runtime_type",),
            id="a-runtime-the-copy-lacks",
        ),
        pytest.param(
            MAIN + f'[{CRI}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n',
            COPY + f'[{CRI}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v1"\n',
            ("containerd.runtimes.runc.runtime_type",),
            id="a-runtime-without-options-changed",
        ),
        pytest.param(
            MAIN + _runtime("custom", "/opt/nvidia/bin/runc", True),
            COPY + _runtime("custom", "/opt/nvidia/bin/runc", False),
            ("containerd.runtimes.custom.options.SystemdCgroup",),
            id="nvidia-in-a-folder-name-is-not-nvidias-runtime",
        ),
        pytest.param(
            MAIN + _runtime("nv", "nvidia-container-runtime", True),
            COPY + _runtime("nv", "nvidia-container-runtime", False),
            (),
            id="nvidias-runtime-by-bare-name-differs-on-purpose",
        ),
        pytest.param(
            MAIN + f"[{CRI}.registry.configs.nvidia]\n  insecure = true\n",
            COPY,
            ("registry.configs.nvidia.insecure",),
            id="a-key-named-like-ctks-runtime-outside-runtimes",
        ),
        pytest.param(
            MAIN.replace("true", "false") + f"[{CRI}.containerd.runtimes]\n",
            OWN + MAIN + f"[{CRI}.containerd.runtimes]\n",
            ("enable_selinux",),
            id="empty-runtimes-tables",
        ),
        pytest.param(
            MAIN + f"[{CRI}.containerd.runtimes.nvidia]\n",
            COPY,
            (),
            id="an-empty-nvidia-table-ctk-filled",
        ),
        pytest.param("", COPY, ("enable_selinux",), id="empty-main-file-is-version-2"),
    ],
)
def test_stale_copy_settings(main_text: str, copy: str, expected: tuple[str, ...]) -> None:
    assert stale_copy([(CONFIG, main_text), (DROP_IN, copy)]) == (DROP_IN, expected)


BAD_PLUGIN = 'version = 2\n[plugins]\n  "io.containerd.grpc.v1.cri" = 1\n'


@pytest.mark.parametrize(
    ("main_text", "copy", "message"),
    [
        pytest.param("version = \n", COPY, f"{CONFIG}: not valid TOML", id="main-not-toml"),
        pytest.param(
            'version = "2"\n',
            COPY,
            f"{CONFIG}: `version` must be an integer (1, 2 or 3), found a string",
            id="main-version-a-string",
        ),
        pytest.param(MAIN, OWN + "[x\n", f"{DROP_IN}: not valid TOML", id="drop-in-not-toml"),
        pytest.param(
            MAIN,
            OWN + BAD_PLUGIN,
            f'{DROP_IN}: `plugins."io.containerd.grpc.v1.cri"` must be a table, found a number',
            id="drop-in-plugin-not-a-table",
        ),
    ],
)
def test_stale_copy_names_the_malformed_file(main_text: str, copy: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        stale_copy([(CONFIG, main_text), (DROP_IN, copy)])
    assert info.value.message.startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"default-runtime": 1}',
            "d.json: `default-runtime` must be a string, found a number",
            id="top-level-key",
        ),
        pytest.param(
            '{"features": {"cdi": "yes"}}',
            "d.json: `features.cdi` must be a boolean, found a string",
            id="nested-key",
        ),
    ],
)
def test_docker_errors_name_the_key_path(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        inspect_docker(text, name="d.json")
    assert info.value.message == message


def test_crio_with_no_files_is_crios_defaults() -> None:
    assert inspect_crio([]) == EngineView(
        runtime=Runtime.CRIO,
        files=(),
        version=None,
        runtimes=(),
        default_runtime=None,
        cdi_enabled=None,
        cdi_spec_dirs=None,
        imports=(),
        cgroup_driver=None,
    )


def test_crio_errors_name_the_file() -> None:
    with pytest.raises(CtkError) as info:
        inspect_crio([("/srv/crio.conf", "[crio.runtime]\ndefault_runtime = 1\n")])
    assert info.value.message == (
        "/srv/crio.conf: `crio.runtime.default_runtime` must be a string, found a number"
    )
