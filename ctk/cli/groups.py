"""The table of ctk's command groups: names, modules and one-line help, and nothing to import.

`ctk.cli.commands` builds typer's command tree from it: the root and each group with listed
`commands` are lazy groups, which import a command's module only when that command is looked up,
so neither `ctk --help` nor a command's start-up imports a group it does not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A command of a group: its name, the module whose ``app`` holds it, its help's first
    sentence (what the group's `--help` shows, so that listing it imports nothing)."""

    name: str
    module: str
    summary: str


@dataclass(frozen=True, slots=True)
class CommandGroup:
    """A group of commands: its name on the command line, its module, its one-line help."""

    name: str
    module: str
    summary: str
    command: str | None = None
    """The command to take from a module whose ``app`` holds several (install, uninstall)."""
    commands: tuple[Subcommand, ...] = ()
    """The group's commands, in `--help` order: the group then loads each one on its own."""


GROUPS: Final = (
    CommandGroup(
        "cdi",
        "ctk.cli.cdi",
        "Generate, validate and list CDI specs.",
        commands=(
            Subcommand(
                "validate",
                "ctk.cli.cdi_check",
                "Check CDI spec files against the CDI specification; exit 1 when any is invalid.",
            ),
            Subcommand(
                "list",
                "ctk.cli.cdi_check",
                "List the CDI devices that container runtimes resolve from the spec directories.",
            ),
            Subcommand(
                "generate",
                "ctk.cli.cdi_generate",
                "Write a CDI spec for every GPU and MIG device of this node.",
            ),
            Subcommand(
                "refresh",
                "ctk.cli.cdi_generate",
                "Rewrite the spec only if it would change, and say what changed.",
            ),
            Subcommand(
                "inject",
                "ctk.cli.cdi_tools",
                "Print an OCI runtime spec (config.json) with CDI devices applied, as a CDI "
                "runtime does.",
            ),
            Subcommand(
                "diff",
                "ctk.cli.cdi_tools",
                "Show what differs between two CDI specs; exit 0 when they are the same, 1 when "
                "not.",
            ),
            Subcommand("transform", "ctk.cli.cdi_tools", "Transform a CDI spec (nvidia-ctk's)."),
        ),
    ),
    CommandGroup(
        "runtime",
        "ctk.cli.runtime",
        "Configure container engines for the nvidia runtime.",
        commands=(
            Subcommand(
                "configure",
                "ctk.cli.runtime",
                "Add the nvidia runtime to a container engine's config.",
            ),
            Subcommand(
                "unconfigure", "ctk.cli.runtime", "Remove what `ctk runtime configure` added."
            ),
        ),
    ),
    CommandGroup(
        "doctor", "ctk.cli.doctor", "Find what is broken on a GPU container node and how to fix it."
    ),
    CommandGroup(
        "system",
        "ctk.cli.system",
        "Prepare the node: device nodes and /dev/char links.",
        commands=(
            Subcommand(
                "create-device-nodes",
                "ctk.cli.system",
                "Create missing /dev/nvidia* nodes from /proc/devices and the driver's GPU list.",
            ),
            Subcommand(
                "create-dev-char-symlinks",
                "ctk.cli.system",
                'Create /dev/char links for the NVIDIA device nodes (prevents NVML "Unknown '
                'Error").',
            ),
        ),
    ),
    CommandGroup("hook", "ctk.cli.hook", "Run an OCI hook (the native `ctk-hook` program)."),
    CommandGroup(
        "install",
        "ctk.cli.install",
        "Install the native hook, the systemd units and the udev rule (idempotent).",
        command="install",
    ),
    CommandGroup(
        "uninstall",
        "ctk.cli.install",
        "Remove what `ctk install` wrote (changed files are kept); put back what --force replaced.",
        command="uninstall",
    ),
    CommandGroup(
        "agent",
        "ctk.cli.agent",
        "Keep this node's engine, CDI spec and readiness right (the DaemonSet's agent).",
    ),
    CommandGroup(
        "config",
        "ctk.cli.config",
        "Show or edit the NVIDIA Container Toolkit's config.toml (nvidia-ctk config).",
    ),
    CommandGroup(
        "info", "ctk.cli.info", "Show ctk's version and the files and programs it would use here."
    ),
)
"""Add a command group here (and nowhere else): a module of ctk.cli with a `Commands` ``app``."""
