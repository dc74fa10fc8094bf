"""CRI-O's drop-in in-process: the nvidia runtime starts from a copy of the runtime CRI-O runs by
default (its monitor, root and other settings), which runtime configure then points at NVIDIA's
runtime; runtimes and a default that earlier runs put in the drop-in are carried over.

(issue 26: the mutation run found `crio.configure_drop_in` pinned only by the tests that run
CRI-O itself.)"""

from __future__ import annotations

import pytest

from ctk.runtime_config import crio
from ctk.runtime_config.changes import Change, ChangeKind
from ctk.runtime_config.engines import RuntimeRequest
from ctk.runtime_config.parse import load_toml

MAIN = "/etc/crio/crio.conf"
DROP_IN = "/etc/crio/crio.conf.d/99-nvidia.conf"
NVIDIA = "/usr/bin/nvidia-container-runtime"
RUNTIMES = ("crio", "runtime", "runtimes")

CRUN = '[crio.runtime.runtimes.crun]\nruntime_path = "/usr/bin/crun"\nruntime_root = "/run/crun"\n'
RUNC = '[crio.runtime.runtimes.runc]\nruntime_path = "/usr/bin/runc"\nmonitor_cgroup = "pod"\n'


def _nvidia(files: list[tuple[str, str]], request: RuntimeRequest) -> object:
    edit = crio.configure_drop_in(files, DROP_IN, request)
    data = load_toml(DROP_IN, edit.text)
    return data["crio"]["runtime"]["runtimes"][request.name]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            [(MAIN, f'[crio.runtime]\ndefault_runtime = "crun"\n{CRUN}{RUNC}')],
            {"runtime_path": NVIDIA, "runtime_root": "/run/crun", "runtime_type": "oci"},
            id="the-default-runtime",
        ),
        pytest.param(
            [(MAIN, f"{CRUN}{RUNC}")],
            {"runtime_path": NVIDIA, "monitor_cgroup": "pod", "runtime_type": "oci"},
            id="no-default-runc",
        ),
        pytest.param(
            [(MAIN, CRUN)],
            {"runtime_path": NVIDIA, "runtime_root": "/run/crun", "runtime_type": "oci"},
            id="no-runc-crun",
        ),
        pytest.param(
            [(MAIN, f'[crio.runtime]\ndefault_runtime = "kata"\n{RUNC}')],
            {"runtime_path": NVIDIA, "monitor_cgroup": "pod", "runtime_type": "oci"},
            id="a-default-with-no-table-runc",
        ),
        pytest.param(
            [
                (
                    MAIN,
                    '[crio.runtime]\ndefault_runtime = "nvidia"\n'
                    '[crio.runtime.runtimes.nvidia]\nruntime_root = "/run/old"\n',
                ),
                ("/etc/crio/crio.conf.d/10.conf", RUNC),
            ],
            {"runtime_path": NVIDIA, "monitor_cgroup": "pod", "runtime_type": "oci"},
            id="default-nvidia-itself-then-runc-of-a-drop-in",
        ),
        pytest.param(
            [
                (MAIN, f"{RUNC}"),
                ("/etc/crio/crio.conf.d/10.conf", RUNC.replace('"pod"', '"system.slice"')),
            ],
            {"runtime_path": NVIDIA, "monitor_cgroup": "system.slice", "runtime_type": "oci"},
            id="a-later-file-wins",
        ),
        pytest.param([(MAIN, "")], {"runtime_path": NVIDIA, "runtime_type": "oci"}, id="nothing"),
        pytest.param(
            [(MAIN, 'crio = "x"\n')],
            {"runtime_path": NVIDIA, "runtime_type": "oci"},
            id="crio-not-a-table",
        ),
        pytest.param(
            [(MAIN, "[crio]\nruntime = 1\n")],
            {"runtime_path": NVIDIA, "runtime_type": "oci"},
            id="runtime-not-a-table",
        ),
        pytest.param(
            [(MAIN, '[crio.runtime]\nruntimes = 1\ndefault_runtime = "runc"\n')],
            {"runtime_path": NVIDIA, "runtime_type": "oci"},
            id="runtimes-not-a-table",
        ),
        pytest.param(
            [
                (
                    MAIN,
                    '[crio.runtime]\ndefault_runtime = "runc"\n'
                    '[crio.runtime.runtimes]\nrunc = "x"\n',
                )
            ],
            {"runtime_path": NVIDIA, "runtime_type": "oci"},
            id="runc-not-a-table",
        ),
    ],
)
def test_the_runtime_starts_from_the_default_one(
    files: list[tuple[str, str]], expected: dict[str, str]
) -> None:
    assert _nvidia(files, RuntimeRequest()) == expected


def test_carried_runtimes_and_default_stay() -> None:
    carried: tuple[dict[str, object], str | None] = ({"other": {"runtime_path": "/x"}}, "other")
    edit = crio.configure_drop_in(
        [(MAIN, CRUN)],
        DROP_IN,
        RuntimeRequest(set_as_default=True),
        carried,
    )
    data = load_toml(DROP_IN, edit.text)
    assert data["crio"]["runtime"] == {
        "default_runtime": "nvidia",
        "runtimes": {
            "other": {"runtime_path": "/x"},
            "nvidia": {"runtime_path": NVIDIA, "runtime_root": "/run/crun", "runtime_type": "oci"},
        },
    }
    assert edit.text.startswith("# Written by `ctk runtime configure`")
    assert edit.changes == (
        Change(
            (*RUNTIMES, "nvidia", "runtime_path"), True, "/usr/bin/crun", NVIDIA, ChangeKind.SET
        ),
        Change((*RUNTIMES, "nvidia", "runtime_type"), False, None, "oci", ChangeKind.SET),
        Change(("crio", "runtime", "default_runtime"), True, "other", "nvidia", ChangeKind.SET),
    )


def test_a_malformed_file_is_named() -> None:
    import re

    from ctk.errors import CtkError

    with pytest.raises(CtkError, match=re.escape("/etc/crio/crio.conf.d/10.conf")):
        crio.configure_drop_in(
            [(MAIN, ""), ("/etc/crio/crio.conf.d/10.conf", "[crio\n")], DROP_IN, RuntimeRequest()
        )
