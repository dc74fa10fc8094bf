"""The spec writer: any strings survive a YAML or JSON round trip, layout as nvidia-ctk's."""

from __future__ import annotations

import json

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.cdi.model import ContainerEdits, Device, DeviceNode, Hook, Mount, Spec
from ctk.cdi.options import SpecFormat
from ctk.cdi.serialize import _PLAIN, _special, render, spec_data

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
)


def _pure_python_special(text: str) -> bool:
    if text.endswith((" ", ":")) or ": " in text or " #" in text or text.startswith(("- ", ":")):
        return True  # what `_special` decides before asking a YAML reader
    try:
        return bool(yaml.load(text, Loader=yaml.SafeLoader) != text)
    except yaml.YAMLError:
        return True


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(TRICKY), st.from_regex(_PLAIN, fullmatch=True)))
def test_plain_scalar_check_reads_as_pyyaml_does(text: str) -> None:
    """`_special` asks libyaml whether a plain scalar reads back as itself: the same answer as
    PyYAML's own (pure Python) reader, which `safe_load` and the round trips above use."""
    assert _special(text) == _pure_python_special(text)
