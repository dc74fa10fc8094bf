"""What the cdi, toolkit and mig checks share about CDI: the node's GPU specs and the programs
that read spec files (registers no check)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ctk.doctor.checks.engine_config import CONFIG_SETTING, cdi_on, cdi_setting, engines_in_use
from ctk.doctor.facts import CDI_SPEC_DIRS, NodeFacts, SpecFileFacts
from ctk.doctor.model import Evidence

GPU_KIND: Final = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True, kw_only=True)
class CdiReader:
    """A program on the node that resolves CDI device requests from the spec files in ``dirs``."""

    name: str
    evidence: Evidence
    dirs: tuple[str, ...]
    switched_on: bool
    """Someone asked for CDI: a setting turned it on, or the program takes GPUs through CDI only
    (podman). False for CRI-O, which reads specs whatever its config says and takes GPUs from its
    runtime unless a pod asks for CDI devices, and for an engine whose version reads CDI by
    default (Docker 28.2+, containerd 2.x) without a setting: upgrading it asked for nothing."""

    def reads(self, spec: SpecFileFacts) -> bool:
        """Whether ``spec`` lies in one of the directories this program reads."""
        return posixpath.dirname(spec.path) in {posixpath.normpath(d) for d in self.dirs}


GENERATED_NAMES: Final = ("nvidia.yaml", "nvidia.json")
"""The names `ctk cdi generate/refresh` and nvidia-cdi-refresh give a spec file, preferred first."""


def spec_to_keep(paths: Iterable[str]) -> str:
    """Of spec files that clash or stand for one another, the one the node keeps: a generated
    one (the first directory that has one, `nvidia.yaml` before `nvidia.json`), else the first by
    path. Regenerating rewrites the same file, so what the doctor keeps is what it regenerates."""

    def rank(path: str) -> tuple[bool, str, int, str]:
        directory, _, name = path.rpartition("/")
        generated = name in GENERATED_NAMES
        order = GENERATED_NAMES.index(name) if generated else len(GENERATED_NAMES)
        return (not generated, directory, order, name)

    return min(paths, key=rank)


def gpu_specs(facts: NodeFacts) -> tuple[SpecFileFacts, ...]:
    """The spec files of kind nvidia.com/gpu."""
    return tuple(spec for spec in facts.cdi.specs if spec.kind == GPU_KIND)


def cdi_readers(facts: NodeFacts) -> tuple[CdiReader, ...]:
    """The engines (and podman) that read CDI specs on this node, each with its directories
    (containerd only where its CRI plugin serves: under Docker alone nothing asks it for CDI)."""
    readers = []
    for runtime, engine in engines_in_use(facts).items():
        setting = CONFIG_SETTING[runtime]
        if setting is not None and not cdi_on(runtime, engine):
            continue
        if engine.error is not None or engine.needs_root:
            continue  # a broken config stops the engine; an unreadable one names no directories
        readers.append(
            CdiReader(
                name=engine.engine,
                evidence=Evidence(engine.config_path, cdi_setting(runtime, engine)),
                dirs=engine.cdi_spec_dirs or CDI_SPEC_DIRS,
                switched_on=setting is not None and engine.cdi_enabled is True,
            )
        )
    podman = facts.toolkit.binaries.get("podman")
    if podman is not None:
        readers.append(
            CdiReader(
                name="podman",
                evidence=Evidence(podman, "podman uses CDI natively"),
                dirs=CDI_SPEC_DIRS,
                switched_on=True,
            )
        )
    return tuple(readers)
