"""Data for `ctk cdi generate`: the node's facts going in, the CDI spec coming out.

Facts (`ctk.node`) are what the adapters (`ctk.host.nvml`, `ctk.host.driver`) gather; the pure core
(`ctk.cdi.discover`, `ctk.cdi.generate`) turns them into a `Spec`. Everything is frozen, and
paths inside a spec are plain strings because they are container or host paths of another
machine, never paths to open here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import TypeVar

T = TypeVar("T")


# --- the CDI spec ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceNode:
    """`containerEdits.deviceNodes[]`."""

    path: str
    host_path: str | None = None
    major: int | None = None
    minor: int | None = None
    file_mode: int | None = None
    permissions: str | None = None
    gid: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    """`containerEdits.mounts[]`."""

    host_path: str
    container_path: str
    options: tuple[str, ...] = ()
    type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Hook:
    """`containerEdits.hooks[]`."""

    hook_name: str
    path: str
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerEdits:
    """Edits to a container's OCI spec; `+` merges, keeping the first of duplicates."""

    env: tuple[str, ...] = ()
    device_nodes: tuple[DeviceNode, ...] = ()
    hooks: tuple[Hook, ...] = ()
    mounts: tuple[Mount, ...] = ()
    additional_gids: tuple[int, ...] = ()

    def __add__(self, other: ContainerEdits) -> ContainerEdits:
        return merge((self, other))

    def __sub__(self, other: ContainerEdits) -> ContainerEdits:
        """These edits without those also in ``other``."""
        return ContainerEdits(
            env=_without(self.env, other.env),
            device_nodes=_without(self.device_nodes, other.device_nodes),
            hooks=_without(self.hooks, other.hooks),
            mounts=_without(self.mounts, other.mounts),
            additional_gids=_without(self.additional_gids, other.additional_gids),
        )

    def __bool__(self) -> bool:
        return bool(
            self.env or self.device_nodes or self.hooks or self.mounts or self.additional_gids
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """`devices[]`: a name and its edits."""

    name: str
    edits: ContainerEdits = field(default_factory=ContainerEdits)
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec:
    """A whole CDI spec."""

    cdi_version: str
    kind: str
    devices: tuple[Device, ...]
    edits: ContainerEdits = field(default_factory=ContainerEdits)


def merge(many: Iterable[ContainerEdits]) -> ContainerEdits:
    """All edits in one, keeping the first of duplicates; linear in the total size."""
    many = tuple(many)
    return ContainerEdits(
        env=_unique(tuple(chain.from_iterable(e.env for e in many))),
        device_nodes=_unique(tuple(chain.from_iterable(e.device_nodes for e in many))),
        hooks=_unique(tuple(chain.from_iterable(e.hooks for e in many))),
        mounts=_unique(tuple(chain.from_iterable(e.mounts for e in many))),
        additional_gids=_unique(tuple(chain.from_iterable(e.additional_gids for e in many))),
    )


def _unique(items: tuple[T, ...]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(items))


def _without(items: tuple[T, ...], drop: tuple[T, ...]) -> tuple[T, ...]:
    gone = set(drop)
    return tuple(item for item in items if item not in gone)
