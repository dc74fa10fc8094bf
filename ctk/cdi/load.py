"""Strict loading of CDI spec text (YAML or JSON) into plain values, with positions.

libyaml's C parser composes the document into nodes (safe: no Python objects are built from
tags); this module then builds the values itself while walking the compiled schema
(`ctk.cdi.schema`). That single walk finds what a plain `yaml.safe_load` hides: duplicate keys,
keys differing only in case, YAML scalars of the wrong type (an unquoted `no` where a string is
required), unknown fields, missing fields, and it knows the line and column of each node.
Values that are wrong are left out of the result, so later rules see only well-typed data.
JSON is read the same way, as the reference library does (JSON is YAML).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ctk.cdi.problems import Path, Problem, ProblemSeverity
from ctk.cdi.schema import (
    EXPECTED,
    Shape,
    allowed_text,
    compiled,
    fault,
    fields_text,
    shorten,
)

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TAG = "tag:yaml.org,2002:"
STR, INT, BOOL, NULL, FLOAT = (_TAG + t for t in ("str", "int", "bool", "null", "float"))
MERGE, SEQ, MAP = _TAG + "merge", _TAG + "seq", _TAG + "map"
# YAML 1.1 booleans. PyYAML leaves out y/Y/n/N, but the reference library's parser (go-yaml)
# reads them as booleans too, so an unquoted `n` as a device name is as wrong as `no`.
_BOOLEANS = {
    **dict.fromkeys(
        ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True
    ),
    **dict.fromkeys(
        ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False
    ),
}
_PLAIN_TAGS: dict[str, str] = dict.fromkeys(_BOOLEANS, BOOL)
_PLAIN_TAGS_MAX = 8192
_PLAIN_TAG_LENGTH = 256
"""Longer scalars are not memoised: the memo lives as long as the process, which may read
many huge files (a path or name repeats; a megabyte-long scalar does not)."""


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader, with the tags of plain scalars memoised (specs repeat them a lot).

    A plain scalar that YAML 1.1 reads as a string but the reference library's parser (go-yaml
    v2) reads as a number (`1e3`, `08`, `0o17`, `0X1F`) gets the number's tag, so it is no
    string where a string is required, and is read as CDI runtimes read it where a number is.
    """

    def resolve(self, kind: type[Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if not implicit[0]:
                return STR
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = str(super().resolve(kind, value, implicit))
                if tag == STR:
                    tag = _go_number_tag(value) or STR
                if len(value) <= _PLAIN_TAG_LENGTH and len(_PLAIN_TAGS) < _PLAIN_TAGS_MAX:
                    _PLAIN_TAGS[value] = tag
            return tag
        return SEQ if kind is SequenceNode else MAP

    # The composer calls these two around every node, for path resolvers, which the safe
    # loader has none of: doing nothing at once saves a tenth of composing.
    def descend_resolver(self, current_node: Node | None, current_index: object) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


_CONSTRUCTOR = SafeConstructor()
# `0o644`: YAML 1.2's octal. YAML 1.1 (PyYAML) reads a string, the reference library's parser an
# integer, so where an integer is required it is read as one, with a warning.
_YAML12_OCTAL = re.compile(r"[-+]?0o_*[0-7][0-7_]*")


_YAML11 = yaml.resolver.Resolver()


@functools.lru_cache(maxsize=4096)
def _yaml11_tag(text: str) -> str:
    """The tag YAML 1.1 (PyYAML) gives the plain scalar ``text``."""
    return str(_YAML11.resolve(ScalarNode, text, (True, False)))  # type: ignore[no-untyped-call]


# go-yaml v2 reads a plain scalar that starts with a digit or sign as an integer when Go's
# strconv.ParseInt (base prefixes 0x, 0o, 0b, a leading 0 for octal) takes it without the
# underscores, else as a float when it matches this and strconv.ParseFloat takes it.
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_LONE_UNDERSCORE = re.compile(r"(?<![0-9])_|_(?![0-9])")
_GO_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _go_int(text: str) -> int | None:
    """The integer go-yaml v2 reads from ``text`` (any size), or ``None``."""
    plain = text.replace("_", "")
    digits = plain[1:] if plain[:1] in ("+", "-") else plain
    base = {"0x": 16, "0o": 8, "0b": 2}.get(digits[:2].lower())
    if base is not None:
        digits = digits[2:]
    elif len(digits) > 1 and digits[0] == "0":
        base, digits = 8, digits[1:]
    else:
        base = 10
    if not digits or any(c not in _DIGITS[base] for c in digits):
        return None
    digits = digits.lstrip("0") or "0"
    # Beyond every range in CDI (and Python refuses to convert decimals of 4300+ digits).
    number = 1 << 256 if len(digits) > 80 else int(digits, base)
    return -number if plain[0] == "-" else number


def _go_float(text: str) -> float | None:
    """The float go-yaml v2 reads from ``text`` (explicitly tagged !!float or not), or ``None``."""
    if text in _GO_SPECIAL_FLOATS:
        return _GO_SPECIAL_FLOATS[text]
    if text[:1] == ".":
        # go-yaml v2 hands "."-leading text to Go's ParseFloat as written, which takes a "_"
        # between two digits only (.5_0e1 is 5; ._5 and .5_ are not numbers)
        plain = text if _LONE_UNDERSCORE.search(text) else text.replace("_", "")
    else:
        plain = text.replace("_", "")
    integer = None if text[:1] == "." else _go_int(plain)
    if integer is not None:
        return float(integer)
    if not _GO_FLOAT.fullmatch(plain):
        return None
    number = float(plain)
    return None if math.isinf(number) else number  # Go's ParseFloat fails on overflow


def _go_number_tag(text: str) -> str | None:
    """INT or FLOAT when go-yaml v2 reads the plain scalar ``text`` as a number."""
    if text[:1] not in ("+", "-", ".", *"0123456789") or text in _GO_SPECIAL_FLOATS:
        return None
    if text[:1] != "." and _go_int(text) is not None:
        return INT
    return FLOAT if _go_float(text) is not None else None


def _is_base60(node: ScalarNode) -> bool:
    """A plain `1:30` or `1:30.5`: a number in YAML 1.1, a string for go-yaml v2."""
    text = str(node.value)
    return not node.style and ":" in text and _go_number_tag(text) is None


def _go_json_integer(number: float) -> int | None:
    """What Go's JSON decoder makes of a float go-yaml read where an integer is needed.

    sigs.k8s.io/yaml turns the YAML into JSON (a float64 prints as its shortest digits, without
    exponent below 1e21) and decodes that into the Go field: an integral value is read as that
    integer, anything else is an error.
    """
    if not math.isfinite(number) or not number.is_integer() or abs(number) >= 1e21:
        return None
    from decimal import Decimal  # rare (a float where an integer goes): not at start-up

    return int(Decimal(repr(number)))


def _yaml11_octal(text: str) -> str:
    sign = text[0] if text[0] in "+-" else ""
    return sign + "0" + text.lstrip("+-").removeprefix("0o")


_INVALID = object()


def _mark(node: Node) -> tuple[int, int]:
    mark = node.start_mark
    return mark.line + 1, mark.column + 1


def describe(node: Node) -> str:
    """A few words naming what ``node`` is, for messages."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    value = str(node.value)
    shown = shorten(value)
    tag = str(node.tag)
    names = {STR: "the string", INT: "the integer", BOOL: "the boolean", FLOAT: "the number"}
    if tag == NULL:
        return "null" if value in ("", "~", "null", "Null", "NULL") else f"null ({shown})"
    if tag in names:
        return f"{names[tag]} {shown!r}" if tag == STR else f"{names[tag]} {shown}"
    return f"a value tagged {tag.replace(_TAG, '!!')} ({shown})"


@dataclass(frozen=True, slots=True)
class _Found:
    """A problem the decoder met, before its path and position are looked up."""

    node: Node
    rule: str
    message: str
    severity: ProblemSeverity = ProblemSeverity.ERROR
    key: str | None = None


class _Decoder:
    """Builds plain values from nodes while checking them against `Shape`s."""

    def __init__(self, *, merges: bool = True) -> None:
        self.found: list[_Found] = []
        self.merges = merges
        """Whether the document may hold merge keys (``<<``); without, mappings are not searched."""

    def report(
        self, node: Node, rule: str, message: str, *, warn: bool = False, key: str | None = None
    ) -> None:
        severity = ProblemSeverity.WARNING if warn else ProblemSeverity.ERROR
        self.found.append(_Found(node, rule, message, severity, key))

    def value(self, node: Node, shape: Shape) -> object:
        kind = shape.type
        if kind == "object":
            return self.mapping(node, shape)
        if kind == "array":
            return self.array(node, shape)
        if kind == "map":
            return self.map(node, shape)
        return self.scalar(node, shape)

    def _wrong_type(self, node: Node, expected: str) -> object:
        found = describe(node)
        hint = ""
        if isinstance(node, ScalarNode) and expected == "a string" and not node.style:
            hint = "; quote it to make it a string"
        if isinstance(node, ScalarNode) and node.tag == NULL:
            self.report(node, "parse.null", fault("parse.null", expected, found))
        else:
            self.report(node, "parse.type", fault("parse.type", expected, found) + hint)
        return _INVALID

    def integer(self, node: ScalarNode, shape: Shape) -> object:
        """The integer CDI runtimes read from ``node``: as go-yaml, then Go's JSON decoder."""
        tag, text = node.tag, str(node.value)
        low, high = shape.minimum, shape.maximum
        yaml11 = _yaml11_tag(text)
        if tag == INT:
            return self._int_tagged(node, yaml11, low, high)
        if tag != FLOAT:
            return self._wrong_type(node, "an integer")
        real = _go_float(text)
        if real is None:
            if yaml11 == FLOAT and ":" in text:
                return self._base60(node, "a number")
            self.report(node, "parse.type", f"{shorten(text)!r} is not a number CDI runtimes read")
            return _INVALID
        number = _go_json_integer(real)
        if number is None:
            return self._wrong_type(node, "an integer")
        if not self._in_range(node, number, low, high):
            return _INVALID
        if low is not None and low >= 0 and math.copysign(1.0, real) < 0:  # Go's JSON: "-0"
            self.report(node, "schema.range", f"{text} is -0, which CDI runtimes refuse here")
            return _INVALID
        self._number_form(node, number, yaml11)
        return number

    def _int_tagged(
        self, node: ScalarNode, yaml11: str, low: int | None, high: int | None
    ) -> object:
        text = str(node.value)
        number = _go_int(text)
        if number is None:
            if yaml11 == INT:  # a YAML 1.1 base-60 number such as 1:30
                return self._base60(node, "an integer")
            self.report(node, "parse.type", f"{shorten(text)!r} is not a YAML integer")
            return _INVALID
        if not self._in_range(node, number, low, high):
            return _INVALID
        if not node.style and _YAML12_OCTAL.fullmatch(text):
            self.report(
                node,
                "parse.octal",
                f"{text} is an octal number in YAML 1.2 (and for CDI runtimes) but a "
                f"string in YAML 1.1; write {_yaml11_octal(text)}",
                warn=True,
            )
        elif yaml11 != INT:
            self._number_form(node, number, yaml11)
        return number

    def _in_range(self, node: Node, number: int, low: int | None, high: int | None) -> bool:
        if (low is not None and number < low) or (high is not None and number > high):
            shown = str(number) if number.bit_length() <= 128 else describe(node)
            self.report(node, "schema.range", fault("schema.range", shown, low, high))
            return False
        return True

    def _number_form(self, node: ScalarNode, number: int, yaml11: str) -> None:
        what = {STR: "a string", FLOAT: "a floating-point number"}.get(yaml11, "something else")
        self.report(
            node,
            "parse.number-form",
            f"CDI runtimes read {node.value} as the integer {number}, YAML 1.1 as {what}; "
            f"write {number}",
            warn=True,
        )

    def _base60(self, node: ScalarNode, expected: str) -> object:
        self.report(
            node,
            "parse.type",
            f"expected {expected}, found {node.value}: a base-60 number in YAML 1.1 but a "
            "string for CDI runtimes",
        )
        return _INVALID

    def scalar(self, node: Node, shape: Shape) -> object:
        if not isinstance(node, ScalarNode):
            return self._wrong_type(node, EXPECTED[shape.type])
        tag = node.tag
        value: object
        if shape.type == "string":
            if tag in (INT, FLOAT) and _is_base60(node):
                self.report(
                    node,
                    "parse.base60",
                    f"{node.value} is a string for CDI runtimes but a base-60 number in YAML 1.1; "
                    "quote it",
                    warn=True,
                )
            elif tag != STR:
                return self._wrong_type(node, "a string")
            value = node.value
            if len(node.value) < shape.min_length:
                self.report(node, "schema.empty", fault("schema.empty"))
                return _INVALID
        elif shape.type == "integer":
            value = self.integer(node, shape)
            if value is _INVALID:
                return _INVALID
        else:
            if tag != BOOL or node.value not in _BOOLEANS:
                return self._wrong_type(node, "a boolean")
            value = _BOOLEANS[node.value]
        if shape.enum is not None and value not in shape.enum:
            self.report(node, "schema.enum", fault("schema.enum", value, allowed_text(shape)))
            return _INVALID
        return value

    def array(self, node: Node, shape: Shape) -> object:
        if not isinstance(node, SequenceNode):
            return self._wrong_type(node, "a list")
        items = shape.items
        assert items is not None
        out = []
        for item in node.value:
            value = self.value(item, items)
            if value is not _INVALID:
                out.append(value)
        if len(node.value) < shape.min_items:
            self.report(node, "schema.min-items", fault("schema.min-items", shape.min_items))
        return out

    def _pairs(
        self, node: MappingNode, active: frozenset[int] = frozenset()
    ) -> list[tuple[Node, Node]]:
        """Key/value pairs with YAML merge keys (``<<: *anchor``) expanded.

        As in YAML, explicit keys win over merged ones and earlier merged mappings over later.
        """
        pairs: list[tuple[Node, Node]] = node.value
        if not self.merges or not any(key.tag == MERGE for key, _ in pairs):
            return pairs
        active = active | {id(node)}
        merged: list[tuple[Node, Node]] = []
        own: list[tuple[Node, Node]] = []
        for key_node, value_node in pairs:
            if key_node.tag != MERGE:
                own.append((key_node, value_node))
                continue
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, MappingNode):
                    self.report(source, "parse.merge", "a merge key (<<) needs a mapping")
                elif id(source) in active:
                    self.report(source, "parse.merge", "a merge key (<<) includes its own mapping")
                else:
                    merged.extend(self._pairs(source, active))
        taken = {k.value for k, _ in own if isinstance(k, ScalarNode)}
        kept: list[tuple[Node, Node]] = []
        for key_node, value_node in merged:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key in taken:
                continue
            if key is not None:
                taken.add(key)
            kept.append((key_node, value_node))
        return kept + own

    def _key(self, key_node: Node) -> str | None:
        if isinstance(key_node, ScalarNode) and key_node.tag == STR:
            return str(key_node.value)
        self.report(key_node, "parse.key-type", fault("parse.key-type", describe(key_node)))
        return None

    def mapping(self, node: Node, shape: Shape) -> object:
        if not isinstance(node, MappingNode):
            return self._wrong_type(node, "a mapping")
        out: dict[str, object] = {}
        seen: dict[str, Node] = {}
        spelled: dict[str, str] = {}
        for key_node, value_node in self._pairs(node):
            key = self._key(key_node)
            if key is None:
                continue
            if key in seen:
                line = seen[key].start_mark.line + 1
                self.report(
                    key_node, "parse.duplicate-key", f"duplicate key {key!r} (first on line {line})"
                )
                continue
            seen[key] = key_node
            canonical = shape.folded.get(key.lower())
            if canonical is None:
                self.report(
                    key_node,
                    "schema.unknown-field",
                    fault("schema.unknown-field", key, fields_text(shape)),
                    key=key,
                )
                continue
            if canonical in spelled:
                self.report(
                    key_node,
                    "parse.case-duplicate",
                    fault("parse.case-duplicate", key, spelled[canonical]),
                )
                continue
            spelled[canonical] = key
            if canonical != key:
                self.report(
                    key_node,
                    "parse.key-case",
                    fault("parse.key-case", key, canonical),
                    warn=True,
                )
            value = self.value(value_node, shape.properties[canonical])
            if value is not _INVALID:
                out[canonical] = value
        for name in shape.required:
            if name not in spelled:
                self.report(node, "schema.required", fault("schema.required", name))
        return out

    def map(self, node: Node, shape: Shape) -> object:
        if not isinstance(node, MappingNode):
            return self._wrong_type(node, "a mapping")
        values = shape.values
        assert values is not None
        out: dict[str, object] = {}
        seen: dict[str, Node] = {}
        for key_node, value_node in self._pairs(node):
            key = self._key(key_node)
            if key is None:
                continue
            if key in seen:
                line = seen[key].start_mark.line + 1
                self.report(
                    key_node, "parse.duplicate-key", f"duplicate key {key!r} (first on line {line})"
                )
                continue
            seen[key] = key_node
            if len(key) < shape.key_min_length:
                self.report(key_node, "schema.empty-key", fault("schema.empty-key"), key=key)
                continue
            value = self.value(value_node, values)
            if value is not _INVALID:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class Loaded:
    """The outcome of loading one spec text."""

    root: Node | None
    """The composed document (``None`` when it could not be parsed or is empty)."""
    value: dict[str, object] | None
    """The decoded spec without the values that were wrong (``None`` when not a mapping)."""
    problems: tuple[Problem, ...]


def _syntax_problem(exc: yaml.YAMLError, text: str) -> Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = column = None
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
    elif isinstance(getattr(exc, "position", None), int):
        position: int = exc.position  # type: ignore[attr-defined]
        if _BaseLoader is not yaml.SafeLoader:  # libyaml counts the bytes of the UTF-8 text
            position = len(
                text.encode("utf-8", "surrogatepass")[:position].decode("utf-8", "ignore")
            )
        line, column = _position(text, position)
    last_line = text.count("\n") + 1
    if line is not None and line > last_line:  # libyaml reports end of input one line further
        line, column = last_line, len(text) - (text.rfind("\n") + 1) + 1
    problem = getattr(exc, "problem", None)
    reason = str(problem) if problem else str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    if context:
        reason = f"{reason} ({context})"
    return Problem("parse.syntax", f"not valid YAML or JSON: {reason}", (), line, column)


def compose(text: str) -> tuple[Node | None, list[Problem]]:
    """Compose the first document of ``text``; later documents only give a warning."""
    try:
        loader = _Loader(text)
    except UnicodeEncodeError as exc:  # a lone surrogate in text that did not come from a file
        line, column = _position(text, exc.start)
        problem = f"not valid Unicode text (character {exc.start}: {exc.reason})"
        return None, [Problem("parse.encoding", problem, (), line, column)]
    problems: list[Problem] = []
    try:
        if not loader.check_node():
            return None, [Problem("parse.empty", "the file holds no spec (empty document)")]
        root = loader.get_node()
        assert root is not None  # check_node() said there is one
        try:
            more = loader.check_node()
        except yaml.YAMLError:
            more = True
        if more:
            line, column = _mark(root)
            problems.append(
                Problem(
                    "parse.multi-document",
                    "only the first YAML document is read; the others are ignored",
                    (),
                    line,
                    column,
                    ProblemSeverity.WARNING,
                )
            )
        return root, problems
    except yaml.YAMLError as exc:
        return None, [_syntax_problem(exc, text)]
    finally:
        loader.dispose()


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of character ``index``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _paths(root: Node) -> dict[int, Path]:
    """The path of every node (the first one, for nodes shared through aliases)."""
    paths: dict[int, Path] = {}
    stack: list[tuple[Node, Path]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in paths:
            continue
        paths[id(node)] = path
        children: list[tuple[Node, Path]] = []
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, ScalarNode) else "?"
                paths.setdefault(id(key_node), (*path, str(key)))
                children.append((value_node, (*path, str(key))))
        elif isinstance(node, SequenceNode):
            children = [(item, (*path, index)) for index, item in enumerate(node.value)]
        stack.extend(reversed(children))  # the first child is walked first: document order
    return paths


def _entry(node: MappingNode, key: str) -> tuple[Node, Node] | None:
    """The key and value nodes of ``key``: exact spelling first, then any letter case."""
    pairs = [(k, v) for k, v in node.value if isinstance(k, ScalarNode)]
    for k, v in pairs:
        if k.value == key:
            return k, v
    folded = key.lower()
    return next(((k, v) for k, v in pairs if str(k.value).lower() == folded), None)


def locate(root: Node | None, path: Path, *, at_key: bool = False) -> tuple[int | None, int | None]:
    """Line and column (1-based) of the node at ``path``, or of its nearest existing parent.

    With ``at_key``, a path ending in a mapping key gives the key's position, not its value's.
    """
    node: Node | None = root
    best: Node | None = root
    for index, part in enumerate(path):
        if isinstance(node, MappingNode) and isinstance(part, str):
            entry = _entry(node, part)
            last_key = at_key and index == len(path) - 1
            node = None if entry is None else entry[0] if last_key else entry[1]
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
        if node is None:
            break
        best = node
    if best is None:
        return None, None
    return _mark(best)


def decode(root: Node, *, merges: bool = True) -> tuple[dict[str, object] | None, list[Problem]]:
    """Build the spec's values from ``root``, checking them against the packaged schema.

    ``merges=False`` says the document has no merge keys (``<<``), so none are looked for.
    """
    decoder = _Decoder(merges=merges)
    # Only nodes the schema describes are walked, so recursion stays as shallow as the schema.
    value = decoder.value(root, compiled())
    problems = []
    if decoder.found:
        paths = _paths(root)
        said: set[tuple[int, str, str]] = set()
        for found in decoder.found:
            if (id(found.node), found.rule, found.message) in said:
                continue  # a node shared through aliases is decoded once for each: one problem
            said.add((id(found.node), found.rule, found.message))
            path = paths.get(id(found.node), ())
            line, column = _mark(found.node)
            problems.append(Problem(found.rule, found.message, path, line, column, found.severity))
    return (value if isinstance(value, dict) else None), problems


ALIAS_EXPANSION_LIMIT = 100_000
"""Nodes YAML aliases may expand a document to, beyond 10 times its own nodes (see below)."""


def _expanded_size(root: Node) -> tuple[int, int] | None:
    """The number of distinct nodes and of nodes once aliases are expanded (None: a loop)."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in on_path:
            return None
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return len(sizes), sizes[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _aliasing_problem(root: Node) -> Problem | None:
    """An error when aliases expand the document far beyond its text (a billion laughs).

    Each alias is read as a full copy, as CDI runtimes read it; a spec that multiplies itself
    more than tenfold into over 100,000 nodes is refused before it is walked, so that reading
    it stays fast and its errors few.
    """
    sizes = _expanded_size(root)
    if sizes is None:  # the decoder walks only what the schema describes and reports the loop
        return None
    distinct, expanded = sizes
    if expanded > ALIAS_EXPANSION_LIMIT and expanded > 10 * distinct:
        return Problem(
            "parse.aliases",
            f"YAML aliases expand {distinct} nodes to {expanded} (more than "
            f"{ALIAS_EXPANSION_LIMIT}); not read",
        )
    return None


def load_text(text: str, *, strict_json: bool = False) -> Loaded:
    """Compose and decode ``text``; ``strict_json`` also warns when it is not strict JSON."""
    root, problems = compose(text)
    if isinstance(root, ScalarNode) and root.tag == NULL:  # only `---`, `~` or comments
        root, problems = None, [Problem("parse.empty", "the file holds no spec (empty document)")]
    if root is None:
        return Loaded(None, None, tuple(problems))
    # A node reached twice needs an anchor (&) and an alias (*): without both characters in the
    # text there is nothing to expand, and the walk over every node is skipped (most specs).
    aliasing = _aliasing_problem(root) if "&" in text and "*" in text else None
    if aliasing is not None:
        return Loaded(root, None, (*problems, aliasing))
    if strict_json:
        try:
            json.loads(text)
        except RecursionError:
            pass  # deeper than Python's json can follow; libyaml read it, so nothing to add
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(
                    "parse.not-json",
                    f"not strict JSON ({exc.msg}); read as YAML, as CDI runtimes do",
                    (),
                    exc.lineno,
                    exc.colno,
                    ProblemSeverity.WARNING,
                )
            )
        except ValueError:
            pass  # an integer too long for Python's int(); decoding reports it where it is
    # A merge key is a plain `<<` or a value tagged as one (a tag starts with '!').
    value, found = decode(root, merges="<<" in text or "!" in text)
    problems.extend(found)
    return Loaded(root, value, tuple(problems))
