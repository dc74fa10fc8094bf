"""CRI-O's drop-in rules in-process: with no `default_runtime` the copy comes from runc (never
from a runtime of another name), the CDI note is kept, and the editor carries over an earlier
drop-in's other runtimes but not the runtime it writes again, nor a default naming it.

(issue 26: survivors of the mutation run in `crio._source`, `configure_drop_in` and
`CrioEditor.configure_drop_in`.)"""

from __future__ import annotations

import pytest

from ctk.runtime_config import crio
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.engines import RuntimeRequest
from ctk.runtime_config.inspect import DROP_IN_HEADER
from ctk.runtime_config.parse import load_toml

MAIN = "/etc/crio/crio.conf"
DROP_IN = "/etc/crio/crio.conf.d/99-nvidia.conf"
NVIDIA = "/usr/bin/nvidia-container-runtime"
RUNC = '[crio.runtime.runtimes.runc]\nruntime_path = "/usr/bin/runc"\nmonitor_cgroup = "pod"\n'
FROM_RUNC = {"runtime_path": NVIDIA, "monitor_cgroup": "pod", "runtime_type": "oci"}
# Runtimes whose names no fallback names: without `default_runtime` none of them is copied.
OTHERS = "".join(
    f'[crio.runtime.runtimes.{name}]\nruntime_path = "/usr/bin/{name}"\nruntime_root = "/r"\n'
    for name in ("kata", "XXXX", "XX")
)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(OTHERS + RUNC, id="others-first"),
        pytest.param(RUNC + OTHERS, id="runc-first"),
        pytest.param("[crio.runtime]\nlog_level = 'info'\n" + OTHERS + RUNC, id="runtime-table"),
    ],
)
def test_without_a_default_runc_is_copied(text: str) -> None:
    edit = crio.configure_in_place(MAIN, text, RuntimeRequest())
    assert load_toml(MAIN, edit.text)["crio"]["runtime"]["runtimes"]["nvidia"] == FROM_RUNC
    drop_in = crio.configure_drop_in([(MAIN, text)], DROP_IN, RuntimeRequest())
    assert load_toml(DROP_IN, drop_in.text)["crio"]["runtime"]["runtimes"] == {"nvidia": FROM_RUNC}


@pytest.mark.parametrize(
    ("enable_cdi", "notes"),
    [pytest.param(True, (crio.CDI_NOTE,), id="cdi"), pytest.param(False, (), id="no-cdi")],
)
def test_the_drop_in_keeps_the_cdi_note(enable_cdi: bool, notes: tuple[str, ...]) -> None:
    edit = crio.configure_drop_in([(MAIN, RUNC)], DROP_IN, RuntimeRequest(enable_cdi=enable_cdi))
    assert edit.notes == notes
    assert edit.text.startswith(DROP_IN_HEADER)


OWN = (
    DROP_IN_HEADER + '[crio.runtime]\ndefault_runtime = "nvidia"\n'
    '[crio.runtime.runtimes.nvidia]\nruntime_path = "/old/nvidia"\nruntime_root = "/old"\n'
    '[crio.runtime.runtimes.other]\nruntime_path = "/usr/bin/other"\n'
)


@pytest.mark.parametrize(
    ("request_", "default"),
    [
        pytest.param(RuntimeRequest(), None, id="not-the-default"),
        pytest.param(RuntimeRequest(set_as_default=True), "nvidia", id="the-default"),
    ],
)
def test_the_editor_carries_the_other_runtimes_only(
    request_: RuntimeRequest, default: str | None
) -> None:
    """The runtime written again starts afresh from runc; whether it is the default is the
    request's to say, not the old drop-in's."""
    inputs = Inputs(config=MAIN, config_text=RUNC, drop_in=DROP_IN, drop_in_text=OWN)
    planned = crio.EDITOR.configure_drop_in(inputs, request_, (DROP_IN, OWN))
    assert planned.main is None
    runtime = load_toml(DROP_IN, planned.text)["crio"]["runtime"]
    assert runtime.get("default_runtime") == default
    assert runtime["runtimes"] == {
        "other": {"runtime_path": "/usr/bin/other"},
        "nvidia": FROM_RUNC,
    }


def test_the_editor_without_an_own_drop_in_writes_the_runtime_alone() -> None:
    inputs = Inputs(config=MAIN, config_text=RUNC, drop_in=DROP_IN, drop_in_text=None)
    planned = crio.EDITOR.configure_drop_in(inputs, RuntimeRequest(enable_cdi=True), None)
    assert load_toml(DROP_IN, planned.text) == {
        "crio": {"runtime": {"runtimes": {"nvidia": FROM_RUNC}}}
    }
    assert planned.notes == (crio.CDI_NOTE,)
