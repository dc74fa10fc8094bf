"""How ctk reads CRI-O's configuration (crio.conf, then crio.conf.d in order, key by key): the
runtimes with the file that defined each, the settings the doctor reads, and an error naming the
file and key of a malformed value.

(issue 26: the mutation run found inspect_crio's error texts and sources unpinned.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.inspect import inspect_crio
from ctk.runtime_config.parse import TYPE_HINT

MAIN = "/etc/crio/crio.conf"
DROP_IN = "/etc/crio/crio.conf.d/10-nvidia.conf"


def test_runtimes_settings_and_sources() -> None:
    view = inspect_crio(
        [
            (
                MAIN,
                '[crio.runtime]\ndefault_runtime = "runc"\ncgroup_manager = "cgroupfs"\n'
                '[crio.runtime.runtimes.runc]\nruntime_path = "/usr/bin/runc"\n',
            ),
            (
                DROP_IN,
                '[crio.runtime]\ndefault_runtime = "nvidia"\ncdi_spec_dirs = ["/etc/cdi"]\n'
                "[crio.runtime.runtimes.nvidia]\n"
                'runtime_path = "/usr/bin/nvidia-container-runtime"\nruntime_type = "oci"\n',
            ),
        ]
    )
    assert view.files == (MAIN, DROP_IN)
    assert (view.default_runtime, view.cdi_spec_dirs, view.cgroup_driver) == (
        "nvidia",
        ("/etc/cdi",),
        "cgroupfs",
    )
    assert [(r.name, r.binary_path, r.runtime_type, r.source) for r in view.runtimes] == [
        ("nvidia", "/usr/bin/nvidia-container-runtime", "oci", DROP_IN),
        ("runc", "/usr/bin/runc", None, MAIN),
    ]


def test_no_files_is_crio_with_its_defaults() -> None:
    view = inspect_crio([])
    assert (view.files, view.runtimes, view.default_runtime, view.cdi_spec_dirs) == (
        (),
        (),
        None,
        None,
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param(
            [(MAIN, ""), (DROP_IN, "[crio.runtime.runtimes]\nnvidia = 1\n")],
            f"{DROP_IN}: `crio.runtime.runtimes.nvidia` must be a table, found a number",
            id="runtime-not-a-table-in-the-drop-in",
        ),
        pytest.param(
            [(MAIN, "[crio.runtime.runtimes.runc]\nruntime_path = 1\n"), (DROP_IN, "")],
            f"{MAIN}: `crio.runtime.runtimes.runc.runtime_path` must be a string, found a number",
            id="runtime-path-in-the-main-file",
        ),
        pytest.param(
            [(MAIN, ""), (DROP_IN, "[crio.runtime.runtimes.x]\nruntime_type = true\n")],
            f"{DROP_IN}: `crio.runtime.runtimes.x.runtime_type` must be a string, found a boolean",
            id="runtime-type",
        ),
        pytest.param(
            [(MAIN, ""), (DROP_IN, "[crio.runtime]\ndefault_runtime = 1\n")],
            f"{DROP_IN}: `crio.runtime.default_runtime` must be a string, found a number",
            id="default-runtime-named-by-the-drop-in-that-set-it",
        ),
        pytest.param(
            [(MAIN, '[crio.runtime]\ncdi_spec_dirs = "/etc/cdi"\n'), (DROP_IN, "")],
            f"{MAIN}: `crio.runtime.cdi_spec_dirs` must be an array of strings",
            id="cdi-spec-dirs",
        ),
        pytest.param(
            [(MAIN, "[crio.runtime]\ncgroup_manager = 2\n")],
            f"{MAIN}: `crio.runtime.cgroup_manager` must be a string, found a number",
            id="cgroup-manager",
        ),
        pytest.param(
            [(MAIN, "[crio]\nruntime = 1\n")],
            f"{MAIN}: `crio.runtime` must be a table, found a number",
            id="runtime-section",
        ),
    ],
)
def test_a_malformed_value_is_named_with_its_file(
    files: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(CtkError) as raised:
        inspect_crio(files)
    assert (raised.value.message, raised.value.hint) == (message, TYPE_HINT)
