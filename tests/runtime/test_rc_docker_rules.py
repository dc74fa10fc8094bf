"""`docker.configure`, in-process: the text it writes and the exact record of changes for each
case: no file, an empty object with or without blanks inside, a runtime that is missing, not an
object, without a path or with another one, a default runtime to set or already set, CDI with
spec directories that name none, CRLF line ends and a missing final newline.

(issue 26: survivors of the mutation run in `docker.configure`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import docker
from ctk.runtime_config.changes import FINAL_NEWLINE_ADDED, Change, ChangeKind, new_table
from ctk.runtime_config.engines import RuntimeRequest

NAME = "d.json"
PATH = "/usr/bin/nvidia-container-runtime"
ENTRY = {"path": PATH, "args": []}
ONE_LINE_ENTRY = '{"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}'
BLOCK = (
    '{\n    "runtimes": {\n        "nvidia": {\n            "path": '
    '"/usr/bin/nvidia-container-runtime",\n            "args": []\n        }\n    }\n}\n'
)
CREATED = (new_table(("runtimes",)), Change(("runtimes", "nvidia"), False, None, ENTRY))


def _blank(keys: tuple[str, ...], inner: str) -> Change:
    return Change(keys, True, inner, None, ChangeKind.BLANK_INSIDE)


@pytest.mark.parametrize(
    ("text", "changes"),
    [
        pytest.param(None, CREATED, id="no-file"),
        pytest.param("{}\n", CREATED, id="empty-object"),
        pytest.param("{ }\n", (_blank((), " "), *CREATED), id="a-blank-inside"),
        pytest.param("{\n}\n", (_blank((), "\n"), *CREATED), id="a-newline-inside"),
    ],
)
def test_a_new_runtime_in_an_empty_file(text: str | None, changes: tuple[Change, ...]) -> None:
    edit = docker.configure(NAME, text, RuntimeRequest())
    assert edit.text == BLOCK
    assert edit.changes == changes
    assert edit.notes == ()


@pytest.mark.parametrize(
    ("text", "expected", "changes"),
    [
        pytest.param(
            '{"runtimes": { }}\n',
            f'{{"runtimes": {ONE_LINE_ENTRY}}}\n',
            (_blank(("runtimes",), " "), CREATED[1]),
            id="blank-runtimes",
        ),
        pytest.param(
            '{"runtimes": {}}',
            f'{{"runtimes": {ONE_LINE_ENTRY}}}\n',
            (CREATED[1], FINAL_NEWLINE_ADDED),
            id="empty-runtimes-no-final-newline",
        ),
        pytest.param(
            '{"runtimes": {"nvidia": "x"}}\n',
            f'{{"runtimes": {ONE_LINE_ENTRY}}}\n',
            (Change(("runtimes", "nvidia"), True, "x", ENTRY),),
            id="runtime-not-an-object",
        ),
        pytest.param(
            '{"runtimes": {"nvidia": [ ]}}\n',
            f'{{"runtimes": {ONE_LINE_ENTRY}}}\n',
            (
                Change(("runtimes", "nvidia"), True, "[ ]", [], ChangeKind.VALUE_TEXT),
                Change(("runtimes", "nvidia"), True, [], ENTRY),
            ),
            id="runtime-a-spaced-array",
        ),
        pytest.param(
            '{"runtimes": {"nvidia": {"args": []}}}\n',
            f'{{"runtimes": {{"nvidia": {{"args": [], "path": "{PATH}"}}}}}}\n',
            (Change(("runtimes", "nvidia", "path"), False, None, PATH),),
            id="runtime-without-a-path",
        ),
        pytest.param(
            '{"runtimes": {"nvidia": {"path": "/x"}}}\n',
            f'{{"runtimes": {{"nvidia": {{"path": "{PATH}"}}}}}}\n',
            (Change(("runtimes", "nvidia", "path"), True, "/x", PATH),),
            id="runtime-with-another-path",
        ),
    ],
)
def test_the_runtime_entry(text: str, expected: str, changes: tuple[Change, ...]) -> None:
    edit = docker.configure(NAME, text, RuntimeRequest())
    assert edit.text == expected
    assert edit.changes == changes


def test_the_requested_name_and_path() -> None:
    edit = docker.configure(
        NAME, '{"runtimes": {"nv": {"path": "/old"}}}\n', RuntimeRequest(name="nv", path="/opt/nv")
    )
    assert edit.text == '{"runtimes": {"nv": {"path": "/opt/nv"}}}\n'
    assert edit.changes == (Change(("runtimes", "nv", "path"), True, "/old", "/opt/nv"),)


@pytest.mark.parametrize(
    ("text", "request_"),
    [
        pytest.param(
            f'{{"runtimes": {{"nvidia": {{"path": "{PATH}"}}}}}}',
            RuntimeRequest(),
            id="configured-no-final-newline",
        ),
        pytest.param(
            f'{{"runtimes": {{"nvidia": {{"path": "{PATH}"}}}}, "default-runtime": "runc"}}\n',
            RuntimeRequest(),
            id="another-default-not-asked-to-set",
        ),
        pytest.param(
            f'{{"default-runtime": "nvidia", "runtimes": {{"nvidia": {{"path": "{PATH}"}}}}}}\n',
            RuntimeRequest(set_as_default=True),
            id="already-the-default",
        ),
        pytest.param(
            f'{{"runtimes": {{"nvidia": {{"path": "{PATH}"}}}}, "features": {{"cdi": true}}, '
            '"cdi-spec-dirs": ["/etc/cdi"]}',
            RuntimeRequest(enable_cdi=True),
            id="cdi-already-on",
        ),
    ],
)
def test_nothing_to_do_leaves_the_text(text: str, request_: RuntimeRequest) -> None:
    edit = docker.configure(NAME, text, request_)
    assert edit.text == text
    assert edit.changes == ()
    assert edit.notes == ()


def test_setting_the_default_runtime() -> None:
    edit = docker.configure(
        NAME, '{"default-runtime": "runc"}\n', RuntimeRequest(set_as_default=True)
    )
    assert edit.text == f'{{"default-runtime": "nvidia", "runtimes": {ONE_LINE_ENTRY}}}\n'
    assert edit.changes == (*CREATED, Change(("default-runtime",), True, "runc", "nvidia"))


def test_a_default_runtime_is_not_set_unless_asked() -> None:
    edit = docker.configure(NAME, '{"default-runtime": "runc"}\n', RuntimeRequest())
    assert edit.text == f'{{"default-runtime": "runc", "runtimes": {ONE_LINE_ENTRY}}}\n'
    assert edit.changes == CREATED


def test_cdi_with_spec_dirs_that_name_none() -> None:
    """Written back as `[""]` the old value would be a block in this file: its text is kept."""
    edit = docker.configure(NAME, '{\n"cdi-spec-dirs": [""]\n}\n', RuntimeRequest(enable_cdi=True))
    assert edit.text == (
        '{\n"cdi-spec-dirs": [\n    "/etc/cdi",\n    "/var/run/cdi"\n],\n"runtimes": {\n'
        '    "nvidia": {\n        "path": "/usr/bin/nvidia-container-runtime",\n'
        '        "args": []\n    }\n},\n"features": {\n    "cdi": true\n}\n}\n'
    )
    assert edit.changes == (
        *CREATED,
        new_table(("features",)),
        Change(("features", "cdi"), False, None, True),
        Change(("cdi-spec-dirs",), True, '[""]', [""], ChangeKind.VALUE_TEXT),
        Change(("cdi-spec-dirs",), True, [""], ["/etc/cdi", "/var/run/cdi"]),
    )
    assert edit.notes == (docker.empty_spec_dirs_note(NAME, [""]),)
    assert edit.notes[0].startswith('d.json: cdi-spec-dirs = [""] names no directory')


def test_cdi_in_blank_features() -> None:
    edit = docker.configure(NAME, '{"features": { }}\n', RuntimeRequest(enable_cdi=True))
    assert edit.text == f'{{"features": {{"cdi": true}}, "runtimes": {ONE_LINE_ENTRY}}}\n'
    assert edit.changes == (
        *CREATED,
        _blank(("features",), " "),
        Change(("features", "cdi"), False, None, True),
    )


def test_crlf_and_no_final_newline() -> None:
    edit = docker.configure(NAME, '{\r\n  "a": 1\r\n}', RuntimeRequest())
    assert edit.text == (
        '{\r\n  "a": 1,\r\n  "runtimes": {\r\n    "nvidia": {\r\n      "path": '
        '"/usr/bin/nvidia-container-runtime",\r\n      "args": []\r\n    }\r\n  }\r\n}\r\n'
    )
    assert edit.changes == (*CREATED, FINAL_NEWLINE_ADDED)


@pytest.mark.parametrize(
    ("text", "request_", "message"),
    [
        pytest.param(
            "", RuntimeRequest(), "d.json: empty file, expected a JSON object", id="empty"
        ),
        pytest.param(
            '{"runtimes": []}',
            RuntimeRequest(),
            "d.json: `runtimes` must be an object, found an array",
            id="runtimes-an-array",
        ),
        pytest.param(
            '{"features": 1}',
            RuntimeRequest(enable_cdi=True),
            "d.json: `features` must be an object, found a number",
            id="features-a-number",
        ),
    ],
)
def test_errors_name_the_file(text: str, request_: RuntimeRequest, message: str) -> None:
    with pytest.raises(CtkError) as info:
        docker.configure(NAME, text, request_)
    assert info.value.message == message
