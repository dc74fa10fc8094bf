"""NVML through pynvml: the only module that talks to the driver library.

With a driver root other than `/` (a driver container mounted at `/run/nvidia/driver`, say), the
root's own `libnvidia-ml.so.1` is loaded by absolute path before pynvml asks for it by name;
the dynamic loader then hands pynvml that same library, so NVML matches the driver root's files.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from ctk.errors import CtkError
from ctk.host.ldcache import find_library
from ctk.node.nvml import ComputeProcess, Gpu, GpuHealth, MigDevice, MigMode, NvmlFacts, NvmlReturn

LIBRARY = "libnvidia-ml.so.1"
T = TypeVar("T")

_MANAGEMENT_HINT = "or use --mode management, which needs no NVML"
_HINTS = {
    NvmlReturn.LIBRARY_NOT_FOUND: (
        "is the NVIDIA driver installed? For a driver container pass --driver-root "
        f"(e.g. /run/nvidia/driver), {_MANAGEMENT_HINT}"
    ),
    NvmlReturn.DRIVER_NOT_LOADED: "load the kernel module (modprobe nvidia) and check dmesg",
    NvmlReturn.LIB_RM_VERSION_MISMATCH: (
        "the loaded kernel module and the user-space driver differ (usually after a driver "
        "upgrade): reboot, or unload and reload the nvidia modules"
    ),
    NvmlReturn.NO_PERMISSION: "run as root (sudo)",
    NvmlReturn.GPU_IS_LOST: (
        "the GPU fell off the bus: look for Xid 79 in dmesg; reset the GPU or reboot"
    ),
    NvmlReturn.FUNCTION_NOT_FOUND: (
        "the driver is older than nvidia-ml-py expects; upgrade the driver"
    ),
}


class GpuSource(Protocol):
    """Where GPU facts come from: NVML here, a fake in tests of code that takes facts."""

    def __call__(self, driver_root: Path) -> NvmlFacts: ...


def _nvml_error(exc: Exception, what: str) -> CtkError:
    code = NvmlReturn.of(getattr(exc, "value", None))
    reason = str(exc)
    if code == NvmlReturn.DRIVER_NOT_LOADED:
        message = f"NVIDIA driver is not loaded ({what}: {reason})"
    elif code == NvmlReturn.LIB_RM_VERSION_MISMATCH:
        message = f"NVIDIA driver/library version mismatch ({what}: {reason})"
    else:
        message = f"{what} failed: {reason}"
    return CtkError(message, hint=_HINTS.get(code) if code is not None else None)


def _preload(driver_root: Path, search: tuple[str, ...]) -> None:
    if str(driver_root) == "/" and not search:
        return  # the dynamic loader's own search finds the host's library
    library = find_library(driver_root, LIBRARY, search)
    if library is None and str(driver_root) == "/":
        return  # not in the search paths: the dynamic loader's own search decides
    if library is None:
        raise CtkError(
            f"NVML library {LIBRARY} not found under driver root {driver_root}",
            hint=_HINTS[NvmlReturn.LIBRARY_NOT_FOUND],
        )
    try:
        ctypes.CDLL(str(library))
    except OSError as exc:
        raise CtkError(
            f"{library}: cannot load NVML library: {exc}",
            hint="check that the driver root holds a complete driver for this architecture",
        ) from exc


def read_nvml(driver_root: Path, search: tuple[str, ...] = ()) -> NvmlFacts:
    """Read the driver version, CUDA version, GPUs and MIG devices from NVML.

    ``search``: library dirs inside the root that are searched first (--library-search-path).
    """
    return _session(driver_root, search, _facts)


def read_nvml_report(driver_root: Path, search: tuple[str, ...] = ()) -> NvmlReport:
    """`read_nvml`'s facts plus each GPU's health details, in one NVML session."""

    def read(pynvml: Any) -> NvmlReport:
        facts = _facts(pynvml)
        return NvmlReport(facts, tuple(_health(pynvml, gpu.index) for gpu in facts.gpus))

    return _session(driver_root, search, read)


def _session(driver_root: Path, search: tuple[str, ...], read: Callable[[Any], T]) -> T:
    import pynvml

    _preload(driver_root, search)
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        if getattr(exc, "value", None) == NvmlReturn.LIBRARY_NOT_FOUND:
            raise CtkError(
                f"NVML library {LIBRARY} not found", hint=_HINTS[NvmlReturn.LIBRARY_NOT_FOUND]
            ) from exc
        raise _nvml_error(exc, "NVML initialisation") from exc
    try:
        return read(pynvml)
    finally:
        with contextlib.suppress(pynvml.NVMLError):  # nothing to do about it after reading
            pynvml.nvmlShutdown()


def _facts(pynvml: Any) -> NvmlFacts:
    return NvmlFacts(
        driver_version=_call(pynvml.nvmlSystemGetDriverVersion, what="driver version"),
        cuda_driver_version=_call(pynvml.nvmlSystemGetCudaDriverVersion, what="CUDA version"),
        gpus=tuple(_gpu(pynvml, index) for index in range(_call(pynvml.nvmlDeviceGetCount))),
    )


# --- health details (doctor) ------------------------------------------------------------------

BRANDS: Final = (
    "unknown",
    "quadro",
    "tesla",
    "nvs",
    "grid",
    "geforce",
    "titan",
    "nvidiavapps",
    "nvidiavpc",
    "nvidiavcs",
    "nvidiavws",
    "nvidiacloudgaming",
    "quadrortx",
    "nvidiartx",
    "nvidia",
    "geforcertx",
    "titanrtx",
)
"""`nvmlBrandType_t` values as the toolkit names them in `brand=` constraints (lower case)."""


@dataclass(frozen=True, slots=True)
class NvmlReport:
    """`read_nvml_report`'s answer."""

    facts: NvmlFacts
    health: tuple[GpuHealth, ...]


def _health(pynvml: Any, index: int) -> GpuHealth:
    handle = _call(pynvml.nvmlDeviceGetHandleByIndex, index, what=f"GPU {index}")
    errors: list[str] = []
    codes: dict[str, int | None] = {}

    def ask(function: Any, device: Any = handle) -> Any:
        try:
            return function(device)
        except (pynvml.NVMLError, pynvml.NVMLLibraryMismatchError) as exc:
            codes[function.__name__] = getattr(exc, "value", None)
            if codes[function.__name__] != NvmlReturn.NOT_SUPPORTED:
                errors.append(f"{function.__name__}: {exc}")
            return None

    def ecc(device: Any) -> Any:
        # NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC
        return pynvml.nvmlDeviceGetTotalEccErrors(device, 1, 0)

    ecc.__name__ = "nvmlDeviceGetTotalEccErrors"
    brand = ask(pynvml.nvmlDeviceGetBrand)
    uncorrected = ask(ecc)
    retired = ask(pynvml.nvmlDeviceGetRetiredPagesPendingStatus)
    remapped = ask(pynvml.nvmlDeviceGetRemappedRows)
    reasons = ask(pynvml.nvmlDeviceGetCurrentClocksEventReasons)
    persistence = ask(pynvml.nvmlDeviceGetPersistenceMode)
    mig = ask(pynvml.nvmlDeviceGetMigMode)
    memory = ask(pynvml.nvmlDeviceGetMemoryInfo)
    listing = pynvml.nvmlDeviceGetComputeRunningProcesses
    processes = ask(listing)
    if (
        processes is None
        and codes.get(listing.__name__) == NvmlReturn.NO_PERMISSION
        and mig
        and mig[0] == 1
    ):
        # With MIG on, the whole GPU's list needs privileges; each MIG device's list does not.
        processes = _mig_processes(pynvml, handle, lambda device: ask(listing, device))
    return GpuHealth(
        index=index,
        brand=None if brand is None else (BRANDS[brand] if 0 <= brand < len(BRANDS) else "unknown"),
        mig_current=None if mig is None else int(mig[0]),
        mig_pending=None if mig is None else int(mig[1]),
        memory_total=None if memory is None else int(memory.total),
        memory_used=None if memory is None else int(memory.used),
        processes=None
        if processes is None
        else tuple(
            ComputeProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
            for p in processes
        ),
        ecc_uncorrected=None if uncorrected is None else int(uncorrected),
        retired_pages_pending=None if retired is None else bool(retired),
        remap_pending=None if remapped is None else bool(remapped[2]),
        remap_failed=None if remapped is None else bool(remapped[3]),
        clock_reasons=None if reasons is None else int(reasons),
        persistence=None if persistence is None else bool(persistence),
        errors=tuple(errors),
    )


def _mig_processes(pynvml: Any, handle: Any, listing: Callable[[Any], Any]) -> list[Any] | None:
    """The compute processes of every MIG device of a GPU; None when one cannot be listed."""
    try:
        count = pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)
    except pynvml.NVMLError:
        return None
    found: list[Any] = []
    for slot in range(count):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except pynvml.NVMLError:
            continue  # an empty slot (NOT_FOUND)
        listed = listing(mig)
        if listed is None:
            return None
        found += listed
    return found


def _call(function: Any, *args: Any, what: str = "") -> Any:
    import pynvml

    try:
        return function(*args)
    except pynvml.NVMLError as exc:
        raise _nvml_error(exc, what or function.__name__) from exc


def _gpu(pynvml: Any, index: int) -> Gpu:
    what = f"GPU {index}"
    handle = _call(pynvml.nvmlDeviceGetHandleByIndex, index, what=what)
    mig_mode = _mig_mode(pynvml, handle, what)
    return Gpu(
        index=index,
        minor=_call(pynvml.nvmlDeviceGetMinorNumber, handle, what=f"{what} minor number"),
        uuid=_call(pynvml.nvmlDeviceGetUUID, handle, what=f"{what} UUID"),
        name=_call(pynvml.nvmlDeviceGetName, handle, what=f"{what} name"),
        pci_bus_id=_bus_id(_call(pynvml.nvmlDeviceGetPciInfo, handle, what=f"{what} PCI info")),
        mig_mode=mig_mode,
        migs=_migs(pynvml, index, handle) if mig_mode is MigMode.ENABLED else (),
    )


def _bus_id(info: Any) -> str:
    raw = info.busId
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _mig_mode(pynvml: Any, handle: Any, what: str) -> MigMode:
    try:
        current, _pending = pynvml.nvmlDeviceGetMigMode(handle)
    except pynvml.NVMLError as exc:
        if getattr(exc, "value", None) == NvmlReturn.NOT_SUPPORTED:
            return MigMode.UNSUPPORTED
        raise _nvml_error(exc, f"{what} MIG mode") from exc
    return MigMode.ENABLED if current == 1 else MigMode.DISABLED


def _migs(pynvml: Any, parent: int, handle: Any) -> tuple[MigDevice, ...]:
    what = f"GPU {parent} MIG device"
    count = _call(pynvml.nvmlDeviceGetMaxMigDeviceCount, handle, what=what + " count")
    found = []
    for slot in range(count):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except pynvml.NVMLError as exc:
            if getattr(exc, "value", None) == NvmlReturn.NOT_FOUND:
                continue  # an empty slot
            raise _nvml_error(exc, f"{what} {slot}") from exc
        found.append(_mig(pynvml, parent, slot, mig))
    return tuple(found)


def _mig(pynvml: Any, parent: int, slot: int, handle: Any) -> MigDevice:
    what = f"MIG device {parent}:{slot}"
    attrs = _call(pynvml.nvmlDeviceGetAttributes, handle, what=f"{what} attributes")
    name = _call(pynvml.nvmlDeviceGetName, handle, what=f"{what} name")
    return MigDevice(
        parent_index=parent,
        index=slot,
        gpu_instance=_call(pynvml.nvmlDeviceGetGpuInstanceId, handle, what=what),
        compute_instance=_call(pynvml.nvmlDeviceGetComputeInstanceId, handle, what=what),
        uuid=_call(pynvml.nvmlDeviceGetUUID, handle, what=f"{what} UUID"),
        profile=_profile(
            name, attrs.gpuInstanceSliceCount, attrs.computeInstanceSliceCount, attrs.memorySizeMB
        ),
        gpu_slices=attrs.gpuInstanceSliceCount,
        compute_slices=attrs.computeInstanceSliceCount,
        memory_mib=attrs.memorySizeMB,
    )


def _profile(name: str, gpu_slices: int, compute_slices: int, memory_mib: int) -> str:
    """The profile as NVML names MIG devices ("NVIDIA A100-SXM4-80GB MIG 1g.10gb")."""
    _, marker, profile = name.rpartition(" MIG ")
    if marker and profile:
        return profile
    size = f"{gpu_slices}g.{(memory_mib + 1023) // 1024}gb"
    return size if compute_slices in (0, gpu_slices) else f"{compute_slices}c.{size}"
