"""The exact text the spec writer gives each character, mount type and device annotation.

From issue 26's mutation run: round-trip tests read any escape back the same, so these pin which
characters a double-quoted YAML scalar escapes (and how), and where annotations and types go.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from ctk.cdi import serialize
from ctk.cdi.model import ContainerEdits, Device, Mount, Spec
from ctk.cdi.options import SpecFormat
from ctk.cdi.serialize import render, render_data, spec_data


@pytest.fixture(autouse=True)
def fresh_scalar_memo() -> Iterator[None]:
    """Each test writes its scalars as a fresh process does (the writer memoises them)."""
    serialize._scalar.cache_clear()
    yield
    serialize._scalar.cache_clear()


@pytest.mark.parametrize(
    ("text", "written"),
    [
        pytest.param("a: b", '"a: b"', id="space-is-printable"),
        pytest.param("\t", '"\\t"', id="tab-short-escape"),
        pytest.param("\x01", '"\\u0001"', id="control-character"),
        pytest.param("\x7f", '"\\u007f"', id="delete"),
        pytest.param("\x9f", '"\\u009f"', id="c1-control"),
        pytest.param("\xa0x", '"\xa0x"', id="no-break-space-is-printable"),
        pytest.param("\xe9", '"\xe9"', id="latin-letter"),
        pytest.param("\ud7ff", '"\ud7ff"', id="below-the-surrogates"),
        pytest.param("\ud800", '"\\ud800"', id="first-surrogate"),
        pytest.param("\udfff", '"\\udfff"', id="last-surrogate"),
        pytest.param("\ue000", '"\ue000"', id="above-the-surrogates"),
        pytest.param("\u2028", '"\\u2028"', id="line-separator"),
        pytest.param("\u2029", '"\\u2029"', id="paragraph-separator"),
        pytest.param("\ufeff", '"\\ufeff"', id="byte-order-mark"),
        pytest.param("\ufffd", '"\ufffd"', id="replacement-character"),
        pytest.param("\ufffe", '"\\ufffe"', id="noncharacter-fffe"),
        pytest.param("\uffff", '"\\uffff"', id="noncharacter-ffff"),
        pytest.param("\U0001f600", '"\U0001f600"', id="astral-is-printable"),
    ],
)
def test_characters_in_a_double_quoted_scalar(text: str, written: str) -> None:
    """Printable characters stay as they are; the others become \\u escapes, as nvidia-ctk's."""
    output = render_data({"kind": text}, SpecFormat.YAML)
    assert output == f"---\nkind: {written}\n"
    assert yaml.safe_load(output) == {"kind": text}


SPEC = Spec(
    cdi_version="0.5.0",
    kind="example.com/gpu",
    devices=(
        Device(
            name="gpu0",
            annotations=(("example.com/model", "H200"),),
            edits=ContainerEdits(
                mounts=(Mount(host_path="/h", container_path="/c", type="bind", options=("ro",)),)
            ),
        ),
    ),
)

YAML = """\
---
cdiVersion: 0.5.0
kind: example.com/gpu
devices:
    - name: gpu0
      annotations:
        example.com/model: H200
      containerEdits:
        mounts:
            - hostPath: /h
              containerPath: /c
              type: bind
              options:
                - ro
"""


def test_device_annotations_and_mount_type_are_written() -> None:
    assert render(SPEC, SpecFormat.YAML) == YAML
    assert json.loads(render(SPEC, SpecFormat.JSON)) == {
        "cdiVersion": "0.5.0",
        "kind": "example.com/gpu",
        "devices": [
            {
                "name": "gpu0",
                "annotations": {"example.com/model": "H200"},
                "containerEdits": {
                    "mounts": [
                        {"hostPath": "/h", "containerPath": "/c", "type": "bind", "options": ["ro"]}
                    ]
                },
            }
        ],
    }


def test_device_without_annotations_has_no_annotations_key() -> None:
    device = Device(name="gpu0", edits=ContainerEdits(env=("A=1",)))
    data = spec_data(Spec(cdi_version="0.5.0", kind="example.com/gpu", devices=(device,)))
    assert data["devices"] == [{"name": "gpu0", "containerEdits": {"env": ["A=1"]}}]
