"""CDI spec versions: the released ones, comparison, and the lowest version a spec's content needs.

The requirements follow the reference library (tags.cncf.io/container-device-interface,
`specs-go/version.go`): a feature is needed when it is present with content, except `intelRdt`
and `intelRdt.schemata`, which count by mere presence (an empty object still needs 0.7.0).
Works on plain decoded data and tolerates wrong types (they simply need no version).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

KNOWN_VERSIONS: Final = (
    "0.3.0",
    "0.4.0",
    "0.5.0",
    "0.6.0",
    "0.7.0",
    "0.8.0",
    "1.0.0",
    "1.1.0",
)
"""Released CDI versions that a spec may declare (oldest first)."""

RETIRED_VERSIONS: Final = ("0.1.0", "0.2.0")
"""Released versions that the reference library recognises but no longer accepts."""

EARLIEST_VERSION: Final = KNOWN_VERSIONS[0]
CURRENT_VERSION: Final = KNOWN_VERSIONS[-1]


def parse_version(text: str) -> tuple[int, int, int]:
    """``"0.5.0"`` or ``"v0.5.0"`` -> ``(0, 5, 0)``; raise `ValueError` for anything else."""
    body = text[1:] if text.startswith("v") else text
    parts = body.split(".")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError(f"not a version: {text!r}")
    major, minor, patch = (int(p) for p in parts)
    return major, minor, patch


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as version ``a`` is lower than, equal to or higher than ``b``."""
    va, vb = parse_version(a), parse_version(b)
    return (va > vb) - (va < vb)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One feature of a spec and the CDI version it needs."""

    version: str
    feature: str
    path: tuple[str | int, ...]


def _edits_blocks(spec: Mapping[str, object]) -> Iterator[tuple[tuple[str | int, ...], object]]:
    yield ("containerEdits",), spec.get("containerEdits")
    devices = spec.get("devices")
    if isinstance(devices, list):
        for index, device in enumerate(devices):
            if isinstance(device, Mapping):
                yield ("devices", index, "containerEdits"), device.get("containerEdits")


def _list_items(block: Mapping[str, object], key: str) -> list[object]:
    value = block.get(key)
    return value if isinstance(value, list) else []


def _edits_requirements(path: tuple[str | int, ...], edits: object) -> Iterator[Requirement]:
    if not isinstance(edits, Mapping):
        return
    for index, mount in enumerate(_list_items(edits, "mounts")):
        if isinstance(mount, Mapping) and mount.get("type"):
            yield Requirement("0.4.0", "mount type", (*path, "mounts", index, "type"))
    for index, node in enumerate(_list_items(edits, "deviceNodes")):
        if isinstance(node, Mapping) and node.get("hostPath"):
            yield Requirement(
                "0.5.0", "device node hostPath", (*path, "deviceNodes", index, "hostPath")
            )
    rdt = edits.get("intelRdt")
    if rdt is not None:
        yield Requirement("0.7.0", "intelRdt", (*path, "intelRdt"))
        if isinstance(rdt, Mapping):
            if rdt.get("schemata") is not None:
                yield Requirement("1.1.0", "intelRdt.schemata", (*path, "intelRdt", "schemata"))
            if rdt.get("enableMonitoring") is True:
                yield Requirement(
                    "1.1.0", "intelRdt.enableMonitoring", (*path, "intelRdt", "enableMonitoring")
                )
    if _list_items(edits, "additionalGids"):
        yield Requirement("0.7.0", "additionalGids", (*path, "additionalGids"))
    if _list_items(edits, "netDevices"):
        yield Requirement("1.1.0", "netDevices", (*path, "netDevices"))


def requirements(spec: Mapping[str, object]) -> list[Requirement]:
    """Every versioned feature that ``spec`` uses, in document order."""
    found: list[Requirement] = []
    annotations = spec.get("annotations")
    if isinstance(annotations, Mapping) and annotations:
        found.append(Requirement("0.6.0", "annotations", ("annotations",)))
    kind = spec.get("kind")
    if isinstance(kind, str) and "/" in kind and "." in kind.split("/", 1)[1]:
        found.append(Requirement("0.6.0", "a '.' in the kind's class", ("kind",)))
    devices = spec.get("devices")
    for index, device in enumerate(devices if isinstance(devices, list) else []):
        if not isinstance(device, Mapping):
            continue
        name = device.get("name")
        if isinstance(name, str) and name[:1].isascii() and name[:1].isdigit():
            found.append(
                Requirement(
                    "0.5.0", "a device name starting with a digit", ("devices", index, "name")
                )
            )
        dev_annotations = device.get("annotations")
        if isinstance(dev_annotations, Mapping) and dev_annotations:
            found.append(Requirement("0.6.0", "annotations", ("devices", index, "annotations")))
    for path, edits in _edits_blocks(spec):
        found.extend(_edits_requirements(path, edits))
    return found


def minimum_version(spec: Mapping[str, object]) -> str:
    """The lowest CDI version that can express everything ``spec`` uses (at least 0.3.0)."""
    return highest_version(requirements(spec))


def highest_version(needs: Iterable[Requirement]) -> str:
    """The highest version among ``needs`` (the `requirements` of a spec), at least 0.3.0."""
    best = EARLIEST_VERSION
    for requirement in needs:
        if compare_versions(requirement.version, best) > 0:
            best = requirement.version
    return best
