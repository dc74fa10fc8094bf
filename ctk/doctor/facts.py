"""Everything the checks know about a node, gathered once by `ctk.host.facts`.

Pure data: paths are as seen from inside the diagnosed root (`/dev/nvidia0`), never the path on
the machine running ctk. A fact that could not be read is `Unavailable` with the reason, so a
check can answer `unknown` instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctk.doctor.advisories import Advisory
from ctk.doctor.model import Where
from ctk.node import CharDevice
from ctk.node.nvml import Gpu, GpuHealth, NvmlFacts
from ctk.runtime_config.engines import Runtime


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A fact that could not be read: permission, timeout, missing tool."""

    reason: str
    needs_root: bool = False


class FactTimedOut(Exception):
    """Raised when a check uses a fact whose gather step did not finish in time (or failed)."""

    def __init__(self, step: str, reason: str | None = None) -> None:
        super().__init__(
            f"gathering {step} did not finish in time"
            if reason is None
            else f"gathering {step} failed ({reason})"
        )
        self.step = step
        self.reason = reason


class TimedOut:
    """Stands in for a fact whose gather step hung (NVML, a /proc or /sys read of a broken driver).

    Any use (an attribute, iteration, truth, length, membership) raises `FactTimedOut`, which the
    runner turns into `unknown` for exactly the checks that touch this fact; checks that do not
    need it run as usual.
    """

    __slots__ = ("reason", "step")
    step: str
    reason: str | None
    """Why the step gave no facts when it did finish: the error it raised."""

    def __init__(self, step: str, reason: str | None = None) -> None:
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "reason", reason)

    def __getattr__(self, name: str) -> Any:
        raise FactTimedOut(self.step, self.reason)

    def __iter__(self) -> Any:
        raise FactTimedOut(self.step, self.reason)

    def __bool__(self) -> bool:
        raise FactTimedOut(self.step, self.reason)

    def __len__(self) -> int:
        raise FactTimedOut(self.step, self.reason)

    def __contains__(self, item: object) -> bool:
        raise FactTimedOut(self.step, self.reason)

    def __getitem__(self, key: object) -> Any:
        raise FactTimedOut(self.step, self.reason)

    def __repr__(self) -> str:
        return f"TimedOut({self.step!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class PciGpu:
    """An NVIDIA display/3D controller on the PCI bus."""

    bdf: str
    driver: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcGpu:
    """A GPU the kernel module enumerated (`/proc/driver/nvidia/gpus/*/information`)."""

    bdf: str
    minor: int
    uuid: str
    model: str
    excluded: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelFacts:
    """The kernel side of the driver."""

    driver_version: str | None = None
    open_module: bool | None = None
    version_line: str | None = None
    modules: frozenset[str] = frozenset()
    kernel_release: str = ""
    module_built: bool | None = None
    secure_boot: bool | None = None
    pci_gpus: tuple[PciGpu, ...] = ()
    gpus: tuple[ProcGpu, ...] = ()
    params: Mapping[str, str] = field(default_factory=dict)
    char_majors: Mapping[str, int] = field(default_factory=dict)
    cgroup_version: int = 1
    systemd_init: bool = False
    selinux_enforcing: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DevFacts:
    """Device nodes (`ctk.host.devnodes`' scan), `/dev/char` links and MIG capability files."""

    nodes: Mapping[str, CharDevice] = field(default_factory=dict)
    not_char: frozenset[str] = frozenset()
    """Entries named like NVIDIA device nodes that are not character devices."""
    inaccessible: frozenset[str] = frozenset()
    """The nodes the current user cannot open for reading and writing."""
    char_links: Mapping[str, str] = field(default_factory=dict)
    mig_minors: Mapping[str, int] = field(default_factory=dict)
    mig_caps: frozenset[str] = frozenset()

    def entries(self) -> frozenset[str]:
        """Every NVIDIA entry found, character device or not."""
        return frozenset(self.nodes) | self.not_char


@dataclass(frozen=True, slots=True, kw_only=True)
class Library:
    """A shared library name the loader knows, and the file it resolves to."""

    soname: str
    path: str
    target: str
    exists: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class LibFacts:
    """Libraries the dynamic loader finds, from `ld.so.cache` or the library directories."""

    source: str
    libraries: Mapping[str, tuple[Library, ...]] = field(default_factory=dict)
    stub_dirs_on_path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NvmlAnswer:
    """What NVML answered: the node's GPUs and each one's health, or the code nvmlInit refused with.

    ``found`` is the very value `ctk cdi generate` builds its spec from (`ctk.node`); the checks
    read the same `Gpu`, `MigDevice` and `MigMode` values.
    """

    error_code: int | None = None
    error: str = ""
    found: NvmlFacts | None = None
    health: tuple[GpuHealth, ...] = ()

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """NVML's GPUs (none when it refused)."""
        return () if self.found is None else self.found.gpus

    @property
    def health_by_gpu(self) -> tuple[GpuHealth, ...]:
        """Each GPU's health in GPU order; all None for a GPU NVML gave no health for."""
        known = {health.index: health for health in self.health}
        return tuple(known.get(gpu.index, GpuHealth(gpu.index)) for gpu in self.gpus)

    @property
    def cuda_version(self) -> tuple[int, int] | None:
        """The driver's CUDA version as (major, minor)."""
        if self.found is None:
            return None
        major, minor = divmod(self.found.cuda_driver_version, 1000)
        return major, minor // 10


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaRow:
    """One row of `ctk/data/cuda-driver-compat.csv`."""

    cuda: tuple[int, ...]
    min_driver: tuple[int, ...] | None
    min_driver_mvc: tuple[int, ...] | None
    min_driver_text: str = ""
    verified: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaNeed:
    """What the workload needs (`NVIDIA_REQUIRE_*`, `CUDA_VERSION`, `--cuda-version`)."""

    source: str
    requirements: tuple[str, ...] = ()
    cuda_version: str | None = None
    disable_require: bool = False
    unknown: str | None = None  # why the workload's needs could not be read (`--image`)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigFile:
    """A config file: its text, parsed data, or the parse error (line and column)."""

    path: str
    exists: bool = False
    data: Mapping[str, Any] | None = None
    error: str | None = None
    needs_root: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeEntry:
    """A runtime an engine config declares."""

    name: str
    binary: str | None = None
    binary_exists: bool = True
    systemd_cgroup: bool | None = None
    source: str | None = None  # the config file that defines it (None: the engine's main one)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineFacts:
    """An engine's effective configuration as far as the doctor cares."""

    engine: str
    installed: bool = False
    config_path: str = ""
    config_exists: bool = False
    error: str | None = None
    needs_root: bool = False
    runtimes: Mapping[str, RuntimeEntry] = field(default_factory=dict)
    default_runtime: str | None = None
    cdi_enabled: bool | None = None
    cgroup_driver: str | None = None
    imports: tuple[str, ...] = ()
    drop_ins: tuple[str, ...] = ()
    managed_by: str | None = None
    version: str | None = None
    """The engine's upstream version from its package ("28.2.0"); None: not installed as one."""
    config_version: int | None = None
    """containerd's config `version` (3: containerd 2.x); None for the other engines."""
    cdi_spec_dirs: tuple[str, ...] | None = None
    """The config's spec directories as written; None: not set (`engine_config.spec_dirs`)."""
    user_cdi_dirs: tuple[str, ...] = ()
    """A rootless daemon's own CDI directories ($XDG_CONFIG_HOME/cdi, $XDG_RUNTIME_DIR/cdi),
    which dockerd 29.2 and later reads after the defaults when `cdi-spec-dirs` is not set."""
    cri_disabled: bool = False
    root_only: str | None = None
    """The imported file (other than config_path) that only root can read, if that is why."""
    drop_in_copy: tuple[str, tuple[str, ...]] | None = None
    """containerd: ctk's drop-in that carries a copy of the CRI settings of the files before it,
    and the settings where the copy no longer matches them (`inspect.stale_copy`)."""


LDCONFIG_CANDIDATES = ("/sbin/ldconfig.real", "/sbin/ldconfig", "/usr/sbin/ldconfig")
"""Where distributions put ldconfig, preferred first (Ubuntu's /sbin/ldconfig is a wrapper)."""


TOOLKIT_CONFIG = "/etc/nvidia-container-runtime/config.toml"
"""The toolkit's config.toml where NVIDIA_CTK_CONFIG_FILE_PATH names no other file."""
TOOLKIT_CONFIG_ENV = "NVIDIA_CTK_CONFIG_FILE_PATH"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitFacts:
    """NVIDIA Container Toolkit: binaries, packages, `config.toml`."""

    binaries: Mapping[str, str] = field(default_factory=dict)
    packages: Mapping[str, str] = field(default_factory=dict)
    config: ConfigFile = field(default_factory=lambda: ConfigFile(path=TOOLKIT_CONFIG))
    """The config the toolkit reads: `NVIDIA_CTK_CONFIG_FILE_PATH`, else `TOOLKIT_CONFIG`."""
    oci_hooks: tuple[str, ...] = ()
    existing_paths: frozenset[str] = frozenset()
    """Which of `LDCONFIG_CANDIDATES` and the config's `nvidia-container-cli.ldconfig` exist."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecFileFacts:
    """A CDI spec file, with what the checks read from it."""

    path: str
    kind: str | None = None
    devices: tuple[str, ...] = ()
    host_paths: tuple[str, ...] = ()
    missing_host_paths: tuple[str, ...] = ()
    hook_paths: tuple[str, ...] = ()
    missing_hook_paths: tuple[str, ...] = ()
    driver_versions: frozenset[str] = frozenset()
    device_node_paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CdiFacts:
    """The spec directories and what they hold."""

    dirs: tuple[str, ...] = ()
    specs: tuple[SpecFileFacts, ...] = ()
    conflicts: tuple[str, ...] = ()
    conflict_files: tuple[str, ...] = ()
    """The spec files that take part in a conflict, as seen inside the root."""
    refresh_enabled: bool = False
    unreadable: Unavailable | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompatLibrary:
    """The image's forward-compatibility `libcuda.so.<version>` (`cuda-compat-<x>-<y>`)."""

    path: str
    version: str
    cuda_version: str | None = None
    driver_branches: tuple[int, ...] = ()
    """Host driver branches it supports (its `.note.cuda.fwd_compatibility`); () when unknown."""
    on_path: str | None = None
    """Where the library path forces it first (`LD_LIBRARY_PATH`, an ld.so.conf file)."""
    mounted_at: str | None = None
    """Where the runtime bind-mounted it over the driver's libraries (nvidia-container-cli does
    so when the compat libcuda's major is above the driver's), from `/proc/self/mountinfo`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerFacts:
    """What a process inside a container can see about itself."""

    env: Mapping[str, str] = field(default_factory=dict)
    shm_size: int | Unavailable | None = None
    shm_is_host: bool = False
    memlock: int | None = None
    image_libraries: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    has_torch: bool = False
    allocation_markers: bool = False
    compat: CompatLibrary | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcess:
    """A process holding an NVIDIA device node open (`/proc/<pid>/fd`)."""

    pid: int
    state: str
    command: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Distribution:
    """A Kubernetes distribution that runs its own containerd and kubelet (k3s, RKE2, microk8s):
    where it keeps what the doctor reads, and what a remedy edits and restarts there.

    A row of `ctk.host.facts.gatherer.DISTRIBUTIONS`; the gatherer fills in ``unit`` and
    ``template`` for the node at hand."""

    name: str
    containerd_config: str
    """The containerd config the doctor reads (k3s/RKE2: the config.toml rendered at start)."""
    kubeconfig: str
    """The kubelet's kubeconfig."""
    units: tuple[str, ...]
    """The systemd units that run containerd, server first (servers and agents differ)."""
    templates: tuple[str, ...] = ()
    """The Go templates the distribution renders ``containerd_config`` from, the one it prefers
    first; () where ``containerd_config`` is itself the file to edit (microk8s)."""
    node_config: str | None = None
    """The distribution's own config.yaml (k3s/RKE2: `node-name`, `default-runtime`)."""
    kubelet_args: str | None = None
    """The kubelet's arguments file (microk8s: `--hostname-override`)."""
    unit: str = ""
    """The unit of ``units`` this node has (the first where it has none)."""
    template: str | None = None
    """The template an edit belongs in here: the one the node has, else the one the distribution
    reads for the config version it renders; None where there are no templates."""


GPU_DRIVER = "gpu.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
DRA_DRIVERS = (GPU_DRIVER, COMPUTE_DOMAIN_DRIVER)
"""The NVIDIA DRA driver's two kubelet plugins (k8s-dra-driver-gpu: cmd/gpu-kubelet-plugin,
cmd/compute-domain-kubelet-plugin), by the driver names they register and publish under."""
GPU_DEVICE_TYPES = ("gpu", "mig")
"""The `type` attribute of the gpu.nvidia.com devices that are the node's GPUs and MIG devices
(vfio and DynamicMIG's abstract partitions are others)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraFiles:
    """What the node's files say about the NVIDIA DRA drivers' kubelet plugins
    (`ctk.host.facts.kubernetes.gather_dra_files`): the kubelet's plugin registry and plugin
    directories, for the drivers `gpu.nvidia.com` and `compute-domain.nvidia.com`."""

    registered: Mapping[str, str] = field(default_factory=dict)
    """driver -> its registration socket (`plugins_registry/<driver>[-<uid>]-reg.sock`)."""
    plugin_dirs: Mapping[str, str] = field(default_factory=dict)
    """driver -> its plugin directory (`plugins/<driver>`), where it exists."""
    kubelet_dir: str = "/var/lib/kubelet"
    """The kubelet's directory the plugins register under on this node."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraDevice:
    """A device of a ResourceSlice, with the attributes the checks compare (the NVIDIA DRA
    driver's `type`, `uuid`, `driverVersion`; a MIG device's `parentUUID`)."""

    name: str
    type: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    driver_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceSlice:
    """A `resource.k8s.io` ResourceSlice of this node."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    devices: tuple[DraDevice, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceClass:
    """A DeviceClass: its CEL selectors and (1.34+) the extended resource it stands for."""

    name: str
    expressions: tuple[str, ...] = ()
    extended_resource: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceClaim:
    """A ResourceClaim that concerns this node: a pod on it uses it, or its devices are here."""

    namespace: str
    name: str
    uid: str = ""
    allocated: bool = False
    devices: tuple[tuple[str, str, str], ...] = ()
    """The allocation's results: (driver, pool, device)."""
    reserved_for: tuple[tuple[str, str], ...] = ()
    """The pods it is reserved for: (name, uid)."""
    classes: tuple[str, ...] = ()
    """The DeviceClasses its requests name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraPod:
    """A pod on this node that DRA checks look at: the NVIDIA DRA driver's kubelet plugin
    (``drivers`` it serves), a compute domain's IMEX daemon (``domain``), or a pod with claims."""

    namespace: str
    name: str
    uid: str = ""
    phase: str = ""
    ready: bool = False
    drivers: tuple[str, ...] = ()
    domain: str | None = None
    claims: tuple[str, ...] = ()
    """The ResourceClaims it uses (names in its namespace, from `status.resourceClaimStatuses`)."""
    cdi_root: str | None = None
    """The kubelet plugin's `CDI_ROOT` (where it writes the claims' CDI specs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraApi:
    """The API server's view of DRA for this node (`ctk.host.facts.kubernetes`); a part the
    credentials may not read (403) is None."""

    versions: tuple[str, ...] = ()
    """The versions of `resource.k8s.io` the API server serves, preferred first; (): none."""
    slices: tuple[ResourceSlice, ...] | None = None
    classes: tuple[DeviceClass, ...] | None = None
    claims: tuple[ResourceClaim, ...] | None = None
    gone_pods: tuple[tuple[str, str], ...] = ()
    """Pods a claim of this node is reserved for that the API server no longer has: (namespace,
    name)."""

    def gpu_devices(self) -> tuple[DraDevice, ...]:
        """The node's GPUs and MIG devices in its `gpu.nvidia.com` ResourceSlices (`type` gpu or
        mig): what the node hands out through DRA."""
        return tuple(
            device
            for found in self.slices or ()
            if found.driver == GPU_DRIVER
            for device in found.devices
            if device.type in GPU_DEVICE_TYPES
        )


def offers_through_dra(facts: NodeFacts, kubernetes: Mapping[str, Any]) -> bool:
    """Whether the node hands out its GPUs through DRA alone: the gpu.nvidia.com kubelet plugin
    here (registered, or its pod) or GPU devices in its ResourceSlices, and no `nvidia.com/*`
    allocatable from a device plugin (an uninstalled driver's plugin directory is no sign)."""
    api = kubernetes.get("dra")
    pods = kubernetes.get("dra_pods")
    allocatable = kubernetes.get("allocatable") or {}
    if any(v not in ("0", "") for v in allocatable.values()):
        return False
    return (
        (isinstance(api, DraApi) and bool(api.gpu_devices()))
        or GPU_DRIVER in facts.dra.registered
        or (isinstance(pods, tuple) and any(GPU_DRIVER in p.drivers for p in pods))
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFacts:
    """All facts about one node; checks read, never gather."""

    root: str = "/"
    where: Where = Where.HOST
    is_root: bool = True
    kernel: KernelFacts = field(default_factory=KernelFacts)
    dev: DevFacts = field(default_factory=DevFacts)
    libs: LibFacts | Unavailable = field(default_factory=lambda: LibFacts(source="none"))
    nvml: NvmlAnswer | Unavailable = field(default_factory=lambda: Unavailable("not gathered"))
    cuda_table: tuple[CudaRow, ...] = ()
    cuda_need: CudaNeed | None = None
    toolkit: ToolkitFacts = field(default_factory=ToolkitFacts)
    engines: Mapping[Runtime, EngineFacts] = field(default_factory=dict)
    """Each engine's facts, an entry per `Runtime` (gathered from `engine_configs.ENGINE_FACTS`)."""
    docker_rootless: EngineFacts | None = None
    docker_snap: bool = False
    cdi: CdiFacts = field(default_factory=CdiFacts)
    container: ContainerFacts = field(default_factory=ContainerFacts)
    kubernetes: Mapping[str, Any] | Unavailable | None = None
    """The API server's view of this node (and pod): `ctk.host.facts.kubernetes`."""
    gpu_processes: tuple[GpuProcess, ...] | Unavailable = ()
    nvml_process_states: Mapping[int, str] | Unavailable = field(default_factory=dict)
    """`/proc/<pid>/stat` state of each PID NVML lists; "" when `/proc/<pid>` does not exist."""
    advisories: tuple[Advisory, ...] = ()
    kubelet: bool = False
    persistenced: bool = False
    """nvidia-persistenced runs (its socket exists): it keeps the GPUs initialised."""
    kubelet_cgroup_driver: str | Unavailable | None = None
    host_mount: str | None = None
    distribution: Distribution | None = None
    """The Kubernetes distribution that runs containerd and the kubelet here; None: none of
    `DISTRIBUTIONS` (containerd and the kubelet as packages, or no Kubernetes)."""
    dra: DraFiles = field(default_factory=DraFiles)
    """The NVIDIA DRA drivers' kubelet plugins as the node's files show them (the API's view is
    ``kubernetes["dra"]``, a `DraApi`)."""
    gpu_operator: str | None = None
    """Where this host shows the NVIDIA GPU Operator's work (its toolkit directory, its
    validation markers); None: nothing of it on the host (the API's view is in ``kubernetes``)."""

    def engine(self, runtime: Runtime) -> EngineFacts:
        """``runtime``'s facts; those of an engine that is not installed when none were gathered."""
        found = self.engines.get(runtime)
        return EngineFacts(engine=runtime) if found is None else found
