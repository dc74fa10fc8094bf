"""Toolkit, container engine and kubelet facts."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ctk import toml_compat as tomllib

if TYPE_CHECKING:
    from ctk.runtime_config.imports import ImportedFiles

from ctk.doctor.facts import (
    LDCONFIG_CANDIDATES,
    TOOLKIT_CONFIG,
    TOOLKIT_CONFIG_ENV,
    ConfigFile,
    Distribution,
    EngineFacts,
    RuntimeEntry,
    ToolkitFacts,
    Unavailable,
)
from ctk.host.facts.gatherer import (
    BINARIES,
    BINARY_DIRS,
    CONTAINERD_CONFIGS,
    DISTRIBUTION_UNIT_DIRS,
    DISTRIBUTIONS,
    GPU_OPERATOR_PATHS,
    OCI_HOOKS,
    PACKAGE_PREFIXES,
    Gatherer,
)
from ctk.host.packages import DPKG_STATUS, engine_release, parse_dpkg_status
from ctk.runtime_config.engines import ENGINES, Runtime

# --- toolkit ------------------------------------------------------------------------------


def installed_packages(g: Gatherer) -> dict[str, str]:
    """Every package dpkg lists as installed (name -> version): /var/lib/dpkg/status is read and
    parsed once per gather, however many steps (the toolkit, each engine) look in it."""
    if g.dpkg_packages is None:
        g.dpkg_packages = parse_dpkg_status(g.text(DPKG_STATUS) or "")
    return g.dpkg_packages


def read_toml_file(g: Gatherer, path: str) -> ConfigFile:
    """A TOML file: data, or the parse error with line and column."""
    readable = g.readable(path)
    if readable is None:
        return ConfigFile(path=path)
    host = g.host(path)
    if host is not None and host.exists() and not host.is_file():
        what = "a directory" if host.is_dir() else "not a regular file"
        return ConfigFile(path=path, exists=True, error=f"{what}; remove it first")
    if not readable:
        return ConfigFile(path=path, exists=True, needs_root=True)
    try:
        data = tomllib.loads(g.text(path) or "")
    except tomllib.TOMLDecodeError as exc:
        return ConfigFile(path=path, exists=True, error=str(exc))
    except (ValueError, RecursionError) as exc:  # a 5,000-digit integer, 100,000 nested arrays
        return ConfigFile(path=path, exists=True, error=_hostile(exc))
    return ConfigFile(path=path, exists=True, data=data)


def _hostile(exc: BaseException) -> str:
    """A parse error for input the parser gives up on outside its grammar."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc).split(";")[0]  # "Exceeds the limit (4300 digits) for integer ..."


def gather_toolkit(g: Gatherer, env: Mapping[str, str]) -> ToolkitFacts:
    """Binaries, packages, config.toml and OCI hooks of the NVIDIA Container Toolkit."""
    binaries = {}
    for name in BINARIES:
        for directory in ("/snap/bin", *BINARY_DIRS) if name == "docker" else BINARY_DIRS:
            if g.exists(f"{directory}/{name}"):
                binaries[name] = f"{directory}/{name}"
                break
    config_path = env.get(TOOLKIT_CONFIG_ENV) or TOOLKIT_CONFIG  # set but empty: the default
    config = read_toml_file(g, config_path)
    cli = (config.data or {}).get("nvidia-container-cli", {})
    ldconfig = cli.get("ldconfig") if isinstance(cli, dict) else None
    wanted = [*LDCONFIG_CANDIDATES, *([ldconfig.lstrip("@")] if isinstance(ldconfig, str) else [])]
    existing = {path for path in wanted if g.exists(path)}
    return ToolkitFacts(
        binaries=binaries,
        packages={
            name: version
            for name, version in installed_packages(g).items()
            if name.startswith(PACKAGE_PREFIXES)
        },
        config=config,
        oci_hooks=tuple(path for path in OCI_HOOKS if g.exists(path)),
        existing_paths=frozenset(existing),
    )


# --- engines ------------------------------------------------------------------------------


def engine_version(g: Gatherer, runtime: Runtime) -> str | None:
    """The engine's version as its dpkg package records it (the file the toolkit step reads too);
    None where no package installed it (a static binary, an RPM node, a snap)."""
    return engine_release(installed_packages(g), runtime)


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
            source=runtime.source or None,
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
        config_version=view.version,
        cdi_spec_dirs=view.cdi_spec_dirs,
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

    facts = _engine(
        g=g, engine="docker", path=path, installed=installed, read=read, binaries=binaries
    )
    return replace(facts, version=engine_version(g, Runtime.DOCKER) if installed else None)


def containerd_files(g: Gatherer, main: str, imports: Iterable[str]) -> list[str]:
    """The files containerd loads after ``main`` (nested imports too), in containerd's order."""
    return list(containerd_loaded(g, main, imports).files)


def containerd_loaded(g: Gatherer, main: str, imports: Iterable[str]) -> ImportedFiles:
    """`containerd_files`, with the imported files that are missing or unreadable."""
    from ctk.runtime_config import imports as resolver

    def imports_of(path: str) -> list[str] | None:
        text = list(imports) if path == main else g.text(path)
        return text if isinstance(text, list) else None if text is None else _imports(path, text)

    def list_dir(directory: str) -> list[str] | None:
        host = g.host(directory)
        try:
            return os.listdir(host) if host is not None else None
        except OSError:
            return None

    return resolver.walk(main, imports_of, list_dir)


def _imports(path: str, text: str) -> list[str]:
    """A file's `imports`, or none when it cannot be read as a config (reported elsewhere)."""
    from ctk.errors import CtkError
    from ctk.runtime_config.imports import imports_in

    try:
        return imports_in(path, text)
    except CtkError:
        return []


def gather_containerd(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts:
    """containerd's merged config (main file plus imports) and its drop-ins."""
    from ctk.runtime_config.inspect import PluginMerge, inspect_containerd, stale_copy

    main, managed = str(ENGINES[Runtime.CONTAINERD].config_path), None
    for path, distribution in CONTAINERD_CONFIGS:
        if g.exists(path):
            main, managed = path, distribution
    installed = "containerd" in binaries or g.exists(main) or managed is not None
    root_only: list[str] = []  # imported files only root can read (a drop-in made 0600)
    release = engine_version(g, Runtime.CONTAINERD) if installed else None
    copies: list[tuple[str, tuple[str, ...]]] = []  # ctk's drop-in with a copy, and how it differs

    def read() -> Any:
        text = g.text(main)
        if text is None:
            return None
        first = inspect_containerd([(main, text)])
        loaded = containerd_loaded(g, main, first.imports)
        root_only.extend(p for p in loaded.missing if g.readable(p) is False)
        files = [(main, text), *((p, g.text(p) or "") for p in loaded.files)]
        view = inspect_containerd(files, merge=PluginMerge.of(first.version or 2, release))
        copy = stale_copy(files)  # after the view: a malformed file was reported by it
        copies.extend([copy] if copy is not None else [])
        return view

    try:
        disabled = tomllib.loads(g.text(main) or "").get("disabled_plugins", [])
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        disabled = []
    cri_names = {"cri", "io.containerd.grpc.v1.cri"}
    cri_off = isinstance(disabled, list) and bool(cri_names & set(map(str, disabled)))
    facts = _engine(
        g=g, engine="containerd", path=main, installed=installed, read=read, binaries=binaries
    )
    if root_only:  # containerd's merged view is unknown without them
        facts = EngineFacts(
            engine="containerd",
            installed=installed,
            config_path=main,
            config_exists=True,
            needs_root=True,
            root_only=root_only[0],
        )
    from ctk.runtime_config.imports import entry_path

    drop_ins = tuple(g.glob(f"{_drop_in_dir(Runtime.CONTAINERD)}/*.toml"))
    # each entry as containerd resolves it: cleaned, a relative one joined to config.toml's folder
    imports = tuple(entry_path(main, i) for i in facts.imports)
    return replace(
        facts,
        drop_ins=drop_ins,
        managed_by=managed,
        imports=imports,
        cri_disabled=cri_off,
        version=release,
        drop_in_copy=copies[0] if copies else None,
    )


def gather_crio(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts:
    """CRI-O's crio.conf plus crio.conf.d drop-ins."""
    from ctk.runtime_config.inspect import inspect_crio

    main = str(ENGINES[Runtime.CRIO].config_path)
    drop_ins = g.glob(f"{_drop_in_dir(Runtime.CRIO)}/*")  # CRI-O reads every file there
    installed = "crio" in binaries or g.exists(main) or bool(drop_ins)

    def read() -> Any:
        files = [(p, g.text(p) or "") for p in [main, *drop_ins] if g.exists(p)]
        return inspect_crio(files) if files else None

    return _engine(g=g, engine="crio", path=main, installed=installed, read=read, binaries=binaries)


def _drop_in_dir(runtime: Runtime) -> str:
    drop_in = ENGINES[runtime].drop_in_path
    assert drop_in is not None  # containerd and CRI-O have one
    return str(drop_in.parent)


def gather_system_docker(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts:
    """The system Docker daemon's daemon.json."""
    path = str(ENGINES[Runtime.DOCKER].config_path)
    # daemon.json, not /etc/docker: containerd and podman nodes keep registry certificates in
    # /etc/docker/certs.d without any Docker
    installed = bool({"docker", "dockerd"} & set(binaries)) or g.exists(path)
    return gather_docker(g, path, binaries, installed=installed)


EngineFactsReader = Callable[[Gatherer, Mapping[str, str]], EngineFacts]
"""Reads one engine's facts, given the binaries found (name -> path)."""

ENGINE_FACTS: Final[Mapping[Runtime, EngineFactsReader]] = {
    Runtime.DOCKER: gather_system_docker,
    Runtime.CONTAINERD: gather_containerd,
    Runtime.CRIO: gather_crio,
}
"""How the doctor reads each engine's config; a new `Runtime` is one entry (a test looks)."""


def gather_rootless_docker(g: Gatherer, binaries: Mapping[str, str]) -> EngineFacts | None:
    """A rootless Docker daemon (a user unit `docker.service`) and its own daemon.json."""
    units = g.glob("/home/*/.config/systemd/user/docker.service") + g.glob(
        "/root/.config/systemd/user/docker.service"
    )
    if not units:
        return None
    home = units[0].split("/.config/")[0]
    facts = gather_docker(g, f"{home}/.config/docker/daemon.json", binaries, installed=True)
    # the user unit's defaults: XDG_CONFIG_HOME is ~/.config, XDG_RUNTIME_DIR /run/user/<uid>
    user_dirs = [f"{home}/.config/cdi"]
    uid = _uid_of_home(g.text("/etc/passwd") or "", home)
    if uid is not None:
        user_dirs.append(f"/run/user/{uid}/cdi")
    return replace(facts, user_cdi_dirs=tuple(user_dirs))


def _uid_of_home(passwd: str, home: str) -> int | None:
    """The uid of the /etc/passwd entry whose home directory is ``home`` (None: no such entry)."""
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and fields[5].rstrip("/") == home and fields[2].isdigit():
            return int(fields[2])
    return None


def gather_distribution(g: Gatherer) -> Distribution | None:
    """The distribution that runs containerd and the kubelet here (the one whose containerd
    config `gather_containerd` reads, else the one whose kubelet kubeconfig the node has), with
    the unit this node runs it as and the template an edit of its config belongs in."""
    found = [d for d in DISTRIBUTIONS if g.exists(d.containerd_config)] or [
        d for d in DISTRIBUTIONS if g.exists(d.kubeconfig)
    ]
    if not found:
        return None
    distribution = found[-1]  # as gather_containerd: the last config found is the one read
    unit = next(
        (
            name
            for name in distribution.units
            if any(g.exists(f"{d}/{name}.service") for d in DISTRIBUTION_UNIT_DIRS)
        ),
        distribution.units[0],
    )
    return replace(distribution, unit=unit, template=_template(g, distribution))


def _template(g: Gatherer, distribution: Distribution) -> str | None:
    """The node's template, else the one the distribution reads for the version it renders (a
    rendered `version = 3`: containerd 2.x, config-v3.toml.tmpl; else config.toml.tmpl)."""
    if not distribution.templates:
        return None
    present = [path for path in distribution.templates if g.exists(path)]
    if present:
        return present[0]
    try:
        version = tomllib.loads(g.text(distribution.containerd_config) or "").get("version")
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        version = None
    return distribution.templates[0 if version == 3 else -1]


def gpu_operator_trace(g: Gatherer) -> str | None:
    """The first of `GPU_OPERATOR_PATHS` the host has: the GPU Operator works on this node."""
    return next((path for path in GPU_OPERATOR_PATHS if g.exists(path)), None)


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
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    value = data.get("cgroupDriver") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
