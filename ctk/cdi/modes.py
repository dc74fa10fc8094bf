"""Specs of the discovery modes that find one class of device: csv, wsl, imex, gds, gdrcopy,
mofed, nvswitch. Pure: `ClassFacts` in, a `Spec` out, shaped as nvidia-ctk shapes them.

Every spec's common edits set `NVIDIA_VISIBLE_DEVICES=void`. The node classes (gds, gdrcopy,
mofed, nvswitch) and wsl have one device, `all`; imex a device per channel (named by its
number) and `all`; csv one device (`0` / `gpu0`: a Jetson has one integrated GPU) and `all`.
`--device-id none` is, in every mode as in nvml mode, the one device `none` that gives nothing.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from ctk.cdi import discover
from ctk.cdi.generate import EMPTY_DEVICE_ENV, GenerateOptions, simplify, tidy
from ctk.cdi.model import ContainerEdits, Device, DeviceNode, Spec, merge
from ctk.cdi.options import IMEX_CHANNELS, NODE_CLASSES, HookName, Mode, NameStrategy
from ctk.cdi.serialize import cdi_version
from ctk.errors import CtkError, UsageError
from ctk.node import HostFile
from ctk.node.classes import ClassFacts

VOID = ContainerEdits(env=("NVIDIA_VISIBLE_DEVICES=void",))
MAX_IMEX_CHANNEL = (1 << 20) - 1  # a channel number is a device minor: 20 bits
# a library as the dynamic loader names them: lib<x>.so, lib<x>.so.<version>
LIBRARY_NAME = re.compile(r"^lib.+\.so(\.[^/]*)?$")
# the names of a Jetson's one (integrated) GPU; it has no UUID
CSV_NAMES = {NameStrategy.INDEX: "0", NameStrategy.TYPE_INDEX: "gpu0"}


def build_class_spec(facts: ClassFacts, options: GenerateOptions) -> Spec:
    """The spec of ``options.mode`` for what its gatherer found."""
    if options.device_ids == ("none",):
        devices = [Device(name="none", edits=ContainerEdits(env=(EMPTY_DEVICE_ENV,)))]
    elif options.mode in NODE_CLASSES:
        devices = [_node_class(facts, options)]
    elif options.mode is Mode.IMEX:
        devices = _imex(facts, options)
    elif options.mode is Mode.WSL:
        devices = [_device("all", facts, options)]
    elif options.mode is Mode.CSV:
        devices = _csv(facts, options)
    else:
        raise CtkError(f"--mode {options.mode}: not a device-class mode")  # a caller's bug
    common = VOID + _driver_edits(facts, options)
    devices = [replace(d, edits=tidy(simplify(d.edits, common))) for d in devices]
    spec = Spec(cdi_version="0.0.0", kind=options.kind, devices=tuple(devices), edits=tidy(common))
    return replace(spec, cdi_version=cdi_version(spec))


def _device(name: str, facts: ClassFacts, options: GenerateOptions) -> Device:
    edits = discover.nodes(facts.nodes, gids=options.gids) + discover.mounts(facts.device_mounts)
    return Device(name=name, edits=edits)


def _node_class(facts: ClassFacts, options: GenerateOptions) -> Device:
    if not facts.nodes:
        patterns = ", ".join(NODE_CLASSES[options.mode])
        raise CtkError(
            f"no {patterns} device nodes found under {facts.dev_root}",
            hint=f"load the {options.mode} driver on this node, or pass the right --dev-root",
        )
    return _device("all", facts, options)


def _with_all(devices: list[Device], options: GenerateOptions) -> list[Device]:
    devices.sort(key=lambda d: d.name)
    if options.all_device:
        devices.append(Device(name="all", edits=merge(d.edits for d in devices)))
    return devices


def _imex(facts: ClassFacts, options: GenerateOptions) -> list[Device]:
    numbered = {
        posixpath.basename(n.container_path).removeprefix("channel"): n for n in facts.nodes
    }
    # a node there whose name is not channel<N> (channel-old) is no channel
    channels = {k: n for k, n in numbered.items() if k.isascii() and k.isdigit()}
    under = posixpath.join(facts.dev_root, IMEX_CHANNELS.lstrip("/"))
    if "all" in options.device_ids:
        wanted = sorted(channels, key=int)
        if not wanted:
            raise CtkError(
                f"no IMEX channels found under {under}",
                hint="create them (module parameter NVreg_CreateImexChannel0=1, or "
                "`nvidia-modprobe -i <channel>`), or pass the right --dev-root",
            )
    else:
        wanted = [_channel_id(i) for i in options.device_ids]
    devices = []
    for channel in dict.fromkeys(wanted):
        if channel not in channels:
            raise CtkError(
                f"IMEX channel {channel} not found under {under}",
                hint="found: " + (", ".join(sorted(channels, key=int)) or "none"),
            )
        node = channels[channel]
        # as nvidia-ctk writes a channel: its path and host path, numbers left to the runtime
        edits = ContainerEdits(
            device_nodes=(DeviceNode(path=node.container_path, host_path=node.host_path),)
        )
        devices.append(Device(name=channel, edits=edits))
    return _with_all(devices, options)


def _channel_id(given: str) -> str:
    number = given.removeprefix("channel")
    if not (number.isascii() and number.isdigit()) or int(number) > MAX_IMEX_CHANNEL:
        raise UsageError(
            f"--device-id {given}: not an IMEX channel",
            hint=f"a channel number 0-{MAX_IMEX_CHANNEL} (or channel<N>), or all",
        )
    return str(int(number))


def _csv(facts: ClassFacts, options: GenerateOptions) -> list[Device]:
    for given in options.device_ids:
        if given not in ("all", "0"):
            raise UsageError(
                f"--device-id {given}: no such device",
                hint="in csv mode the node has one device: 0 (or all)",
            )
    named = [CSV_NAMES[s] for s in options.strategies if s in CSV_NAMES]
    chosen = named or [CSV_NAMES[NameStrategy.INDEX]]  # uuid alone: see class_warnings
    if not facts.nodes:
        raise CtkError(
            f"none of the device nodes the CSV files list exist under {facts.dev_root}",
            hint="is the GPU driver (nvgpu) loaded? Pass the right --dev-root or --csv.file",
        )
    return _with_all([_device(name, facts, options) for name in chosen], options)


def class_warnings(
    options: GenerateOptions, *, compat_container_root: str | None = None
) -> tuple[str, ...]:
    """What a mode does other than the command line asks (the caller says it on stderr)."""
    found = []
    if options.mode is Mode.CSV and not any(s in CSV_NAMES for s in options.strategies):
        found.append(
            "--device-name-strategy uuid: the integrated GPU of csv mode has no UUID; naming "
            "it 0 (--device-name-strategy index)"
        )
    if options.mode is Mode.CSV and compat_container_root:
        found.append(
            f"--csv.compat-container-root {compat_container_root}: ignored; ctk's csv mode "
            "adds no enable-cuda-compat hook"
        )
    single = options.mode is Mode.WSL or options.mode in NODE_CLASSES
    if single and options.device_ids not in (("all",), ("none",)):
        ids = ", ".join(options.device_ids)
        found.append(f"--device-id {ids}: ignored; {options.mode} mode has one device, all")
    return tuple(found)


def _driver_edits(facts: ClassFacts, options: GenerateOptions) -> ContainerEdits:
    """The driver files' mounts and hooks: links, then the ldcache update (wsl, csv)."""
    hooks = tuple(h for links in facts.link_groups for h in options.hooks.links(links))
    folders = _library_folders(facts.mounts)
    if folders:
        ldconfig = ("--ldconfig-path", options.ldconfig_path) if options.ldconfig_path else ()
        args = [arg for folder in folders for arg in ("--folder", folder)]
        hooks += options.hooks.hook(HookName.UPDATE_LDCACHE, *ldconfig, *args)
    return discover.mounts(facts.mounts) + ContainerEdits(hooks=hooks)


def _library_folders(mounts: tuple[HostFile, ...]) -> list[str]:
    names = (m.container_path for m in mounts)
    folders = (posixpath.dirname(p) for p in names if LIBRARY_NAME.match(posixpath.basename(p)))
    return list(dict.fromkeys(folders))
