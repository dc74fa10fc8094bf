"""`ctk cdi generate` and `ctk cdi refresh` (issue 3): gather the node, build the spec, write it."""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import typer

from ctk.cdi.discover import DEFAULT_HOOKS, HookName, HookProgram
from ctk.cdi.generate import DEFAULT_KINDS, GenerateOptions, Mode, NameStrategy, build_spec
from ctk.cdi.model import DriverFacts, NvmlFacts, Spec
from ctk.cdi.serialize import SpecFormat, render
from ctk.errors import CtkError, UsageError
from ctk.host import driver, files

DEFAULT_OUTPUT = Path("/etc/cdi/nvidia.yaml")
EXTENSIONS = {".yaml": SpecFormat.YAML, ".json": SpecFormat.JSON}
# TODO(issue 3): use ctk.cdi.names.vendor_error/class_error once they land on main.
_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Node:
    """Everything gathered about the node."""

    nvml: NvmlFacts | None
    driver: DriverFacts
    version: str


def default_hook_path() -> str:
    """`nvidia-cdi-hook` from PATH, else the `ctk-hook` installed next to this Python."""
    found = shutil.which("nvidia-cdi-hook")
    if found:
        return os.path.abspath(found)
    return str(Path(sys.executable).parent / "ctk-hook")


def gather(driver_root: Path, dev_root: Path, mode: Mode) -> Node:
    """Read NVML (nvml mode) and scan the driver and dev roots once."""
    for what, root in (("--driver-root", driver_root), ("--dev-root", dev_root)):
        if not root.is_dir():
            raise CtkError(f"{what} {root}: no such directory", hint="pass an existing directory")
    nvml = None
    if mode is Mode.NVML:
        from ctk.host.nvml import read_nvml

        nvml = read_nvml(driver_root)
        version = nvml.driver_version
    else:
        found = driver.driver_version_from_files(driver_root)
        if found is None:
            raise CtkError(
                f"no NVIDIA driver libraries (libcuda.so.<version>) found under {driver_root}",
                hint="install the driver, or pass --driver-root where it is mounted",
            )
        version = found
    bus_ids = [g.sysfs_bus_id for g in nvml.gpus] if nvml else []
    facts = driver.read_driver(driver_root, dev_root, version=version, bus_ids=bus_ids)
    return Node(nvml, facts, version)


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


def _kind(vendor: str | None, class_: str, mode: Mode) -> str:
    vendor = vendor or DEFAULT_KINDS[mode].split("/")[0]
    for what, name in (("vendor", vendor), ("class", class_)):
        if not _NAME.match(name):
            raise UsageError(
                f"invalid CDI {what} name: {name!r}",
                hint="start with a letter; use letters, digits, '_', '-', '.'; end alphanumeric",
            )
    return f"{vendor}/{class_}"


def _enabled_hooks(disabled: list[str], enabled: list[str]) -> frozenset[HookName]:
    names = {h.value for h in HookName}
    for flag, given in (("--disable-hook", disabled), ("--enable-hook", enabled)):
        for name in given:
            if name not in names and not (name == "all" and flag == "--disable-hook"):
                choices = ", ".join(sorted(names)) + (", all" if flag == "--disable-hook" else "")
                raise UsageError(f"{flag} {name}: unknown hook", hint=f"choose from {choices}")
    hooks = set() if "all" in disabled else set(DEFAULT_HOOKS) - {HookName(n) for n in disabled}
    return frozenset(hooks | {HookName(n) for n in enabled})


def _options(
    *,
    mode: Mode,
    vendor: str | None,
    class_: str,
    strategies: list[NameStrategy],
    device_ids: list[str],
    no_all_device: bool,
    hook_path: str | None,
    disable_hook: list[str],
    enable_hook: list[str],
    ldconfig_path: str | None,
) -> GenerateOptions:
    path = hook_path or default_hook_path()
    if not os.path.isabs(path):
        raise UsageError(
            f"--hook-path {path}: must be an absolute path", hint="the runtime runs it"
        )
    return GenerateOptions(
        kind=_kind(vendor, class_, mode),
        mode=mode,
        strategies=tuple(dict.fromkeys(strategies or (NameStrategy.INDEX, NameStrategy.UUID))),
        device_ids=tuple(device_ids or ("all",)),
        all_device=not no_all_device and "none" not in device_ids,
        hooks=HookProgram(path, _enabled_hooks(disable_hook, enable_hook)),
        ldconfig_path=ldconfig_path,
    )


def _write(output: Path, text: str) -> None:
    files.write_atomic(output, text, mode=0o644, make_parents=True)
    target = files.write_target(output)
    try:
        os.chmod(target, 0o644)  # runtimes of any user must read it, whatever the old mode was
    except OSError as exc:
        raise CtkError(f"{target}: cannot set mode 0644: {exc.strerror}") from exc


def _summary(spec: Spec) -> str:
    return f"cdiVersion {spec.cdi_version}, kind {spec.kind}, {len(spec.devices)} devices"


OUTPUT = typer.Option(None, "--output", "-o", help="Write here (.yaml or .json) [default: stdout].")
REFRESH_OUTPUT = typer.Option(DEFAULT_OUTPUT, "--output", "-o", help="The spec to refresh.")
DRIVER_ROOT = typer.Option(Path("/"), "--driver-root", help="Where the driver files are.")
DEV_ROOT = typer.Option(
    None, "--dev-root", help="Where /dev, /proc and /sys are [default: the driver root]."
)
FORMAT = typer.Option(None, "--format", help="yaml or json [default: from --output, else yaml].")
MODE = typer.Option(Mode.NVML, "--mode", "--discovery-mode", help="How devices are found.")
STRATEGY = typer.Option(
    [], "--device-name-strategy", help="Device names (repeatable) [default: index and uuid]."
)
DEVICE_ID = typer.Option(
    [], "--device-id", "--device", help="Only these devices: index, i:j, UUID, all, none."
)
NO_ALL = typer.Option(False, "--no-all-device", help="Leave out the `all` device.")
VENDOR = typer.Option(
    None, "--vendor", "--cdi-vendor", help="[default: nvidia.com; management.nvidia.com]"
)
CLASS = typer.Option("gpu", "--class", "--cdi-class", help="The CDI class.")
HOOK_PATH = typer.Option(
    None,
    "--hook-path",
    "--nvidia-cdi-hook-path",
    help="Hook program in the spec [default: nvidia-cdi-hook on PATH, else ctk-hook].",
)
DISABLE_HOOK = typer.Option([], "--disable-hook", help="Leave out a hook (repeatable, or all).")
ENABLE_HOOK = typer.Option([], "--enable-hook", help="Add a hook that is off by default (chmod).")
LDCONFIG = typer.Option(None, "--ldconfig-path", help="ldconfig for the update-ldcache hook.")


def register(app: typer.Typer) -> None:
    """Add generate and refresh to the cdi group."""

    @app.command("generate")
    def generate(
        *,
        output: Path | None = OUTPUT,
        spec_format: SpecFormat | None = FORMAT,
        mode: Mode = MODE,
        driver_root: Path = DRIVER_ROOT,
        dev_root: Path | None = DEV_ROOT,
        strategies: list[NameStrategy] = STRATEGY,
        device_ids: list[str] = DEVICE_ID,
        no_all_device: bool = NO_ALL,
        vendor: str | None = VENDOR,
        class_: str = CLASS,
        hook_path: str | None = HOOK_PATH,
        disable_hook: list[str] = DISABLE_HOOK,
        enable_hook: list[str] = ENABLE_HOOK,
        ldconfig_path: str | None = LDCONFIG,
    ) -> None:
        """Write a CDI spec for every GPU and MIG device of this node."""
        fmt = _spec_format(output, spec_format)
        options = _options(
            mode=mode,
            vendor=vendor,
            class_=class_,
            strategies=strategies,
            device_ids=device_ids,
            no_all_device=no_all_device,
            hook_path=hook_path,
            disable_hook=disable_hook,
            enable_hook=enable_hook,
            ldconfig_path=ldconfig_path,
        )
        node = gather(driver_root, dev_root or driver_root, mode)
        spec = build_spec(node.nvml, node.driver, options, version=node.version)
        text = render(spec, fmt)
        if output is None:
            sys.stdout.write(text)
            return
        _write(output, text)
        sys.stderr.write(f"wrote {output} ({_summary(spec)})\n")

    @app.command("refresh")
    def refresh(
        *,
        output: Path = REFRESH_OUTPUT,
        mode: Mode = MODE,
        driver_root: Path = DRIVER_ROOT,
        dev_root: Path | None = DEV_ROOT,
        strategies: list[NameStrategy] = STRATEGY,
        vendor: str | None = VENDOR,
        class_: str = CLASS,
        hook_path: str | None = HOOK_PATH,
        disable_hook: list[str] = DISABLE_HOOK,
        enable_hook: list[str] = ENABLE_HOOK,
        ldconfig_path: str | None = LDCONFIG,
    ) -> None:
        """Regenerate the spec only if the node changed (driver, GPUs, MIG layout, devices)."""
        fmt = _spec_format(output, None)
        options = _options(
            mode=mode,
            vendor=vendor,
            class_=class_,
            strategies=strategies,
            device_ids=[],
            no_all_device=False,
            hook_path=hook_path,
            disable_hook=disable_hook,
            enable_hook=enable_hook,
            ldconfig_path=ldconfig_path,
        )
        node = gather(driver_root, dev_root or driver_root, mode)
        spec = build_spec(node.nvml, node.driver, options, version=node.version)
        text = render(spec, fmt)
        before = files.read_text(output, missing_ok=True)
        if before == text:
            sys.stderr.write(f"{output} is up to date ({_summary(spec)}); nothing written\n")
            return
        _write(output, text)
        change = "created" if before is None else "updated"
        sys.stderr.write(f"{change} {output} ({_summary(spec)})\n")
