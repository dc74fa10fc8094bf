"""Build a CDI spec from a node's facts: pure, deterministic, linear in the number of devices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ctk.cdi import discover
from ctk.cdi.discover import HookProgram
from ctk.cdi.model import ContainerEdits, Device, Spec, merge
from ctk.cdi.options import DEFAULT_KINDS, FeatureFlag, Mode, NameStrategy
from ctk.cdi.serialize import cdi_version
from ctk.errors import CtkError, UsageError
from ctk.node import CharDevice, DriverFacts

if TYPE_CHECKING:  # management mode asks NVML nothing: ctk.node.nvml is nvml mode's
    from ctk.node.nvml import Gpu, MigDevice, NvmlFacts

EMPTY_DEVICE_ENV = "NVCT_EMPTY_DEVICE="
# Each spec mounts these as <name>.<driver version>: CUDA's driver library, then NVML's
CORE_LIBRARIES = ("libcuda.so", "libnvidia-ml.so")
# device nodes that management mode leaves out, as nvidia-ctk does: GDS, NVSwitch, NVLink
MANAGEMENT_BLOCKED = ("/dev/nvidia-fs", "/dev/nvidia-nvswitch", "/dev/nvidia-nvlink")


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateOptions:
    """Everything `ctk cdi generate` lets the user choose."""

    kind: str = DEFAULT_KINDS[Mode.NVML]
    mode: Mode = Mode.NVML
    strategies: tuple[NameStrategy, ...] = (NameStrategy.INDEX, NameStrategy.UUID)
    device_ids: tuple[str, ...] = ("all",)
    all_device: bool = True
    hooks: HookProgram = field(default_factory=lambda: HookProgram("/usr/bin/nvidia-cdi-hook"))
    ldconfig_path: str | None = None
    features: frozenset[FeatureFlag] = frozenset()

    @property
    def gids(self) -> bool:
        """Whether device nodes' groups go to `additionalGids`."""
        return FeatureFlag.NO_ADDITIONAL_GIDS not in self.features


@dataclass(frozen=True, slots=True)
class _Unit:
    """One device of the node before naming: a full GPU or a MIG device."""

    gpu: Gpu
    mig: MigDevice | None

    def names(self, strategy: NameStrategy) -> str:
        if self.mig is None:
            return {
                NameStrategy.INDEX: str(self.gpu.index),
                NameStrategy.UUID: self.gpu.uuid,
                NameStrategy.TYPE_INDEX: f"gpu{self.gpu.index}",
            }[strategy]
        index = f"{self.gpu.index}:{self.mig.index}"
        return {
            NameStrategy.INDEX: index,
            NameStrategy.UUID: self.mig.uuid,
            NameStrategy.TYPE_INDEX: f"mig{index}",
        }[strategy]

    def ids(self) -> tuple[str, ...]:
        """What `--device-id` may call it (a MIG-mode GPU's id selects its MIG devices)."""
        own = tuple(self.names(s) for s in (NameStrategy.INDEX, NameStrategy.UUID))
        parent = (str(self.gpu.index), self.gpu.uuid) if self.mig is not None else ()
        return own + parent


def missing_core_libraries(driver: DriverFacts, version: str) -> tuple[str, ...]:
    """Which of libcuda.so.<version> and libnvidia-ml.so.<version> the spec would not mount."""
    mounted = {PurePosixPath(f.container_path).name for f in driver.libraries}
    return tuple(
        name for name in (f"{lib}.{version}" for lib in CORE_LIBRARIES) if name not in mounted
    )


def build_spec(
    nvml: NvmlFacts | None,
    driver: DriverFacts,
    options: GenerateOptions,
    *,
    version: str,
) -> Spec:
    """The whole spec for the node: per-device edits, `all`, and the common edits.

    Without libcuda.so.<version> it raises `CtkError`, as nvidia-ctk fails: such a spec would
    give containers GPUs that CUDA cannot use. A missing libnvidia-ml.so.<version> is left to
    the caller to warn about (`missing_core_libraries`): CUDA works without it.
    """
    libcuda = f"{CORE_LIBRARIES[0]}.{version}"
    if libcuda in missing_core_libraries(driver, version):
        raise CtkError(
            f"{libcuda} (the CUDA driver library) not found under driver root {driver.driver_root}",
            hint="a spec without it gives containers GPUs that CUDA cannot use: reinstall the "
            "driver, or pass the right --driver-root or --library-search-path",
        )
    if FeatureFlag.ENABLE_EXPLICIT_DRIVER_LIBRARIES in options.features:
        driver = replace(
            driver,
            libraries=driver.libraries + driver.explicit_libraries,
            soname_links=driver.soname_links + driver.explicit_links,
        )
    graphics = options.mode is Mode.NVML
    # management mode's one device carries every node itself, the control nodes included
    control = driver.control_nodes if graphics else ()
    common = (
        discover.library_env(driver)
        + discover.nodes(control, gids=options.gids)
        + discover.driver_hooks(
            driver,
            options.hooks,
            version=version,
            graphics=graphics,
            ldconfig=options.ldconfig_path or driver.ldconfig,
        )
        + discover.driver_files(
            driver,
            graphics=graphics,
            ipc=FeatureFlag.DISABLE_IPC_DISCOVERER not in options.features,
        )
    )
    if options.mode is Mode.MANAGEMENT:
        devices = [_management_device(driver, options)]
    else:
        if nvml is None:
            raise CtkError("NVML facts are needed in nvml mode")  # a caller's bug
        devices = _named_devices(nvml, driver, options, common)
    edits = tidy(common)
    spec = Spec(cdi_version="0.0.0", kind=options.kind, devices=tuple(devices), edits=edits)
    return replace(spec, cdi_version=cdi_version(spec))


def _named_devices(
    nvml: NvmlFacts, driver: DriverFacts, options: GenerateOptions, common: ContainerEdits
) -> list[Device]:
    if options.device_ids == ("none",):
        return [Device(name="none", edits=ContainerEdits(env=(EMPTY_DEVICE_ENV,)))]
    units = _select(_units(nvml), options.device_ids)
    if not units:
        raise CtkError(
            "NVML reports no GPUs on this node",
            hint="check `nvidia-smi`; to list device nodes without NVML use --mode management",
        )
    edits_of = _DeviceEdits(driver, options.hooks, gids=options.gids)
    edits = [simplify(edits_of(unit), common) for unit in units]  # only the chosen ones
    devices = [
        Device(name=unit.names(strategy), edits=tidy(unit_edits))
        for unit, unit_edits in zip(units, edits, strict=True)
        for strategy in options.strategies
    ]
    devices.sort(key=lambda d: d.name)
    if options.all_device:
        devices.append(Device(name="all", edits=tidy(merge(edits))))
    return devices


def device_names(nvml: NvmlFacts) -> tuple[tuple[str, ...], ...]:
    """Each device `build_spec` writes for this node in nvml mode (not `all`), by every strategy.

    One tuple per full GPU or MIG device, its names in `NameStrategy` order (index, uuid,
    type-index): the doctor's idea of a complete spec, from the code that writes it.
    """
    return tuple(tuple(unit.names(strategy) for strategy in NameStrategy) for unit in _units(nvml))


def _units(nvml: NvmlFacts) -> list[_Unit]:
    """Full GPUs, and the MIG devices of GPUs in MIG mode (such a GPU is no device itself)."""
    from ctk.node.nvml import MigMode

    units = []
    for gpu in nvml.gpus:
        if gpu.mig_mode is MigMode.ENABLED:
            units += [_Unit(gpu, mig) for mig in gpu.migs]
        else:
            units.append(_Unit(gpu, None))
    return units


class _DeviceEdits:
    """The edits of one GPU or MIG device, from lookups built once for the node."""

    def __init__(self, driver: DriverFacts, program: HookProgram, *, gids: bool) -> None:
        self.driver = driver
        self.program = program
        self.gids = gids
        self.gpu_nodes = {n.container_path: n for n in driver.gpu_nodes}
        self.cap_nodes = {n.container_path: n for n in driver.cap_nodes}
        self.minors = dict(driver.mig_minors)
        self.drm = dict(driver.drm)
        self.drm_links = dict(driver.drm_links)

    def __call__(self, unit: _Unit) -> ContainerEdits:
        gpu, mig = unit.gpu, unit.mig
        node = _gpu_node(gpu, self.gpu_nodes, self.driver)
        drm = self.drm.get(gpu.sysfs_bus_id, ())
        if mig is None:
            nodes = (node, *drm)
            hooks = self.program.links(self.drm_links.get(gpu.sysfs_bus_id, ()))
        else:
            caps = _cap_nodes(gpu, mig, self.minors, self.cap_nodes, self.driver)
            nodes = (node, *caps, *(drm if "gfx" in mig.attributes else ()))
            hooks = ()
        hooks += discover.device_folders_hook(self.program, nodes)
        return discover.nodes(nodes, gids=self.gids) + ContainerEdits(hooks=hooks)


def _gpu_node(gpu: Gpu, nodes: Mapping[str, CharDevice], driver: DriverFacts) -> CharDevice:
    path = f"/dev/nvidia{gpu.minor}"
    node = nodes.get(path)
    if node is None:
        raise CtkError(
            f"GPU {gpu.index} ({gpu.uuid}): device node {path} not found under {driver.dev_root}",
            hint="the driver has not created it: run `nvidia-modprobe -c "
            f"{gpu.minor}` or pass the right --dev-root",
        )
    return node


def _cap_nodes(
    gpu: Gpu,
    mig: MigDevice,
    minors: Mapping[str, int],
    nodes: Mapping[str, CharDevice],
    driver: DriverFacts,
) -> list[CharDevice]:
    name = f"MIG device {gpu.index}:{mig.index} ({mig.uuid})"
    file = f"{driver.dev_root.rstrip('/')}/proc/driver/nvidia-caps/mig-minors"
    if not minors:
        if driver.mig_minors_malformed:
            raise _malformed(name, file, driver.mig_minors_malformed)
        raise CtkError(
            f"{name}: {file} is missing or empty",
            hint="MIG needs the nvidia-caps support of the driver; load the nvidia module with "
            "MIG support or pass the right --dev-root",
        )
    found = []
    base = f"gpu{gpu.minor}/gi{mig.gpu_instance}"
    for capability in (f"{base}/access", f"{base}/ci{mig.compute_instance}/access"):
        minor = minors.get(capability)
        if minor is None and driver.mig_minors_malformed:
            raise _malformed(name, file, driver.mig_minors_malformed)
        path = f"/dev/nvidia-caps/nvidia-cap{minor}"
        node = nodes.get(path) if minor is not None else None
        if node is None:
            raise CtkError(
                f"{name}: capability device {path if minor is not None else capability} not "
                f"found under {driver.dev_root}",
                hint="create the MIG capability nodes: `nvidia-modprobe -f "
                "/proc/driver/nvidia-caps/mig-minors` or `ctk system create-device-nodes`",
            )
        found.append(node)
    return found


def _malformed(name: str, file: str, lines: tuple[str, ...]) -> CtkError:
    return CtkError(
        f"{name}: {file} is malformed ({', '.join(lines[:2])}; expected "
        "'<capability> <minor>' lines)",
        hint="the driver writes this file: reload the nvidia module (check dmesg), or pass "
        "the right --dev-root",
    )


def _management_device(driver: DriverFacts, options: GenerateOptions) -> Device:
    every = (*driver.control_nodes, *driver.gpu_nodes, *driver.cap_nodes, *driver.other_nodes)
    wanted = [n for n in every if not n.container_path.startswith(MANAGEMENT_BLOCKED)]
    if not wanted:
        raise CtkError(
            f"no NVIDIA device nodes found under {driver.dev_root}",
            hint="is the driver loaded? Pass --dev-root if /dev lives elsewhere",
        )
    hooks = discover.device_folders_hook(options.hooks, wanted)
    edits = discover.nodes(wanted, gids=options.gids) + ContainerEdits(hooks=hooks)
    return Device(name="all", edits=tidy(edits))


def _select(units: list[_Unit], ids: tuple[str, ...]) -> list[_Unit]:
    if "all" in ids:
        return units
    chosen = []
    for wanted in ids:
        matches = [u for u in units if wanted in u.ids()]
        if not matches:
            known = ", ".join(u.names(NameStrategy.INDEX) for u in units) or "none"
            raise UsageError(
                f"--device-id {wanted}: no such GPU or MIG device",
                hint=f"devices on this node: {known}, or a GPU/MIG UUID, all, none",
            )
        chosen += [u for u in matches if u not in chosen]
    return chosen


def simplify(edits: ContainerEdits, common: ContainerEdits) -> ContainerEdits:
    """Drop what the common edits already give, unless that would leave the device empty."""
    rest = edits - common
    return rest if rest else edits


def tidy(edits: ContainerEdits) -> ContainerEdits:
    """The one place where edits are sorted.

    Device nodes and mounts go by container path, shallower paths first (nvidia-ctk's sorter:
    the number of `/`, then the path), so that `/dev/nvidia0` precedes `/dev/dri/card1`.
    """
    return ContainerEdits(
        env=tuple(sorted(edits.env)),
        device_nodes=tuple(sorted(edits.device_nodes, key=lambda n: _depth_first(n.path))),
        hooks=edits.hooks,
        mounts=tuple(
            sorted(edits.mounts, key=lambda m: (*_depth_first(m.container_path), m.host_path))
        ),
        additional_gids=tuple(sorted(edits.additional_gids)),
    )


def _depth_first(path: str) -> tuple[int, str]:
    return path.count("/"), path
