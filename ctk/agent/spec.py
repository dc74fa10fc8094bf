"""The agent's CDI spec: generated from inside a pod, it must name the host's paths."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from ctk.cdi.model import ContainerEdits, Device, Spec

# Where the agent looks for a hook program on the host, in order: the native hook `ctk install`
# puts there, NVIDIA's hook from packages, and the one the GPU Operator installs.
HOOK_CANDIDATES: Final = (
    "/usr/local/libexec/ctk/ctk-hook",
    "/usr/libexec/ctk/ctk-hook",
    "/usr/bin/nvidia-cdi-hook",
    "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
)


def _host(value: str, prefix: str) -> str:
    """``value`` without the agent's view of the host root in front of it."""
    for lead in ("", "@"):
        if value.startswith(lead + prefix + "/"):
            return lead + value[len(lead) + len(prefix) :]
    return value


def _edits(edits: ContainerEdits, prefix: str) -> ContainerEdits:
    return replace(
        edits,
        device_nodes=tuple(
            replace(n, host_path=None if n.host_path is None else _host(n.host_path, prefix))
            for n in edits.device_nodes
        ),
        mounts=tuple(replace(m, host_path=_host(m.host_path, prefix)) for m in edits.mounts),
        hooks=tuple(
            replace(h, path=_host(h.path, prefix), args=tuple(_host(a, prefix) for a in h.args))
            for h in edits.hooks
        ),
    )


def host_paths(spec: Spec, prefix: str) -> Spec:
    """``spec`` with every host path seen under ``prefix`` (the host root) made the host's own.

    ``prefix`` "/" (the agent runs on the host itself) changes nothing.
    """
    prefix = prefix.rstrip("/")
    if not prefix:
        return spec
    devices = tuple(
        Device(name=d.name, edits=_edits(d.edits, prefix), annotations=d.annotations)
        for d in spec.devices
    )
    return replace(spec, devices=devices, edits=_edits(spec.edits, prefix))
