"""Typed fixes: what a check suggests the node's tool should do, as values, not strings.

A fix value renders to the one command line a person sees (`command_line`, for ctk or, where only
the NVIDIA Container Toolkit is installed, for nvidia-ctk); `ctk doctor --fix` applies the same
value by calling the functions the ctk command calls (`ctk.cli.doctor_fix`). Every ctk or
nvidia-ctk command a remedy shows comes from one of these values, so what is suggested and what
is applied cannot drift apart.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ctk.enums import StrEnum
from ctk.runtime_config.engines import Runtime

if TYPE_CHECKING:
    from ctk.doctor.facts import NodeFacts

DEFAULT_SPEC: Final = "/var/run/cdi/nvidia.yaml"


class Tool(StrEnum):
    """The node's container toolkit CLI, which remedies name."""

    CTK = "ctk"
    NVIDIA_CTK = "nvidia-ctk"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigureRuntime:
    """Add the nvidia runtime to an engine's config (`runtime configure`)."""

    runtime: Runtime
    set_as_default: bool = False
    enable_cdi: bool = False
    config: str | None = None
    """A config other than the engine's default (rootless Docker's, as seen on the node)."""
    user: bool = False
    """The config belongs to a user (rootless Docker): no sudo."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateCharLinks:
    """Create the `/dev/char/<major>:<minor>` links to the NVIDIA device nodes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateDeviceNodes:
    """Create the missing `/dev/nvidia*` nodes, the control devices too."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateSpec:
    """Write the CDI spec for the node's current devices to ``output``."""

    output: str = DEFAULT_SPEC
    mode: str | None = None
    """`cdi generate --mode` (`management`: the management.nvidia.com/gpu spec); None: auto."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnableRefresh:
    """Enable the systemd path unit that regenerates the CDI spec (boot, driver upgrades)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SetToolkitConfig:
    """Set keys of the NVIDIA runtime's own `config.toml` (`config --in-place --set`, which ctk
    and nvidia-ctk spell alike)."""

    settings: tuple[tuple[str, str], ...]
    config: str | None = None
    """The file to edit, as seen on the node, where it is not the default (the doctor read the
    one `NVIDIA_CTK_CONFIG_FILE_PATH` names)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitConfigDefault:
    """Write a fresh default NVIDIA runtime `config.toml` (`config default`)."""

    output: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidateSpec:
    """Show every problem of a spec file (a look, not a change)."""

    path: str


Fix = (
    ConfigureRuntime
    | CreateCharLinks
    | CreateDeviceNodes
    | GenerateSpec
    | EnableRefresh
    | SetToolkitConfig
    | ToolkitConfigDefault
)
Suggestion = Fix | ValidateSpec
APPLIABLE: Final = (
    ConfigureRuntime,
    CreateCharLinks,
    CreateDeviceNodes,
    GenerateSpec,
    SetToolkitConfig,
)
"""The fixes `ctk doctor --fix` applies itself (a unit needs systemd on the node)."""
REFUSED: Final = (ToolkitConfigDefault,)
"""Fixes `ctk doctor --fix` lists but never applies: a person must look first."""

REFRESH_UNIT: Final = {Tool.CTK: "ctk-cdi-refresh.path", Tool.NVIDIA_CTK: "nvidia-cdi-refresh.path"}


def tool_of(facts: NodeFacts) -> Tool:
    """ctk where it is installed (or is the program diagnosing this very node); nvidia-ctk only
    where that alone is installed."""
    from ctk.doctor.facts import FactTimedOut

    try:
        binaries = facts.toolkit.binaries
    except FactTimedOut:  # the toolkit step hung: ctk is what runs here
        return Tool.CTK
    if "ctk" in binaries or facts.root == "/" or "nvidia-ctk" not in binaries:
        return Tool.CTK
    return Tool.NVIDIA_CTK


def argv(fix: Suggestion, tool: Tool = Tool.CTK) -> tuple[str, ...] | None:
    """The tool's arguments (after its name) for ``fix``; None: the tool has no such command."""
    match fix:
        case ConfigureRuntime():
            return (
                "runtime",
                "configure",
                f"--runtime={fix.runtime.value}",
                *(["--set-as-default"] if fix.set_as_default else []),
                *(["--cdi.enabled"] if fix.enable_cdi else []),
                *([f"--config={fix.config}"] if fix.config else []),
            )
        case CreateCharLinks():
            extra = ("--create-all",) if tool is Tool.NVIDIA_CTK else ()
            return ("system", "create-dev-char-symlinks", *extra)
        case CreateDeviceNodes():
            extra = ("--load-kernel-modules",) if tool is Tool.NVIDIA_CTK else ()
            return ("system", "create-device-nodes", "--control-devices", *extra)
        case GenerateSpec():
            mode = (f"--mode={fix.mode}",) if fix.mode else ()
            return ("cdi", "generate", *mode, f"--output={fix.output}")
        case ValidateSpec():
            return ("cdi", "validate", fix.path) if tool is Tool.CTK else None
        case SetToolkitConfig():
            sets = (arg for key, value in fix.settings for arg in ("--set", f"{key}={value}"))
            config = [f"--config={fix.config}"] if fix.config else []
            return ("config", "--in-place", *sets, *config)
        case ToolkitConfigDefault():
            return ("config", "default", f"--output={fix.output}")
        case EnableRefresh():
            return None


def _under(root: str, path: str) -> str:
    """Where ``path`` of the node whose / is mounted at ``root`` is, seen from outside: its
    symlinks resolved inside the root (an absolute link target restarts there), as `--fix`
    writes it; joined as written where it cannot be resolved (an escape, a loop)."""
    from ctk.rootpath import RootPathError, resolve

    try:
        return resolve(root, path)
    except RootPathError:
        return posixpath.join(root, path.lstrip("/"))


def argv_under(fix: Suggestion, root: str) -> tuple[str, ...] | None:
    """ctk's arguments for ``fix`` on the node whose / is ``root`` (what `doctor --fix` runs
    there, the root's prefix on the paths ctk opens and `--root` where the command takes one);
    None where ctk cannot act on the node from outside it (a spec generated from outside would
    name host paths with the root's prefix)."""
    args = argv(fix)
    if args is None or root == "/":
        return args
    match fix:
        case ConfigureRuntime():
            from ctk.runtime_config.engines import ENGINES

            config = _under(root, fix.config or str(ENGINES[fix.runtime].config_path))
            # in place: a drop-in's import line would name the path under the root
            drop_in = () if fix.runtime is Runtime.DOCKER else ("--drop-in-config=",)
            kept = tuple(a for a in args if not a.startswith("--config="))
            return (*kept, f"--config={config}", *drop_in)
        case CreateCharLinks():
            return (*args, f"--root={root}", f"--dev-char-path={_under(root, '/dev/char')}")
        case SetToolkitConfig():
            from ctk.doctor.facts import TOOLKIT_CONFIG

            kept = tuple(a for a in args if not a.startswith("--config="))
            return (*kept, f"--config={_under(root, fix.config or TOOLKIT_CONFIG)}")
        case ToolkitConfigDefault():
            return ("config", "default", f"--output={_under(root, fix.output)}")
        case ValidateSpec():
            return ("cdi", "validate", _under(root, fix.path))
        case GenerateSpec() | EnableRefresh():
            return None
        case _:
            return (*args, f"--root={root}")


def command_line(fix: Suggestion, tool: Tool = Tool.CTK, root: str = "/") -> str | None:
    """The command a person runs for ``fix``; None where ``tool`` has none. Under a ``root``
    (`doctor --root /host` in a debug pod) it acts on that node: ctk's own command with the
    root (`argv_under`, the line `--fix` runs), else the node's command through `chroot`."""
    user = isinstance(fix, ValidateSpec) or (isinstance(fix, ConfigureRuntime) and fix.user)
    sudo = [] if user else ["sudo"]
    if isinstance(fix, EnableRefresh):
        line = ["systemctl", "enable", "--now", REFRESH_UNIT[tool]]
    else:
        args = argv(fix, tool)
        if args is None:
            return None
        line = [tool.value, *args]
        under = argv_under(fix, root) if tool is Tool.CTK and root != "/" else None
        if under is not None:
            return shlex.join([*sudo, "ctk", *under])
    if root != "/":
        return shlex.join(["sudo", "chroot", root, *line])
    return shlex.join([*sudo, *line])


def describe(fix: Suggestion) -> str:
    """What ``fix`` does, in a few words."""
    match fix:
        case ConfigureRuntime():
            extra = " as the default" if fix.set_as_default else ""
            cdi = ", with CDI enabled" if fix.enable_cdi else ""
            where = fix.config or f"the {fix.runtime.value} configuration"
            return f"add the nvidia runtime{extra} to {where}{cdi}"
        case CreateCharLinks():
            return "create the /dev/char links to the NVIDIA device nodes"
        case CreateDeviceNodes():
            return "create the missing NVIDIA device nodes"
        case GenerateSpec():
            what = "the management CDI spec" if fix.mode == "management" else "the CDI spec"
            return f"generate {what} for the current devices into {fix.output}"
        case EnableRefresh():
            return "enable the CDI refresh unit"
        case SetToolkitConfig():
            where = f" in {fix.config}" if fix.config else ""
            return "set " + ", ".join(f"{key} = {value}" for key, value in fix.settings) + where
        case ToolkitConfigDefault():
            return f"write a default {fix.output}"
        case ValidateSpec():
            return f"validate {fix.path}"
