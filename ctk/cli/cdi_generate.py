"""`ctk cdi generate` and `ctk cdi refresh` (issue 3): gather the node, build the spec, write it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ctk.cdi.options import (
    DEFAULT_HOOKS,
    DEFAULT_KINDS,
    FeatureFlag,
    HookName,
    Mode,
    NameStrategy,
    SpecFormat,
)
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


def _spec_format(output: Path | None, requested: SpecFormat | None) -> SpecFormat:
    if output is None:
        return requested or SpecFormat.YAML
    implied = EXTENSIONS.get(output.suffix)
    if implied is None:
        raise UsageError(
            f"--output {output}: a CDI spec file must end in .yaml or .json",
            hint="container runtimes ignore other files in /etc/cdi and /var/run/cdi",
        )
    if requested is not None and requested is not implied:
        raise UsageError(
            f"--format {requested} does not match --output {output}",
            hint=f"name the file {output.with_suffix('.' + requested.value)} or drop --format",
        )
    return implied


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
        if name == FeatureFlag.ENABLE_COHERENT_ANNOTATIONS:
            raise UsageError(
                f"--feature-flag {name}: not supported by ctk",
                hint="ctk writes no coherent/noncoherent specs; leave the flag out",
            )
    return frozenset(FeatureFlag(n) for n in names)


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
    from ctk.cdi.serialize import render
    from ctk.host.driver import SearchPaths, gather

    search = SearchPaths(
        libraries=_search_paths("--library-search-path", library_search_paths),
        configs=_search_paths("--config-search-path", config_search_paths),
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
    return spec, _checked(render(spec, spec_format), spec_format)


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
    from ctk.cdi.modes import build_class_spec
    from ctk.cdi.serialize import render
    from ctk.host.modes import CsvOptions, gather_class

    facts = gather_class(
        driver_root,
        dev_root,
        options.mode,
        csv=csv or CsvOptions(),
        library_search=library_search,
    )
    for warning in facts.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if facts.link_groups or facts.mounts:  # wsl and csv specs carry hooks
        options = _hook_program(options, driver_root)
    spec = build_class_spec(facts, options)
    return spec, _checked(render(spec, spec_format), spec_format)


def _checked(text: str, spec_format: SpecFormat) -> str:
    """``text`` after `ctk cdi validate`'s checks: an invalid spec is never written."""
    from ctk.cdi.validate import validate_text

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


OUTPUT = typer.Option(None, "--output", "-o", help="Write here (.yaml or .json) [default: stdout].")
REFRESH_OUTPUT = typer.Option(DEFAULT_OUTPUT, "--output", "-o", help="The spec to refresh.")


DRIVER_ROOT = typer.Option(Path("/"), "--driver-root", help="Where the driver files are.")
DEV_ROOT = typer.Option(
    None, "--dev-root", help="Where /dev, /proc and /sys are [default: the driver root]."
)
FORMAT = typer.Option(None, "--format", help="yaml or json [default: from --output, else yaml].")
MODE = typer.Option(
    DiscoveryMode.AUTO,
    "--mode",
    "--discovery-mode",
    help="How devices are found: nvml, management (device nodes only), csv (Jetson), wsl, or "
    "one device class: imex, gds, gdrcopy, mofed, nvswitch; auto: wsl on WSL2, csv on a "
    "Jetson without NVML, else nvml.",
)
STRATEGY = typer.Option(
    [], "--device-name-strategy", help="Device names (repeatable) [default: index and uuid]."
)
DEVICE_ID = typer.Option(
    [],
    "--device-id",
    "--device-ids",
    "--device",
    "--devices",
    help="Only these devices: index, i:j, UUID, all, none.",
)
NO_ALL = typer.Option(False, "--no-all-device", help="Leave out the `all` device.")
VENDOR = typer.Option(
    None,
    "--vendor",
    "--cdi-vendor",
    help="The CDI vendor [default: nvidia.com; in management mode: management.nvidia.com].",
)
CLASS = typer.Option(
    None,
    "--class",
    "--cdi-class",
    help="The CDI class [default: gpu; imex-channel, gds, gdrcopy, mofed, nvswitch in the mode "
    "of that name].",
)
CSV_FILE = typer.Option(
    [],
    "--csv.file",
    help="csv mode: a CSV file of mount specifications (repeatable) [default: devices.csv, "
    "drivers.csv, l4t.csv in /etc/nvidia-container-runtime/host-files-for-container.d under "
    "the driver root].",
)
CSV_IGNORE = typer.Option(
    [],
    "--csv.ignore-pattern",
    help="csv mode: leave out sym entries matching this glob (`**/name` matches the name).",
)
CSV_COMPAT = typer.Option(
    None,
    "--csv.compat-container-root",
    help="csv mode: accepted for nvidia-ctk; ctk adds no CUDA compat hook in csv mode.",
)
HOOK_PATH = typer.Option(
    None,
    "--hook-path",
    "--nvidia-cdi-hook-path",
    "--nvidia-ctk-path",
    help="Hook program in the spec, a host path [default: nvidia-cdi-hook on PATH, else the "
    "native ctk-hook that `ctk install` put in /usr/local/libexec/ctk].",
)
DISABLE_HOOK = typer.Option(
    [], "--disable-hook", "--disable-hooks", help="Leave out a hook (repeatable, or all)."
)
ENABLE_HOOK = typer.Option(
    [], "--enable-hook", "--enable-hooks", help="Add a hook that is off by default (chmod)."
)
LDCONFIG = typer.Option(None, "--ldconfig-path", help="ldconfig for the update-ldcache hook.")
FEATURE_FLAG = typer.Option(
    [],
    "--feature-flag",
    "--feature-flags",
    help="nvidia-ctk feature flags (repeatable or comma-separated): "
    "no-additional-gids-for-device-nodes, disable-ipc-discoverer, "
    "enable-explicit-driver-libraries.",
)
CONFIG_SEARCH_PATH = typer.Option(
    [],
    "--config-search-path",
    help="Directories in the driver root searched for graphics configs instead of /etc, "
    "/usr/local/share and /usr/share (repeatable).",
)
LIBRARY_SEARCH_PATH = typer.Option(
    [],
    "--library-search-path",
    help="Directories in the driver root searched first for driver libraries (repeatable).",
)


def register(app: typer.Typer) -> None:
    """Add generate and refresh to the cdi group."""

    @app.command("generate")
    def generate(
        *,
        output: Path | None = OUTPUT,
        spec_format: SpecFormat | None = FORMAT,
        mode: DiscoveryMode = MODE,
        driver_root: Path = DRIVER_ROOT,
        dev_root: Path | None = DEV_ROOT,
        strategies: list[NameStrategy] = STRATEGY,
        device_ids: list[str] = DEVICE_ID,
        no_all_device: bool = NO_ALL,
        vendor: str | None = VENDOR,
        class_: str | None = CLASS,
        hook_path: str | None = HOOK_PATH,
        disable_hook: list[str] = DISABLE_HOOK,
        enable_hook: list[str] = ENABLE_HOOK,
        ldconfig_path: str | None = LDCONFIG,
        feature_flags: list[str] = FEATURE_FLAG,
        library_search_paths: list[str] = LIBRARY_SEARCH_PATH,
        config_search_paths: list[str] = CONFIG_SEARCH_PATH,
        csv_files: list[str] = CSV_FILE,
        csv_ignore_patterns: list[str] = CSV_IGNORE,
        csv_compat_container_root: str | None = CSV_COMPAT,
    ) -> None:
        """Write a CDI spec for every GPU and MIG device of this node."""
        from ctk.host.modes import CsvOptions

        fmt = _spec_format(output, spec_format)
        if output is not None:
            _check_output(output)
        options = _options(
            mode=mode.resolve(driver_root, dev_root or driver_root),
            vendor=vendor,
            class_=class_,
            strategies=strategies,
            device_ids=device_ids,
            no_all_device=no_all_device,
            hook_path=hook_path,
            disable_hook=disable_hook,
            enable_hook=enable_hook,
            ldconfig_path=ldconfig_path,
            feature_flags=feature_flags,
        )
        spec, text = _generate(
            driver_root,
            dev_root or driver_root,
            options,
            fmt,
            library_search_paths=library_search_paths,
            config_search_paths=config_search_paths,
            csv=CsvOptions(tuple(csv_files), tuple(csv_ignore_patterns)),
        )
        if output is None:
            sys.stdout.write(text)
            return
        _write(output, text)
        sys.stderr.write(f"wrote {output} ({_summary(spec)})\n")

    @app.command("refresh")
    def refresh(
        *,
        output: Path = REFRESH_OUTPUT,
        mode: DiscoveryMode = MODE,
        driver_root: Path = DRIVER_ROOT,
        dev_root: Path | None = DEV_ROOT,
        strategies: list[NameStrategy] = STRATEGY,
        vendor: str | None = VENDOR,
        class_: str | None = CLASS,
        hook_path: str | None = HOOK_PATH,
        disable_hook: list[str] = DISABLE_HOOK,
        enable_hook: list[str] = ENABLE_HOOK,
        ldconfig_path: str | None = LDCONFIG,
        feature_flags: list[str] = FEATURE_FLAG,
        library_search_paths: list[str] = LIBRARY_SEARCH_PATH,
        config_search_paths: list[str] = CONFIG_SEARCH_PATH,
    ) -> None:
        """Rewrite the spec only if it would change, and say what changed.

        A file that is not a readable spec is replaced (a refresh at boot repairs it).
        """
        fmt = _spec_format(output, None)
        _check_output(output)
        options = _options(
            mode=mode.resolve(driver_root, dev_root or driver_root),
            vendor=vendor,
            class_=class_,
            strategies=strategies,
            device_ids=[],
            no_all_device=False,
            hook_path=hook_path,
            disable_hook=disable_hook,
            enable_hook=enable_hook,
            ldconfig_path=ldconfig_path,
            feature_flags=feature_flags,
        )
        spec, text = _generate(
            driver_root,
            dev_root or driver_root,
            options,
            fmt,
            library_search_paths=library_search_paths,
            config_search_paths=config_search_paths,
        )
        from ctk.cdi.refresh import Outcome, plan_refresh
        from ctk.cdi.serialize import spec_data
        from ctk.host import files

        plan = plan_refresh(files.read_bytes(output, missing_ok=True), text, spec_data(spec))
        if plan.outcome is Outcome.KEEP:
            sys.stderr.write(f"{output} is up to date ({_summary(spec)}); nothing written\n")
            return
        _write(output, text)
        if plan.outcome is Outcome.CREATE:
            message = f"created {output} ({_summary(spec)})"
        elif plan.outcome is Outcome.REPLACE:
            message = f"replaced {output}, which was not a readable CDI spec ({_summary(spec)})"
        else:
            message = f"updated {output} ({'; '.join([_summary(spec), *plan.changes])})"
        sys.stderr.write(message + "\n")
