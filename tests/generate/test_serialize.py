"""The spec writer: any strings survive a YAML or JSON round trip, layout as nvidia-ctk's."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.cdi.model import ContainerEdits, Device, DeviceNode, Hook, Mount, Spec
from ctk.cdi.options import SpecFormat
from ctk.cdi.serialize import _PLAIN, _scalar, _special, render, spec_data

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


def _reads_otherwise(text: str) -> bool:
    """PyYAML's answer: whether the plain scalar ``text`` reads back as something else.

    A scalar that PyYAML resolves to a type and then fails to build (``2001-13-45``, ``0b_``)
    raises ValueError: it is not read back as the string either. Text that a YAML reader might
    take for a key, comment or sequence entry is quoted without asking (``:x`` too, which
    PyYAML reads as a string).
    """
    if text.endswith((" ", ":")) or ": " in text or " #" in text or text.startswith(("- ", ":")):
        return True
    try:
        return bool(yaml.load(text, Loader=yaml.SafeLoader) != text)
    except (yaml.YAMLError, ValueError):
        return True


# characters of numbers, dates, times and document markers, to reach the corners of YAML 1.1's
# implicit types far more often than arbitrary plain text does
NUMERIC = "0123456789._-+:eExXbBoTtZ ~<=nN"


def _is_plain(text: str) -> bool:
    return _PLAIN.fullmatch(text) is not None


@pytest.mark.parametrize("text", TRICKY)
def test_plain_scalar_check_on_tricky_text(text: str) -> None:
    if _is_plain(text):
        assert _special(text) == _reads_otherwise(text)
    else:
        assert _scalar(text).startswith('"')


def test_plain_scalar_check_on_every_short_numeric_text() -> None:
    """Every plain scalar of up to three of these characters: the same answer as PyYAML."""
    texts = [a + b + c for a in NUMERIC for b in ["", *NUMERIC] for c in ["", *NUMERIC]]
    wrong = [t for t in texts if _PLAIN.fullmatch(t) and _special(t) != _reads_otherwise(t)]
    assert not wrong, wrong[:20]


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.from_regex(_PLAIN, fullmatch=True),
        st.text(st.sampled_from(NUMERIC), min_size=1, max_size=24).filter(_is_plain),
        st.from_regex(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]| +)[0-9]{1,2}(:[0-9]{2}){2}"
                      r"(\.[0-9]*)?( *(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?", fullmatch=True),
    )
)  # fmt: skip
def test_plain_scalar_check_reads_as_pyyaml_does(text: str) -> None:
    """`_special` answers by YAML 1.1's rules without a YAML reader: the same answers as
    PyYAML's reader, which `safe_load` and the round trips above use, for every text that
    `_PLAIN` lets through (``x\\n`` is not one: `$` would have let it)."""
    if _is_plain(text):
        assert _special(text) == _reads_otherwise(text)
    else:
        assert _scalar(text).startswith('"')
