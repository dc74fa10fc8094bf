"""The contract each config format's editor (containerd, CRI-O, Docker) fulfils, and its registry.

`configure.py` plans through this protocol only, so it never asks which engine it has. Each engine
module implements it once (`containerd.EDITOR`, `crio.EDITOR`, `docker.EDITOR`); `editor_for`
imports only the one asked for, so Docker never loads the TOML editor (tomlkit).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ctk.runtime_config.engines import ENGINES, Runtime, RuntimeRequest

if TYPE_CHECKING:
    from ctk.runtime_config.changes import Change, Edit
    from ctk.runtime_config.inspect import EngineView

Files = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    """The files a runtime command reads, as found on the host."""

    config: str
    config_text: str | None  # None: missing
    record: tuple[Change, ...] = ()  # what earlier runs changed in the config
    recorded: bool = False  # whether a record exists (it may list no changes)
    drop_in: str | None = None  # None: edit the config in place
    drop_in_text: str | None = None
    taken_over: str | None = None  # the user's drop-in a --force configure replaced, kept by ctk
    before: Files = ()  # files the engine reads before the drop-in (not the main file)
    after: Files = ()  # files the engine reads after it
    engine_release: str | None = None  # the engine's version as its package says (None: unknown)

    @property
    def main(self) -> tuple[str, str]:
        """The main config's name and text (empty when missing)."""
        return self.config, self.config_text or ""


@dataclass(frozen=True, slots=True)
class InPlace:
    """An edit of the main config, and what to warn about."""

    edit: Edit
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DropIn:
    """A drop-in's whole new text, the main config's edit (None: untouched) and what to say."""

    main: Edit | None
    text: str
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordKeys:
    """Where a record's changes name runtimes: the `runtimes` table, the default runtime key."""

    runtimes: tuple[str, ...]
    default: tuple[str, ...]
    builtin: frozenset[str] = field(default_factory=frozenset)  # written out, not added by ctk


class EngineEditor(Protocol):
    """What ctk does to one engine's config format. Pure: text in, text and changes out."""

    @property
    def records_hold_null(self) -> bool:
        """Whether a recorded value may hold null inside it (JSON can, TOML cannot)."""

    def check(self, inputs: Inputs) -> None:
        """Refuse files the engine itself would refuse (`CtkError` naming the file and key)."""

    def uses_drop_in(self, inputs: Inputs) -> bool:
        """Whether the change goes into ``inputs.drop_in`` (given one) rather than the config."""

    def notes(self, inputs: Inputs) -> tuple[str, ...]:
        """What configure tells the user about these files before it changes anything."""

    def warnings(self, inputs: Inputs) -> tuple[str, ...]:
        """What configure warns about in these files before it changes anything."""

    def view(self, files: Sequence[tuple[str, str]]) -> EngineView:
        """The runtimes, default and CDI setting of ``files`` read together, as the engine does."""

    def configure_in_place(self, inputs: Inputs, request: RuntimeRequest) -> InPlace:
        """Add the runtime to the main config."""

    def configure_drop_in(
        self, inputs: Inputs, request: RuntimeRequest, own: tuple[str, str] | None
    ) -> DropIn:
        """Write the drop-in afresh (keeping runtimes ``own``, ctk's drop-in, added earlier)."""

    def keeps_others(self, inputs: Inputs, own: tuple[str, str], name: str) -> bool:
        """Whether ctk's drop-in ``own`` holds runtimes other than ``name`` that ctk added."""

    def remove(
        self, name: str, text: str, runtime_name: str, record: Sequence[Change], *, recorded: bool
    ) -> str:
        """Remove the runtime, a default naming it, and what ``record`` says ctk added."""

    def unconfigure_main(self, inputs: Inputs) -> str | None:
        """The main config without ctk's import of the drop-in (None: the main file is left)."""

    def blank(self, text: str) -> bool:
        """Whether ``text`` holds nothing any more (Docker: an empty object)."""

    def record_keys(self, inputs: Inputs) -> RecordKeys:
        """Where this format's records name runtimes."""


def editor_for(runtime: Runtime) -> EngineEditor:
    """The editor of ``runtime``'s config format (its module is imported now, and only it)."""
    module = importlib.import_module(ENGINES[runtime].editor)
    editor: EngineEditor = module.EDITOR
    return editor
