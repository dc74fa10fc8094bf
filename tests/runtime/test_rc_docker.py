"""daemon.json in-process: a file already set up is left byte for byte, unconfigure without a
record removes the runtime and a default naming it, what the user added since ctk's edit stays,
and the Docker editor plans in place even when given a drop-in.

(issue 26: survivors of the mutation run in `docker._enable_cdi`, `unconfigure`, `_undo` and
`DockerEditor`.)"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import configure as plan
from ctk.runtime_config import docker
from ctk.runtime_config.changes import Change, ChangeKind
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.engines import Runtime, RuntimeRequest

NAME = "/etc/docker/daemon.json"
NVIDIA = "/usr/bin/nvidia-container-runtime"
CDI = RuntimeRequest(enable_cdi=True)
CDI_DEFAULT = RuntimeRequest(set_as_default=True, enable_cdi=True)
RUNTIME = f'"nvidia": {{"path": "{NVIDIA}", "args": []}}'


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f'{{"runtimes": {{{RUNTIME}}}, "features": {{"cdi": true}}}}', id="cdi-on"),
        pytest.param(
            f'{{"runtimes": {{{RUNTIME}}}, "features": {{"cdi": true}}, "cdi-spec-dirs": ["/x"]}}',
            id="cdi-on-with-dirs",
        ),
    ],
)
def test_a_file_already_set_up_is_left_as_it_is(text: str) -> None:
    """No change at all: not even the final newline the file lacks."""
    edit = docker.configure(NAME, text, CDI)
    assert (edit.text, edit.changes, edit.notes) == (text, (), ())


def test_cdi_turned_off_is_turned_on() -> None:
    edit = docker.configure(
        NAME, f'{{"runtimes": {{{RUNTIME}}}, "features": {{"cdi": false}}}}', CDI
    )
    assert json.loads(edit.text)["features"] == {"cdi": True}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"features": 1}',
            f"{NAME}: `features` must be an object, found a number",
            id="features",
        ),
        pytest.param(
            '{"runtimes": []}',
            f"{NAME}: `runtimes` must be an object, found an array",
            id="runtimes",
        ),
    ],
)
def test_malformed_objects_are_named(text: str, message: str) -> None:
    with pytest.raises(CtkError) as configuring:
        docker.configure(NAME, text, CDI)
    assert configuring.value.message == message
    assert configuring.value.hint == "dockerd refuses this file as well; fix that key and run again"
    if "runtimes" in text:
        with pytest.raises(CtkError) as unconfiguring:
            docker.unconfigure(NAME, text, "nvidia", ())
        assert unconfiguring.value.message == message
        assert unconfiguring.value.hint == configuring.value.hint


def test_without_a_record_the_runtime_and_a_default_naming_it_go() -> None:
    """As nvidia-ctk does: no record, so the runtime of that name is taken to be ctk's."""
    text = (
        '{"default-runtime": "nvidia", "runtimes": {'
        + RUNTIME
        + ', "runc": {"path": "/usr/bin/runc"}}}\n'
    )
    assert docker.unconfigure(NAME, text, "nvidia", ()) == (
        '{"runtimes": {"runc": {"path": "/usr/bin/runc"}}}\n'
    )


def test_a_default_naming_another_runtime_stays() -> None:
    text = '{"default-runtime": "runc", "runtimes": {' + RUNTIME + "}}\n"
    assert (
        docker.unconfigure(NAME, text, "nvidia", ())
        == '{"default-runtime": "runc", "runtimes": {}}\n'
    )


@pytest.mark.parametrize(
    ("text", "since", "expected"),
    [
        pytest.param(
            '{"runtimes": { }}\n',
            lambda t: t.replace('"runtimes": {', '"runtimes": {"kata": {"path": "/k"}, ', 1),
            '{"runtimes": {"kata": {"path": "/k"}}}\n',
            id="a-runtime-added-to-a-blank-object",
        ),
        pytest.param(
            '{"features": { }}\n',
            lambda t: '{"runtimes": {}}\n',
            "{}\n",
            id="a-blank-object-removed",
        ),
        pytest.param(
            "{}\n",
            lambda t: t.replace('"cdi": true', '"other": 1'),
            '{\n    "features": {\n        "other": 1\n    }\n}\n',
            id="a-key-added-to-an-object-ctk-created",
        ),
        pytest.param(
            '{"features": {"x": 1}}\n',
            lambda t: t.replace('"cdi": true', '"y": 2'),
            '{"features": {"x": 1, "y": 2}}\n',
            id="the-key-ctk-set-removed",
        ),
    ],
)
def test_what_the_user_changed_since_stays(
    text: str, since: Callable[[str], str], expected: str
) -> None:
    edit = docker.configure(NAME, text, CDI)
    changed = since(edit.text)
    assert changed != edit.text
    assert docker.unconfigure(NAME, changed, "nvidia", edit.changes) == expected


def test_a_restored_multi_line_value_keeps_its_layout() -> None:
    text = '{"cdi-spec-dirs": [\n    ""\n],\n"features": {"cdi": true}}\n'
    edit = docker.configure(NAME, text, CDI)
    assert json.loads(edit.text)["cdi-spec-dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert docker.unconfigure(NAME, edit.text, "nvidia", edit.changes) == text


def test_docker_edits_daemon_json_even_when_given_a_drop_in() -> None:
    """dockerd has no drop-ins: the plan edits daemon.json, whatever --drop-in-config says."""
    inputs = Inputs(config=NAME, config_text="{}\n", drop_in="/etc/docker/daemon.d/99-nvidia.json")
    configured = plan.configure(Runtime.DOCKER, inputs, RuntimeRequest())
    assert [f.path for f in configured.files] == [NAME]
    done = configured.files[0]
    assert done.after is not None and done.record is not None
    undone = plan.unconfigure(
        Runtime.DOCKER,
        Inputs(
            config=NAME,
            config_text=done.after,
            record=done.record,
            recorded=True,
            drop_in="/etc/docker/daemon.d/99-nvidia.json",
        ),
        "nvidia",
    )
    assert [(f.path, f.after) for f in undone.files] == [(NAME, "{}\n")]


def test_unconfiguring_one_of_two_runtimes_keeps_the_others_record() -> None:
    """The default-runtime change naming the runtime taken out leaves the record with it."""
    first = plan.configure(
        Runtime.DOCKER, Inputs(config=NAME, config_text="{}\n"), RuntimeRequest(set_as_default=True)
    ).files[0]
    assert first.after is not None and first.record is not None
    second = plan.configure(
        Runtime.DOCKER,
        Inputs(config=NAME, config_text=first.after, record=first.record, recorded=True),
        RuntimeRequest(name="nvidia-cdi", path="/usr/bin/nvidia-container-runtime.cdi"),
    ).files[0]
    assert second.after is not None and second.record is not None
    undone = plan.unconfigure(
        Runtime.DOCKER,
        Inputs(config=NAME, config_text=second.after, record=second.record, recorded=True),
        "nvidia",
    ).files[0]
    assert undone.after is not None and undone.record is not None
    assert json.loads(undone.after) == {
        "runtimes": {"nvidia-cdi": {"path": "/usr/bin/nvidia-container-runtime.cdi", "args": []}}
    }
    assert [c.keys for c in undone.record if c.keys] == [("runtimes",), ("runtimes", "nvidia-cdi")]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(Change((), True, None, 1, ChangeKind.SET), id="set-with-no-keys"),
        pytest.param(
            Change(("x",), False, None, 1, ChangeKind.WHOLE_FILE), id="whole-file-with-keys"
        ),
        pytest.param(
            Change(("x",), False, None, 1, ChangeKind.FINAL_NEWLINE), id="newline-with-keys"
        ),
    ],
)
def test_record_entries_about_the_whole_file_name_no_key(change: Change) -> None:
    """A record (a file the user may have edited) whose entry names no key, or is about the
    file itself, takes no key back."""
    text = '{"x": 1, "runtimes": {}}\n'
    assert docker.unconfigure(NAME, text, "nvidia", (change,), recorded=True) == text
