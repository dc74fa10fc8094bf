"""The node as NVML reports it: GPUs, MIG devices, their health, and NVML's return codes.

Part of the one node model (`ctk.node`): `ctk.host.nvml` fills these values, `cdi generate`
(nvml mode) and `doctor` decide from them. Management mode, which asks NVML nothing, never
imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from ctk.enums import StrEnum


class NvmlReturn(IntEnum):
    """NVML's return codes (`nvmlReturn_t` in nvml.h), as pynvml's exceptions carry them."""

    SUCCESS = 0
    UNINITIALIZED = 1
    INVALID_ARGUMENT = 2
    NOT_SUPPORTED = 3
    NO_PERMISSION = 4
    ALREADY_INITIALIZED = 5
    NOT_FOUND = 6
    INSUFFICIENT_SIZE = 7
    INSUFFICIENT_POWER = 8
    DRIVER_NOT_LOADED = 9
    TIMEOUT = 10
    IRQ_ISSUE = 11
    LIBRARY_NOT_FOUND = 12
    FUNCTION_NOT_FOUND = 13
    CORRUPTED_INFOROM = 14
    GPU_IS_LOST = 15
    RESET_REQUIRED = 16
    OPERATING_SYSTEM = 17
    LIB_RM_VERSION_MISMATCH = 18
    IN_USE = 19
    MEMORY = 20
    NO_DATA = 21
    VGPU_ECC_NOT_SUPPORTED = 22
    INSUFFICIENT_RESOURCES = 23
    FREQ_NOT_SUPPORTED = 24
    ARGUMENT_VERSION_MISMATCH = 25
    DEPRECATED = 26
    NOT_READY = 27
    GPU_NOT_FOUND = 28
    INVALID_STATE = 29
    UNKNOWN = 999

    @classmethod
    def of(cls, value: object) -> NvmlReturn | None:
        """The code ``value`` names (an exception's `.value`), or None when it names none."""
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                return None
        return None


class MigMode(StrEnum):
    """Whether a GPU can be split into MIG devices, and whether it is."""

    UNSUPPORTED = "unsupported"
    DISABLED = "disabled"
    ENABLED = "enabled"


@dataclass(frozen=True, slots=True, kw_only=True)
class MigDevice:
    """One MIG device (a compute instance inside a GPU instance) as NVML reports it."""

    parent_index: int
    index: int  # its slot under the parent: nvmlDeviceGetMigDeviceHandleByIndex
    gpu_instance: int
    compute_instance: int
    uuid: str
    profile: str  # e.g. "1g.10gb", "1g.10gb+me", "4c.7g.80gb"
    gpu_slices: int = 0
    compute_slices: int = 0
    memory_mib: int = 0

    @property
    def attributes(self) -> tuple[str, ...]:
        """Profile attributes such as `me` or `gfx` (the `+...` suffixes of the profile name)."""
        return tuple(self.profile.split("+")[1:])


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One full GPU as NVML reports it."""

    index: int
    minor: int
    uuid: str
    name: str
    pci_bus_id: str  # NVML's form, "00000000:07:00.0"
    mig_mode: MigMode = MigMode.UNSUPPORTED
    migs: tuple[MigDevice, ...] = ()

    @property
    def sysfs_bus_id(self) -> str:
        """The bus id as /sys spells it: "0000:07:00.0"."""
        domain, _, rest = self.pci_bus_id.partition(":")
        return f"{domain[-4:]}:{rest}".lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class NvmlFacts:
    """What NVML says about the node."""

    driver_version: str
    cuda_driver_version: int  # NVML's integer form: 12040 is CUDA 12.4
    gpus: tuple[Gpu, ...] = ()

    @property
    def cuda_version(self) -> str:
        """The CUDA driver version as people write it: "12.4"."""
        major, minor = divmod(self.cuda_driver_version, 1000)
        return f"{major}.{minor // 10}"


@dataclass(frozen=True, slots=True)
class ComputeProcess:
    """A process with a compute context on a GPU; ``used_memory`` None: NVML could not say."""

    pid: int
    used_memory: int | None


@dataclass(frozen=True, slots=True)
class GpuHealth:
    """What NVML says about a GPU's state beyond its identity (the doctor's questions).

    None: NVML refused (``errors`` says why) or the GPU does not support it. ``mig_current`` and
    ``mig_pending`` are `nvmlDeviceGetMigMode`'s pair (1 enabled, 0 disabled).
    """

    index: int
    brand: str | None = None
    mig_current: int | None = None
    mig_pending: int | None = None
    memory_total: int | None = None
    memory_used: int | None = None
    processes: tuple[ComputeProcess, ...] | None = None
    ecc_uncorrected: int | None = None  # volatile (since the last driver load)
    retired_pages_pending: bool | None = None
    remap_pending: bool | None = None
    remap_failed: bool | None = None
    clock_reasons: int | None = None  # nvmlClocksEventReason* bits in force now
    persistence: bool | None = None
    errors: tuple[str, ...] = ()
