"""Gather `NodeFacts` once, from files under `--root` (and NVML), each step bounded in time.

Everything is read through `HostRoot`, so `--root /host` diagnoses a host mounted elsewhere and
fixture trees stand in for nodes in tests. Facts that cannot be files come from the real
adapters: `os.stat` for device nodes, `os.statvfs` for `/dev/shm`, NVML through `ctk.host.nvml`.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import posixpath
import re
import stat
import threading
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from ctk.doctor.cuda import need_from_env, parse_table
from ctk.doctor.facts import (
    CdiFacts,
    ConfigFile,
    ContainerFacts,
    CudaNeed,
    DevFacts,
    DeviceNode,
    EngineFacts,
    GpuProcess,
    KernelFacts,
    LibFacts,
    Library,
    MigDevice,
    NodeFacts,
    NvmlFacts,
    NvmlGpu,
    PciGpu,
    ProcGpu,
    RuntimeEntry,
    SpecFile,
    ToolkitFacts,
    Unavailable,
)
from ctk.doctor.model import Where
from ctk.host.root import HostRoot, PathEscapeError

T = TypeVar("T")

NVML_TIMEOUT_S = 5.0
STEP_TIMEOUT_S = 5.0
LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib64",
    "/lib",
    "/usr/local/lib",
)
BINARY_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
BINARIES = (
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
    "nvidia-container-toolkit",
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-cdi-hook",
    "nvidia-docker",
    "docker",
    "dockerd",
    "containerd",
    "crio",
    "podman",
)
SONAMES = ("libnvidia-ml.so.1", "libcuda.so.1", "libcuda.so")
PACKAGE_PREFIXES = ("nvidia-", "libnvidia-container", "cuda-compat")
OCI_HOOKS = (
    "/usr/share/containers/oci/hooks.d/oci-nvidia-hook.json",
    "/etc/containers/oci/hooks.d/oci-nvidia-hook.json",
)
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
REFRESH_UNITS = ("nvidia-cdi-refresh.path", "ctk-cdi-refresh.path")
UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
MODULE_DIRS = ("updates/dkms", "updates", "extra", "kernel/drivers/video", "misc", "video", "")
CONTAINERD_CONFIGS = (
    ("/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "k3s"),
    ("/var/lib/rancher/rke2/agent/etc/containerd/config.toml", "rke2"),
)
KUBELET_PATHS = (
    "/var/lib/kubelet/config.yaml",
    "/etc/kubernetes/kubelet.conf",
    "/var/lib/rancher/k3s",
    "/var/lib/rancher/rke2",
    "/usr/bin/kubelet",
)
TORCH_GLOBS = (
    "/usr/lib/python3*/site-packages/torch",
    "/usr/lib/python3*/dist-packages/torch",
    "/usr/local/lib/python3*/site-packages/torch",
    "/usr/local/lib/python3*/dist-packages/torch",
    "/opt/conda/lib/python3*/site-packages/torch",
)
DRIVER_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")
LIB_VERSION = re.compile(r"/lib(?:cuda|nvidia-[a-z0-9-]+)\.so\.(\d+\.\d+(?:\.\d+)?)$")


@dataclass(frozen=True, slots=True)
class Timing:
    """How long one gather step took, and whether it finished in time."""

    step: str
    seconds: float
    timed_out: bool = False


@dataclass(slots=True)
class Gatherer:
    """Reads facts under one root; every read is one call, so each fact is read once."""

    root: HostRoot
    timings: list[Timing] = field(default_factory=list)

    # --- primitives -------------------------------------------------------------------------

    def host(self, path: str) -> Path | None:
        """The path on this machine, or None when it would escape the root."""
        try:
            return self.root.path(path)
        except PathEscapeError:
            return None

    def text(self, path: str) -> str | None:
        """A file's text; None when missing or unreadable."""
        host = self.host(path)
        if host is None:
            return None
        try:
            return host.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def readable(self, path: str) -> bool | None:
        """True: readable; False: exists but permission denied; None: missing."""
        host = self.host(path)
        if host is None or not host.exists():
            return None
        return os.access(host, os.R_OK)

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists inside the root."""
        host = self.host(path)
        return host is not None and (host.exists() or host.is_symlink())

    def glob(self, pattern: str) -> list[str]:
        """Paths (as seen inside the root) matching ``pattern``, sorted.

        Each directory is resolved inside the root before it is listed, so neither `..` nor a
        symlink leads the match out of the root.
        """
        current = ["/"]
        for part in (p for p in posixpath.normpath("/" + pattern).split("/") if p):
            if not glob.has_magic(part):
                current = [posixpath.join(base, part) for base in current]
                continue
            matched = []
            for base in current:
                host = self.host(base)
                try:
                    names = sorted(os.listdir(host)) if host is not None else []
                except OSError:
                    continue
                hidden = part.startswith(".")
                matched += [
                    posixpath.join(base, name)
                    for name in names
                    if fnmatch.fnmatchcase(name, part) and (hidden or not name.startswith("."))
                ]
            current = matched
        return sorted(path for path in current if self.exists(path))

    def link_target(self, directory: str, name: str) -> str | None:
        """The target of symlink ``directory/name`` (the directory resolved inside the root)."""
        host = self.host(directory)
        if host is None:
            return None
        try:
            return os.readlink(host / name)
        except OSError:
            return None

    def bounded(self, step: str, function: Callable[[], T], default: T, timeout: float) -> T:
        """Run ``function`` in a daemon thread; ``default`` when it does not finish in time."""
        box: list[T] = []
        errors: list[BaseException] = []

        def target() -> None:
            try:
                box.append(function())
            except BaseException as exc:  # re-raised below in the caller's thread
                errors.append(exc)

        start = time.monotonic()
        thread = threading.Thread(target=target, name=f"ctk-doctor-{step}", daemon=True)
        thread.start()
        thread.join(timeout)
        elapsed = time.monotonic() - start
        if thread.is_alive():
            self.timings.append(Timing(step, elapsed, timed_out=True))
            return default
        self.timings.append(Timing(step, elapsed))
        if errors:
            raise errors[0]
        return box[0]

    def timed(self, step: str, function: Callable[[], T]) -> T:
        """Run ``function`` and record how long it took."""
        start = time.monotonic()
        try:
            return function()
        finally:
            self.timings.append(Timing(step, time.monotonic() - start))


# --- kernel ---------------------------------------------------------------------------------


def parse_key_values(text: str) -> dict[str, str]:
    """`Key: value` lines (split on the first colon), values stripped of quotes."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            found[key.strip()] = value.strip().strip('"')
    return found


def parse_char_majors(text: str) -> dict[str, int]:
    """The `Character devices:` section of /proc/devices: name -> major."""
    majors: dict[str, int] = {}
    in_chars = False
    for line in text.splitlines():
        if line.strip().endswith("devices:"):
            in_chars = line.strip() == "Character devices:"
            continue
        parts = line.split()
        if in_chars and len(parts) == 2 and parts[0].isdigit():
            majors.setdefault(parts[1], int(parts[0]))
    return majors


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
    gpus = []
    for info_path in g.glob("/proc/driver/nvidia/gpus/*/information"):
        info = parse_key_values(g.text(info_path) or "")
        minor = info.get("Device Minor", "")
        if not minor.isdigit():
            continue
        gpus.append(
            ProcGpu(
                bdf=info.get("Bus Location", info_path.split("/")[-2]),
                minor=int(minor),
                uuid=info.get("GPU UUID", ""),
                model=info.get("Model", ""),
                excluded=info.get("GPU Excluded", "No") == "Yes",
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
        data = host.read_bytes()
    except OSError:
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
        gpus=_proc_gpus(g),
        params=parse_key_values(g.text("/proc/driver/nvidia/params") or ""),
        char_majors=parse_char_majors(g.text("/proc/devices") or ""),
        cgroup_version=2 if g.exists("/sys/fs/cgroup/cgroup.controllers") else 1,
        systemd_init=g.exists("/run/systemd/system"),
        selinux_enforcing=(g.text("/sys/fs/selinux/enforce") or "").strip() == "1",
    )


# --- device nodes -------------------------------------------------------------------------


def _node(g: Gatherer, path: str) -> DeviceNode:
    host = g.host(path)
    try:
        info = os.stat(host) if host is not None else None
    except OSError:
        info = None
    if info is None or not stat.S_ISCHR(info.st_mode):
        return DeviceNode(path=path)
    assert host is not None
    return DeviceNode(
        path=path,
        major=os.major(info.st_rdev),
        minor=os.minor(info.st_rdev),
        mode=stat.S_IMODE(info.st_mode),
        accessible=os.access(host, os.R_OK | os.W_OK),
    )


def _char_links(g: Gatherer) -> dict[str, str]:
    directory = g.host("/dev/char")
    links: dict[str, str] = {}
    if directory is None or not directory.is_dir():
        return links
    for entry in os.scandir(directory):
        if ":" not in entry.name or not entry.is_symlink():
            continue
        target = os.readlink(entry.path)
        resolved = os.path.normpath(os.path.join("/dev/char", target))
        if resolved.startswith("/dev/nvidia"):
            links[entry.name] = resolved
    return links


def gather_dev(g: Gatherer) -> DevFacts:
    """NVIDIA device nodes, their /dev/char links, MIG capability minors and files."""
    paths = g.glob("/dev/nvidia*") + g.glob("/dev/nvidia-caps/nvidia-cap*")
    nodes = {path: _node(g, path) for path in paths if not path.endswith("/nvidia-caps")}
    minors = {}
    for line in (g.text("/proc/driver/nvidia-caps/mig-minors") or "").splitlines():
        name, _, minor = line.rpartition(" ")
        if minor.isdigit():
            minors[name] = int(minor)
    caps_base = "/proc/driver/nvidia/capabilities/"
    caps = g.glob(caps_base + "gpu*/mig/gi*/access") + g.glob(caps_base + "gpu*/mig/gi*/ci*/access")
    names = frozenset(path[len(caps_base) :].replace("/mig/", "/") for path in caps)
    return DevFacts(nodes=nodes, char_links=_char_links(g), mig_minors=minors, mig_caps=names)


# --- libraries ----------------------------------------------------------------------------


def _ld_conf_dirs(g: Gatherer, path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    dirs: list[str] = []
    for raw in (g.text(path) or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("include "):
            pattern = line.split(None, 1)[1]
            if not pattern.startswith("/"):
                pattern = posix_join(os.path.dirname(path), pattern)
            for included in g.glob(pattern) if depth < 4 else ():
                dirs += _ld_conf_dirs(g, included, depth + 1)
        elif line.startswith("/"):
            dirs.append(line)
    return dirs


def posix_join(*parts: str) -> str:
    """Join paths as seen inside the root."""
    return str(PurePosixPath(*parts))


def gather_libs(g: Gatherer, env: Mapping[str, str]) -> LibFacts:
    """Where the loader finds the driver libraries: LD_LIBRARY_PATH, ld.so.cache, directories.

    The loader's order: `LD_LIBRARY_PATH` (inside a container), the `/etc/ld.so.cache` entries
    (read by `ctk.host.driver`), then the ld.so.conf and default directories for nodes whose
    cache is missing or out of date.
    """
    from ctk.host.driver import read_ld_cache

    search = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")]
    stub_dirs = tuple(d for d in search if "stubs" in d.split("/"))
    candidates = [posix_join(d, soname) for d in search for soname in SONAMES]
    cached = [path for name, path in read_ld_cache(g.root) if name in SONAMES]
    candidates += cached
    directories = _ld_conf_dirs(g) + list(LIBRARY_DIRS)
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
        return 12
    return None


def gather_nvml(root: Path) -> NvmlFacts:
    """NVML's view through `ctk.host.nvml`, or the error code it refused with."""
    from ctk.errors import CtkError
    from ctk.host import nvml

    try:
        found = nvml.read_nvml(root)
    except CtkError as exc:
        return NvmlFacts(error_code=nvml_error_code(exc), error=exc.message)
    cuda = found.cuda_driver_version
    return NvmlFacts(
        driver_version=found.driver_version,
        cuda_version=(cuda // 1000, (cuda % 1000) // 10),
        gpus=tuple(
            NvmlGpu(
                index=gpu.index,
                minor=gpu.minor,
                uuid=gpu.uuid,
                name=gpu.name,
                bus_id=gpu.pci_bus_id,
                mig_current=_mig_mode(gpu.mig_mode.value),
                mig_devices=tuple(
                    MigDevice(
                        gi=mig.gpu_instance,
                        ci=mig.compute_instance,
                        uuid=mig.uuid,
                        profile=mig.profile,
                    )
                    for mig in gpu.migs
                ),
            )
            for gpu in found.gpus
        ),
    )


def _mig_mode(value: str) -> int | None:
    return {"enabled": 1, "disabled": 0}.get(value)


# --- toolkit ------------------------------------------------------------------------------


def parse_dpkg_status(text: str, prefixes: Iterable[str] = PACKAGE_PREFIXES) -> dict[str, str]:
    """Installed packages whose names start with ``prefixes``: name -> version."""
    wanted = tuple(prefixes)
    packages = {}
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(": ")
            if sep and not line.startswith(" "):
                fields[key] = value.strip()
        name = fields.get("Package", "")
        if name.startswith(wanted) and fields.get("Status", "").endswith(" installed"):
            packages[name] = fields.get("Version", "")
    return packages


def read_toml_file(g: Gatherer, path: str) -> ConfigFile:
    """A TOML file: data, or the parse error with line and column."""
    readable = g.readable(path)
    if readable is None:
        return ConfigFile(path=path)
    if not readable:
        return ConfigFile(path=path, exists=True, needs_root=True)
    try:
        data = tomllib.loads(g.text(path) or "")
    except tomllib.TOMLDecodeError as exc:
        return ConfigFile(path=path, exists=True, error=str(exc))
    return ConfigFile(path=path, exists=True, data=data)


def gather_toolkit(g: Gatherer, env: Mapping[str, str]) -> ToolkitFacts:
    """Binaries, packages, config.toml and OCI hooks of the NVIDIA Container Toolkit."""
    binaries = {}
    for name in BINARIES:
        for directory in ("/snap/bin", *BINARY_DIRS) if name == "docker" else BINARY_DIRS:
            if g.exists(f"{directory}/{name}"):
                binaries[name] = f"{directory}/{name}"
                break
    config_path = env.get(
        "NVIDIA_CTK_CONFIG_FILE_PATH", "/etc/nvidia-container-runtime/config.toml"
    )
    config = read_toml_file(g, config_path)
    existing = set()
    cli = (config.data or {}).get("nvidia-container-cli", {})
    ldconfig = cli.get("ldconfig") if isinstance(cli, dict) else None
    if isinstance(ldconfig, str) and g.exists(ldconfig.lstrip("@")):
        existing.add(ldconfig.lstrip("@"))
    return ToolkitFacts(
        binaries=binaries,
        packages=parse_dpkg_status(g.text("/var/lib/dpkg/status") or ""),
        config=config,
        oci_hooks=tuple(path for path in OCI_HOOKS if g.exists(path)),
        existing_paths=frozenset(existing),
    )


# --- engines ------------------------------------------------------------------------------


def _runtimes(g: Gatherer, view: Any, binaries: Mapping[str, str]) -> dict[str, RuntimeEntry]:
    entries = {}
    for runtime in view.runtimes:
        binary = runtime.binary_path
        exists = True
        if binary:
            exists = (
                g.exists(binary)
                if binary.startswith("/")
                else binary in binaries or any(g.exists(f"{d}/{binary}") for d in BINARY_DIRS)
            )
        entries[runtime.name] = RuntimeEntry(
            name=runtime.name,
            binary=binary,
            binary_exists=exists,
            systemd_cgroup=runtime.systemd_cgroup,
        )
    return entries


def _engine(
    *,
    g: Gatherer,
    engine: str,
    path: str,
    installed: bool,
    read: Callable[[], Any],
    binaries: Mapping[str, str],
) -> EngineFacts:
    from ctk.errors import CtkError

    readable = g.readable(path)
    base = EngineFacts(engine=engine, installed=installed, config_path=path)
    host = g.host(path)
    if host is not None and host.exists() and not host.is_file():
        return replace(base, config_exists=True, error="not a regular file")
    if readable is False:
        return EngineFacts(
            engine=engine,
            installed=installed,
            config_path=path,
            config_exists=True,
            needs_root=True,
        )
    try:
        view = read()
    except CtkError as exc:
        return EngineFacts(
            engine=engine,
            installed=installed,
            config_path=path,
            config_exists=True,
            error=exc.message,
        )
    if view is None:
        return base
    return EngineFacts(
        engine=engine,
        installed=installed,
        config_path=path,
        config_exists=readable is True,
        runtimes=_runtimes(g, view, binaries),
        default_runtime=view.default_runtime,
        cdi_enabled=view.cdi_enabled,
        cdi_spec_dirs=tuple(view.cdi_spec_dirs),
        cgroup_driver=view.cgroup_driver,
        imports=tuple(view.imports),
    )


def gather_docker(
    g: Gatherer, path: str, binaries: Mapping[str, str], *, installed: bool
) -> EngineFacts:
    """Docker's daemon.json through the runtime-config reader."""
    from ctk.runtime_config.inspect import inspect_docker

    def read() -> Any:
        text = g.text(path)
        return inspect_docker(text if text is not None else "{}", name=path)

    return _engine(
        g=g, engine="docker", path=path, installed=installed, read=read, binaries=binaries
    )


def containerd_files(g: Gatherer, main: str, imports: Iterable[str]) -> list[str]:
    """The files containerd loads after ``main``: each import glob, sorted, absolute only."""
    files = []
    for written in imports:
        pattern = written if written.startswith("/") else posix_join(os.path.dirname(main), written)
        files += [p for p in g.glob(pattern) if p != main and p not in files]
    return files


def gather_containerd(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts:
    """containerd's merged config (main file plus imports) and its drop-ins."""
    from ctk.runtime_config.inspect import inspect_containerd

    main, managed = "/etc/containerd/config.toml", None
    for path, distribution in CONTAINERD_CONFIGS:
        if g.exists(path):
            main, managed = path, distribution
    installed = "containerd" in binaries or g.exists(main) or managed is not None

    def read() -> Any:
        text = g.text(main)
        if text is None:
            return None
        first = inspect_containerd([(main, text)])
        extra = containerd_files(g, main, first.imports)
        return inspect_containerd([(main, text), *((p, g.text(p) or "") for p in extra)])

    try:
        disabled = tomllib.loads(g.text(main) or "").get("disabled_plugins", [])
    except tomllib.TOMLDecodeError:
        disabled = []
    cri_names = {"cri", "io.containerd.grpc.v1.cri"}
    cri_off = isinstance(disabled, list) and bool(cri_names & set(map(str, disabled)))
    facts = _engine(
        g=g, engine="containerd", path=main, installed=installed, read=read, binaries=binaries
    )
    drop_ins = tuple(g.glob("/etc/containerd/conf.d/*.toml"))
    imports = tuple(
        i if i.startswith("/") else posix_join(os.path.dirname(main), i) for i in facts.imports
    )
    return replace(
        facts, drop_ins=drop_ins, managed_by=managed, imports=imports, cri_disabled=cri_off
    )


def gather_crio(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts:
    """CRI-O's crio.conf plus crio.conf.d drop-ins."""
    from ctk.runtime_config.inspect import inspect_crio

    main = "/etc/crio/crio.conf"
    drop_ins = g.glob("/etc/crio/crio.conf.d/*")
    installed = "crio" in binaries or g.exists(main) or bool(drop_ins)

    def read() -> Any:
        files = [(p, g.text(p) or "") for p in [main, *drop_ins] if g.exists(p)]
        return inspect_crio(files) if files else None

    return _engine(g=g, engine="crio", path=main, installed=installed, read=read, binaries=binaries)


def gather_rootless_docker(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts | None:
    """A rootless Docker daemon (a user unit `docker.service`) and its own daemon.json."""
    units = g.glob("/home/*/.config/systemd/user/docker.service") + g.glob(
        "/root/.config/systemd/user/docker.service"
    )
    if not units:
        return None
    home = units[0].split("/.config/")[0]
    return gather_docker(g, f"{home}/.config/docker/daemon.json", binaries, installed=True)


# --- CDI ----------------------------------------------------------------------------------


def _edits(spec: Mapping[str, Any]) -> list[tuple[str | None, Mapping[str, Any]]]:
    """(device name or None for the top level, containerEdits) pairs of a decoded spec."""
    found: list[tuple[str | None, Mapping[str, Any]]] = []
    top = spec.get("containerEdits")
    if isinstance(top, Mapping):
        found.append((None, top))
    for device in spec.get("devices") or ():
        if isinstance(device, Mapping) and isinstance(device.get("containerEdits"), Mapping):
            found.append((str(device.get("name")), device["containerEdits"]))
    return found


def _entries(edits: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = edits.get(key) or ()
    return [item for item in items if isinstance(item, Mapping)]


def spec_file(
    *,
    g: Gatherer,
    path: str,
    kind: str | None,
    names: tuple[str, ...],
    spec: Mapping[str, Any],
    problems: tuple[str, ...],
) -> SpecFile:
    """What the checks need from one decoded spec: paths, hooks, driver versions."""
    host_paths: list[str] = []
    hook_paths: list[str] = []
    versions: set[str] = set()
    nodes: dict[str, tuple[str, ...]] = {}
    for device, edits in _edits(spec):
        device_nodes = []
        for node in _entries(edits, "deviceNodes"):
            shown = str(node.get("hostPath") or node.get("path") or "")
            if shown:
                host_paths.append(shown)
                device_nodes.append(shown)
        if device is not None:
            nodes[device] = tuple(device_nodes)
        host_paths += [str(m["hostPath"]) for m in _entries(edits, "mounts") if m.get("hostPath")]
        for hook in _entries(edits, "hooks"):
            if hook.get("path"):
                hook_paths.append(str(hook["path"]))
            for arg in hook.get("args") or ():
                if isinstance(arg, str) and arg.startswith("--host-driver-version="):
                    versions.add(arg.split("=", 1)[1])
    for host_path in host_paths:
        match = LIB_VERSION.search(host_path)
        if match and ("libcuda" in host_path or "libnvidia-ml" in host_path):
            versions.add(match.group(1))
    unique = tuple(dict.fromkeys(host_paths))
    hooks = tuple(dict.fromkeys(hook_paths))
    return SpecFile(
        path=path,
        kind=kind,
        devices=names,
        host_paths=unique,
        missing_host_paths=tuple(p for p in unique if p.startswith("/") and not g.exists(p)),
        hook_paths=hooks,
        missing_hook_paths=tuple(p for p in hooks if p.startswith("/") and not g.exists(p)),
        driver_versions=frozenset(versions),
        device_node_paths=nodes,
        problems=problems,
    )


def _conflicts(specs: Iterable[SpecFile]) -> tuple[str, ...]:
    where: dict[str, list[str]] = {}
    for spec in specs:
        for name in spec.devices:
            where.setdefault(f"{spec.kind}={name}", []).append(spec.path)
    return tuple(
        f"{device} in {' and '.join(paths)}"
        for device, paths in sorted(where.items())
        if len(paths) > 1
    )


def gather_cdi(g: Gatherer, extra_dirs: Iterable[str]) -> CdiFacts:
    """Spec files of the default and configured spec directories, read by the CDI registry."""
    from ctk.errors import CtkError
    from ctk.host.cdi_specs import load_spec_dirs

    dirs = tuple(dict.fromkeys((*CDI_DIRS, *extra_dirs)))
    try:
        registry = load_spec_dirs(dirs, root=g.root.root)
    except CtkError as exc:
        denied = "ermission denied" in exc.message
        return CdiFacts(dirs=dirs, unreadable=Unavailable(exc.message, needs_root=denied))
    specs = []
    for spec in registry.files:
        report = spec.report
        problems = tuple(
            f"line {p.line}: {p.message}" if p.line else p.message for p in report.errors
        )
        specs.append(
            spec_file(
                g=g,
                path=spec.path,
                kind=report.kind,
                names=report.device_names,
                spec=report.spec or {},
                problems=problems,
            )
        )
    refresh = any(
        g.exists(f"{directory}/{wants}/{unit}")
        for directory in ("/etc/systemd/system",)
        for wants in ("multi-user.target.wants", "paths.target.wants", "sysinit.target.wants")
        for unit in REFRESH_UNITS
    )
    return CdiFacts(
        dirs=dirs, specs=tuple(specs), conflicts=_conflicts(specs), refresh_enabled=refresh
    )


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
        with open(os.path.join(path, "stat"), encoding="utf-8", errors="replace") as handle:
            stat_line = handle.read()
    except OSError:
        return GpuProcess(pid=pid, state="?", command="?")
    command = stat_line[stat_line.find("(") + 1 : stat_line.rfind(")")]
    state = stat_line[stat_line.rfind(")") + 2 :].split(" ", 1)[0]
    return GpuProcess(pid=pid, state=state, command=command)


# --- inside a container -------------------------------------------------------------------


def read_environ(g: Gatherer) -> dict[str, str]:
    """The environment of the diagnosed process (`/proc/self/environ` under the root)."""
    host = g.host("/proc/self/environ")
    try:
        data = host.read_bytes() if host is not None else b""
    except OSError:
        return {}
    env = {}
    for item in data.split(b"\0"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep:
            env[key] = value
    return env


def _mount_points(g: Gatherer) -> set[str]:
    points = set()
    for line in (g.text("/proc/self/mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 4:
            points.add(fields[4].replace("\\040", " "))
    return points


def _shm_size(g: Gatherer) -> int | Unavailable | None:
    host = g.host("/dev/shm")
    if host is None or not host.is_dir():
        return None
    try:
        info = os.statvfs(host)
    except OSError as exc:
        return Unavailable(f"statvfs: {exc.strerror}")
    return info.f_frsize * info.f_blocks


def gather_container(g: Gatherer, env: Mapping[str, str]) -> ContainerFacts:
    """/dev/shm, driver files of the image, HAMi preload, allocation markers."""
    mounts = _mount_points(g)
    image_libs = []
    for directory in LIBRARY_DIRS:
        for pattern in ("libcuda.so.*.*", "libnvidia-ml.so.*.*"):
            for path in g.glob(f"{directory}/{pattern}"):
                host = g.host(path)
                if host is not None and not host.is_symlink() and path not in mounts:
                    image_libs.append(path)
    preload = (g.text("/etc/ld.so.preload") or "").split()
    timed_out: int | Unavailable | None = Unavailable("statvfs did not answer in time")
    shm = g.bounded("statvfs /dev/shm", lambda: _shm_size(g), timed_out, STEP_TIMEOUT_S)
    return ContainerFacts(
        env=dict(env),
        shm_size=shm,
        memlock=None,
        image_libraries=tuple(sorted(set(image_libs))),
        preload=tuple(preload),
        has_torch=any(g.glob(pattern) for pattern in TORCH_GLOBS),
        allocation_markers=g.exists("/var/run/nvidia-container-devices"),
    )


def detect_where(g: Gatherer, env: Mapping[str, str]) -> Where:
    """Host, container (/.dockerenv, /run/.containerenv) or pod (plus KUBERNETES_SERVICE_HOST)."""
    inside = g.exists("/.dockerenv") or g.exists("/run/.containerenv")
    if not inside:
        cgroup = g.text("/proc/1/cgroup") or ""
        inside = any(word in cgroup for word in ("/docker/", "/kubepods", "/containerd/"))
    if not inside:
        return Where.HOST
    return Where.POD if "KUBERNETES_SERVICE_HOST" in env else Where.CONTAINER


def kubelet_cgroup_driver(g: Gatherer) -> str | Unavailable | None:
    """`cgroupDriver` of /var/lib/kubelet/config.yaml (that directory is often root-only)."""
    import yaml

    path = "/var/lib/kubelet/config.yaml"
    readable = g.readable(path)
    if readable is None:
        return None
    if not readable:
        return Unavailable(f"{path} is readable by root only", needs_root=True)
    try:
        data = yaml.safe_load(g.text(path) or "")
    except yaml.YAMLError:
        return None
    value = data.get("cgroupDriver") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


# --- all of it ----------------------------------------------------------------------------


def advisories() -> tuple[Any, ...]:
    """The packaged toolkit CVE table."""
    from ctk.doctor.advisories import parse_advisories

    text = resources.files("ctk.data").joinpath("toolkit-cves.csv").read_text("utf-8")
    return parse_advisories(text)


def cuda_table() -> tuple[Any, ...]:
    """The packaged CUDA/driver compatibility table."""
    text = resources.files("ctk.data").joinpath("cuda-driver-compat.csv").read_text("utf-8")
    return parse_table(text)


def gather(
    root: Path, *, cuda_need: CudaNeed | None = None, nvml_timeout: float = NVML_TIMEOUT_S
) -> tuple[NodeFacts, tuple[Timing, ...]]:
    """All facts about the node under ``root``; NVML runs in parallel with the file reads."""
    g = Gatherer(HostRoot(root))
    nvml_box: list[NvmlFacts | Unavailable] = []
    nvml_thread = threading.Thread(
        target=lambda: nvml_box.append(_safe_nvml(root)), name="ctk-doctor-nvml", daemon=True
    )
    start = time.monotonic()
    nvml_thread.start()
    env = g.timed("environment", lambda: read_environ(g))
    where = detect_where(g, env)
    kernel = g.timed("kernel", lambda: gather_kernel(g))
    dev = g.timed("dev", lambda: gather_dev(g))
    libs = g.timed("libraries", lambda: gather_libs(g, env if where is not Where.HOST else {}))
    toolkit = g.timed("toolkit", lambda: gather_toolkit(g, env))
    binaries = toolkit.binaries
    docker_installed = bool({"docker", "dockerd"} & set(binaries)) or g.exists("/etc/docker")
    docker = g.timed(
        "docker",
        lambda: gather_docker(g, "/etc/docker/daemon.json", binaries, installed=docker_installed),
    )
    containerd = g.timed("containerd", lambda: gather_containerd(g, binaries))
    crio = g.timed("crio", lambda: gather_crio(g, binaries))
    rootless = g.timed("rootless docker", lambda: gather_rootless_docker(g, binaries))
    extra_dirs = (*docker.cdi_spec_dirs, *containerd.cdi_spec_dirs)
    cdi = g.timed("cdi", lambda: gather_cdi(g, extra_dirs))
    container = (
        g.timed("container", lambda: gather_container(g, env))
        if where is not Where.HOST
        else ContainerFacts()
    )
    need = cuda_need
    if need is None and where is not Where.HOST:
        need = need_from_env(env, "process environment")
    table = g.timed("cuda table", cuda_table)
    no_answer: tuple[GpuProcess, ...] | Unavailable = Unavailable("/proc scan timed out")
    processes = (
        g.bounded("gpu processes", lambda: gather_gpu_processes(g), no_answer, STEP_TIMEOUT_S)
        if where is Where.HOST and kernel.driver_version is not None
        else ()
    )
    nvml_thread.join(max(0.0, nvml_timeout - (time.monotonic() - start)))
    elapsed = time.monotonic() - start
    if nvml_box:
        nvml: NvmlFacts | Unavailable = nvml_box[0]
        g.timings.append(Timing("nvml", elapsed))
    else:
        nvml = Unavailable(f"NVML did not answer within {nvml_timeout:g} s")
        g.timings.append(Timing("nvml", elapsed, timed_out=True))
    facts = NodeFacts(
        root=str(root),
        where=where,
        is_root=os.geteuid() == 0,
        kernel=kernel,
        dev=dev,
        libs=libs,
        nvml=nvml,
        cuda_table=table,
        cuda_need=need,
        toolkit=toolkit,
        docker=docker,
        docker_rootless=rootless,
        docker_snap=g.exists("/snap/bin/docker") or g.exists("/var/snap/docker"),
        containerd=containerd,
        crio=crio,
        cdi=cdi,
        container=container,
        gpu_processes=processes,
        advisories=g.timed("advisories", advisories),
        kubelet=any(g.exists(p) for p in KUBELET_PATHS),
        kubelet_cgroup_driver=g.timed("kubelet", lambda: kubelet_cgroup_driver(g)),
    )
    return facts, tuple(g.timings)


def _safe_nvml(root: Path) -> NvmlFacts | Unavailable:
    try:
        return gather_nvml(root)
    except Exception as exc:  # an adapter bug must not hide every other fact
        return Unavailable(f"NVML adapter failed: {type(exc).__name__}: {exc}")
