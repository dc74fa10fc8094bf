"""ctk's CDI JSON schema (`ctk/schemas/cdi.json`) and its compiled form for the fast decoder.

The schema file is the documented contract. `compiled()` turns it, once per process, into a tree
of `Shape`s that `ctk.cdi.load` walks while it decodes YAML nodes: types, required and unknown
fields, enums, lengths and ranges; `check_data()` walks the same tree over plain values (a spec
ctk built, not text). Both say what is wrong in the words of one table, `FAULTS`. String patterns
are not evaluated there: the rules in `ctk.cdi.names` and `ctk.cdi.validate` check the same syntax
with precise messages (tests prove both agree). The compiler refuses schema keywords it does not
understand, so an edit to the schema can never be silently ignored.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import Final, NamedTuple, Protocol, cast

from ctk.cdi.problems import Path, Problem, ProblemSeverity

# `allOf` holds the version gates: ctk.cdi.version enforces them with messages naming the feature,
# and the tests run jsonschema with the gates against the decoder on the corpus to prove it.
_IGNORED: Final = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "definitions", "allOf"}
)
_CHECKED: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "minLength",
        "enum",
        "minimum",
        "maximum",
        "propertyNames",
        "pattern",
        "$ref",
    }
)


class Shape(NamedTuple):
    """One schema node, in the form the decoder needs. A NamedTuple: `cdi generate` and `cdi
    validate` define it at every start (a dataclass costs ten times as much)."""

    type: str
    where: str
    properties: dict[str, Shape]
    folded: dict[str, str]
    """The properties by their lower-case spelling."""
    required: tuple[str, ...] = ()
    values: Shape | None = None
    items: Shape | None = None
    min_items: int = 0
    min_length: int = 0
    key_min_length: int = 0
    enum: tuple[object, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    pattern: str | None = None


class _DataLoader(Protocol):
    def get_data(self, path: str) -> bytes: ...


def schema_text() -> str:
    """The text of the packaged schema, read by ctk's own loader (from a zip too), as
    `pkgutil.get_data` would: pkgutil and importlib.resources cost start-up."""
    import ctk

    spec = ctk.__spec__
    assert spec is not None and spec.origin is not None  # ctk is imported from files
    loader = cast(_DataLoader, spec.loader)
    path = os.path.join(os.path.dirname(spec.origin), "schemas", "cdi.json")
    return loader.get_data(path).decode("utf-8")


@functools.cache
def schema() -> dict[str, object]:
    """The packaged schema as a JSON object."""
    loaded = json.loads(schema_text())
    assert isinstance(loaded, dict)
    return loaded


class SchemaError(Exception):
    """The schema uses something the compiler does not support (a bug in ctk, not user input)."""


def _resolve(root: dict[str, object], node: dict[str, object]) -> tuple[dict[str, object], str]:
    ref = node.get("$ref")
    if ref is None:
        return node, ""
    if not isinstance(ref, str) or not ref.startswith("#/definitions/") or len(node) != 1:
        raise SchemaError(f"unsupported $ref use: {node}")
    definitions = root["definitions"]
    assert isinstance(definitions, dict)
    name = ref.removeprefix("#/definitions/")
    target = definitions[name]
    assert isinstance(target, dict)
    return target, name


def _compile(root: dict[str, object], node: dict[str, object], where: str) -> Shape:
    node, ref_name = _resolve(root, node)
    if ref_name:
        where = ref_name
    unknown = set(node) - _IGNORED - _CHECKED
    if unknown:
        raise SchemaError(f"{where}: unsupported schema keywords {sorted(unknown)}")
    type_ = node.get("type")
    if type_ not in ("object", "array", "string", "integer", "boolean"):
        raise SchemaError(f"{where}: unsupported type {type_!r}")
    additional = node.get("additionalProperties", True)
    kind = "map" if type_ == "object" and additional is not False else str(type_)
    props = node.get("properties", {})
    assert isinstance(props, dict)
    properties = {key: _compile(root, sub, f"{where}.{key}") for key, sub in props.items()}
    values, key_min_length = None, 0
    if kind == "map":
        if props or not isinstance(additional, dict):
            raise SchemaError(f"{where}: an open object needs additionalProperties as a schema")
        values = _compile(root, additional, f"{where}.*")
        names = node.get("propertyNames", {})
        assert isinstance(names, dict)
        if set(names) - {"minLength"}:
            raise SchemaError(f"{where}: propertyNames supports only minLength")
        key_min_length = int(names.get("minLength", 0))
    required = node.get("required", [])
    assert isinstance(required, list)
    items = None
    if "items" in node:
        assert isinstance(node["items"], dict)
        items = _compile(root, node["items"], f"{where}[]")
    enum, minimum, maximum = node.get("enum"), node.get("minimum"), node.get("maximum")
    pattern = node.get("pattern")
    return Shape(
        type=kind,
        where=where,
        properties=properties,
        folded={key.lower(): key for key in properties},
        required=tuple(str(r) for r in required),
        values=values,
        items=items,
        min_items=int(node.get("minItems", 0)),  # type: ignore[call-overload]
        min_length=int(node.get("minLength", 0)),  # type: ignore[call-overload]
        key_min_length=key_min_length,
        enum=tuple(enum) if isinstance(enum, list) else None,
        minimum=minimum if isinstance(minimum, int) else None,
        maximum=maximum if isinstance(maximum, int) else None,
        pattern=pattern if isinstance(pattern, str) else None,
    )


@functools.cache
def compiled() -> Shape:
    """The packaged schema compiled into `Shape`s (once per process)."""
    root = schema()
    return _compile(root, root, "spec")


FAULTS: Final[Mapping[str, str]] = {
    "schema.required": "missing required field {!r}",
    "schema.unknown-field": "unknown field {!r} (expected one of: {})",
    "schema.enum": "{!r} is not one of {}",
    "schema.range": "{} is out of range ({} to {})",
    "schema.empty": "must not be empty",
    "schema.empty-key": "keys must not be empty",
    "schema.min-items": "needs at least {} item(s)",
    "parse.type": "expected {}, found {}",
    "parse.null": "expected {}, found {}; omit the field",
    "parse.key-type": "keys must be strings, found {}",
    "parse.key-case": "key {!r} is spelled {!r} in the specification",
    "parse.case-duplicate": "key {!r} differs only in case from {!r}",
}
"""The message of each fault a value can have against its `Shape`, for text and data alike."""

EXPECTED: Final[Mapping[str, str]] = {
    "string": "a string",
    "integer": "an integer",
    "boolean": "a boolean",
    "object": "a mapping",
    "map": "a mapping",
    "array": "a list",
}
"""What a value of each `Shape.type` is called in messages."""


def fault(rule: str, *args: object) -> str:
    """The message of ``rule`` in `FAULTS`, filled with ``args``."""
    return FAULTS[rule].format(*args)


def fields_text(shape: Shape) -> str:
    """The fields of an object ``shape``, for the message of an unknown one."""
    return ", ".join(shape.properties)


def allowed_text(shape: Shape) -> str:
    """The values ``shape`` allows, for the message of another one."""
    assert shape.enum is not None
    return ", ".join(repr(v) for v in shape.enum if v != "")


def shorten(text: str) -> str:
    """``text``, cut to 40 characters for a message."""
    return text if len(text) <= 40 else text[:37] + "..."


def describe_value(value: object) -> str:
    """A few words naming the plain value ``value``, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        bits = value.bit_length()
        return f"the integer {value}" if bits <= 128 else f"an integer of {bits} bits"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {shorten(value)!r}"
    return "a mapping" if isinstance(value, dict) else f"a {type(value).__name__}"  # a list


_INVALID: Final = object()


def _is_scalar(kind: str, value: object) -> bool:
    """Whether ``value`` has the Python type of a scalar ``kind`` (a bool is no integer)."""
    if isinstance(value, bool):
        return kind == "boolean"
    if isinstance(value, int):
        return kind == "integer"
    return isinstance(value, str) and kind == "string"


class _DataChecker:
    """Checks plain values against `Shape`s, as `ctk.cdi.load`'s decoder checks YAML nodes."""

    def __init__(self) -> None:
        self.found: list[Problem] = []

    def report(self, path: Path, rule: str, *args: object, warn: bool = False) -> object:
        severity = ProblemSeverity.WARNING if warn else ProblemSeverity.ERROR
        self.found.append(Problem(rule, fault(rule, *args), path, severity=severity))
        return _INVALID

    def value(self, value: object, shape: Shape, path: Path) -> object:
        kind = shape.type
        if isinstance(value, dict) and kind in ("object", "map"):
            if kind == "object":
                return self.fields(value, shape, path)
            return self.entries(value, shape, path)
        if isinstance(value, list) and kind == "array":
            return self.items(value, shape, path)
        if _is_scalar(kind, value):
            return self.scalar(value, shape, path)
        rule = "parse.null" if value is None else "parse.type"
        return self.report(path, rule, EXPECTED[kind], describe_value(value))

    def scalar(self, value: object, shape: Shape, path: Path) -> object:
        if isinstance(value, str) and len(value) < shape.min_length:
            return self.report(path, "schema.empty")
        if shape.type == "integer":
            assert isinstance(value, int)
            low, high = shape.minimum, shape.maximum
            if (low is not None and value < low) or (high is not None and value > high):
                shown = str(value) if value.bit_length() <= 128 else describe_value(value)
                return self.report(path, "schema.range", shown, low, high)
        if shape.enum is not None and value not in shape.enum:
            return self.report(path, "schema.enum", value, allowed_text(shape))
        return value

    def items(self, value: list[object], shape: Shape, path: Path) -> object:
        items = shape.items
        assert items is not None
        out = []
        for index, item in enumerate(value):
            checked = self.value(item, items, (*path, index))
            if checked is not _INVALID:
                out.append(checked)
        if len(value) < shape.min_items:
            self.report(path, "schema.min-items", shape.min_items)
        return out

    def key(self, key: object, path: Path) -> str | None:
        if isinstance(key, str):
            return key
        self.report((*path, str(key)), "parse.key-type", describe_value(key))
        return None

    def fields(self, value: dict[object, object], shape: Shape, path: Path) -> object:
        out: dict[str, object] = {}
        spelled: dict[str, str] = {}
        for written, item in value.items():
            key = self.key(written, path)
            if key is None:
                continue
            where: Path = (*path, key)
            canonical = shape.folded.get(key.lower())
            if canonical is None:
                self.report(where, "schema.unknown-field", key, fields_text(shape))
                continue
            if canonical in spelled:
                self.report(where, "parse.case-duplicate", key, spelled[canonical])
                continue
            spelled[canonical] = key
            if canonical != key:
                self.report(where, "parse.key-case", key, canonical, warn=True)
            checked = self.value(item, shape.properties[canonical], where)
            if checked is not _INVALID:
                out[canonical] = checked
        for name in shape.required:
            if name not in spelled:
                self.report(path, "schema.required", name)
        return out

    def entries(self, value: dict[object, object], shape: Shape, path: Path) -> object:
        values = shape.values
        assert values is not None
        out: dict[str, object] = {}
        for written, item in value.items():
            key = self.key(written, path)
            if key is None:
                continue
            if len(key) < shape.key_min_length:
                self.report((*path, key), "schema.empty-key")
                continue
            checked = self.value(item, values, (*path, key))
            if checked is not _INVALID:
                out[key] = checked
        return out


def check_data(data: object) -> tuple[dict[str, object] | None, list[Problem]]:
    """Check the plain value ``data`` (dicts, lists, str, int, bool) against the schema.

    Returns the spec without the values that are wrong (``None`` when ``data`` is no mapping)
    and what is wrong, without positions. A float is no integer here: nothing ctk builds has one.
    """
    checker = _DataChecker()
    checked = checker.value(data, compiled(), ())
    return (checked if isinstance(checked, dict) else None), checker.found
