"""Fully qualified CDI device names and the vendor/class/device-name rules."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import pytest

from ctk.cdi.names import (
    QualifiedName,
    class_error,
    device_name_error,
    kind_error,
    parse_qualified_name,
    vendor_error,
)
from ctk.errors import CtkError

UUID = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("nvidia.com/gpu=0", QualifiedName("nvidia.com", "gpu", "0"), id="index"),
        pytest.param(f"nvidia.com/gpu={UUID}", QualifiedName("nvidia.com", "gpu", UUID), id="uuid"),
        pytest.param("nvidia.com/gpu=0:1", QualifiedName("nvidia.com", "gpu", "0:1"), id="mig"),
        pytest.param("nvidia.com/gpu=all", QualifiedName("nvidia.com", "gpu", "all"), id="all"),
        pytest.param("a/b.c=x", QualifiedName("a", "b.c", "x"), id="dot-in-class"),
    ],
)
def test_parse_qualified_name(text: str, expected: QualifiedName) -> None:
    parsed = parse_qualified_name(text)
    assert parsed == expected
    assert str(parsed) == text
    assert parsed.kind == text.split("=", maxsplit=1)[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("nvidia.com/gpu", "'nvidia.com/gpu' is not a qualified CDI device name: missing '='", id="no-equals"),
        pytest.param("=0", "'=0' is not a qualified CDI device name: missing '='", id="no-kind"),
        pytest.param("nvidia.com/gpu=", "'nvidia.com/gpu=' is not a qualified CDI device name: missing device name", id="no-name"),
        pytest.param("gpu=0", "'gpu=0' is not a qualified CDI device name: 'gpu' is not vendor/class", id="no-slash"),
        pytest.param("/gpu=0", "'/gpu=0' is not a qualified CDI device name: '/gpu' is not vendor/class", id="empty-vendor"),
        pytest.param("nvidia.com/=0", "'nvidia.com/=0' is not a qualified CDI device name: 'nvidia.com/' is not vendor/class", id="empty-class"),
        pytest.param("1vendor/gpu=0", "'1vendor/gpu=0' is not a qualified CDI device name: vendor '1vendor' must start with an ASCII letter", id="vendor-digit"),
        pytest.param("nvidia.com/g/pu=0", "'nvidia.com/g/pu=0' is not a qualified CDI device name: class 'g/pu' contains '/'; allowed are ASCII letters, digits, '_', '-', '.'", id="slash-in-class"),
        pytest.param("nvidia.com/gpu=0:", "'nvidia.com/gpu=0:' is not a qualified CDI device name: device name '0:' must end with an ASCII letter or digit", id="name-trailing-colon"),
        pytest.param("nvidia.com/gpu=gpü", "'nvidia.com/gpu=gpü' is not a qualified CDI device name: device name 'gpü' must end with an ASCII letter or digit", id="name-unicode"),
    ],
)  # fmt: skip
def test_parse_qualified_name_errors(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        parse_qualified_name(text)
    assert info.value.message == message
    assert info.value.hint == (
        "a CDI device is named vendor/class=name, e.g. nvidia.com/gpu=0 or nvidia.com/gpu=all"
    )


@pytest.mark.parametrize(
    ("name", "error"),
    [
        pytest.param("a", None, id="one-letter"),
        pytest.param("0", None, id="one-digit"),
        pytest.param("a-b_c.d:e", None, id="all-inner-chars"),
        pytest.param("", "device name is empty", id="empty"),
        pytest.param("-a", "device name '-a' must start with an ASCII letter or digit", id="leading-dash"),
        pytest.param("a.", "device name 'a.' must end with an ASCII letter or digit", id="trailing-dot"),
        pytest.param("a b", "device name 'a b' contains ' '; allowed are ASCII letters, digits, '_', '-', '.', ':'", id="space"),
        pytest.param("é1", "device name 'é1' must start with an ASCII letter or digit", id="unicode-first"),
    ],
)  # fmt: skip
def test_device_name_error(name: str, error: str | None) -> None:
    assert device_name_error(name) == error


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        pytest.param("nvidia.com/gpu", None, id="nvidia"),
        pytest.param("a_b-c.d/e_f-g.h", None, id="inner-chars"),
        pytest.param("nvidia.com", "kind 'nvidia.com' is not of the form vendor/class", id="no-class"),
        pytest.param("nvidia.com/gpu/x", "class 'gpu/x' contains '/'; allowed are ASCII letters, digits, '_', '-', '.'", id="two-slashes"),
        pytest.param("nvidia.com/gpu:x", "class 'gpu:x' contains ':'; allowed are ASCII letters, digits, '_', '-', '.'", id="colon-in-class"),
        pytest.param("nvidia.com-/gpu", "vendor 'nvidia.com-' must end with an ASCII letter or digit", id="vendor-trailing-dash"),
        pytest.param("v/3d", "class '3d' must start with an ASCII letter", id="class-digit"),
    ],
)  # fmt: skip
def test_kind_error(kind: str, error: str | None) -> None:
    assert kind_error(kind) == error


def test_vendor_and_class_errors_name_their_part() -> None:
    assert vendor_error("") == "vendor is empty"
    assert class_error("") == "class is empty"
    assert vendor_error("x") is None
    assert class_error("x") is None
