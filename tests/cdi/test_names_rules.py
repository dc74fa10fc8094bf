"""A qualified device name is split at its first '=': a later '=' belongs to the device name,
which may not hold one (from issue 26's mutation run)."""

from __future__ import annotations

import pytest

from ctk.cdi.names import parse_qualified_name
from ctk.errors import CtkError


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(
            "nvidia.com/gpu=a=b",
            "device name 'a=b' contains '='; allowed are ASCII letters, digits, '_', '-', '.', ':'",
            id="equals-inside-name",
        ),
        pytest.param(
            "nvidia.com/gpu=a=",
            "device name 'a=' must end with an ASCII letter or digit",
            id="equals-ending-name",
        ),
        pytest.param(
            "nvidia.com/gpu==a",
            "device name '=a' must start with an ASCII letter or digit",
            id="equals-starting-name",
        ),
    ],
)
def test_a_second_equals_sign_is_in_the_device_name(text: str, problem: str) -> None:
    with pytest.raises(CtkError) as info:
        parse_qualified_name(text)
    assert info.value.message == f"{text!r} is not a qualified CDI device name: {problem}"
