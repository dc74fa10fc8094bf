"""ctk's CDI JSON schema (`ctk/schemas/cdi.json`) and its compiled form for the fast decoder.

The schema file is the documented contract. `compiled()` turns it, once per process, into a tree
of `Shape`s that `ctk.cdi.load` walks while it decodes YAML nodes: types, required and unknown
fields, enums, lengths and ranges. String patterns are not evaluated there: the rules in
`ctk.cdi.names` and `ctk.cdi.validate` check the same syntax with precise messages (tests prove
both agree). The compiler refuses schema keywords it does not understand, so an edit to the
schema can never be silently ignored.
"""

from __future__ import annotations

import functools
import json
import pkgutil
from dataclasses import dataclass, field
from typing import Final

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


@dataclass(slots=True, eq=False)
class Shape:
    """One schema node, in the form the decoder needs."""

    type: str
    where: str
    properties: dict[str, Shape] = field(default_factory=dict)
    folded: dict[str, str] = field(default_factory=dict)
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


def schema_text() -> str:
    """The text of the packaged schema (pkgutil: importlib.resources costs start-up)."""
    data = pkgutil.get_data("ctk", "schemas/cdi.json")
    assert data is not None  # ctk's loader reads files
    return data.decode("utf-8")


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
    shape = Shape(
        type="map" if type_ == "object" and additional is not False else str(type_), where=where
    )
    props = node.get("properties", {})
    assert isinstance(props, dict)
    for key, sub in props.items():
        shape.properties[key] = _compile(root, sub, f"{where}.{key}")
        shape.folded[key.lower()] = key
    if shape.type == "map":
        if props or not isinstance(additional, dict):
            raise SchemaError(f"{where}: an open object needs additionalProperties as a schema")
        shape.values = _compile(root, additional, f"{where}.*")
        names = node.get("propertyNames", {})
        assert isinstance(names, dict)
        if set(names) - {"minLength"}:
            raise SchemaError(f"{where}: propertyNames supports only minLength")
        shape.key_min_length = int(names.get("minLength", 0))
    required = node.get("required", [])
    assert isinstance(required, list)
    shape.required = tuple(str(r) for r in required)
    if "items" in node:
        items = node["items"]
        assert isinstance(items, dict)
        shape.items = _compile(root, items, f"{where}[]")
    shape.min_items = int(node.get("minItems", 0))  # type: ignore[call-overload]
    shape.min_length = int(node.get("minLength", 0))  # type: ignore[call-overload]
    enum = node.get("enum")
    shape.enum = tuple(enum) if isinstance(enum, list) else None
    minimum, maximum = node.get("minimum"), node.get("maximum")
    shape.minimum = minimum if isinstance(minimum, int) else None
    shape.maximum = maximum if isinstance(maximum, int) else None
    pattern = node.get("pattern")
    shape.pattern = pattern if isinstance(pattern, str) else None
    return shape


@functools.cache
def compiled() -> Shape:
    """The packaged schema compiled into `Shape`s (once per process)."""
    root = schema()
    return _compile(root, root, "spec")
