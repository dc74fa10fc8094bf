"""`ctk cdi generate` and `ctk cdi refresh` (issue 3): gather the node, build the spec, write it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer import Option

from ctk.cdi.options import (
    DEFAULT_HOOKS,
    DEFAULT_KINDS,
    FeatureFlag,
    HookName,
    Mode,
    NameStrategy,
    SpecFormat,
)
from ctk.cli import compat
from ctk.cli.options import new_app
from ctk.enums import StrEnum
from ctk.errors import CtkError, UsageError
from ctk.host.hook_program import default_hook_path, hook_path_warning

if TYPE_CHECKING:  # the generator is imported when a command runs, not for `ctk --help`
    from ctk.cdi.generate import GenerateOptions
    from ctk.cdi.model import Spec
    from ctk.host.modes import CsvOptions

DEFAULT_OUTPUT = Path("/etc/cdi/nvidia.yaml")


class DiscoveryMode(StrEnum):
    """`--mode` as nvidia-ctk spells it (`auto`, its default, too)."""

    AUTO = "auto"
    NVML = "nvml"
    MANAGEMENT = "management"
    CSV = "csv"
    WSL = "wsl"
    IMEX = "imex"
    GDS = "gds"
    GDRCOPY = "gdrcopy"
    MOFED = "mofed"
    NVSWITCH = "nvswitch"

    def resolve(self, driver_root: Path, dev_root: Path) -> Mode:
        """The mode; `auto` is wsl on WSL2, csv on a Jetson without NVML, else nvml."""
        if self is not DiscoveryMode.AUTO:
            return Mode(self.value)
        from ctk.host.modes import detect_mode

        return detect_mode(driver_root, dev_root)


EXTENSIONS = {".yaml": SpecFormat.YAML, ".json": SpecFormat.JSON}
IMPLIED = {**EXTENSIONS, ".yml": SpecFormat.YAML}


def _spec_format(output: Path | None, requested: SpecFormat | None) -> SpecFormat:
    """The format: implied by the output's extension, else --format, else YAML.

    As nvidia-ctk: a --format that contradicts the extension is a warning, and the extension wins.
    """
    implied = None if output is None else IMPLIED.get(output.suffix.lower())
    if implied is None:
        return requested or SpecFormat.YAML
    if requested is not None and requested is not implied:
        compat.warn(
            f"--format {requested} does not match --output {output}; writing {implied} as the "
            "file name says"
        )
    return implied


def _spec_path(output: Path, spec_format: SpecFormat) -> Path:
    """``output``, with the format's extension added when it lacks .yaml or .json.

    CDI runtimes read only `*.yaml` and `*.json`: nvidia-ctk appends the extension to any other
    name (`nvidia.yml` becomes `nvidia.yml.yaml`), so ctk does too, and says so.
    """
    if output.suffix in EXTENSIONS:
        return output
    path = output.with_name(f"{output.name}.{spec_format.value}")
    compat.warn(
        f"--output {output}: CDI runtimes read only .yaml and .json files; writing {path}, as "
        "nvidia-ctk does"
    )
    return path


ENV = "NVIDIA_CTK_CDI_GENERATE"
"""The prefix of nvidia-ctk's environment variables for cdi generate's list flags."""


def _strategies(given: list[NameStrategy]) -> list[NameStrategy]:
    """--device-name-strategy, else NVIDIA_CTK_CDI_GENERATE_DEVICE_NAME_STRATEGIES."""
    if given:
        return given
    names = compat.env_list(f"{ENV}_DEVICE_NAME_STRATEGIES")
    choices = {s.value for s in NameStrategy}
    for name in names:
        if name not in choices:
            raise UsageError(
                f"{ENV}_DEVICE_NAME_STRATEGIES: invalid device name strategy: {name}",
                hint="choose from " + ", ".join(sorted(choices)),
            )
    return [NameStrategy(name) for name in names]


def _driver_root(given: Path | None) -> Path:
    """--driver-root (or NVIDIA_CTK_DRIVER_ROOT), else the toolkit config's root, else /."""
    if given is not None:
        return given
    from ctk.host import files
    from ctk.toolkit_config import DEFAULT_PATH, driver_root

    named = compat.global_options().config
    path = Path(named) if named else Path(DEFAULT_PATH)
    text = files.read_text(path, missing_ok=not named)
    root = None if text is None else driver_root(text, str(path))
    return Path(root) if root else Path("/")


def _check_output(output: Path) -> None:
    """Refuse an --output that cannot become a file, before the node is read."""
    if output.is_dir():
        raise UsageError(
            f"--output {output}: is a directory",
            hint=f"name the spec file, e.g. {output / 'nvidia.yaml'}",
        )
    for parent in output.parents:  # the nearest one that exists must be a directory
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(
                    f"--output {output}: {parent} is not a directory",
                    hint="choose a path whose parent directories are directories (missing ones "
                    "are created)",
                )
            return


def _check_link(output: Path) -> None:
    """Refuse an --output symlink whose target is missing or is not a CDI spec.

    The user named the link, not its target: a spec is written through a link only onto a
    spec, never onto another file, and never creates a missing target (or its directories).
    """
    if not output.is_symlink():
        return
    from ctk.cdi.refresh import read_spec
    from ctk.host import files

    target = Path(os.path.realpath(output))
    hint = "remove the link, or pass the path of the spec file itself"
    if not os.path.lexists(target) or target.is_symlink():
        raise CtkError(f"--output {output}: a symlink to {target}, which does not exist", hint=hint)
    if target.is_dir():
        return  # _check_output says so
    data = files.read_bytes(target, missing_ok=True)
    if data is not None and read_spec(data) is None:
        raise CtkError(
            f"--output {output}: a symlink to {target}, which is not a CDI spec; not replacing it",
            hint=hint,
        )


def _kind(vendor: str | None, class_: str | None, mode: Mode) -> str:
    from ctk.cdi.names import class_error, vendor_error

    vendor = vendor or DEFAULT_KINDS[mode].split("/")[0]
    class_ = class_ or DEFAULT_KINDS[mode].split("/")[1]
    for what, problem in (("vendor", vendor_error(vendor)), ("class", class_error(class_))):
        if problem is not None:
            raise UsageError(
                f"invalid --{what}: {problem}", hint="a CDI kind is vendor/class: nvidia.com/gpu"
            )
    return f"{vendor}/{class_}"


def _enabled_hooks(disabled: list[str], enabled: list[str]) -> frozenset[HookName]:
    names = {h.value for h in HookName}
    for flag, given in (("--disable-hook", disabled), ("--enable-hook", enabled)):
        for name in given:
            if name not in names and not (name == "all" and flag == "--disable-hook"):
                choices = ", ".join(sorted(names)) + (", all" if flag == "--disable-hook" else "")
                problem = "enabling all hooks is not supported" if name == "all" else "unknown hook"
                raise UsageError(f"{flag} {name}: {problem}", hint=f"choose from {choices}")
    hooks = set() if "all" in disabled else set(DEFAULT_HOOKS) - {HookName(n) for n in disabled}
    return frozenset(hooks | {HookName(n) for n in enabled})


def _features(given: list[str]) -> frozenset[FeatureFlag]:
    """`--feature-flag` values (repeatable or comma-separated), as nvidia-ctk names them."""
    names = [n.strip() for value in given for n in value.split(",") if n.strip()]
    known = {f.value for f in FeatureFlag}
    for name in names:
        if name not in known:
            raise UsageError(
                f"--feature-flag {name}: unknown feature flag",
                hint="choose from "
                + ", ".join(sorted(known - {FeatureFlag.ENABLE_COHERENT_ANNOTATIONS})),
            )
    if FeatureFlag.ENABLE_COHERENT_ANNOTATIONS in names:
        compat.warn(
            f"--feature-flag {FeatureFlag.ENABLE_COHERENT_ANNOTATIONS}: ignored; ctk writes no "
            "gpu.nvidia.com/coherent annotations or .coherent/.noncoherent specs"
        )
    return frozenset(FeatureFlag(n) for n in names if n != FeatureFlag.ENABLE_COHERENT_ANNOTATIONS)


def _search_paths(flag: str, given: list[str]) -> tuple[str, ...]:
    """Directory flags (repeatable or comma-separated): absolute dirs inside the driver root."""
    paths = tuple(p.strip() for value in given for p in value.split(",") if p.strip())
    for path in paths:
        if not path.startswith("/"):
            raise UsageError(
                f"{flag} {path}: must be an absolute path",
                hint="it is a directory as seen inside --driver-root, e.g. /usr/lib64",
            )
    return paths


def _options(
    *,
    mode: Mode,
    vendor: str | None,
    class_: str | None,
    strategies: list[NameStrategy],
    device_ids: list[str],
    no_all_device: bool,
    hook_path: str | None,
    disable_hook: list[str],
    enable_hook: list[str],
    ldconfig_path: str | None,
    feature_flags: list[str],
) -> GenerateOptions:
    from ctk.cdi.discover import HookProgram
    from ctk.cdi.generate import GenerateOptions

    hooks = _enabled_hooks(disable_hook, enable_hook)
    if hook_path is not None and "/" not in hook_path:  # a program name: nvidia-ctk finds it
        import shutil

        found = shutil.which(hook_path)
        if found is None:  # as nvidia-ctk: the usual place, said in a warning
            found = f"/usr/bin/{hook_path}"
            compat.warn(f"--hook-path {hook_path}: not found on PATH; using {found}")
        hook_path = os.path.abspath(found)
    if hook_path is not None and not os.path.isabs(hook_path):
        raise UsageError(
            f"--hook-path {hook_path}: must be an absolute path", hint="the runtime runs it"
        )
    return GenerateOptions(
        kind=_kind(vendor, class_, mode),
        mode=mode,
        strategies=tuple(dict.fromkeys(strategies or (NameStrategy.INDEX, NameStrategy.UUID))),
        device_ids=tuple(device_ids or ("all",)),
        all_device=not no_all_device and "none" not in device_ids,
        hooks=HookProgram(hook_path or "", hooks),  # "": found in _hook_program
        ldconfig_path=ldconfig_path,
        features=_features(feature_flags),
    )


def _hook_program(options: GenerateOptions, driver_root: Path) -> GenerateOptions:
    """``options`` with the hook program found (no --hook-path) or checked (warning)."""
    import dataclasses

    hooks = options.hooks
    if not hooks.enabled:
        return options  # no hook goes into the spec: nothing to look for
    if not hooks.path:
        return dataclasses.replace(
            options, hooks=dataclasses.replace(hooks, path=default_hook_path(driver_root))
        )
    warning = hook_path_warning(hooks.path, driver_root)
    if warning is not None:
        sys.stderr.write(f"warning: {warning}\n")
    return options


def _write(output: Path, text: str) -> None:
    from ctk.host import files

    files.write_atomic(output, text, mode=0o644, make_parents=True)
    target = files.write_target(output)
    try:
        os.chmod(target, 0o644)  # runtimes of any user must read it, whatever the old mode was
    except OSError as exc:
        raise CtkError(f"{target}: cannot set mode 0644: {exc.strerror}") from exc


def _generate(
    driver_root: Path,
    dev_root: Path,
    options: GenerateOptions,
    spec_format: SpecFormat,
    *,
    library_search_paths: list[str],
    config_search_paths: list[str],
    csv: CsvOptions | None = None,
) -> tuple[Spec, str]:
    """Gather, build, render and check: the spec and its text."""
    from ctk.cdi.generate import build_spec, missing_core_libraries
    from ctk.host.driver import SearchPaths, gather

    search = SearchPaths(
        libraries=_search_paths(
            "--library-search-path",
            library_search_paths or compat.env_list(f"{ENV}_LIBRARY_SEARCH_PATHS"),
        ),
        configs=_search_paths(
            "--config-search-path",
            config_search_paths or compat.env_list(f"{ENV}_CONFIG_SEARCH_PATHS"),
        ),
    )
    if options.mode not in (Mode.NVML, Mode.MANAGEMENT):
        return _generate_class(
            driver_root, dev_root, options, spec_format, library_search=search.libraries, csv=csv
        )
    node = gather(driver_root, dev_root, options.mode, search=search)
    options = _hook_program(options, driver_root)
    spec = build_spec(node.nvml, node.driver, options, version=node.driver_version)
    for name in missing_core_libraries(node.driver, node.driver_version):  # libnvidia-ml only
        sys.stderr.write(
            f"warning: {name} (the NVML library) not found under driver root {driver_root}; "
            "nvidia-smi and other NVML tools will fail in containers\n"
        )
    return spec, _checked(spec, spec_format)


def _generate_class(
    driver_root: Path,
    dev_root: Path,
    options: GenerateOptions,
    spec_format: SpecFormat,
    *,
    library_search: tuple[str, ...],
    csv: CsvOptions | None,
) -> tuple[Spec, str]:
    """`_generate` for csv, wsl, imex, gds, gdrcopy, mofed and nvswitch."""
    from ctk.cdi.modes import build_class_spec, class_warnings
    from ctk.host.modes import CsvOptions, gather_class

    csv = csv or CsvOptions()
    facts = gather_class(
        driver_root, dev_root, options.mode, csv=csv, library_search=library_search
    )
    said = class_warnings(options, compat_container_root=csv.compat_container_root)
    for warning in (*facts.warnings, *said):
        sys.stderr.write(f"warning: {warning}\n")
    if facts.link_groups or facts.mounts:  # wsl and csv specs carry hooks
        options = _hook_program(options, driver_root)
    spec = build_class_spec(facts, options)
    return spec, _checked(spec, spec_format)


def _checked(spec: Spec, spec_format: SpecFormat) -> str:
    """The text of ``spec`` once that very text passed `ctk cdi validate`'s checks: an invalid
    spec is never written."""
    from ctk.cdi.serialize import render
    from ctk.cdi.validate import validate_text

    text = render(spec, spec_format)
    report = validate_text(text, f"nvidia.{spec_format.value}")
    if not report.valid:
        first = report.errors[0]
        raise CtkError(
            f"the generated spec is invalid ({first.rule}: {first.message}); nothing was written",
            hint="this is a bug in ctk: report it with the output of --debug",
        )
    return text


def _summary(spec: Spec) -> str:
    count = len(spec.devices)
    return f"cdiVersion {spec.cdi_version}, kind {spec.kind}, {count} device{'s' * (count != 1)}"


# Options as Annotated aliases (ctk/cli/options.py). A repeatable option's default is `[]` in the
# signature, as typer wants it (ruff's B006 is silenced on those lines: typer builds a new list,
# and the command never mutates it).
OUTPUT_ENV = "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH"
Output = Annotated[
    str | None,
    Option(
        "--output",
        "-o",
        envvar=OUTPUT_ENV,
        help="Write here (.yaml or .json; '' is stdout) [default: stdout].",
    ),
]
RefreshOutput = Annotated[
    str | None,
    Option(
        "--output",
        "-o",
        envvar=OUTPUT_ENV,
        help=f"The spec to refresh [default: {DEFAULT_OUTPUT}].",
    ),
]

RefreshJson = Annotated[
    bool,
    Option(
        "--json",
        help="Print the outcome and the diff of the old and new spec as JSON.",
    ),
]

DriverRootOption = Annotated[
    Path | None,
    Option(
        "--driver-root",
        envvar="NVIDIA_CTK_DRIVER_ROOT",
        help="Where the driver files are [default: nvidia-container-cli.root of --config, else /].",
    ),
]
DevRootOption = Annotated[
    Path | None,
    Option(
        "--dev-root",
        envvar="NVIDIA_CTK_DEV_ROOT",
        help="Where /dev, /proc and /sys are [default: the driver root].",
    ),
]
FormatOption = Annotated[
    SpecFormat | None,
    Option(
        "--format",
        envvar="NVIDIA_CTK_CDI_GENERATE_OUTPUT_FORMAT",
        case_sensitive=False,
        help="yaml or json [default: from --output, else yaml].",
    ),
]
ModeOption = Annotated[
    DiscoveryMode,
    Option(
        "--mode",
        "--discovery-mode",
        envvar="NVIDIA_CTK_CDI_GENERATE_MODE",
        case_sensitive=False,
        help="How devices are found: nvml, management (device nodes only), csv (Jetson), wsl, or "
        "one device class: imex, gds, gdrcopy, mofed, nvswitch; auto: wsl on WSL2, csv on a "
        "Jetson without NVML, else nvml.",
    ),
]
Strategies = Annotated[
    list[NameStrategy],
    Option(
        "--device-name-strategy",
        help="Device names (repeatable) [default: index and uuid].",
    ),
]
DeviceIds = Annotated[
    list[str],
    Option(
        "--device-id",
        "--device-ids",
        "--device",
        "--devices",
        help="Only these devices: index, i:j, UUID, all, none.",
    ),
]
NoAllDevice = Annotated[
    bool,
    Option(
        "--no-all-device",
        envvar="NVIDIA_CTK_CDI_GENERATE_NO_ALL_DEVICE",
        help="Leave out the `all` device.",
    ),
]
Vendor = Annotated[
    str | None,
    Option(
        "--vendor",
        "--cdi-vendor",
        envvar="NVIDIA_CTK_CDI_GENERATE_VENDOR",
        help="The CDI vendor [default: nvidia.com; in management mode: management.nvidia.com].",
    ),
]
ClassOption = Annotated[
    str | None,
    Option(
        "--class",
        "--cdi-class",
        envvar="NVIDIA_CTK_CDI_GENERATE_CLASS",
        help="The CDI class [default: gpu; imex-channel, gds, gdrcopy, mofed, nvswitch in the mode "
        "of that name].",
    ),
]
CsvFiles = Annotated[
    list[str],
    Option(
        "--csv.file",
        help="csv mode: a CSV file of mount specifications (repeatable) [default: devices.csv, "
        "drivers.csv, l4t.csv in /etc/nvidia-container-runtime/host-files-for-container.d under "
        "the driver root].",
    ),
]
CsvIgnorePatterns = Annotated[
    list[str],
    Option(
        "--csv.ignore-pattern",
        help="csv mode: leave out sym entries matching this glob (`**/name` matches the name).",
    ),
]
CsvCompatRoot = Annotated[
    str | None,
    Option(
        "--csv.compat-container-root",
        help="csv mode: accepted for nvidia-ctk, with a warning: ctk adds no CUDA compat hook in "
        "csv mode.",
    ),
]
HookPath = Annotated[
    str | None,
    Option(
        "--hook-path",
        "--nvidia-cdi-hook-path",
        "--nvidia-ctk-path",
        envvar="NVIDIA_CTK_CDI_HOOK_PATH",
        help="Hook program in the spec, a host path [default: nvidia-cdi-hook on PATH, else the "
        "native ctk-hook that `ctk install` put in /usr/local/libexec/ctk].",
    ),
]
DisableHooks = Annotated[
    list[str],
    Option(
        "--disable-hook",
        "--disable-hooks",
        help="Leave out a hook (repeatable, or all).",
    ),
]
EnableHooks = Annotated[
    list[str],
    Option(
        "--enable-hook",
        "--enable-hooks",
        help="Add a hook that is off by default (chmod).",
    ),
]
LdconfigPath = Annotated[
    str | None,
    Option(
        "--ldconfig-path",
        envvar="NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH",
        help="ldconfig for the update-ldcache hook.",
    ),
]
FeatureFlags = Annotated[
    list[str],
    Option(
        "--feature-flag",
        "--feature-flags",
        help="nvidia-ctk feature flags (repeatable or comma-separated): "
        "no-additional-gids-for-device-nodes, disable-ipc-discoverer, "
        "enable-explicit-driver-libraries.",
    ),
]
ConfigSearchPaths = Annotated[
    list[str],
    Option(
        "--config-search-path",
        help="Directories in the driver root searched for graphics configs instead of /etc, "
        "/usr/local/share and /usr/share (repeatable).",
    ),
]
LibrarySearchPaths = Annotated[
    list[str],
    Option(
        "--library-search-path",
        help="Directories in the driver root searched first for driver libraries (repeatable).",
    ),
]


def register(app: typer.Typer) -> None:
    """Add generate and refresh to the cdi group."""

    @app.command("generate")
    def generate(
        *,
        output: Output = None,
        spec_format: FormatOption = None,
        mode: ModeOption = DiscoveryMode.AUTO,
        driver_root: DriverRootOption = None,
        dev_root: DevRootOption = None,
        strategies: Strategies = [],  # noqa: B006
        device_ids: DeviceIds = [],  # noqa: B006
        no_all_device: NoAllDevice = False,
        vendor: Vendor = None,
        class_: ClassOption = None,
        hook_path: HookPath = None,
        disable_hook: DisableHooks = [],  # noqa: B006
        enable_hook: EnableHooks = [],  # noqa: B006
        ldconfig_path: LdconfigPath = None,
        feature_flags: FeatureFlags = [],  # noqa: B006
        library_search_paths: LibrarySearchPaths = [],  # noqa: B006
        config_search_paths: ConfigSearchPaths = [],  # noqa: B006
        csv_files: CsvFiles = [],  # noqa: B006
        csv_ignore_patterns: CsvIgnorePatterns = [],  # noqa: B006
        csv_compat_container_root: CsvCompatRoot = None,
    ) -> None:
        """Write a CDI spec for every GPU and MIG device of this node."""
        from ctk.host.modes import CsvOptions

        path = Path(output) if output else None  # --output="" is stdout, as in nvidia-ctk
        fmt = _spec_format(path, spec_format)
        if path is not None:
            _check_output(path)  # a directory (/etc/cdi) is refused before a suffix is added
            path = _spec_path(path, fmt)
            _check_link(path)
            _check_output(path)
        root = _driver_root(driver_root)
        options = _options(
            mode=mode.resolve(root, dev_root or root),
            vendor=vendor,
            class_=class_,
            strategies=_strategies(strategies),
            device_ids=device_ids or compat.env_list(f"{ENV}_DEVICE_IDS"),
            no_all_device=no_all_device,
            hook_path=hook_path,
            disable_hook=disable_hook or compat.env_list(f"{ENV}_DISABLED_HOOKS"),
            enable_hook=enable_hook or compat.env_list(f"{ENV}_ENABLED_HOOKS"),
            ldconfig_path=ldconfig_path,
            feature_flags=feature_flags or compat.env_list(f"{ENV}_FEATURE_FLAGS"),
        )
        spec, text = _generate(
            root,
            dev_root or root,
            options,
            fmt,
            library_search_paths=library_search_paths,
            config_search_paths=config_search_paths,
            csv=CsvOptions(
                tuple(csv_files or compat.env_list(f"{ENV}_CSV_FILES")),
                tuple(csv_ignore_patterns or compat.env_list(f"{ENV}_CSV_IGNORE_PATTERNS")),
                csv_compat_container_root,
            ),
        )
        if path is None:
            sys.stdout.write(text)
            return
        _write(path, text)
        compat.info(f"wrote {path} ({_summary(spec)})")

    @app.command("refresh")
    def refresh(
        *,
        output: RefreshOutput = None,
        mode: ModeOption = DiscoveryMode.AUTO,
        driver_root: DriverRootOption = None,
        dev_root: DevRootOption = None,
        strategies: Strategies = [],  # noqa: B006
        vendor: Vendor = None,
        class_: ClassOption = None,
        hook_path: HookPath = None,
        disable_hook: DisableHooks = [],  # noqa: B006
        enable_hook: EnableHooks = [],  # noqa: B006
        ldconfig_path: LdconfigPath = None,
        feature_flags: FeatureFlags = [],  # noqa: B006
        library_search_paths: LibrarySearchPaths = [],  # noqa: B006
        config_search_paths: ConfigSearchPaths = [],  # noqa: B006
        csv_files: CsvFiles = [],  # noqa: B006
        csv_ignore_patterns: CsvIgnorePatterns = [],  # noqa: B006
        csv_compat_container_root: CsvCompatRoot = None,
        as_json: RefreshJson = False,
    ) -> None:
        """Rewrite the spec only if it would change, and say what changed.

        A file that is not a readable spec is replaced (a refresh at boot repairs it).
        """
        from ctk.host.modes import CsvOptions

        output_path = Path(output) if output else DEFAULT_OUTPUT
        fmt = _spec_format(output_path, None)
        _check_output(output_path)  # a directory (/etc/cdi) is refused before a suffix is added
        output_path = _spec_path(output_path, fmt)
        _check_link(output_path)
        _check_output(output_path)
        root = _driver_root(driver_root)
        options = _options(
            mode=mode.resolve(root, dev_root or root),
            vendor=vendor,
            class_=class_,
            strategies=_strategies(strategies),
            device_ids=[],
            no_all_device=False,
            hook_path=hook_path,
            disable_hook=disable_hook or compat.env_list(f"{ENV}_DISABLED_HOOKS"),
            enable_hook=enable_hook or compat.env_list(f"{ENV}_ENABLED_HOOKS"),
            ldconfig_path=ldconfig_path,
            feature_flags=feature_flags or compat.env_list(f"{ENV}_FEATURE_FLAGS"),
        )
        spec, text = _generate(
            root,
            dev_root or root,
            options,
            fmt,
            library_search_paths=library_search_paths,
            config_search_paths=config_search_paths,
            csv=CsvOptions(
                tuple(csv_files or compat.env_list(f"{ENV}_CSV_FILES")),
                tuple(csv_ignore_patterns or compat.env_list(f"{ENV}_CSV_IGNORE_PATTERNS")),
                csv_compat_container_root,
            ),
        )
        from ctk.cdi.refresh import plan_refresh, refresh_json, refresh_message
        from ctk.cdi.serialize import spec_data
        from ctk.host import files

        plan = plan_refresh(files.read_bytes(output_path, missing_ok=True), text, spec_data(spec))
        if plan.written:
            _write(output_path, text)
        if as_json:
            from ctk.cli.render import dump_json

            summary = {
                "cdiVersion": spec.cdi_version,
                "kind": spec.kind,
                "devices": len(spec.devices),
            }
            dump_json(refresh_json(plan, str(output_path), summary), sys.stdout)
        else:
            compat.info(refresh_message(plan, str(output_path), _summary(spec)))


app = new_app()
register(app)
