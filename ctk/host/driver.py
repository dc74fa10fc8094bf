"""Driver files and device nodes of a node, gathered in one scan.

Files come from the driver root (`--driver-root`: `/`, or `/run/nvidia/driver` for a driver
container), device nodes, `/proc` and `/sys` from the dev root (`--dev-root`, the host's view).
Every path goes through `HostRoot`, so nothing leads out of its root. Each directory is listed
once, so the cost grows with the number of files and devices, not with their product.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctk.cdi.options import Mode
from ctk.errors import CtkError
from ctk.host import devnodes, files
from ctk.host.devnodes import scan_dir
from ctk.host.files import PROC_LIMIT
from ctk.host.ldcache import LIBRARY_DIRS, read_ld_cache
from ctk.host.root import HostRoot, PathEscapeError, existing_root
from ctk.node import DriverFacts, GatheredNode, HostFile

BINARY_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin")
BINARIES = (
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
    "nvidia-imex",
    "nvidia-imex-ctl",
)
# A graphics tool (nvml mode only, as nvidia-ctk mounts it with the graphics files)
GRAPHICS_BINARIES = ("nvidia-xconfig",)
FIRMWARE_CLASS_PATH = "/sys/module/firmware_class/parameters/path"
# (alternatives, the kind of file each must be)
IPC_PATHS: tuple[tuple[tuple[str, ...], Callable[[int], bool]], ...] = (
    (("/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"), stat.S_ISSOCK),
    (("/run/nvidia-fabricmanager/socket", "/var/run/nvidia-fabricmanager/socket"), stat.S_ISSOCK),
)
CONFIG_DIRS = ("/etc", "/usr/local/share", "/usr/share")
# (file under a config dir, the container path it is mounted at; None: where it was found)
GRAPHICS_CONFIGS: tuple[tuple[str, str | None], ...] = (
    ("glvnd/egl_vendor.d/10_nvidia.json", None),
    ("egl/egl_external_platform.d/15_nvidia_gbm.json", None),
    ("egl/egl_external_platform.d/10_nvidia_wayland.json", None),
    ("egl/egl_external_platform.d/09_nvidia_wayland2.json", None),
    ("egl/egl_external_platform.d/20_nvidia_xcb.json", None),
    ("egl/egl_external_platform.d/20_nvidia_xlib.json", None),
    ("nvidia/nvoptix.bin", None),
    ("X11/xorg.conf.d/10-nvidia.conf", "/usr/share/X11/xorg.conf.d/10-nvidia.conf"),
    (
        "X11/xorg.conf.d/nvidia-drm-outputclass.conf",
        "/usr/share/X11/xorg.conf.d/nvidia-drm-outputclass.conf",
    ),
    ("OpenCL/vendors/nvidia.icd", "/etc/OpenCL/vendors/nvidia.icd"),
)
# Vulkan ICD and layer files: found in the config dirs or at the driver root itself (GKE puts
# them in <driver root>/vulkan), always mounted under /etc, where the Vulkan loader looks.
VULKAN_CONFIGS = (
    "vulkan/icd.d/nvidia_icd.json",
    "vulkan/icd.d/nvidia_layers.json",
    "vulkan/implicit_layer.d/nvidia_layers.json",
    "vulkan/icd.d/nvidia_icd.x86_64.json",
)
# Where X.Org looks for modules, after <libdir>/nvidia/xorg and <libdir>/xorg/modules/...
XORG_MODULE_DIRS = tuple(
    f"{base}/{modules}/{kind}"
    for base in ("/usr/lib/xorg", "/usr/lib64/xorg", "/usr/X11R6/lib", "/usr/X11R6/lib64")
    for modules in ("modules", "modules/updates")
    for kind in ("drivers", "extensions")
)
# Libraries mounted with --feature-flag enable-explicit-driver-libraries (as nvidia-ctk names them)
EXPLICIT_LIBRARIES = (
    "libEGL.so",
    "libGL.so",
    "libGLESv1_CM.so",
    "libGLESv2.so",
    "libGLX.so",
    "libGLdispatch.so",
    "libOpenCL.so",
    "libOpenGL.so",
    "libnvidia-api.so",
    "libnvidia-egl-xcb.so",
    "libnvidia-egl-xlib.so",
)
# The legacy NVVM of CUDA 11 (libnvidia-nvvm70.so.4): a driver library not named by the version
LEGACY_NVVM = re.compile(r"^libnvidia-nvvm70\.so\.\d+$")
# EGL platform libraries, with their own X.Y.Z: graphics files (nvml mode only), no SONAME links
EGL_PLATFORM_LIBRARY = re.compile(r"^libnvidia-egl-(gbm|wayland|wayland2|xcb|xlib)\.so\.\d+\.\d+")
# Debian and Ubuntu's real ldconfig (/sbin/ldconfig is a shell script that runs it)
LDCONFIG_REAL = "/sbin/ldconfig.real"
DRIVER_VERSION_FILE = re.compile(r"^lib(cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)$")


@dataclass(frozen=True, slots=True)
class SearchPaths:
    """Directories inside the driver root: `--library-search-path`, `--config-search-path`."""

    libraries: tuple[str, ...] = ()  # searched before the standard library dirs
    configs: tuple[str, ...] = ()  # searched instead of /etc, /usr/local/share, /usr/share


# --- libraries ---------------------------------------------------------------------------------


def driver_version_from_files(driver_root: Path, search: Iterable[str] = ()) -> str | None:
    """The driver version from `libcuda.so.<version>` file names, for use without NVML."""
    for directory in _library_dirs_in(HostRoot(driver_root), search):
        for entry in scan_dir(directory):
            match = DRIVER_VERSION_FILE.match(entry.name)
            if match:
                return match.group(2)
    return None


def _library_dirs_in(root: HostRoot, search: Iterable[str] = ()) -> Iterator[Path]:
    """``search`` (--library-search-path), the standard library dirs, then the ld.so.cache's."""
    seen: set[Path] = set()
    cached = [os.path.dirname(p) for key, p in read_ld_cache(root) if key == "libcuda.so.1"]
    for directory in (*search, *LIBRARY_DIRS, *cached):
        try:
            path = root.path(directory)
        except PathEscapeError:
            continue
        if path not in seen and path.is_dir():
            seen.add(path)
            yield path


class _Scan:
    """One pass over the driver root and dev root."""

    def __init__(
        self,
        driver_root: Path,
        dev_root: Path,
        version: str,
        *,
        search: SearchPaths = SearchPaths(),
        kernel: str = "",
    ) -> None:
        self.driver = HostRoot(driver_root)
        self.dev = HostRoot(dev_root)
        self.version = version
        self.search = search
        self.config_dirs = search.configs or CONFIG_DIRS
        self.kernel = kernel

    def file(self, host_path: Path, container_path: str | None = None) -> HostFile:
        inside = str(self.driver.relative(host_path))
        return HostFile(container_path=container_path or inside, host_path=str(host_path))

    def versioned(self, entries: list[os.DirEntry[str]], suffix: str) -> dict[str, HostFile]:
        """The driver's libraries among ``entries``: lib*``suffix`` and the legacy NVVM."""
        found = {
            e.name: self.listed_file(e)
            for e in entries
            if e.name.startswith("lib") and (e.name.endswith(suffix) or LEGACY_NVVM.match(e.name))
        }
        return {name: file for name, file in found.items() if file is not None}

    def listed_file(self, entry: os.DirEntry[str]) -> HostFile | None:
        """The mount for a listed library or firmware file: the file, or its link's target.

        A link (say libcuda.so.<version> -> /opt/nvidia/lib/libcuda.so.<version>) is resolved
        as if the driver root were `/` and mounted at the link's own path, next to its SONAME
        link; a link that leads out of the root or to no regular file is left out.
        """
        if entry.is_file(follow_symlinks=False):
            return self.file(Path(entry.path))
        if not entry.is_symlink():
            return None
        inside = self.driver.relative(Path(entry.path))
        try:
            target = self.driver.path(inside)
        except PathEscapeError:
            return None
        if not _is(target, stat.S_ISREG):
            return None
        return self.file(target, str(inside))

    def find(self, *paths: str, kind: Callable[[int], bool] = stat.S_ISREG) -> Path | None:
        """The first of ``paths`` that resolves inside the driver root to a ``kind`` of file.

        ``kind`` tests the mode (stat.S_ISREG, S_ISDIR, S_ISSOCK); a path that leads out of the
        root, dangles or is another kind of file is skipped. The result is the resolved path.
        """
        for path in paths:
            try:
                found = self.driver.path(path)
                mode = os.lstat(found).st_mode
            except (OSError, PathEscapeError):
                continue
            if kind(mode):
                return found
        return None

    def libraries(
        self,
    ) -> tuple[list[HostFile], list[str], list[tuple[str, str]], list[HostFile]]:
        """Driver libraries, their dirs, SONAME links, and the EGL platform libraries."""
        suffix = f".so.{self.version}"
        egl: list[HostFile] = []
        files: list[HostFile] = []
        dirs: list[str] = []
        links: list[tuple[str, str]] = []
        for directory in _library_dirs_in(self.driver, self.search.libraries):
            listing = scan_dir(directory)
            own = self.versioned(listing, suffix)
            if not any(name.endswith(suffix) for name in own):
                continue  # no library of this driver (dangling links do not count)
            inside = str(self.driver.relative(directory))
            dirs.append(inside)
            found = [(directory, listing, own)]
            vdpau = self.find(f"{inside}/vdpau", kind=stat.S_ISDIR)
            if vdpau is not None:
                entries = scan_dir(vdpau)
                found.append((vdpau, entries, self.versioned(entries, suffix)))
            for sub, entries, mounted in found:
                files += [mounted[name] for name in sorted(mounted)]
                links += _soname_links(sub, entries, set(mounted), self.driver)
            egl += [
                self.file(directory / e.name)
                for e in listing
                if e.is_file(follow_symlinks=False) and EGL_PLATFORM_LIBRARY.match(e.name)
            ]
        return files, dirs, links, egl

    def explicit_libraries(
        self, library_dirs: list[str], already: list[HostFile]
    ) -> tuple[list[HostFile], list[tuple[str, str]]]:
        """GLVND, OpenCL and nvidia-api libraries named by their development link.

        Found in the libcuda directory and mounted as the file the link leads to; used with
        `--feature-flag enable-explicit-driver-libraries`.
        """
        if not library_dirs:
            return [], []
        mounted = {f.host_path for f in already}
        found: dict[Path, HostFile] = {}
        for name in EXPLICIT_LIBRARIES:
            path = self.find(f"{library_dirs[0]}/{name}")
            if path is not None and str(path) not in mounted:
                found.setdefault(path, self.file(path))
        links: list[tuple[str, str]] = []
        by_dir: dict[Path, set[str]] = {}
        for path in found:
            by_dir.setdefault(path.parent, set()).add(path.name)
        for directory, names in sorted(by_dir.items()):
            links += _soname_links(directory, scan_dir(directory), names, self.driver)
        return sorted(found.values(), key=lambda f: f.container_path), links

    def binaries(
        self, names: Iterable[str] = BINARIES, library_dirs: Iterable[str] = ()
    ) -> list[HostFile]:
        """The first executable regular file of each name in the binary dirs.

        The dirs are the standard ones, then the `bin` beside each library dir named `lib` or
        `lib64` (a driver kept under a prefix, e.g. /usr/local/nvidia/{bin,lib64}). Where the
        first one found is a wrapper script (`#!`) and a program of that name follows, that
        program is mounted at the script's path: such images put a script in /usr/bin that
        runs the driver's binary under the prefix, which a container has neither at that path
        nor on its PATH.
        """
        dirs = list(dict.fromkeys((*BINARY_DIRS, *_beside(library_dirs, "bin"))))
        found = []
        for name in names:
            candidates: list[Path] = []
            for directory in dirs:
                path = self.find(f"{directory}/{name}", kind=_executable)
                if path is not None and path not in candidates:
                    candidates.append(path)
            if not candidates:
                continue
            first = candidates[0]
            if _is_script(first):
                program = next((c for c in candidates[1:] if not _is_script(c)), None)
                if program is not None:
                    found.append(self.file(program, str(self.driver.relative(first))))
                    continue
            found.append(self.file(first))
        return found

    def firmware(self) -> list[HostFile]:
        """`gsp*.bin` of this driver version in every firmware dir the kernel searches."""
        found: dict[Path, HostFile] = {}
        for base in self._firmware_dirs():
            directory = self.find(f"{base}/nvidia/{self.version}", kind=stat.S_ISDIR)
            if directory is None:
                continue
            for entry in scan_dir(directory):
                if entry.name.startswith("gsp") and entry.name.endswith(".bin"):
                    file = self.listed_file(entry)  # a link: resolved inside the root
                    if file is not None:
                        found.setdefault(Path(file.host_path), file)
        return list(found.values())

    def _firmware_dirs(self) -> list[str]:
        try:
            custom = files.read_text(self.dev.path(FIRMWARE_CLASS_PATH), limit=PROC_LIMIT).strip()
        except (CtkError, PathEscapeError):
            custom = ""
        kernel = [f"/lib/firmware/updates/{self.kernel}"] if self.kernel else []
        plain = [f"/lib/firmware/{self.kernel}"] if self.kernel else []
        dirs = [custom] if custom.startswith("/") else []
        return [*dirs, *kernel, "/lib/firmware/updates", *plain, "/lib/firmware"]

    def ipc(self) -> list[HostFile]:
        found = []
        for alternatives, kind in IPC_PATHS:
            path = self.find(*alternatives, kind=kind)
            if path is not None:
                found.append(self.file(path))
        return found

    def graphics(self, library_dirs: list[str]) -> tuple[list[HostFile], list[tuple[str, str]]]:
        """EGL, X11, OpenCL and Vulkan configs, and the X.Org driver modules.

        A config is mounted where it was found (a link's own path, not its target's: the
        container's loaders search /etc and /usr/share, not a driver prefix the link leads
        into), or where its loader looks for it. The `share` beside a driver prefix's `lib`/
        `lib64` (/usr/local/nvidia/share) is searched after the config dirs; what is found
        there is mounted under /usr/share.
        """
        shares = _beside(library_dirs, "share")
        files = []
        for relative, mount_at in GRAPHICS_CONFIGS:
            for directory in (*self.config_dirs, *shares):
                path = self.find(f"{directory}/{relative}")
                if path is None:
                    continue
                where = directory if directory in self.config_dirs else "/usr/share"
                files.append(self.file(path, mount_at or f"{where}/{relative}"))
                break
        for relative in VULKAN_CONFIGS:
            path = self.find(*(f"{d}/{relative}" for d in (*self.config_dirs, *shares, "")))
            if path is not None:
                files.append(self.file(path, f"/etc/{relative}"))
        xorg_dirs = [
            f"{d}/{sub}"
            for d in library_dirs[:1]  # the libcuda directory, as nvidia-ctk searches
            for sub in (
                "nvidia/xorg",
                "xorg/modules/drivers",
                "xorg/modules/extensions",
                "xorg/modules/updates/drivers",
                "xorg/modules/updates/extensions",
            )
        ]
        xorg_dirs += XORG_MODULE_DIRS
        files += self.binaries(GRAPHICS_BINARIES, library_dirs)
        links: list[tuple[str, str]] = []
        glx = f"libglxserver_nvidia.so.{self.version}"
        for name in ("nvidia_drv.so", glx):
            path = self.find(*(f"{d}/{name}" for d in xorg_dirs))
            if path is None:
                continue
            files.append(self.file(path))
            if name == glx:
                inside = self.driver.relative(path).parent
                links.append((glx, f"{inside}/libglxserver_nvidia.so"))
        return files, links


def _beside(library_dirs: Iterable[str], name: str) -> list[str]:
    """``name`` (bin, share) beside each library dir named lib or lib64: a driver kept under a
    prefix (/usr/local/nvidia/{bin,lib64,share}); /usr/lib64 gives /usr/bin, /usr/share."""
    found = []
    for directory in library_dirs:
        prefix, base = posixpath.split(directory.rstrip("/"))
        beside = posixpath.join(prefix, name)
        if base in ("lib", "lib64") and beside not in found:
            found.append(beside)
    return found


def _is_script(path: Path) -> bool:
    """Whether the regular file at ``path`` starts with `#!` (unreadable: not known to be one)."""
    try:
        with path.open("rb") as file:
            return file.read(2) == b"#!"
    except OSError:
        return False


def _executable(mode: int) -> bool:
    """A regular file that someone may run (nvidia-ctk mounts only such binaries)."""
    return stat.S_ISREG(mode) and bool(mode & 0o111)


def _is(path: Path, kind: Callable[[int], bool]) -> bool:
    """Whether ``path`` itself (not what a link at it leads to) is a ``kind`` of file."""
    try:
        return kind(os.lstat(path).st_mode)
    except OSError:
        return False


def _soname_links(
    directory: Path, entries: list[os.DirEntry[str]], mounted: set[str], root: HostRoot
) -> list[tuple[str, str]]:
    """(file, link) for symlinks in ``directory`` that point straight at a mounted library."""
    inside = root.relative(directory)
    links = []
    for entry in entries:
        if not entry.is_symlink():
            continue
        try:
            target = os.readlink(entry.path)
        except OSError:
            continue
        if target in mounted:
            links.append((target, f"{inside}/{entry.name}"))
    return links


def read_driver(
    driver_root: Path,
    dev_root: Path,
    *,
    version: str,
    bus_ids: Iterable[str] = (),
    search: SearchPaths = SearchPaths(),
) -> DriverFacts:
    """Gather the driver's files under ``driver_root`` and device nodes under ``dev_root``."""
    scan = _Scan(
        driver_root,
        dev_root,
        version,
        search=search,
        kernel=os.uname().release,
    )
    libraries, library_dirs, links, egl = scan.libraries()
    graphics, graphics_links = scan.graphics(library_dirs)
    graphics = egl + graphics
    explicit, explicit_links = scan.explicit_libraries(library_dirs, libraries)
    mig = devnodes.read_mig_minors(scan.dev)
    nodes = devnodes.nvidia_nodes(scan.dev)
    drm = []
    drm_links = []
    ldconfig = scan.find(LDCONFIG_REAL)
    for bus_id in bus_ids:
        found, by_path = devnodes.drm_nodes(scan.dev, bus_id)
        drm.append((bus_id, tuple(found)))
        drm_links.append((bus_id, tuple(by_path)))
    return DriverFacts(
        driver_root=str(driver_root),
        dev_root=str(dev_root),
        libraries=tuple(libraries),
        library_dirs=tuple(library_dirs),
        soname_links=tuple(links),
        explicit_libraries=tuple(explicit),
        explicit_links=tuple(explicit_links),
        binaries=tuple(scan.binaries(BINARIES, library_dirs)),
        firmware=tuple(scan.firmware()),
        ipc=tuple(scan.ipc()),
        graphics=tuple(graphics),
        graphics_links=tuple(graphics_links),
        control_nodes=nodes.control,
        gpu_nodes=nodes.gpus,
        cap_nodes=nodes.caps,
        other_nodes=nodes.other,
        mig_minors=mig.minors,
        mig_minors_malformed=mig.malformed,
        drm=tuple(drm),
        drm_links=tuple(drm_links),
        ldconfig=None if ldconfig is None else str(ldconfig),
    )


def gather(
    driver_root: Path, dev_root: Path, mode: Mode, *, search: SearchPaths = SearchPaths()
) -> GatheredNode:
    """Read NVML (nvml mode), then scan the driver root and the dev root once."""
    existing_root("--driver-root", driver_root)
    existing_root("--dev-root", dev_root)
    nvml = None
    if mode is Mode.NVML:
        from ctk.host.nvml import read_nvml

        nvml = read_nvml(driver_root, search.libraries)
        version = nvml.driver_version
    else:
        found = driver_version_from_files(driver_root, search.libraries)
        if found is None:
            raise CtkError(
                f"no NVIDIA driver libraries (libcuda.so.<version>) found under {driver_root}",
                hint="install the driver, or pass --driver-root where it is mounted",
            )
        version = found
    bus_ids = [g.sysfs_bus_id for g in nvml.gpus] if nvml else []
    facts = read_driver(
        driver_root,
        dev_root,
        version=version,
        bus_ids=bus_ids,
        search=search,
    )
    return GatheredNode(nvml=nvml, driver=facts, driver_version=version)
