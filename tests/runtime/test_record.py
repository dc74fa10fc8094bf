"""A damaged undo record is a clear error naming it, never an internal error (review item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.cli.app import main
from ctk.errors import CtkError
from ctk.host.engine_files import record_path
from ctk.runtime_config.changes import Change, ChangeKind, dump_record, load_record

HINT = (
    "hint: remove that file; unconfigure then removes only the runtime itself "
    "(and a default naming it)\n"
)
CONFIGS = {
    "docker": ("daemon.json", '{"debug": true}\n'),
    "containerd": ("config.toml", 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'),
    "crio": ("crio.conf", '[crio.runtime]\ndefault_runtime = "runc"\n'),
}


def configured(tmp_path: Path, runtime: str) -> tuple[list[str], Path]:
    """A config ctk configured in place, and the arguments that name it."""
    engine, _, mode = runtime.partition("+")
    name, text = CONFIGS[engine]
    config = tmp_path / name
    config.write_text(text)
    args = ["--runtime", engine, "--config", str(config)]
    if engine != "docker":
        args += ["--drop-in-config", str(tmp_path / "conf.d/99-nvidia.toml") if mode else ""]
    assert main(["runtime", "configure", *args, "--set-as-default"]) == 0
    return args, config


def change(keys: object, before: object = None, after: object = None) -> str:
    item = {"keys": keys, "existed": True, "before": before, "after": after}
    return json.dumps({"changes": [item]})


@pytest.mark.parametrize(
    ("runtime", "record", "why"),
    [
        pytest.param(
            "docker", '{"changes": [', "Expecting value: line 1 column 14 (char 13)", id="truncated"
        ),
        pytest.param("docker", "[]", "no list of `changes`", id="not-an-object"),
        pytest.param("docker", '{"changes": {}}', "no list of `changes`", id="changes-not-list"),
        pytest.param(
            "docker", '{"changes": [7]}', "change 1 is not an object", id="item-not-object"
        ),
        pytest.param(
            "docker", change([5]), "change 1: `keys` must be a list of strings", id="keys-int"
        ),
        pytest.param(
            "crio",
            change("crio"),
            "change 1: `keys` must be a list of strings",
            id="keys-string-not-split",
        ),
        pytest.param(
            "docker",
            '{"changes": [{"keys": [], "existed": "yes"}]}',
            "change 1: `existed` must be true or false",
            id="existed-string",
        ),
        pytest.param(
            "containerd",
            change(["version"], [1, {"x": None}], 2),
            "change 1: `before` holds a value no config file can hold",
            id="toml-null-inside",
        ),
        pytest.param(
            "containerd",
            change(["version"], 2**64, 2),
            "change 1: `before` holds a value no config file can hold",
            id="int-too-big",
        ),
        pytest.param(
            "docker",
            '{"changes": [{"keys": ["debug"], "existed": true, "before": NaN, "after": true}]}',
            "change 1: `before` holds a value no config file can hold",
            id="nan",
        ),
    ],
)
def test_damaged_record_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str, record: str, why: str
) -> None:
    args, config = configured(tmp_path, runtime)
    written = config.read_bytes()
    path = record_path(config)
    path.write_text(record)
    capsys.readouterr()
    code = main(["runtime", "unconfigure", *args])
    out, err = capsys.readouterr()
    assert (code, out, err) == (
        1,
        "",
        f"error: {path}: not a ctk record of changes ({why})\n{HINT}",
    )
    assert config.read_bytes() == written


def test_null_inside_a_docker_value_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON holds null anywhere: a runtime entry the user had with a null comes back."""
    config = tmp_path / "daemon.json"
    original = json.dumps({"runtimes": {"nvidia": {"path": "/old", "args": None}}}, indent=2) + "\n"
    config.write_text(original)
    args = ["--runtime", "docker", "--config", str(config)]
    assert main(["runtime", "configure", *args]) == 0
    assert main(["runtime", "unconfigure", *args]) == 0
    assert config.read_text() == original


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = st.lists(
    st.sampled_from(
        [
            "runtimes",
            "nvidia",
            "features",
            "cdi",
            "default-runtime",
            "plugins",
            "crio",
            "runtime",
            "io.containerd.grpc.v1.cri",
            "containerd",
            "imports",
            "\n",
            "",
        ]
    ),
    max_size=5,
)
ITEM = st.fixed_dictionaries(
    {"keys": KEYS | JSON, "existed": st.booleans() | JSON, "before": JSON, "after": JSON}
)
RECORD = st.fixed_dictionaries({"changes": st.lists(ITEM, max_size=4)}) | JSON


@pytest.mark.parametrize("runtime", ["docker", "containerd", "crio", "containerd+drop-in"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(record=RECORD)
def test_any_json_record_is_undone_or_refused(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    runtime: str,
    record: object,
) -> None:
    args, config = configured(tmp_path_factory.mktemp("rec"), runtime)
    written = config.read_bytes()
    path = record_path(config)
    path.write_text(json.dumps(record))
    capsys.readouterr()
    code = main(["runtime", "unconfigure", *args])
    _, err = capsys.readouterr()
    assert code in (0, 1), err
    if code == 1:
        assert err.startswith(f"error: {path}: not a ctk record of changes (") or err.startswith(
            f"error: {config}"
        ), err
        assert config.read_bytes() == written


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40) | RECORD.map(json.dumps))
def test_load_record_raises_only_ctk_errors(text: str) -> None:
    """Any text as a record loads, or is a CtkError naming the record."""
    for nested_null in (False, True):
        try:
            load_record("/state/r.json", text, nested_null=nested_null)
        except CtkError as exc:
            assert str(exc).startswith("/state/r.json: not a ctk record of changes (")


LEGACY_DOCKER_RECORD = {
    "changes": [
        {"keys": ["runtimes", "\u0000inside"], "existed": True, "before": " ", "after": None},
        {"keys": ["runtimes", "nvidia"], "existed": False, "before": None, "after": {}},
        {"keys": ["\n"], "existed": False, "before": None, "after": None},
    ]
}


def test_records_say_what_each_change_is_and_old_records_still_read() -> None:
    """A change's kind is written out; sentinel values of older records are read as kinds."""
    legacy = load_record("old.json", json.dumps(LEGACY_DOCKER_RECORD), nested_null=True)
    assert legacy == (
        Change(("runtimes",), True, " ", None, ChangeKind.BLANK_INSIDE),
        Change(("runtimes", "nvidia"), False, None, {}, ChangeKind.NEW_TABLE),
        Change((), False, None, None, ChangeKind.FINAL_NEWLINE),
    )
    assert [item["kind"] for item in json.loads(dump_record(legacy))["changes"]] == [
        "blank-inside",
        "new-table",
        "final-newline",
    ]
    # Written today: a key ctk set to {} stays a value, not "a table ctk created".
    value = Change(("features",), False, None, {})
    assert load_record("new.json", dump_record([value])) == (value,)
    assert load_record("rt.json", dump_record(legacy), nested_null=True) == legacy


def test_docker_unconfigure_with_a_legacy_record_gives_back_the_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"runtimes": { }}')
    configured_text = (
        '{"runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}}\n'
    )
    config.write_text(configured_text)
    record = record_path(config)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(LEGACY_DOCKER_RECORD))
    assert main(["runtime", "unconfigure", "--runtime=docker", "--config", str(config)]) == 0
    capsys.readouterr()
    assert config.read_text() == '{"runtimes": { }}'
