"""What the cdi, toolkit, mig and engine checks share about CDI: the node's GPU specs, the
programs that read spec files, and which of them give containers GPUs through CDI (registers no
check)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ctk.doctor.checks.engine_config import (
    CONFIG_SETTING,
    cdi_on,
    cdi_setting,
    engines_in_use,
    spec_dirs,
)
from ctk.doctor.facts import DRA_DRIVERS, EngineFacts, NodeFacts, SpecFileFacts
from ctk.doctor.model import Evidence
from ctk.runtime_config.engines import CDI_SPEC_DIRS, Runtime

GPU_KIND: Final = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True, kw_only=True)
class CdiReader:
    """A program on the node that resolves CDI device requests from the spec files in ``dirs``."""

    name: str
    evidence: Evidence
    dirs: tuple[str, ...]
    switched_on: bool
    """Someone asked for CDI: a setting turned it on. False for podman (installed is not used:
    it may run no GPU container at all), for CRI-O, which reads specs whatever its config says
    and takes GPUs from its runtime unless a pod asks for CDI devices, and for an engine whose
    version reads CDI by default (Docker 28.2+, containerd 2.x) without a setting: upgrading it
    asked for nothing."""

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


def _engine_reader(runtime: Runtime, engine: EngineFacts, name: str = "") -> CdiReader | None:
    """The engine as a reader of CDI specs; None where it reads none (CDI off, a broken or
    unreadable config)."""
    setting = CONFIG_SETTING[runtime]
    if setting is not None and not cdi_on(runtime, engine):
        return None
    if engine.error is not None or engine.needs_root:
        return None  # a broken config stops the engine; an unreadable one names no directories
    return CdiReader(
        name=name or engine.engine,
        evidence=Evidence(engine.config_path, cdi_setting(runtime, engine)),
        dirs=spec_dirs(engine),
        switched_on=setting is not None and engine.cdi_enabled is True,
    )


def cdi_readers(facts: NodeFacts) -> tuple[CdiReader, ...]:
    """The engines (a rootless Docker and podman too) that read CDI specs on this node, each with
    its directories (containerd only where its CRI plugin serves: under Docker alone nothing
    asks it for CDI)."""
    readers = [
        reader
        for runtime, engine in engines_in_use(facts).items()
        if (reader := _engine_reader(runtime, engine)) is not None
    ]
    rootless = facts.docker_rootless
    if rootless is not None:  # a daemon of its own, with its own daemon.json and directories
        reader = _engine_reader(Runtime.DOCKER, rootless, "rootless docker")
        readers += [reader] if reader is not None else []
    podman = facts.toolkit.binaries.get("podman")
    if podman is not None:
        readers.append(
            CdiReader(
                name="podman",
                evidence=Evidence(podman, "podman uses CDI natively"),
                dirs=CDI_SPEC_DIRS,
                switched_on=False,  # installed is not used: nothing says it runs GPU containers
            )
        )
    return tuple(readers)


def usable_gpu_specs(facts: NodeFacts) -> tuple[SpecFileFacts, ...]:
    """The nvidia.com/gpu specs a reader can inject from: valid, with every hook program they
    name present."""
    return tuple(s for s in gpu_specs(facts) if not s.problems and not s.missing_hook_paths)


def cdi_routes(facts: NodeFacts) -> tuple[tuple[CdiReader, tuple[SpecFileFacts, ...]], ...]:
    """The readers that give containers GPUs through CDI, each with the usable specs it reads
    (a reader whose directories hold none is left out)."""
    usable = usable_gpu_specs(facts)
    found = ((reader, tuple(s for s in usable if reader.reads(s))) for reader in cdi_readers(facts))
    return tuple((reader, specs) for reader, specs in found if specs)


def engine_reader(facts: NodeFacts, runtime: Runtime) -> CdiReader | None:
    """The engine as one of `cdi_readers`; None where it reads no spec (or serves no containers
    of its own: containerd under Docker alone)."""
    engine = engines_in_use(facts).get(runtime)
    return None if engine is None else _engine_reader(runtime, engine)


def engine_cdi_route(
    facts: NodeFacts, runtime: Runtime
) -> tuple[CdiReader, tuple[SpecFileFacts, ...]] | None:
    """`cdi_routes` for one engine: the engine reading CDI specs and the usable specs it reads;
    None where it gives no GPUs through CDI."""
    reader = engine_reader(facts, runtime)
    if reader is None:
        return None
    specs = tuple(s for s in usable_gpu_specs(facts) if reader.reads(s))
    return (reader, specs) if specs else None


def dra_plugin_spec(path: str) -> str | None:
    """The driver whose kubelet plugin wrote the spec file at ``path`` (its transient claim
    specs `k8s.<driver>-claim_<uid>.yaml`, the compute-domain plugin's `k8s.<driver>-device*`)."""
    name = posixpath.basename(path)
    for driver in DRA_DRIVERS:
        if name.startswith(f"k8s.{driver}-"):
            return driver
    return None
