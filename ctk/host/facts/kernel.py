"""Kernel, device node, library, NVML and process facts."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path

from ctk.doctor.facts import (
    DevFacts,
    GpuProcess,
    KernelFacts,
    LibFacts,
    Library,
    NvmlAnswer,
    PciGpu,
    ProcGpu,
    Unavailable,
)
from ctk.errors import CtkError
from ctk.host import files
from ctk.host.devnodes import nvidia_nodes, read_char_links, read_mig_minors
from ctk.host.driver_numbers import read_gpu_information
from ctk.host.facts.gatherer import (
    DRIVER_VERSION,
    LIBRARY_DIRS,
    MODULE_DIRS,
    READ_TIMEOUT_S,
    SECURE_BOOT,
    SONAMES,
    Gatherer,
    posix_join,
)
from ctk.host.root import PathEscapeError
from ctk.node.nvml import NvmlReturn
from ctk.nvproc import (
    parse_key_values,
    parse_proc_devices,
)

# --- kernel ---------------------------------------------------------------------------------


def _pci_gpus(g: Gatherer) -> tuple[PciGpu, ...]:
    gpus = []
    for device in g.glob("/sys/bus/pci/devices/*"):
        vendor = (g.text(f"{device}/vendor") or "").strip()
        klass = (g.text(f"{device}/class") or "").strip()
        if vendor != "0x10de" or not klass.startswith(("0x0300", "0x0302")):
            continue
        target = g.link_target(device, "driver")
        driver = os.path.basename(target) if target else None
        gpus.append(PciGpu(bdf=os.path.basename(device), driver=driver))
    return tuple(gpus)


def _proc_gpus(g: Gatherer) -> tuple[ProcGpu, ...]:
    try:
        found = read_gpu_information(g.root)
    except CtkError:  # /proc/driver/nvidia/gpus cannot be listed: no GPU enumerated, as far as seen
        return ()
    gpus = []
    for gpu in found:
        info = gpu.information
        if info is None or info.device_minor is None:  # unreadable: the GPU's checks go without
            continue
        gpus.append(
            ProcGpu(
                bdf=info.bus_location or gpu.container_path.split("/")[-2],
                minor=info.device_minor,
                uuid=info.uuid,
                model=info.model,
                excluded=info.excluded,
            )
        )
    return tuple(sorted(gpus, key=lambda gpu: gpu.minor))


def _modules(g: Gatherer) -> frozenset[str]:
    text = g.text("/proc/modules")
    if text is not None:
        return frozenset(line.split()[0] for line in text.splitlines() if line.strip())
    names = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem", "nouveau")
    return frozenset(name for name in names if g.exists(f"/sys/module/{name}"))


def _module_built(g: Gatherer, release: str) -> bool | None:
    base = f"/lib/modules/{release}"
    if not g.exists(base):
        return None
    for sub in MODULE_DIRS:
        directory = f"{base}/{sub}".rstrip("/")
        if g.glob(f"{directory}/nvidia.ko*") or g.glob(f"{directory}/nvidia/nvidia.ko*"):
            return True
    return False


def _secure_boot(g: Gatherer) -> bool | None:
    host = g.host(SECURE_BOOT)
    if host is None or not g.exists("/sys/firmware/efi"):
        return None
    try:
        data = files.read_bytes(host, limit=files.PROC_LIMIT)
    except CtkError:
        return None
    return len(data) >= 5 and data[4] == 1


def gather_kernel(g: Gatherer) -> KernelFacts:
    """Driver version and flavour, modules, PCI and /proc GPUs, majors, cgroups, SELinux."""
    version_text = g.text("/proc/driver/nvidia/version")
    first = version_text.splitlines()[0] if version_text else None
    match = DRIVER_VERSION.search(first or "")
    release = os.uname().release
    return KernelFacts(
        driver_version=match.group(1) if match else None,
        open_module=("Open Kernel Module" in first) if first else None,
        version_line=first,
        modules=_modules(g),
        kernel_release=release,
        module_built=_module_built(g, release),
        secure_boot=_secure_boot(g),
        pci_gpus=_pci_gpus(g),
        gpus=g.step("/proc/driver/nvidia/gpus", lambda: _proc_gpus(g), READ_TIMEOUT_S),
        params=g.step(
            "/proc/driver/nvidia/params",
            lambda: parse_key_values(g.text("/proc/driver/nvidia/params") or ""),
            READ_TIMEOUT_S,
        ),
        char_majors=parse_proc_devices(g.text("/proc/devices") or ""),
        cgroup_version=2 if g.exists("/sys/fs/cgroup/cgroup.controllers") else 1,
        systemd_init=g.exists("/run/systemd/system"),
        selinux_enforcing=(g.text("/sys/fs/selinux/enforce") or "").strip() == "1",
    )


# --- device nodes -------------------------------------------------------------------------


def gather_dev(g: Gatherer) -> DevFacts:
    """NVIDIA device nodes and /dev/char links (`ctk.host.devnodes`, the scan `cdi generate` and
    `system` use), who may open them, MIG capability minors and files."""
    found = nvidia_nodes(g.root)
    nodes = {node.container_path: node for node in found.every()}
    denied = (p for p, node in nodes.items() if not os.access(node.host_path, os.R_OK | os.W_OK))
    caps_base = "/proc/driver/nvidia/capabilities/"
    caps = g.glob(caps_base + "gpu*/mig/gi*/access") + g.glob(caps_base + "gpu*/mig/gi*/ci*/access")
    return DevFacts(
        nodes=nodes,
        not_char=frozenset(found.not_char),
        inaccessible=frozenset(denied),
        char_links=read_char_links(g.root),
        mig_minors=read_mig_minors(g.root).as_dict(),
        mig_caps=frozenset(path[len(caps_base) :].replace("/mig/", "/") for path in caps),
    )


# --- libraries ----------------------------------------------------------------------------


def ld_conf_dirs(g: Gatherer, path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    dirs: list[str] = []
    for raw in (g.text(path) or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("include "):
            pattern = line.split(None, 1)[1]
            if not pattern.startswith("/"):
                pattern = posix_join(os.path.dirname(path), pattern)
            for included in g.glob(pattern) if depth < 4 else ():
                dirs += ld_conf_dirs(g, included, depth + 1)
        elif line.startswith("/"):
            dirs.append(line)
    return dirs


def gather_libs(g: Gatherer, env: Mapping[str, str]) -> LibFacts:
    """Where the loader finds the driver libraries: LD_LIBRARY_PATH, ld.so.cache, directories.

    The loader's order: `LD_LIBRARY_PATH` (inside a container), the `/etc/ld.so.cache` entries
    (read by `ctk.host.driver`), then the ld.so.conf and default directories for nodes whose
    cache is missing or out of date.
    """
    from ctk.host.ldcache import read_ld_cache

    search = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")]
    stub_dirs = tuple(d for d in search if "stubs" in d.split("/"))
    candidates = [posix_join(d, soname) for d in search for soname in SONAMES]
    cached = [path for name, path in read_ld_cache(g.root) if name in SONAMES]
    candidates += cached
    directories = ld_conf_dirs(g) + list(LIBRARY_DIRS)
    candidates += [posix_join(d, soname) for d in dict.fromkeys(directories) for soname in SONAMES]
    found: dict[str, list[Library]] = {}
    seen: set[tuple[str, str]] = set()
    for path in dict.fromkeys(candidates):
        soname = posixpath.basename(path)
        host = g.host(path)
        if soname not in SONAMES or host is None or not (host.exists() or host.is_symlink()):
            continue
        target = _target_in_root(g, path)
        if (soname, target) in seen:
            continue
        seen.add((soname, target))
        found.setdefault(soname, []).append(
            Library(soname=soname, path=path, target=target, exists=host.exists())
        )
    source = "/etc/ld.so.cache" if cached else "/etc/ld.so.conf and library directories"
    return LibFacts(
        source=source,
        libraries={k: tuple(v) for k, v in found.items()},
        stub_dirs_on_path=stub_dirs,
    )


def _target_in_root(g: Gatherer, path: str) -> str:
    try:
        return str(g.root.relative(g.root.path(path)))
    except PathEscapeError:
        return path


# --- NVML ---------------------------------------------------------------------------------


def nvml_error_code(exc: BaseException) -> int | None:
    """The NVML return code behind an adapter error (pynvml's exception carries `.value`)."""
    cause = exc.__cause__
    code = getattr(cause, "value", None)
    if isinstance(code, int):
        return code
    if "not found" in str(exc):
        return NvmlReturn.LIBRARY_NOT_FOUND
    return None


def gather_nvml(root: Path) -> NvmlAnswer:
    """NVML's view through `ctk.host.nvml`, or the error code it refused with."""
    from ctk.errors import CtkError
    from ctk.host import nvml

    try:
        report = nvml.read_nvml_report(root)
    except CtkError as exc:
        return NvmlAnswer(error_code=nvml_error_code(exc), error=exc.message)
    return NvmlAnswer(found=report.facts, health=report.health)


# --- processes ------------------------------------------------------------------------------


def gather_gpu_processes(g: Gatherer) -> tuple[GpuProcess, ...] | Unavailable:
    """Processes with an NVIDIA device node open, from `/proc/<pid>/fd` (fuser's method)."""
    proc = g.host("/proc")
    if proc is None:
        return ()
    holders = []
    denied = False
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(os.path.join(entry.path, "fd"))
        except PermissionError:
            denied = True
            continue
        except OSError:
            continue
        with fds:
            uses_gpu = any(_is_nvidia_fd(fd.path) for fd in fds)
        if uses_gpu:
            holders.append(_process(entry.path, int(entry.name)))
    if denied and not holders:
        return Unavailable("other users' /proc/<pid>/fd need root", needs_root=True)
    return tuple(sorted(holders, key=lambda p: p.pid))


def _is_nvidia_fd(path: str) -> bool:
    try:
        return os.readlink(path).startswith("/dev/nvidia")
    except OSError:
        return False


def _process(path: str, pid: int) -> GpuProcess:
    try:
        stat_line = files.read_text(Path(path, "stat"), limit=files.PROC_LIMIT, lenient=True)
    except CtkError:
        return GpuProcess(pid=pid, state="?", command="?")
    command = stat_line[stat_line.find("(") + 1 : stat_line.rfind(")")]
    state = stat_line[stat_line.rfind(")") + 2 :].split(" ", 1)[0]
    return GpuProcess(pid=pid, state=state, command=command)


def gather_process_states(g: Gatherer, pids: list[int]) -> dict[int, str] | Unavailable:
    """The `/proc/<pid>/stat` state of each PID; "" for a PID with no `/proc` entry."""
    if not g.exists("/proc/1"):
        return Unavailable("no process list under /proc (not the host's /proc)")
    states = {}
    for pid in pids:
        stat_line = g.text(f"/proc/{pid}/stat")
        states[pid] = "" if stat_line is None else stat_line[stat_line.rfind(")") + 2 :][:1]
    return states
