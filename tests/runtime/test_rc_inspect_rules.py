"""Where ctk's containerd copy and the files before it disagree about the `runtimes` table as a
whole: an empty table the copy filled with ctk's runtimes (runc written out, NVIDIA's) is no
difference; a copy whose table is empty while the files define runtimes, or a `runtimes` that is
not a table in the files, is.

(issue 26: survivors of the mutation run in `inspect._differing`.)"""

from __future__ import annotations

import pytest

from ctk.runtime_config.inspect import stale_copy

CRI = 'plugins."io.containerd.grpc.v1.cri"'
OWN = "# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
CONFIG = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
MAIN = f"version = 2\n[{CRI}]\n  enable_selinux = true\n"
EMPTY_RUNTIMES = f"[{CRI}.containerd.runtimes]\n"
NVIDIA = (
    f"[{CRI}.containerd.runtimes.nvidia.options]\n"
    '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
)
RUNC = f'[{CRI}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
KATA = f'[{CRI}.containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n'


@pytest.mark.parametrize(
    ("main_text", "copy", "expected"),
    [
        pytest.param(
            MAIN + EMPTY_RUNTIMES,
            OWN + MAIN + RUNC + NVIDIA,
            (),
            id="empty-table-filled-with-runc-and-nvidia",
        ),
        pytest.param(
            MAIN + EMPTY_RUNTIMES,
            OWN + MAIN + KATA + NVIDIA,
            (),
            id="empty-table-filled-with-a-runtime-ctk-added",
        ),
        pytest.param(
            MAIN + RUNC,
            OWN + MAIN + EMPTY_RUNTIMES,
            ("containerd.runtimes", "containerd.runtimes.runc.runtime_type"),
            id="the-copys-table-is-empty",
        ),
        pytest.param(
            MAIN + f"[{CRI}.containerd]\n  runtimes = 1\n",
            OWN + MAIN + RUNC + NVIDIA,
            ("containerd.runtimes",),
            id="runtimes-not-a-table-in-the-files",
        ),
        pytest.param(
            MAIN + EMPTY_RUNTIMES,
            OWN + MAIN + EMPTY_RUNTIMES,
            (),
            id="both-empty",
        ),
    ],
)
def test_the_runtimes_table_as_a_whole(
    main_text: str, copy: str, expected: tuple[str, ...]
) -> None:
    assert stale_copy([(CONFIG, main_text), (DROP_IN, copy)]) == (DROP_IN, expected)
