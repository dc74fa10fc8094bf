"""Judging one CDI spec: every problem in it, each with a rule id, message and position.

`validate_text()` / `validate_bytes()` are the public entry points; the doctor and the CLI use
them. Decoding and the schema (types, required and unknown fields, enums, ranges) happen in
`ctk.cdi.load`; the rules the schema cannot express are here, one small function each, on the
decoded values. Each problem names a rule from `RULES`. There is one way in, text: `cdi
generate` checks the very text it is about to write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Final

from ctk.cdi import names, version
from ctk.cdi.problems import Path, Problem, ProblemSeverity, format_path

RULES: Final[Mapping[str, str]] = {
    "read.error": "the file cannot be read",
    "parse.encoding": "the file is not UTF-8 text",
    "parse.syntax": "not valid YAML or JSON",
    "parse.empty": "the file holds no spec",
    "parse.multi-document": "(warning) later YAML documents are ignored, as CDI runtimes do",
    "parse.not-json": "(warning) a .json file that is not strict JSON",
    "parse.aliases": "YAML aliases that expand the spec tenfold, past 100,000 nodes",
    "problems.more": "more problems than are listed (at most 100 per spec)",
    "parse.duplicate-key": "a key appears twice in one mapping",
    "parse.case-duplicate": "two keys of one object differ only in case",
    "parse.key-case": "(warning) a field spelled with other letter case than the specification",
    "parse.key-type": "a mapping key that is not a string",
    "parse.merge": "a YAML merge key whose value is not a mapping",
    "parse.type": "a value of the wrong type (e.g. an unquoted YAML `no` where a string is needed)",
    "parse.null": "null where a value is needed",
    "parse.octal": "(warning) a YAML 1.2 octal number (0o644) where an integer is needed",
    "parse.base60": "(warning) an unquoted 1:0 where a string is needed (60 in YAML 1.1)",
    "parse.number-form": "(warning) an integer CDI runtimes read but YAML 1.1 does not (1e3, 1.0)",
    "schema.required": "a required field is missing",
    "schema.unknown-field": "a field the specification does not define",
    "schema.enum": "a value outside its allowed set (device node type, hook name)",
    "schema.range": "an integer out of range (uint32, int64, hook timeout > 0)",
    "schema.empty": "an empty string where the specification needs content",
    "schema.empty-key": "an empty annotation key",
    "schema.min-items": "an empty devices list",
    "version.unknown": "cdiVersion is not a released CDI version",
    "version.retired": "cdiVersion is older than 0.3.0, the earliest accepted",
    "version.too-low": "the content needs a higher cdiVersion than declared",
    "version.v-prefix": "(warning) cdiVersion has a leading 'v'",
    "kind.invalid": "kind is not vendor/class with valid names",
    "kind.long-vendor": "(warning) the vendor is longer than a DNS name (253)",
    "kind.long-class": "(warning) the class is longer than 63 characters",
    "device.name": "a device name with characters or a shape the specification forbids",
    "device.duplicate": "two devices with the same name",
    "device.empty-edits": "a device without container edits",
    "env.invalid": "an env entry that is not KEY=VALUE with a non-empty KEY",
    "device-node.permissions": "device node permissions other than r, w, m",
    "hook.relative-path": "a hook path that is not absolute",
    "intel-rdt.closid": "closID is not a valid file name (or is 4096 bytes or longer)",
    "net-device.duplicate": "two net devices with the same name or host interface in one block",
    "annotation.key": "an annotation key that is not a Kubernetes qualified name",
    "annotation.size": "annotations larger than 256 KiB in total",
    "path.relative": "(warning) a relative device node or container path",
    "registry.conflict": "the same device defined in two specs of one directory priority",
    "spec-dir.missing": "(warning) a spec directory named with --spec-dir does not exist",
    "spec-dir.unreadable": "a spec directory that is a file or cannot be listed",
}
"""Every rule id that a `Problem` can carry, with what it means."""


@dataclass(frozen=True, slots=True)
class SpecReport:
    """The verdict on one spec file."""

    source: str
    spec: Mapping[str, object] | None
    """The decoded spec, without the values that were wrong (``None`` when unreadable)."""
    problems: tuple[Problem, ...]
    minimum_version: str | None
    """The lowest CDI version the content needs (``None`` when there is no content)."""
    declared_version: str | None = None
    """The cdiVersion as written, when it is a string."""
    kind: str | None = None
    """The kind as written, when it is a string."""
    device_names: tuple[str, ...] = ()
    """The device names that are strings, in file order (valid or not)."""

    def without_spec(self) -> SpecReport:
        """The same verdict without the decoded spec (to keep many reports cheaply)."""
        return replace(self, spec=None)

    @property
    def valid(self) -> bool:
        """Whether the spec has no errors (warnings allowed)."""
        return not any(p.is_error for p in self.problems)

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that make the spec invalid."""
        return tuple(p for p in self.problems if p.is_error)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """The problems that do not."""
        return tuple(p for p in self.problems if not p.is_error)


@dataclass(frozen=True, slots=True)
class _Issue:
    """A rule a decoded spec breaks, before its position is looked up."""

    rule: str
    message: str
    path: Path
    severity: ProblemSeverity = ProblemSeverity.ERROR
    at_key: bool = False
    """The problem is the key at the end of ``path``, not its value."""


def _devices(spec: Mapping[str, object]) -> Iterator[tuple[int, str, Mapping[str, object]]]:
    devices = spec.get("devices")
    for index, device in enumerate(devices if isinstance(devices, list) else []):
        if isinstance(device, Mapping):
            name = device.get("name")
            yield index, name if isinstance(name, str) else "", device


def _check_version(
    spec: Mapping[str, object], needs: list[version.Requirement]
) -> Iterator[_Issue]:
    declared = spec.get("cdiVersion")
    if not isinstance(declared, str):
        return
    where: Path = ("cdiVersion",)
    body = declared[1:] if declared.startswith("v") else declared
    if body in version.RETIRED_VERSIONS:
        yield _Issue(
            "version.retired",
            f"cdiVersion {declared!r} is no longer accepted; "
            f"the earliest is {version.EARLIEST_VERSION}",
            where,
        )
        return
    if body not in version.KNOWN_VERSIONS:
        known = ", ".join(version.KNOWN_VERSIONS)
        yield _Issue(
            "version.unknown",
            f"cdiVersion {declared!r} is not a released CDI version ({known})",
            where,
        )
        return
    if body != declared:
        yield _Issue(
            "version.v-prefix",
            f"write cdiVersion as {body!r}, without the 'v'",
            where,
            ProblemSeverity.WARNING,
        )
    above = [r for r in needs if version.compare_versions(r.version, body) > 0]
    if above:
        needed = max((r.version for r in above), key=version.parse_version)
        features = "; ".join(
            f"{r.feature} ({format_path(r.path)}) needs {r.version}" for r in above[:3]
        )
        more = f"; and {len(above) - 3} more" if len(above) > 3 else ""
        yield _Issue(
            "version.too-low",
            f"cdiVersion {declared} is too low, the content needs at least {needed}: "
            f"{features}{more}",
            where,
        )


def _check_kind(spec: Mapping[str, object]) -> Iterator[_Issue]:
    kind = spec.get("kind")
    if not isinstance(kind, str):
        return
    problem = names.kind_error(kind)
    if problem is not None:
        yield _Issue("kind.invalid", problem, ("kind",))
        return
    vendor, class_ = kind.split("/", 1)
    if len(vendor) > 253:
        yield _Issue(
            "kind.long-vendor",
            f"the vendor is {len(vendor)} characters long; a DNS name has at most 253",
            ("kind",),
            ProblemSeverity.WARNING,
        )
    if len(class_) > 63:
        yield _Issue(
            "kind.long-class",
            f"the class is {len(class_)} characters long; the specification allows 63",
            ("kind",),
            ProblemSeverity.WARNING,
        )


def _check_devices(spec: Mapping[str, object], broken: set[Path]) -> Iterator[_Issue]:
    first_index: dict[str, int] = {}
    for index, name, device in _devices(spec):
        if "name" in device:
            problem = names.device_name_error(name)
            if problem is not None:
                yield _Issue("device.name", problem, ("devices", index, "name"))
            elif name in first_index:
                yield _Issue(
                    "device.duplicate",
                    f"device {name!r} is already defined at devices[{first_index[name]}]",
                    ("devices", index, "name"),
                )
            else:
                first_index[name] = index
        edits = device.get("containerEdits")
        edits_path: Path = ("devices", index, "containerEdits")
        if isinstance(edits, Mapping) and edits_path not in broken and not _has_edits(edits):
            yield _Issue(
                "device.empty-edits",
                "the device has no container edits (every device must change the container)",
                edits_path,
            )
        yield from _check_annotations(device.get("annotations"), ("devices", index, "annotations"))
        if isinstance(edits, Mapping):
            yield from _check_edits(edits, edits_path)


def _has_edits(edits: Mapping[str, object]) -> bool:
    if edits.get("intelRdt") is not None:
        return True
    keys = ("env", "deviceNodes", "hooks", "mounts", "additionalGids", "netDevices")
    return any(edits.get(key) for key in keys)


def _items(block: Mapping[str, object], key: str) -> Iterator[tuple[int, Mapping[str, object]]]:
    value = block.get(key)
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, Mapping):
            yield index, item


def _check_env(env: object, path: Path) -> Iterator[_Issue]:
    for index, entry in enumerate(env if isinstance(env, list) else []):
        if isinstance(entry, str) and entry.find("=") <= 0:
            yield _Issue(
                "env.invalid",
                f"env entry {entry!r} is not KEY=VALUE with a non-empty KEY",
                (*path, index),
            )


def _relative(value: object, path: Path, what: str) -> Iterator[_Issue]:
    if isinstance(value, str) and value and not value.startswith("/"):
        yield _Issue(
            "path.relative",
            f"{what} {value!r} is relative; CDI runtimes expect absolute paths",
            path,
            ProblemSeverity.WARNING,
        )


def _check_edits(edits: Mapping[str, object], path: Path) -> Iterator[_Issue]:
    yield from _check_env(edits.get("env"), (*path, "env"))
    for index, node in _items(edits, "deviceNodes"):
        where: Path = (*path, "deviceNodes", index)
        permissions = node.get("permissions")
        if isinstance(permissions, str) and set(permissions) - set("rwm"):
            yield _Issue(
                "device-node.permissions",
                f"permissions {permissions!r} may only contain r, w and m",
                (*where, "permissions"),
            )
        yield from _relative(node.get("path"), (*where, "path"), "device node path")
        yield from _relative(node.get("hostPath"), (*where, "hostPath"), "device node hostPath")
    for index, mount in _items(edits, "mounts"):
        where = (*path, "mounts", index, "containerPath")
        yield from _relative(mount.get("containerPath"), where, "mount containerPath")
    for index, hook in _items(edits, "hooks"):
        where = (*path, "hooks", index)
        hook_path = hook.get("path")
        if isinstance(hook_path, str) and hook_path and not hook_path.startswith("/"):
            yield _Issue(
                "hook.relative-path", f"hook path {hook_path!r} must be absolute", (*where, "path")
            )
        yield from _check_env(hook.get("env"), (*where, "env"))
    rdt = edits.get("intelRdt")
    if isinstance(rdt, Mapping):
        yield from _check_closid(rdt.get("closID"), (*path, "intelRdt", "closID"))
    yield from _check_net_devices(edits, path)


def _check_closid(closid: object, path: Path) -> Iterator[_Issue]:
    if not isinstance(closid, str) or closid == "/":
        return
    if len(closid.encode("utf-8", "surrogatepass")) >= 4096:
        yield _Issue("intel-rdt.closid", "closID must be shorter than 4096 bytes", path)
    elif closid in (".", "..") or "/" in closid or "\n" in closid:
        yield _Issue(
            "intel-rdt.closid",
            f"closID {closid!r} must be a file name (not '.' or '..', no '/' or newline)",
            path,
        )


def _check_net_devices(edits: Mapping[str, object], path: Path) -> Iterator[_Issue]:
    names_seen: dict[str, int] = {}
    hosts_seen: dict[str, int] = {}
    for index, device in _items(edits, "netDevices"):
        where: Path = (*path, "netDevices", index)
        for key, seen, what in (
            ("name", names_seen, "name"),
            ("hostInterfaceName", hosts_seen, "host interface"),
        ):
            value = device.get(key)
            if not isinstance(value, str) or not value:
                continue
            if value in seen:
                yield _Issue(
                    "net-device.duplicate",
                    f"{what} {value!r} is already used by netDevices[{seen[value]}]",
                    (*where, key),
                )
            else:
                seen[value] = index


_DNS_LABEL = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_NAME_INNER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
_ANNOTATIONS_LIMIT: Final = 256 * 1024


def _dns_subdomain_error(prefix: str) -> str | None:
    if len(prefix) > 253:
        return "its prefix is longer than 253 characters"
    for label in prefix.split("."):
        if not label or set(label) - _DNS_LABEL or not (label[0].isalnum() and label[-1].isalnum()):
            return "its prefix is not a DNS subdomain (lower-case letters, digits, '-', '.')"
    return None


def annotation_key_error(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes qualified name (``[prefix/]name``), or ``None``."""
    parts = key.lower().split("/")
    if len(parts) > 2:
        return "a qualified name has at most one '/'"
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            return "the prefix before '/' must not be empty"
        problem = _dns_subdomain_error(parts[0])
        if problem is not None:
            return problem
    if not name:
        return "the name part must not be empty"
    if len(name) > 63:
        return "the name part is longer than 63 characters"
    if (
        not name.isascii()
        or set(name) - _NAME_INNER
        or not (name[0].isalnum() and name[-1].isalnum())
    ):
        return (
            "the name part must be ASCII letters, digits, '-', '_', '.', "
            "starting and ending with a letter or digit"
        )
    return None


def _check_annotations(annotations: object, path: Path) -> Iterator[_Issue]:
    if not isinstance(annotations, Mapping):
        return
    total = 0
    for key, value in annotations.items():
        problem = annotation_key_error(key) if key else None
        if problem is not None:
            yield _Issue(
                "annotation.key",
                f"annotation key {key!r}: {problem}",
                (*path, key),
                at_key=True,
            )
        total += len(key.encode("utf-8", "surrogatepass"))
        if isinstance(value, str):
            total += len(value.encode("utf-8", "surrogatepass"))
    if total > _ANNOTATIONS_LIMIT:
        yield _Issue(
            "annotation.size",
            f"annotations take {total} bytes; the limit is {_ANNOTATIONS_LIMIT} (256 KiB)",
            path,
        )


def _check_spec(
    spec: Mapping[str, object], broken: set[Path], needs: list[version.Requirement]
) -> Iterator[_Issue]:
    yield from _check_version(spec, needs)
    yield from _check_kind(spec)
    yield from _check_annotations(spec.get("annotations"), ("annotations",))
    edits = spec.get("containerEdits")
    if isinstance(edits, Mapping):
        yield from _check_edits(edits, ("containerEdits",))
    yield from _check_devices(spec, broken)


def _broken_edits(problems: tuple[Problem, ...] | list[Problem]) -> set[Path]:
    """Device edit blocks in which decoding already found an error."""
    return {p.path[:3] for p in problems if p.is_error and p.path[:1] == ("devices",)}


PROBLEM_LIMIT: Final = 100


def _bounded(problems: list[Problem]) -> list[Problem]:
    """The first `PROBLEM_LIMIT` problems by position, then one that counts the others."""
    if len(problems) <= PROBLEM_LIMIT:
        return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))
    shown = sorted(problems[:PROBLEM_LIMIT], key=lambda p: (p.line or 0, p.column or 0))
    rest = problems[PROBLEM_LIMIT:]
    errors = sum(p.is_error for p in rest)
    severity = ProblemSeverity.ERROR if errors else ProblemSeverity.WARNING

    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    counts = f"{count(errors, 'error')}, {count(len(rest) - errors, 'warning')}"
    more = Problem("problems.more", f"{count(len(rest), 'more problem')} not listed ({counts})")
    return [*shown, replace(more, severity=severity)]


Locate = Callable[[Path, bool], tuple[int | None, int | None]]
"""Line and column of the node at a path (the key's, with ``True``), in the text judged."""


def _report(
    source: str, spec: dict[str, object], problems: list[Problem], where: Locate | None
) -> SpecReport:
    """The report on the decoded ``spec``: the decoder's ``problems`` and the rules' own."""
    broken = _broken_edits(problems)
    needs = version.requirements(spec)
    for issue in _check_spec(spec, broken, needs):
        line = column = None
        if where is not None and len(problems) <= PROBLEM_LIMIT:  # past it, only counted
            line, column = where(issue.path, issue.at_key)
        problems.append(
            Problem(issue.rule, issue.message, issue.path, line, column, issue.severity)
        )
    declared, kind = spec.get("cdiVersion"), spec.get("kind")
    return SpecReport(
        source,
        spec,
        tuple(_bounded(problems)),
        version.highest_version(needs),
        declared if isinstance(declared, str) else None,
        kind if isinstance(kind, str) else None,
        tuple(name for _, name, device in _devices(spec) if "name" in device),
    )


def validate_text(text: str, source: str = "<text>") -> SpecReport:
    """Validate the CDI spec ``text`` (YAML or JSON); ``source`` names it in the report."""
    from ctk.cdi.load import load_text, locate  # YAML: not for `validate_data`'s callers

    loaded = load_text(text, strict_json=source.endswith(".json"))
    problems = list(loaded.problems)
    spec = loaded.value
    if spec is None:
        if loaded.root is not None and not problems:
            problems.append(Problem("parse.type", "a CDI spec must be a mapping"))
        return SpecReport(source, None, tuple(problems), None)
    root = loaded.root
    return _report(source, spec, problems, lambda path, at_key: locate(root, path, at_key=at_key))


def validate_bytes(data: bytes, source: str) -> SpecReport:
    """Validate the raw bytes of a spec file (UTF-8, with or without a byte order mark)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        problem = Problem("parse.encoding", f"not UTF-8 text (byte {exc.start})", (), line, column)
        return SpecReport(source, None, (problem,), None)
    return validate_text(text, source)
