"""Generated configs and specs with the features that broke ctk (issue 15): non-ASCII keys, long
integers, nesting, odd floats. Whatever the document, the CLI exits 0, 1 or 2, leaves a file it
refused byte-identical, and a configure it accepted is idempotent and undone by unconfigure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.cli.app import main

ASCII_KEYS = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=8)
ANY_KEYS = st.text(max_size=8)
INTS = st.integers(min_value=-(10**300), max_value=10**300)
LONG_INTS = st.just("<long int>")
"""Stands for a 5,000-digit integer in the JSON text (hypothesis cannot print one itself)."""
SCALARS = st.one_of(
    st.none(), st.booleans(), INTS, st.floats(allow_nan=False), st.text(max_size=20)
)


def _json(
    keys: st.SearchStrategy[str], scalars: st.SearchStrategy[object]
) -> st.SearchStrategy[object]:
    return st.dictionaries(
        keys,
        st.recursive(
            scalars,
            lambda inner: st.one_of(
                st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)
            ),
            max_leaves=12,
        ),
        max_size=5,
    )


SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _json_text(document: object, indent: int | str | None = 4) -> str:
    text = json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
    return text.replace('"<long int>"', "9" * 5000)


def _round_trip(runtime: str, config: Path, original: bytes, *extra: str) -> None:
    config.write_bytes(original)
    argv = ["runtime", "configure", "--runtime", runtime, "--config", str(config), *extra]
    code = main(argv)
    assert code in (0, 1, 2)
    if code:
        assert config.read_bytes() == original
        return
    configured = config.read_bytes()
    assert (main(argv), config.read_bytes()) == (0, configured)  # configuring twice: once
    undo = ["runtime", "unconfigure", *argv[2:]]
    assert main(undo) == 0
    assert config.read_bytes() == original


@SETTINGS
@given(document=_json(ASCII_KEYS, SCALARS), indent=st.sampled_from([None, 2, 4, "\t"]))
def test_docker_any_json(
    document: object,
    indent: int | str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CTK_STATE_DIR", str(tmp_path / "state"))
    text = _json_text(document, indent)
    _round_trip("docker", tmp_path / "daemon.json", text.encode())
    capsys.readouterr()


@SETTINGS
@given(document=_json(ANY_KEYS, st.one_of(SCALARS, LONG_INTS)))
def test_docker_non_ascii_keys_and_long_integers(
    document: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CTK_STATE_DIR", str(tmp_path / "state"))
    text = _json_text(document)
    _round_trip("docker", tmp_path / "daemon.json", text.encode())
    capsys.readouterr()


TOML_SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False).filter(math.isfinite),
    st.text(max_size=20),
)


@SETTINGS
@given(document=_json(ASCII_KEYS.filter(bool), TOML_SCALARS))
def test_containerd_any_toml(
    document: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CTK_STATE_DIR", str(tmp_path / "state"))
    try:
        text = tomlkit.dumps({"version": 2, **document})
    except (ValueError, TypeError):  # lists of mixed tables tomlkit cannot write
        return
    _round_trip("containerd", tmp_path / "config.toml", text.encode(), "--drop-in-config", "")
    capsys.readouterr()


SPEC_TEXT = st.text(max_size=12)


@SETTINGS
@given(
    devices=st.lists(
        st.fixed_dictionaries(
            {
                "name": SPEC_TEXT,
                "containerEdits": _json(
                    st.sampled_from(["env", "deviceNodes", "mounts", "hooks"]),
                    SCALARS,
                ),
            }
        ),
        max_size=4,
    ),
    kind=st.sampled_from(["nvidia.com/gpu", "x/y", "", "é/ü"]),
    version=st.sampled_from(["0.3.0", "0.8.0", "1.0.0", "9"]),
)
def test_cdi_validate_any_spec(
    devices: list[object],
    kind: str,
    version: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = tmp_path / "nvidia.json"
    text = _json_text({"cdiVersion": version, "kind": kind, "devices": devices})
    spec.write_text(text)
    assert main(["cdi", "validate", str(spec)]) in (0, 1)
    assert spec.read_text() == text
    capsys.readouterr()


@SETTINGS
@given(
    devices=st.lists(
        st.fixed_dictionaries(
            {
                "name": SPEC_TEXT,
                "containerEdits": _json(
                    st.sampled_from(["env", "deviceNodes", "mounts", "hooks"]),
                    st.one_of(SCALARS, LONG_INTS),
                ),
            }
        ),
        max_size=4,
    ),
    kind=st.sampled_from(["nvidia.com/gpu", "x/y", "", "é/ü"]),
    version=st.sampled_from(["0.3.0", "0.8.0", "1.0.0", "9"]),
)
def test_cdi_validate_long_integers(
    devices: list[object],
    kind: str,
    version: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = tmp_path / "nvidia.json"
    text = _json_text({"cdiVersion": version, "kind": kind, "devices": devices})
    spec.write_text(text)
    assert main(["cdi", "validate", str(spec)]) in (0, 1)
    assert spec.read_text() == text
    capsys.readouterr()
