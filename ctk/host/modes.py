"""Gather for the discovery modes other than nvml and management: one device class each.

- gds, gdrcopy, mofed, nvswitch: their device nodes (`ctk.cdi.options.NODE_CLASSES`); gds also
  mounts `/run/udev` and `/etc/cufile.json` when it has nodes.
- imex: the channel nodes under `/dev/nvidia-caps-imex-channels`.
- wsl: `/dev/dxg`, `libdxcore.so` from `/usr/lib/wsl/lib`, and the NVIDIA driver store.
  nvidia-ctk loads libdxcore.so and asks it for each adapter's driver store; WSL2 shows those
  stores (Windows' `DriverStore/FileRepository/<package>`) as `/usr/lib/wsl/drivers/<package>`,
  and NVIDIA's display driver packages are named `nv*.inf_amd64_*`. ctk finds the same
  directory from those files, without loading a Windows library: libdxcore.so must be there (no
  dxcore, no store), and the store is the `nv*.inf_amd64_*` directory that holds
  `libcuda.so.1.1`. `/usr/lib/wsl/drivers` shows the whole Windows driver store, so packages of
  earlier drivers can be there too: the active one is the one whose `libcuda.so.1.1` is the
  copy the driver installed in `/usr/lib/wsl/lib`, else (with a warning) the newest.
- csv (Jetson/Tegra): what the CSV files list: `dev` nodes, `dir` directories, `lib` files and
  `sym` links (mounted as the files they lead to, the links recreated by a hook).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ctk.cdi.options import IMEX_CHANNELS, NODE_CLASSES, Mode
from ctk.errors import CtkError
from ctk.host import files
from ctk.host.devnodes import char_devices, dev_entries, scan_dir
from ctk.host.root import HostRoot, PathEscapeError, existing_root
from ctk.node import CharDevice, HostFile

if TYPE_CHECKING:  # made by gather_class only: management mode imports this module too
    from ctk.node.classes import ClassFacts

GDS_MOUNTS = (("/run/udev", stat.S_ISDIR), ("/etc/cufile.json", stat.S_ISREG))
DXG = "/dev/dxg"
WSL_LIBRARIES = "/usr/lib/wsl/lib"
WSL_DRIVER_STORES = "/usr/lib/wsl/drivers"
WSL_DXCORE = "libdxcore.so"
WSL_STORE_PATTERN = "nv*.inf_amd64_*"  # NVIDIA's driver packages in Windows' DriverStore
WSL_CUDA = "libcuda.so.1.1"  # the CUDA driver library every NVIDIA store holds
WSL_STORE_FILES = (
    WSL_CUDA,
    "libcuda_loader.so",
    "libnvidia-ptxjitcompiler.so.1",
    "libnvidia-ml.so.1",
    "libnvidia-ml_loader.so",
    "libnvdxgdmal.so.1",
    "nvcubins.bin",
    "nvidia-smi",
)
WSL_STORE_PATTERNS = ("*.so*", "*.bin", "*.dll")  # the store's other files, mounted too
WSL_SMI_LINK = "/usr/bin/nvidia-smi"
CSV_DIR = "/etc/nvidia-container-runtime/host-files-for-container.d"
CSV_DEFAULT_FILES = tuple(f"{CSV_DIR}/{name}" for name in ("devices.csv", "drivers.csv", "l4t.csv"))
CSV_KINDS = ("dev", "dir", "lib", "sym")
TEGRA_RELEASE = "/etc/nv_tegra_release"
# driver libraries that programs open by a development name (nvidia-ctk's extra links)
DRIVER_DOT_SO_LINKS = (
    ("libcuda.so.*.*", "libcuda.so.1", "libcuda.so"),
    ("libGLX_nvidia.so.*.*", None, "libGLX_indirect.so.0"),
    ("libnvidia-opticalflow.so.*.*", "libnvidia-opticalflow.so.1", "libnvidia-opticalflow.so"),
)


@dataclass(frozen=True, slots=True)
class CsvOptions:
    """`--csv.file` (host paths; none: the standard files inside the driver root),
    `--csv.ignore-pattern` (sym entries left out: a glob of the path, `**/` for the name) and
    `--csv.compat-container-root` (taken, and said to change nothing: see `class_warnings`)."""

    files: tuple[str, ...] = ()
    ignore_patterns: tuple[str, ...] = ()
    compat_container_root: str | None = None


def gather_class(
    driver_root: Path,
    dev_root: Path,
    mode: Mode,
    *,
    csv: CsvOptions = CsvOptions(),
    library_search: tuple[str, ...] = (),
) -> ClassFacts:
    """What ``mode`` finds under the roots (each root must be a directory)."""
    from ctk.node.classes import ClassFacts

    driver = existing_root("--driver-root", driver_root)
    dev = existing_root("--dev-root", dev_root)
    base = ClassFacts(driver_root=str(driver_root), dev_root=str(dev_root))
    if mode in NODE_CLASSES:
        nodes = matching_nodes(dev, NODE_CLASSES[mode])
        mounted = _gds_mounts(driver) if mode is Mode.GDS and nodes else ()
        return replace(base, nodes=nodes, device_mounts=mounted)
    if mode is Mode.IMEX:
        return replace(base, nodes=matching_nodes(dev, (f"{IMEX_CHANNELS}/channel*",)))
    if mode is Mode.WSL:
        return _wsl(driver, dev, base)
    if mode is Mode.CSV:
        return _csv(driver, dev, base, csv, library_search)
    raise CtkError(f"--mode {mode}: not a device-class mode")  # a caller's bug


def detect_mode(driver_root: Path, dev_root: Path) -> Mode:
    """`--mode auto`: wsl where `/dev/dxg` and `libdxcore.so` are, csv on a Tegra board whose
    driver has no NVML library (a Jetson), else nvml (as nvidia-ctk resolves its platform)."""
    from ctk.host.ldcache import find_library

    if not (driver_root.is_dir() and dev_root.is_dir()):
        return Mode.NVML  # whose gatherer says what is wrong with the roots
    driver, dev = HostRoot(driver_root), HostRoot(dev_root)
    if char_devices(dev, (DXG,)) and _found(driver, f"{WSL_LIBRARIES}/{WSL_DXCORE}"):
        return Mode.WSL
    tegra = _found(driver, TEGRA_RELEASE) or _soc_family(dev).lower().startswith("tegra")
    if tegra and find_library(driver_root, "libnvidia-ml.so.1") is None:
        return Mode.CSV
    return Mode.NVML


def _soc_family(dev: HostRoot) -> str:
    try:
        path = dev.path("/sys/devices/soc0/family")
        return files.read_text(path, missing_ok=True, limit=files.PROC_LIMIT) or ""
    except CtkError:
        return ""


def _glob(root: HostRoot, pattern: str) -> list[str]:
    """Paths inside the root matching ``pattern`` (a glob in its last part only), by name."""
    directory, name = posixpath.split(pattern)
    if not any(c in name for c in "*?["):
        return [pattern]
    return [
        p for p in dev_entries(root, directory) if fnmatch.fnmatchcase(p.rsplit("/", 1)[1], name)
    ]


def matching_nodes(dev: HostRoot, patterns: Iterable[str]) -> tuple[CharDevice, ...]:
    """The character devices matching any of ``patterns``, each once."""
    paths = dict.fromkeys(p for pattern in patterns for p in _glob(dev, pattern))
    return tuple(char_devices(dev, paths))


def _found(
    root: HostRoot, path: str, kind: Callable[[int], bool] = stat.S_ISREG
) -> HostFile | None:
    """``path`` as a mount when it resolves inside the root to a ``kind`` of file."""
    try:
        host = root.path(path)
        mode = os.stat(host).st_mode
    except (OSError, PathEscapeError):
        return None
    if not kind(mode):
        return None
    return HostFile(container_path=str(root.relative(host)), host_path=str(host))


def _gds_mounts(driver: HostRoot) -> tuple[HostFile, ...]:
    found = (_found(driver, path, kind) for path, kind in GDS_MOUNTS)
    return tuple(f for f in found if f is not None)


# --- wsl ---------------------------------------------------------------------------------------


def _wsl(driver: HostRoot, dev: HostRoot, base: ClassFacts) -> ClassFacts:
    dxg = char_devices(dev, (DXG,))
    if not dxg:
        raise CtkError(
            f"{DXG} not found under {base.dev_root}: not a WSL2 node",
            hint="--mode wsl is for WSL2 with NVIDIA's Windows driver; elsewhere use --mode nvml",
        )
    dxcore = _found(driver, f"{WSL_LIBRARIES}/{WSL_DXCORE}")
    if dxcore is None:
        raise CtkError(
            f"{WSL_DXCORE} not found in {driver.path(WSL_LIBRARIES)}: without dxcore the NVIDIA "
            "driver store cannot be found",
            hint="WSL2 provides it from the Windows host: update WSL (`wsl --update` on "
            "Windows), or pass the right --driver-root",
        )
    store, warning = _driver_store(driver)
    required = [f for f in (_found(driver, f"{store}/{n}") for n in WSL_STORE_FILES) if f]
    others = [
        f
        for pattern in WSL_STORE_PATTERNS
        for path in _glob(driver, f"{store}/{pattern}")
        if posixpath.basename(path) not in WSL_STORE_FILES
        for f in (_found(driver, path),)
        if f is not None
    ]
    smi = [
        f.container_path for f in required if posixpath.basename(f.container_path) == "nvidia-smi"
    ]
    links = ((smi[0], WSL_SMI_LINK),) if smi else ()
    return replace(
        base,
        nodes=tuple(dxg),
        # the store first: the ldcache hook lists it before /usr/lib/wsl/lib, as nvidia-ctk does
        mounts=tuple(dict.fromkeys([*required, dxcore, *others])),
        link_groups=(links,),
        warnings=() if warning is None else (warning,),
    )


def _driver_store(driver: HostRoot) -> tuple[str, str | None]:
    """The NVIDIA driver store as seen inside the driver root (`/usr/lib/wsl/drivers/nv...`),
    and a warning when it had to be guessed among several."""
    directory = driver.path(WSL_DRIVER_STORES)
    entries = [e for e in scan_dir(directory) if e.is_dir()]
    names = [e.name for e in entries if fnmatch.fnmatchcase(e.name.lower(), WSL_STORE_PATTERN)]
    stores = [f"{WSL_DRIVER_STORES}/{n}" for n in names]
    cudas = {s: f for s in stores if (f := _found(driver, f"{s}/{WSL_CUDA}")) is not None}
    if len(cudas) == 1:
        return next(iter(cudas)), None
    if cudas:
        return _active_store(driver, cudas)
    if stores:
        raise CtkError(
            f"the NVIDIA driver store {driver.path(stores[0])} holds no {WSL_CUDA}"
            + (f" (nor do {len(stores) - 1} others)" if len(stores) > 1 else ""),
            hint="reinstall NVIDIA's Windows driver; its WSL support puts the CUDA library there",
        )
    others = ", ".join(e.name for e in entries) or "nothing"
    raise CtkError(
        f"no NVIDIA driver store (a {WSL_STORE_PATTERN} directory) in {directory}; found: {others}",
        hint="install NVIDIA's Windows driver on the Windows host (WSL2 shows its driver store "
        "here), or pass the right --driver-root",
    )


def _active_store(driver: HostRoot, cudas: dict[str, HostFile]) -> tuple[str, str | None]:
    """Of several NVIDIA stores, the one whose libcuda.so.1.1 the driver copied to
    /usr/lib/wsl/lib; else the one with the newest libcuda.so.1.1, said in a warning."""
    installed = _found(driver, f"{WSL_LIBRARIES}/{WSL_CUDA}")
    if installed is not None:
        same = [s for s, f in cudas.items() if _same_bytes(installed.host_path, f.host_path)]
        if len(same) == 1:
            return same[0], None
    newest = max(cudas, key=lambda s: (os.stat(cudas[s].host_path).st_mtime_ns, s))
    return newest, (
        f"{len(cudas)} NVIDIA driver stores in {driver.path(WSL_DRIVER_STORES)} and none is "
        f"the one {WSL_LIBRARIES}/{WSL_CUDA} was copied from; using the newest, "
        f"{posixpath.basename(newest)}"
    )


def _same_bytes(first: str, second: str) -> bool:
    """Whether two regular files hold the same bytes (read in blocks: libcuda is large)."""
    try:
        if os.stat(first).st_size != os.stat(second).st_size:
            return False
        with files.open_regular(Path(first)) as one, files.open_regular(Path(second)) as two:
            while True:
                block = one.read(1 << 20)
                if block != two.read(1 << 20):
                    return False
                if not block:
                    return True
    except (OSError, CtkError):
        return False


# --- csv -------------------------------------------------------------------------------------


def _csv(
    driver: HostRoot,
    dev: HostRoot,
    base: ClassFacts,
    options: CsvOptions,
    library_search: tuple[str, ...],
) -> ClassFacts:
    entries, warnings = _csv_entries(driver, options.files)
    by_kind: dict[str, list[str]] = {kind: [] for kind in CSV_KINDS}
    for kind, path in entries:
        by_kind[kind].append(path)
    symlinks = [p for p in by_kind["sym"] if not _ignored(p, options.ignore_patterns)]
    search = (*library_search, "/")
    libraries = _resolved_files(driver, by_kind["lib"], search)
    linked = _resolved_files(driver, symlinks, search)
    directories = [_found(driver, p, stat.S_ISDIR) for p in _expand(driver, by_kind["dir"])]
    tegra = _found(driver, TEGRA_RELEASE)
    mounts = [f for f in (*directories, *libraries, *linked, tegra) if f is not None]
    return replace(
        base,
        nodes=matching_nodes(dev, by_kind["dev"]),
        mounts=tuple(dict.fromkeys(mounts)),
        link_groups=(
            tuple(dict.fromkeys(_driver_links(driver, libraries))),
            tuple(dict.fromkeys(_chain_links(driver, symlinks, search))),
        ),
        warnings=tuple(warnings),
    )


def _csv_entries(
    driver: HostRoot, given: tuple[str, ...]
) -> tuple[list[tuple[str, str]], list[str]]:
    """(kind, path) of every valid line of the CSV files, and a warning per skipped file."""
    paths = [Path(p) for p in given] or [driver.path(p) for p in CSV_DEFAULT_FILES]
    entries: list[tuple[str, str]] = []
    warnings = []
    for path in paths:
        try:
            text = files.read_text(path, missing_ok=True)
        except CtkError as exc:
            warnings.append(f"skipping CSV file {path}: {exc.message}")
            continue
        found = [e for e in map(parse_mount_spec, (text or "").splitlines()) if e is not None]
        if not found:
            problem = "no such file" if text is None else "no mount specifications"
            warnings.append(f"skipping CSV file {path}: {problem}")
        entries += found
    if not entries:
        raise CtkError(
            "no mount specifications in the CSV files: " + ", ".join(map(str, paths)),
            hint="pass --csv.file with the files of the board's L4T release (in "
            f"{CSV_DIR} on Jetson)",
        )
    return entries, warnings


def parse_mount_spec(line: str) -> tuple[str, str] | None:
    """`<kind>, <path>` (kind dev, dir, lib or sym), or None for anything else."""
    kind, comma, path = line.strip().partition(",")
    kind, path = kind.strip(), path.strip()
    return (kind, path) if comma and kind in CSV_KINDS and path else None


def _ignored(path: str, patterns: tuple[str, ...]) -> bool:
    for pattern in patterns:
        by_name = pattern.startswith("**/")
        target = posixpath.basename(path) if by_name else path
        if fnmatch.fnmatchcase(target, pattern.removeprefix("**/") if by_name else pattern):
            return True
    return False


def _expand(root: HostRoot, patterns: Iterable[str]) -> Iterator[str]:
    for pattern in patterns:
        yield from _glob(root, pattern)


def _resolved_files(
    root: HostRoot, patterns: Iterable[str], search: tuple[str, ...]
) -> list[HostFile]:
    """Each path that is (or leads to) a regular file, as the file it leads to, first found."""
    found = []
    for pattern in patterns:
        for base in search:
            joined = posixpath.join(base, pattern.lstrip("/"))
            hits = [f for f in (_found(root, p) for p in _glob(root, joined)) if f is not None]
            if hits:
                found += hits
                break
    return found


def _chain_links(
    root: HostRoot, patterns: Iterable[str], search: tuple[str, ...]
) -> Iterator[tuple[str, str]]:
    """(link target as written, link) for each link on the way from a sym entry to its file."""
    for pattern in patterns:
        for base in search:
            paths = _glob(root, posixpath.join(base, pattern.lstrip("/")))
            if not any(_found(root, p) for p in paths):
                continue
            for path in paths:
                yield from _chain(root, path)
            break


def _chain(root: HostRoot, path: str) -> Iterator[tuple[str, str]]:
    seen = set()
    while path not in seen:
        seen.add(path)
        try:
            target = os.readlink(root.path(posixpath.dirname(path)) / posixpath.basename(path))
        except (OSError, PathEscapeError):
            return  # a file, the end of the chain
        yield target, path
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))


def _driver_links(root: HostRoot, libraries: Iterable[HostFile]) -> Iterator[tuple[str, str]]:
    """The development and SONAME links nvidia-ctk adds for the driver's libraries.

    The SONAME is taken from the link beside the file that points at it (ctk reads no ELF
    headers): `libnvrm_gpu.so -> libnvrm_gpu.so.1`-style links are recreated in the container.
    """
    for library in libraries:
        directory, name = posixpath.split(library.container_path)
        for pattern, target, link in DRIVER_DOT_SO_LINKS:
            if fnmatch.fnmatchcase(name, pattern):
                yield target or name, posixpath.join(directory, link)
        if not fnmatch.fnmatchcase(name, "*.*.*"):
            continue
        links = _links_to(Path(library.host_path).parent)
        soname = max((n for n in links.get(name, ()) if name.startswith(n)), key=len, default=name)
        if soname != name:
            yield name, posixpath.join(directory, soname)
        dot_so = soname[: soname.find(".so") + 3] if ".so" in soname else ""
        if dot_so and dot_so != soname and any(dot_so in names for names in links.values()):
            yield soname, posixpath.join(directory, dot_so)


def _links_to(directory: Path) -> dict[str, list[str]]:
    """target name -> the names of the symlinks in ``directory`` that point straight at it."""
    found: dict[str, list[str]] = {}
    for entry in scan_dir(directory):
        if entry.is_symlink():
            try:
                found.setdefault(os.readlink(entry.path), []).append(entry.name)
            except OSError:
                continue
    return found
