"""ctk's CDI JSON schema (`ctk/schemas/cdi.json`) and its compiled form for the fast decoder.

The schema file is the documented contract. `compiled()` turns it, once per process, into a tree
of `Shape`s that `ctk.cdi.load` walks while it decodes YAML nodes: types, required and unknown
fields, enums, lengths and ranges, each fault in the words of one table, `FAULTS`. String
patterns are not evaluated there: the rules in `ctk.cdi.names` and `ctk.cdi.validate` check the
same syntax with precise messages (tests prove both agree). The compiler refuses schema keywords
it does not understand, so an edit to the schema can never be silently ignored.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol, cast

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


@dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """One schema node, in the form the decoder needs."""

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


def _check_bounds(node: dict[str, object], where: str) -> None:
    """A bound of a type ctk would not apply must not pass as applied (1.0, "1", true)."""
    if node.get("minLength", 0) not in (0, 1):  # its rule and words are "not empty"
        raise SchemaError(f"{where}: minLength {node['minLength']!r} is not 0 or 1")
    for keyword, wanted, what in (
        ("minimum", int, "an integer"),
        ("maximum", int, "an integer"),
        ("enum", list, "a list"),
        ("pattern", str, "a string"),
    ):
        value = node.get(keyword)
        if value is not None and (not isinstance(value, wanted) or isinstance(value, bool)):
            raise SchemaError(f"{where}: {keyword} {value!r} is not {what}")


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
        if key_min_length not in (0, 1):  # its rule and words are "not empty"
            raise SchemaError(f"{where}: propertyNames supports minLength 0 or 1 only")
    required = node.get("required", [])
    assert isinstance(required, list)
    items = None
    if "items" in node:
        assert isinstance(node["items"], dict)
        items = _compile(root, node["items"], f"{where}[]")
    elif kind == "array":
        raise SchemaError(f"{where}: an array needs items as a schema")
    _check_bounds(node, where)
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
"""The message of each fault a value can have against its `Shape`."""

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
