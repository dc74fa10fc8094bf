"""The spec writer: any strings survive a YAML or JSON round trip, layout as nvidia-ctk's."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.cdi.model import ContainerEdits, Device, DeviceNode, Hook, Mount, Spec
from ctk.cdi.options import SpecFormat
from ctk.cdi.serialize import _PLAIN, _scalar, render, spec_data

TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20)


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    edits = ContainerEdits(
        env=tuple(draw(st.lists(TEXT, max_size=3))),
        device_nodes=tuple(
            DeviceNode(path=p, major=draw(st.integers(0, 2**31)), permissions="rwm")
            for p in draw(st.lists(TEXT.filter(bool), max_size=2))
        ),
        hooks=(
            Hook(hook_name="createContainer", path=draw(TEXT), args=tuple(draw(st.lists(TEXT)))),
        ),
        mounts=tuple(
            Mount(host_path=h, container_path=c, options=("ro",))
            for h, c in draw(st.lists(st.tuples(TEXT, TEXT), max_size=2))
        ),
    )
    names = draw(st.lists(TEXT.filter(bool), min_size=1, max_size=3, unique=True))
    return Spec(
        cdi_version="0.5.0",
        kind=draw(TEXT),
        devices=tuple(Device(name=n, edits=edits) for n in names),
        edits=edits,
    )


@settings(max_examples=150, deadline=None)
@given(specs())
def test_yaml_round_trip(spec: Spec) -> None:
    text = render(spec, SpecFormat.YAML)
    assert text.startswith("---\n")
    assert yaml.safe_load(text) == spec_data(spec)


@settings(max_examples=50, deadline=None)
@given(specs())
def test_json_round_trip(spec: Spec) -> None:
    text = render(spec, SpecFormat.JSON)
    assert text.endswith("}\n")
    assert "\n" not in text[:-1]
    assert json.loads(text) == spec_data(spec)


def test_layout() -> None:
    """go-yaml v3's layout (indent 4), as in nvidia-ctk's own `cdi generate` test specs."""
    spec = Spec(
        cdi_version="0.5.0",
        kind="nvidia.com/gpu",
        devices=(
            Device(
                name="0",
                edits=ContainerEdits(
                    device_nodes=(DeviceNode(path="/dev/nvidia0", major=195, file_mode=438),)
                ),
            ),
            Device(name="2:1", edits=ContainerEdits(env=("A=on",))),
        ),
        edits=ContainerEdits(
            env=("NVIDIA_VISIBLE_DEVICES=void",),
            hooks=(
                Hook(
                    hook_name="createContainer",
                    path="/usr/bin/nvidia-cdi-hook",
                    args=("nvidia-cdi-hook", "update-ldcache", "--folder", "/usr/lib64"),
                ),
            ),
            mounts=(Mount(host_path="/a b", container_path="/a b", options=("ro", "nosuid")),),
        ),
    )
    assert render(spec, SpecFormat.YAML) == (
        "---\n"
        "cdiVersion: 0.5.0\n"
        "kind: nvidia.com/gpu\n"
        "devices:\n"
        '    - name: "0"\n'
        "      containerEdits:\n"
        "        deviceNodes:\n"
        "            - path: /dev/nvidia0\n"
        "              major: 195\n"
        "              fileMode: 438\n"
        '    - name: "2:1"\n'
        "      containerEdits:\n"
        "        env:\n"
        "            - A=on\n"
        "containerEdits:\n"
        "    env:\n"
        "        - NVIDIA_VISIBLE_DEVICES=void\n"
        "    hooks:\n"
        "        - hookName: createContainer\n"
        "          path: /usr/bin/nvidia-cdi-hook\n"
        "          args:\n"
        "            - nvidia-cdi-hook\n"
        "            - update-ldcache\n"
        "            - --folder\n"
        "            - /usr/lib64\n"
        "    mounts:\n"
        "        - hostPath: /a b\n"
        "          containerPath: /a b\n"
        "          options:\n"
        "            - ro\n"
        "            - nosuid\n"
    )


TRICKY = (
    *("true", "no", "Off", "y", "~", "null", "0x1f", "0o17", "017", "1_000", "+1", ".5", "1e3"),
    *(".inf", "-.nan", "2001-12-14", "1:30", "190:20:30.5", "=", "<<", "-", "---", "..."),
    *("%x", "@x", ",x", "a,b", "a:b", "a  b", "-1-", "x\n", "nvidia.com/gpu", "all"),
    *("- x", "--- x", "... x", "-x", "---x", "...x", "-- x", ".. x", ".nan", ".NaN", ".NAN"),
    # every spelling of YAML 1.1's booleans and nulls, and near misses
    *(f"{w}{c}" for w in ("yes", "no", "true", "false", "on", "off", "null") for c in ("", "x")),
    *(w.capitalize() for w in ("yes", "no", "true", "false", "on", "off", "null", "nO")),
    *(w.upper() for w in ("yes", "no", "true", "false", "on", "off", "null")),
)


def _pyyaml_writes_plain(text: str) -> bool:
    """PyYAML's own answer: whether its safe dumper writes ``text`` as a mapping's plain value."""
    return yaml.safe_dump({"k": text}, width=10**6)[3] not in "'\"|>"


def _reads_back(text: str) -> bool:
    """Whether ctk's scalar for ``text``, as a mapping's value, reads back as ``text``."""
    try:
        return bool(yaml.safe_load(f"k: {_scalar(text)}\n") == {"k": text})
    except (yaml.YAMLError, ValueError):  # a type resolved but not built: 2001-13-45, 0b_
        return False


def _check(text: str) -> None:
    assert _reads_back(text), text
    written_plain = not _scalar(text).startswith('"')
    if _PLAIN.fullmatch(text):
        assert written_plain == _pyyaml_writes_plain(text), text
    else:
        assert not written_plain, text


# characters of numbers, dates, times and document markers, to reach the corners of YAML 1.1's
# implicit types far more often than arbitrary plain text does
NUMERIC = "0123456789._-+:eExXbBoTtZ ~<=nN#"


@pytest.mark.parametrize("text", TRICKY)
def test_plain_scalar_on_tricky_text(text: str) -> None:
    _check(text)


def test_plain_scalar_on_every_short_numeric_text() -> None:
    """Every text of up to three of these characters: plain exactly when PyYAML writes it
    plain, and read back as itself."""
    texts = [a + b + c for a in NUMERIC for b in ["", *NUMERIC] for c in ["", *NUMERIC]]
    wrong = []
    for text in texts:
        try:
            _check(text)
        except AssertionError:
            wrong.append(text)
    assert not wrong, wrong[:20]


def test_quoted_where_pyyaml_reads_another_type() -> None:
    """Seen failing with the resolver's answer left out: these read back as bool, int, float,
    null, date, merge key or value key."""
    for text in ("no", "On", "0x1f", "1:30", ".5", "~", "null", "2001-12-14", "<<", "=", "0"):
        assert _scalar(text) == f'"{text}"'
    for text in ("a: b", "a #b", "- x", "---", "a ", "a:", "%x", "@x", ",x", "x\n"):
        assert _scalar(text).startswith('"'), text  # the emitter's answer, or the alphabet's


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.from_regex(_PLAIN, fullmatch=True),
        st.text(st.sampled_from(NUMERIC), min_size=1, max_size=24),
        st.text(min_size=1, max_size=12),
        st.from_regex(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]| +)[0-9]{1,2}(:[0-9]{2}){2}"
                      r"(\.[0-9]*)?( *(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?", fullmatch=True),
    )
)  # fmt: skip
def test_plain_scalar_reads_as_pyyaml_does(text: str) -> None:
    """Any text reads back as itself, and is plain exactly where PyYAML's dumper would write
    it plain (within ctk's plain alphabet; every other text is quoted)."""
    _check(text)
