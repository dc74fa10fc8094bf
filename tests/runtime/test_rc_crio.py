"""crio.conf edited in place, in-process: the nvidia runtime starts from a copy of the runtime
CRI-O runs by default (then runc, then crun), the record holds only the new table, malformed
tables are refused naming the file, unconfigure without a record removes the runtime and its
default, and the CRI-O editor's plans (warnings about later files, a file ctk created going
again, one of two runtimes taken out).

(issue 26: survivors of the mutation run in `crio.configure_in_place`, `_source`,
`carried_runtimes`, `unconfigure_in_place` and `CrioEditor`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import configure as plan
from ctk.runtime_config import crio
from ctk.runtime_config.changes import new_table
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.engines import Runtime, RuntimeRequest
from ctk.runtime_config.parse import load_toml

MAIN = "/etc/crio/crio.conf"
DROP_IN = "/etc/crio/crio.conf.d/99-nvidia.conf"
NVIDIA = "/usr/bin/nvidia-container-runtime"
RUNTIMES = ("crio", "runtime", "runtimes")
RUNC = '[crio.runtime.runtimes.runc]\nruntime_path = "/usr/bin/runc"\nmonitor_cgroup = "pod"\n'
CRUN = '[crio.runtime.runtimes.crun]\nruntime_path = "/usr/bin/crun"\nruntime_root = "/run/crun"\n'
FROM_RUNC = {"runtime_path": NVIDIA, "monitor_cgroup": "pod", "runtime_type": "oci"}
FROM_CRUN = {"runtime_path": NVIDIA, "runtime_root": "/run/crun", "runtime_type": "oci"}
BARE = {"runtime_path": NVIDIA, "runtime_type": "oci"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            f'[crio.runtime]\ndefault_runtime = "crun"\n{RUNC}{CRUN}', FROM_CRUN, id="default"
        ),
        pytest.param(f"{CRUN}{RUNC}", FROM_RUNC, id="no-default-runc"),
        pytest.param(CRUN, FROM_CRUN, id="no-runc-crun"),
        pytest.param(
            f'[crio.runtime]\ndefault_runtime = "kata"\n{CRUN}', FROM_CRUN, id="default-no-table"
        ),
        pytest.param(
            '[crio.runtime.runtimes.kata]\nruntime_path = "/k"\n', BARE, id="none-of-them"
        ),
        pytest.param("", BARE, id="empty"),
        pytest.param(
            f'[crio.runtime.runtimes.""]\nruntime_path = "/e"\n{RUNC}',
            FROM_RUNC,
            id="a-runtime-named-empty-is-no-default",
        ),
    ],
)
def test_in_place_the_runtime_starts_from_the_default_one(text: str, expected: object) -> None:
    edit = crio.configure_in_place(MAIN, text, RuntimeRequest())
    assert load_toml(MAIN, edit.text)["crio"]["runtime"]["runtimes"]["nvidia"] == expected
    # the new table goes as a whole on unconfigure: nothing inside it is recorded
    assert new_table((*RUNTIMES, "nvidia")) in edit.changes
    assert [c for c in edit.changes if len(c.keys) > 4] == []
    assert crio.unconfigure_in_place(MAIN, edit.text, "nvidia", edit.changes) == text


def test_in_place_an_existing_runtime_is_edited_and_recorded() -> None:
    text = '[crio.runtime.runtimes.nvidia]\nruntime_path = "/old"\n'
    edit = crio.configure_in_place(MAIN, text, RuntimeRequest())
    assert [(c.keys[-1], c.before, c.after) for c in edit.changes] == [
        ("runtime_path", "/old", NVIDIA),
        ("runtime_type", None, "oci"),
    ]
    assert crio.unconfigure_in_place(MAIN, edit.text, "nvidia", edit.changes, recorded=True) == text


@pytest.mark.parametrize(
    ("enable_cdi", "notes"),
    [pytest.param(True, (crio.CDI_NOTE,), id="cdi"), pytest.param(False, (), id="no-cdi")],
)
def test_in_place_cdi_is_only_a_note(enable_cdi: bool, notes: tuple[str, ...]) -> None:
    edit = crio.configure_in_place(MAIN, RUNC, RuntimeRequest(enable_cdi=enable_cdi))
    assert edit.notes == notes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("[crio\n", f"{MAIN}: not valid TOML", id="not-toml"),
        pytest.param(
            "[crio]\nruntime = 1\n",
            f"{MAIN}: `crio.runtime` must be a table, found a number",
            id="runtime",
        ),
        pytest.param(
            '[crio.runtime.runtimes]\nnvidia = "x"\n',
            f"{MAIN}: `crio.runtime.runtimes.nvidia` must be a table, found a string",
            id="nvidia",
        ),
        pytest.param(
            '[crio.runtime.runtimes]\nrunc = "x"\n',
            f"{MAIN}: `crio.runtime.runtimes.runc` must be a table, found a string",
            id="runc-to-copy",
        ),
    ],
)
def test_in_place_malformed_tables_are_refused(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        crio.configure_in_place(MAIN, text, RuntimeRequest())
    assert info.value.message.startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "[crio]\nruntime = 1\n",
            f"{MAIN}: `crio.runtime` must be a table, found a number",
            id="runtime",
        ),
        pytest.param(
            "[crio.runtime]\nruntimes = 1\n",
            f"{MAIN}: `crio.runtime.runtimes` must be a table, found a number",
            id="runtimes",
        ),
    ],
)
def test_unconfigure_refuses_malformed_tables(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        crio.unconfigure_in_place(MAIN, text, "nvidia", ())
    assert info.value.message == message


def test_without_a_record_the_runtime_and_a_default_naming_it_go() -> None:
    nvidia = '[crio.runtime.runtimes.nvidia]\nruntime_path = "/x"\n'
    text = f'[crio.runtime]\ndefault_runtime = "nvidia"\n{RUNC}{nvidia}'
    assert crio.unconfigure_in_place(MAIN, text, "nvidia", ()) == f"[crio.runtime]\n{RUNC}"


@pytest.mark.parametrize(
    ("drop_in", "expected"),
    [
        pytest.param(
            '[crio.runtime]\ndefault_runtime = "other"\n'
            '[crio.runtime.runtimes.other]\nruntime_path = "/o"\n'
            '[crio.runtime.runtimes.nvidia]\nruntime_path = "/n"\n',
            ({"other": {"runtime_path": "/o"}}, "other"),
            id="carried-with-its-default",
        ),
        pytest.param(
            '[crio.runtime]\ndefault_runtime = "nvidia"\n'
            '[crio.runtime.runtimes.other]\nruntime_path = "/o"\n'
            '[crio.runtime.runtimes.nvidia]\nruntime_path = "/n"\n',
            ({"other": {"runtime_path": "/o"}}, None),
            id="the-default-is-the-runtime-written-again",
        ),
        pytest.param(
            '[crio.runtime]\ndefault_runtime = "runc"\n'
            '[crio.runtime.runtimes.runc]\nruntime_path = "/r"\n',
            ({}, None),
            id="defined-by-the-other-files",
        ),
    ],
)
def test_carried_runtimes(drop_in: str, expected: object) -> None:
    others = [(MAIN, RUNC)]
    assert crio.carried_runtimes((DROP_IN, drop_in), others, "nvidia") == expected


def test_carried_runtimes_name_a_malformed_file() -> None:
    with pytest.raises(CtkError) as info:
        crio.carried_runtimes((DROP_IN, ""), [(MAIN, "[crio\n")], "nvidia")
    assert info.value.message.startswith(f"{MAIN}: not valid TOML")


LATER = "/etc/crio/crio.conf.d/50-later.conf"


@pytest.mark.parametrize(
    ("later", "request_", "warned"),
    [
        pytest.param(
            f'[crio.runtime.runtimes.nvidia]\nruntime_path = "{NVIDIA}"\n',
            RuntimeRequest(),
            True,
            id="runtime",
        ),
        pytest.param(
            '[crio.runtime]\ndefault_runtime = "crun"\n',
            RuntimeRequest(set_as_default=True),
            True,
            id="default",
        ),
        pytest.param(
            '[crio.runtime]\ndefault_runtime = "crun"\n',
            RuntimeRequest(),
            False,
            id="default-not-asked",
        ),
        pytest.param(
            '[crio.runtime]\ndefault_runtime = "nvidia"\n',
            RuntimeRequest(set_as_default=True),
            False,
            id="same-default",
        ),
    ],
)
def test_in_place_warns_about_later_files_that_override(
    later: str, request_: RuntimeRequest, warned: bool
) -> None:
    inputs = Inputs(config=MAIN, config_text=RUNC, after=((LATER, later),))
    configured = plan.configure(Runtime.CRIO, inputs, request_)
    assert configured.warnings == (
        (f"{LATER} is read after {MAIN} and overrides its settings",) if warned else ()
    )


def test_a_crio_conf_ctk_created_goes_again() -> None:
    configured = plan.configure(
        Runtime.CRIO, Inputs(config=MAIN, config_text=None), RuntimeRequest()
    )
    (created,) = configured.files
    assert created.before is None and created.after is not None and created.record is not None
    undone = plan.unconfigure(
        Runtime.CRIO,
        Inputs(config=MAIN, config_text=created.after, record=created.record, recorded=True),
        "nvidia",
    )
    assert [(f.path, f.after) for f in undone.files] == [(MAIN, None)]


def test_unconfiguring_one_of_two_runtimes_keeps_the_others_record() -> None:
    first = plan.configure(
        Runtime.CRIO, Inputs(config=MAIN, config_text=RUNC), RuntimeRequest(set_as_default=True)
    ).files[0]
    assert first.after is not None and first.record is not None
    second = plan.configure(
        Runtime.CRIO,
        Inputs(config=MAIN, config_text=first.after, record=first.record, recorded=True),
        RuntimeRequest(name="nvidia-cdi", path="/usr/bin/nvidia-container-runtime.cdi"),
    ).files[0]
    assert second.after is not None and second.record is not None
    undone = plan.unconfigure(
        Runtime.CRIO,
        Inputs(config=MAIN, config_text=second.after, record=second.record, recorded=True),
        "nvidia",
    ).files[0]
    assert undone.after is not None and undone.record is not None
    runtime = load_toml(MAIN, undone.after)["crio"]["runtime"]
    assert "default_runtime" not in runtime
    assert sorted(runtime["runtimes"]) == ["nvidia-cdi", "runc"]
    assert [c.keys for c in undone.record] == [("crio", "runtime"), (*RUNTIMES, "nvidia-cdi")]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("x = 1\n", id="no-crio-table"),
        pytest.param('[crio.runtime]\ndefault_runtime = "runc"\n', id="runc-the-default"),
    ],
)
def test_in_place_as_the_default_and_back(text: str) -> None:
    """The tables ctk created for the runtime and its default go again, emptied or not."""
    edit = crio.configure_in_place(MAIN, text, RuntimeRequest(set_as_default=True))
    assert load_toml(MAIN, edit.text)["crio"]["runtime"]["default_runtime"] == "nvidia"
    undone = crio.unconfigure_in_place(MAIN, edit.text, "nvidia", edit.changes, recorded=True)
    assert undone == text
