"""The schema compiler (`ctk.cdi.schema`): what ctk's decoder makes of a schema agrees with
jsonschema, what it cannot honour it refuses by name, and every string pattern of the packaged
schema has a ctk rule that agrees with it (from issue 26's mutation run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from ctk.cdi import load
from ctk.cdi import schema as cdi_schema
from ctk.cdi.problems import ProblemSeverity
from ctk.cdi.validate import validate_text

REPO = Path(__file__).parent.parent.parent

Schema = dict[str, object]


def _closed(properties: dict[str, object], **more: object) -> Schema:
    return {"type": "object", "additionalProperties": False, "properties": properties, **more}


def _map(values: object, **more: object) -> Schema:
    return {"type": "object", "additionalProperties": values, **more}


STRINGS: Schema = _map({"type": "string"})
KEYED: Schema = _map({"type": "string"}, propertyNames={"minLength": 1})
VIA_REF: Schema = {
    "definitions": {"text": {"type": "string", "minLength": 1}},
    **_map({"$ref": "#/definitions/text"}),
}
RECORD: Schema = _closed({"a": {"type": "string"}, "b": {"type": "integer"}}, required=["a"])
PAIR: Schema = {"type": "array", "items": {"type": "string"}, "minItems": 2}
LIST: Schema = {"type": "array", "items": {"type": "string"}}
TEXT: Schema = {"type": "string"}
FILLED: Schema = {"type": "string", "minLength": 1}
CHOICE: Schema = {"type": "string", "enum": ["", "b", "c"]}
BOUNDED: Schema = {"type": "integer", "minimum": 1, "maximum": 10}
FLAG: Schema = {"type": "boolean"}

# (schema, instance, the first error ctk reports: (rule, message), None when valid)
VERDICTS = [
    pytest.param(STRINGS, {"a": "b"}, None, id="map-ok"),
    pytest.param(STRINGS, {"": "x"}, None, id="map-empty-key-ok-without-propertyNames"),
    pytest.param(STRINGS, {}, None, id="map-empty"),
    pytest.param(
        STRINGS,
        {"a": 1},
        ("parse.type", "expected a string, found the integer 1; quote it to make it a string"),
        id="map-value",
    ),
    pytest.param(STRINGS, ["a"], ("parse.type", "expected a mapping, found a list"), id="map-list"),
    pytest.param(KEYED, {"k": "v"}, None, id="propertyNames-ok"),
    pytest.param(
        KEYED, {"": "v"}, ("schema.empty-key", "keys must not be empty"), id="propertyNames-empty"
    ),
    pytest.param(VIA_REF, {"a": "x"}, None, id="map-ref-ok"),
    pytest.param(VIA_REF, {"a": ""}, ("schema.empty", "must not be empty"), id="map-ref-empty"),
    pytest.param(RECORD, {"a": "x", "b": 2}, None, id="object-ok"),
    pytest.param(
        RECORD, {"b": 2}, ("schema.required", "missing required field 'a'"), id="required"
    ),
    pytest.param(
        RECORD,
        {"a": "x", "c": 1},
        ("schema.unknown-field", "unknown field 'c' (expected one of: a, b)"),
        id="unknown-field",
    ),
    pytest.param(PAIR, ["a", "b"], None, id="minItems-ok"),
    pytest.param(PAIR, ["a"], ("schema.min-items", "needs at least 2 item(s)"), id="minItems"),
    pytest.param(LIST, [], None, id="list-empty-ok-without-minItems"),
    pytest.param(
        LIST,
        [True],
        ("parse.type", "expected a string, found the boolean true; quote it to make it a string"),
        id="item",
    ),
    pytest.param(TEXT, "", None, id="string-empty-ok-without-minLength"),
    pytest.param(FILLED, "x", None, id="minLength-ok"),
    pytest.param(FILLED, "", ("schema.empty", "must not be empty"), id="minLength"),
    pytest.param(CHOICE, "", None, id="enum-empty-member"),
    pytest.param(CHOICE, "b", None, id="enum-ok"),
    pytest.param(CHOICE, "x", ("schema.enum", "'x' is not one of 'b', 'c'"), id="enum"),
    pytest.param(BOUNDED, 1, None, id="minimum-ok"),
    pytest.param(BOUNDED, 10, None, id="maximum-ok"),
    pytest.param(BOUNDED, 0, ("schema.range", "0 is out of range (1 to 10)"), id="minimum"),
    pytest.param(BOUNDED, 11, ("schema.range", "11 is out of range (1 to 10)"), id="maximum"),
    pytest.param(FLAG, True, None, id="boolean-ok"),
    pytest.param(
        FLAG, "yes", ("parse.type", "expected a boolean, found the string 'yes'"), id="bool"
    ),
]


@pytest.mark.parametrize(("schema", "instance", "first_error"), VERDICTS)
def test_compiled_schema_agrees_with_jsonschema(
    schema: Schema, instance: object, first_error: tuple[str, str] | None
) -> None:
    """The decoder, walking ctk's compiled form of a schema, gives jsonschema's verdict."""
    shape = cdi_schema._compile(schema, schema, "spec")
    node, problems = load.compose(json.dumps(instance))
    assert node is not None and not problems
    decoder = load._Decoder()
    decoder.value(node, shape)
    errors = [(f.rule, f.message) for f in decoder.found if f.severity is ProblemSeverity.ERROR]
    assert (not errors) is jsonschema.Draft7Validator(schema).is_valid(instance)
    assert (errors[0] if errors else None) == first_error


def _refused(schema: Schema) -> str:
    with pytest.raises(cdi_schema.SchemaError) as refused:
        cdi_schema._compile(schema, schema, "spec")
    return str(refused.value)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param(
            _closed({"a": {"type": "string", "format": "date"}}),
            "spec.a: unsupported schema keywords ['format']",
            id="keyword-of-a-property",
        ),
        pytest.param(
            {
                "definitions": {"stamp": {"type": "string", "format": "date"}},
                **_closed({"a": {"$ref": "#/definitions/stamp"}}),
            },
            "stamp: unsupported schema keywords ['format']",
            id="keyword-of-a-definition",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "number"}},
            "spec[]: unsupported type 'number'",
            id="type-of-items",
        ),
        pytest.param(
            _map({"type": "null"}), "spec.*: unsupported type 'null'", id="type-of-map-values"
        ),
        pytest.param({"enum": ["a"]}, "spec: unsupported type None", id="no-type"),
        pytest.param(
            {"type": "object"},
            "spec: an open object needs additionalProperties as a schema",
            id="open-object",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "string"}}},
            "spec: an open object needs additionalProperties as a schema",
            id="open-object-with-properties",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
            "spec: an open object needs additionalProperties as a schema",
            id="map-with-properties",
        ),
        pytest.param(
            _map({"type": "string"}, propertyNames={"pattern": "^a"}),
            "spec: propertyNames supports only minLength",
            id="propertyNames-pattern",
        ),
        pytest.param(
            {"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s", "type": "string"},
            "unsupported $ref use: {'definitions': {'s': {'type': 'string'}}, "
            "'$ref': '#/definitions/s', 'type': 'string'}",
            id="ref-with-siblings",
        ),
        pytest.param(
            _closed({"a": {"$ref": "other.json#/definitions/s"}}),
            "unsupported $ref use: {'$ref': 'other.json#/definitions/s'}",
            id="ref-to-another-document",
        ),
        pytest.param(
            _closed({"a": {"$ref": 7}}), "unsupported $ref use: {'$ref': 7}", id="ref-not-a-string"
        ),
        pytest.param(
            {"type": "integer", "minimum": 1.0},
            "spec: minimum 1.0 is not an integer",
            id="float-minimum",
        ),
        pytest.param(
            {"type": "integer", "maximum": True},
            "spec: maximum True is not an integer",
            id="bool-maximum",
        ),
        pytest.param(
            {"type": "string", "enum": "a"}, "spec: enum 'a' is not a list", id="enum-not-a-list"
        ),
        pytest.param(
            {"type": "string", "pattern": 1},
            "spec: pattern 1 is not a string",
            id="pattern-not-a-str",
        ),
        pytest.param({"type": "array"}, "spec: an array needs items as a schema", id="no-items"),
        pytest.param(
            {"type": "string", "minLength": 2}, "spec: minLength 2 is not 0 or 1", id="minLength-2"
        ),
        pytest.param(
            _map({"type": "string"}, propertyNames={"minLength": 2}),
            "spec: propertyNames supports minLength 0 or 1 only",
            id="propertyNames-minLength-2",
        ),
    ],
)
def test_compiler_refuses_what_it_cannot_honour(schema: Schema, message: str) -> None:
    """A schema edit the decoder could not enforce fails loudly, naming where it is."""
    assert _refused(schema) == message


def _spec(edits: str, version: str = "1.1.0") -> str:
    return (
        f"cdiVersion: {version}\nkind: example.com/gpu\n"
        f"devices:\n- name: gpu0\n  containerEdits:\n{edits}"
    )


# For each pattern of the schema, by the compiled node's place: a spec with the value in that
# place, the path of that value, and values to try.
PLACES: dict[str, tuple[str, tuple[str | int, ...], list[str]]] = {
    "spec.cdiVersion": (
        "cdiVersion: {}\nkind: example.com/gpu\ndevices:\n"
        "- name: gpu0\n  containerEdits:\n    env: [A=1]\n",
        ("cdiVersion",),
        ["0.3.0", "v1.1.0", "0.8.0", "1.0.0", "0.2.0", "0.9.0", "1.2.0", "1.0", "v", "x1.0.0"],
    ),
    "spec.kind": (
        "cdiVersion: 1.1.0\nkind: {}\ndevices:\n- name: gpu0\n  containerEdits:\n    env: [A=1]\n",
        ("kind",),
        ["a/b", "nvidia.com/gpu", "a-b_c.d/e.f", "a/", "/b", "1a/b", "a/b-", "a/b/c", "a.b", "é/b"],
    ),
    "device.name": (
        "cdiVersion: 1.1.0\nkind: example.com/gpu\ndevices:\n"
        "- name: {}\n  containerEdits:\n    env: [A=1]\n",
        ("devices", 0, "name"),
        ["0", "gpu0", "a:b.c_d-e", "", "-a", "a-", "a/b", "a b", "a=b", "ä"],
    ),
    "env[]": (
        _spec("    env: [{}]\n"),
        ("devices", 0, "containerEdits", "env", 0),
        ["A=1", "A=", "A==", "a b=c", "A", "=1", "", "=", "==A"],
    ),
    "deviceNode.permissions": (
        _spec("    deviceNodes:\n    - path: /dev/x\n      permissions: {}\n"),
        ("devices", 0, "containerEdits", "deviceNodes", 0, "permissions"),
        ["", "r", "rwm", "mwr", "rr", "x", "rwx", "R", " r"],
    ),
    "hook.path": (
        _spec("    hooks:\n    - hookName: prestart\n      path: {}\n"),
        ("devices", 0, "containerEdits", "hooks", 0, "path"),
        ["/", "/usr/bin/hook", "//x", "", "usr/bin/hook", "./hook", " /x"],
    ),
}


def _patterns() -> dict[str, str]:
    """The pattern of each node of the compiled packaged schema, by the node's place."""
    root = cdi_schema.schema()
    found: dict[str, str] = {}
    todo = [cdi_schema._compile(root, root, "spec")]
    while todo:
        shape = todo.pop()
        if shape.pattern is not None:
            found[shape.where] = shape.pattern
        todo.extend(shape.properties.values())
        todo.extend(s for s in (shape.values, shape.items) if s is not None)
    return found


def test_every_schema_pattern_has_a_ctk_rule_here() -> None:
    """The decoder skips patterns; each one must have a rule, and a case in `PLACES` below."""
    assert set(_patterns()) == set(PLACES)


@pytest.mark.parametrize(
    ("place", "value"),
    [
        pytest.param(place, value, id=f"{place}:{value!r}")
        for place, (_, _, values) in PLACES.items()
        for value in values
    ],
)
def test_ctk_rules_agree_with_the_schema_patterns(place: str, value: str) -> None:
    """A value breaks ctk's rule for its place exactly when it does not match the pattern."""
    template, path, _ = PLACES[place]
    report = validate_text(template.format(json.dumps(value)), "spec.yaml")
    refused = any(p.path == path for p in report.errors)
    assert refused is (re.search(_patterns()[place], value) is None)
    assert report.valid is not refused


def test_schema_text_is_the_packaged_file_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged schema is found next to ctk, not relative to the working directory."""
    monkeypatch.chdir(tmp_path)
    packaged = REPO / "ctk" / "schemas" / "cdi.json"
    assert cdi_schema.schema_text() == packaged.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("length", "shown"),
    [
        pytest.param(40, "x" * 40, id="40-in-full"),
        pytest.param(41, "x" * 37 + "...", id="41-cut"),
    ],
)
def test_messages_show_values_up_to_40_characters(length: int, shown: str) -> None:
    report = validate_text(_spec(f"    additionalGids: [{'x' * length}]\n"), "spec.yaml")
    assert [p.message for p in report.errors] == [
        f"expected an integer, found the string {shown!r}"
    ]
