"""CDI names: vendor, class, kind, device name and fully qualified device names.

The rules are those of the CDI specification and its reference library
(tags.cncf.io/container-device-interface): ASCII only; vendor and class start with a letter,
device names with a letter or digit; all end with a letter or digit; inside, vendor and class
allow `_ - .`, device names also `:`. The error functions return ``None`` for a valid name or
one sentence saying what is wrong, so that callers can collect problems instead of stopping.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctk.errors import CtkError

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ALNUM = _LETTERS | frozenset("0123456789")
_VENDOR_CLASS_INNER = _ALNUM | frozenset("_-.")
_DEVICE_INNER = _VENDOR_CLASS_INNER | frozenset(":")


def _bad_char(name: str, allowed: frozenset[str]) -> str | None:
    for char in name[1:-1]:
        if char not in allowed:
            return char
    return None


def _vendor_or_class_error(what: str, name: str) -> str | None:
    if not name:
        return f"{what} is empty"
    if name[0] not in _LETTERS:
        return f"{what} {name!r} must start with an ASCII letter"
    bad = _bad_char(name, _VENDOR_CLASS_INNER)
    if bad is not None:
        return f"{what} {name!r} contains {bad!r}; allowed are ASCII letters, digits, '_', '-', '.'"
    if name[-1] not in _ALNUM:
        return f"{what} {name!r} must end with an ASCII letter or digit"
    return None


def vendor_error(vendor: str) -> str | None:
    """Why ``vendor`` is not a valid CDI vendor name, or ``None``."""
    return _vendor_or_class_error("vendor", vendor)


def class_error(class_: str) -> str | None:
    """Why ``class_`` is not a valid CDI class name, or ``None``."""
    return _vendor_or_class_error("class", class_)


def device_name_error(name: str) -> str | None:
    """Why ``name`` is not a valid CDI device name, or ``None``."""
    if not name:
        return "device name is empty"
    if name[0] not in _ALNUM:
        return f"device name {name!r} must start with an ASCII letter or digit"
    bad = _bad_char(name, _DEVICE_INNER)
    if bad is not None:
        return (
            f"device name {name!r} contains {bad!r}; "
            "allowed are ASCII letters, digits, '_', '-', '.', ':'"
        )
    if name[-1] not in _ALNUM:
        return f"device name {name!r} must end with an ASCII letter or digit"
    return None


def split_kind(kind: str) -> tuple[str, str] | None:
    """Split ``vendor/class`` at the first '/'; ``None`` when either part is missing."""
    vendor, slash, class_ = kind.partition("/")
    if not slash or not vendor or not class_:
        return None
    return vendor, class_


def kind_error(kind: str) -> str | None:
    """Why ``kind`` is not a valid CDI kind (``vendor/class``), or ``None``."""
    parts = split_kind(kind)
    if parts is None:
        return f"kind {kind!r} is not of the form vendor/class"
    return vendor_error(parts[0]) or class_error(parts[1])


@dataclass(frozen=True, slots=True)
class QualifiedName:
    """A fully qualified CDI device name: ``vendor/class=name``."""

    vendor: str
    class_: str
    name: str

    @property
    def kind(self) -> str:
        """The ``vendor/class`` part."""
        return f"{self.vendor}/{self.class_}"

    def __str__(self) -> str:
        return f"{self.vendor}/{self.class_}={self.name}"


def parse_qualified_name(text: str) -> QualifiedName:
    """Parse ``vendor/class=name`` (e.g. ``nvidia.com/gpu=0``); raise `CtkError` saying why not."""
    hint = "a CDI device is named vendor/class=name, e.g. nvidia.com/gpu=0 or nvidia.com/gpu=all"
    kind, equals, name = text.partition("=")
    if not equals or not kind:
        raise CtkError(f"{text!r} is not a qualified CDI device name: missing '='", hint=hint)
    if not name:
        raise CtkError(
            f"{text!r} is not a qualified CDI device name: missing device name", hint=hint
        )
    parts = split_kind(kind)
    if parts is None:
        raise CtkError(
            f"{text!r} is not a qualified CDI device name: {kind!r} is not vendor/class", hint=hint
        )
    vendor, class_ = parts
    problem = vendor_error(vendor) or class_error(class_) or device_name_error(name)
    if problem is not None:
        raise CtkError(f"{text!r} is not a qualified CDI device name: {problem}", hint=hint)
    return QualifiedName(vendor, class_, name)
