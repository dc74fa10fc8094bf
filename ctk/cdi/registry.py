"""Which CDI devices a container runtime resolves from its spec directories (pure).

The rules are those of the reference library's cache: spec directories are listed from lowest to
highest priority (default `/etc/cdi`, then `/var/run/cdi`); a device in a higher-priority
directory replaces the same device from a lower one; the same device defined by two specs of
one priority is a conflict, is dropped, and both files get an error; an invalid spec is skipped
as a whole without hiding the others. Reading the directories is `ctk.host.cdi_specs`' job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ctk.cdi.load import compose, locate
from ctk.cdi.names import QualifiedName
from ctk.cdi.problems import Path, Problem
from ctk.cdi.validate import SpecReport, validate_bytes


@dataclass(frozen=True, slots=True)
class SpecSource:
    """One spec file as found in a spec directory: its bytes, or why they could not be read."""

    path: str
    priority: int
    data: bytes | None
    read_error: str | None = None


@dataclass(frozen=True, slots=True)
class SpecFile:
    """A spec file with its verdict and the conflicts it takes part in."""

    path: str
    priority: int
    report: SpecReport
    conflicts: tuple[Problem, ...] = ()

    @property
    def problems(self) -> tuple[Problem, ...]:
        """The spec's own problems, then its conflicts."""
        return self.report.problems + self.conflicts

    @property
    def valid(self) -> bool:
        """Whether the spec is valid and in no conflict."""
        return self.report.valid and not self.conflicts


@dataclass(frozen=True, slots=True)
class ResolvedDevice:
    """A device that a runtime would resolve: its name, the spec that defines it, its priority."""

    name: QualifiedName
    source: str
    priority: int


@dataclass(frozen=True, slots=True)
class Registry:
    """All specs of the spec directories and the devices they resolve to."""

    files: tuple[SpecFile, ...]
    devices: tuple[ResolvedDevice, ...]
    """Sorted by fully qualified name."""
    clashes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Devices dropped for a conflict: fully qualified name -> the spec files defining it."""

    @property
    def valid(self) -> bool:
        """Whether every spec is valid and no device conflicts."""
        return all(f.valid for f in self.files)

    def device(self, name: str) -> ResolvedDevice | None:
        """The resolved device with the fully qualified ``name``, if any."""
        return next((d for d in self.devices if str(d.name) == name), None)

    def unresolved_reason(self, name: str) -> str:
        """Why no device ``name`` resolves: a conflict, invalid specs, or no spec defines it."""
        clash = self.clashes.get(name)
        if clash:
            return (
                f"{name} is defined by {' and '.join(clash)} at the same priority "
                "(CDI runtimes drop it from both)"
            )
        invalid = [f.path for f in self.files if not f.report.valid]
        if invalid:
            return f"no valid spec defines {name} ({len(invalid)} invalid spec(s) skipped)"
        return f"no spec defines {name}"


def _report(source: SpecSource) -> SpecReport:
    if source.data is None:
        reason = source.read_error or "cannot be read"
        return SpecReport(source.path, None, (Problem("read.error", reason),), None)
    return validate_bytes(source.data, source.path)


def build_registry(sources: Sequence[SpecSource]) -> Registry:
    """Resolve ``sources`` (in directory order, lowest priority first) as a CDI runtime does."""
    reports = [(source, _report(source)) for source in sources]
    winners: dict[str, tuple[ResolvedDevice, int, int]] = {}
    clashes: dict[str, set[tuple[int, int]]] = {}
    for position, (source, report) in enumerate(reports):
        if not report.valid or report.kind is None:
            continue
        vendor, class_ = report.kind.split("/", 1)
        for index, name in enumerate(report.device_names):
            device = ResolvedDevice(
                QualifiedName(vendor, class_, name), source.path, source.priority
            )
            key = str(device.name)
            old = winners.get(key)
            if old is None or device.priority > old[0].priority:
                winners[key] = (device, position, index)
            elif device.priority == old[0].priority:
                clashes.setdefault(key, set()).update({(old[1], old[2]), (position, index)})
    conflicts: dict[int, list[Problem]] = {}
    for key, places in sorted(clashes.items()):
        for position, index in sorted(places):
            source = reports[position][0]
            paths = sorted(
                {
                    reports[other][0].path
                    for other, _ in places
                    if reports[other][0].priority == source.priority
                }
            )
            others_list = [p for p in paths if p != source.path] or ["this same file"]
            others = ", ".join(others_list[:2])
            if len(others_list) > 2:
                others += f" and {len(others_list) - 2} more"
            path = ("devices", index, "name")
            line, column = _locate(source, path)
            conflicts.setdefault(position, []).append(
                Problem(
                    "registry.conflict",
                    f"device {key} is also defined by {others} at the same priority; "
                    "CDI runtimes drop it from both",
                    path,
                    line,
                    column,
                )
            )
    files = tuple(
        SpecFile(source.path, source.priority, report, tuple(conflicts.get(position, ())))
        for position, (source, report) in enumerate(reports)
    )
    devices = sorted(
        (device for key, (device, _, _) in winners.items() if key not in clashes),
        key=lambda d: str(d.name),
    )
    dropped = {
        key: tuple(sorted({reports[position][0].path for position, _ in places}))
        for key, places in clashes.items()
    }
    return Registry(files, tuple(devices), dropped)


def _locate(source: SpecSource, path: Path) -> tuple[int | None, int | None]:
    """Where ``path`` is in a valid spec (parsed again: conflicts are rare)."""
    if source.data is None:
        return None, None
    root, _ = compose(source.data.decode("utf-8-sig", "replace"))
    return locate(root, path)
