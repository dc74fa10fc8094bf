"""`ctk-hook`: the OCI hooks that CDI specs call, with nvidia-cdi-hook's names and flags.

A hook runs on every container start, so start-up is what it costs: the command line is parsed
from the `COMMANDS` table without importing argparse (argparse, re and enum together would
double the start-up time); argparse renders `--help` from the same table. Standard library only.
"""

import os
import sys

from ctk.hook.rootfs import HookError

PROG = "ctk-hook"
EXIT_FAILED, EXIT_USAGE = 1, 2


class Option:
    """One `--name VALUE` flag of a subcommand (a plain class: `typing` costs start-up time)."""

    __slots__ = ("default", "help", "metavar", "name", "repeat")

    def __init__(
        self,
        name: str,
        help: str,
        default: str | None = None,
        *,
        repeat: bool = False,
        metavar: str = "VALUE",
    ) -> None:
        self.name, self.help, self.default = name, help, default
        self.repeat, self.metavar = repeat, metavar


class Command:
    """A subcommand: its help line and its flags."""

    __slots__ = ("help", "options")

    def __init__(self, help: str, options: tuple[Option, ...]) -> None:
        self.help, self.options = help, options


SPEC = Option("container-spec", "OCI container state file; empty or '-' reads stdin (default)")
COMMANDS: dict[str, Command] = {
    "create-symlinks": Command(
        "Create symlinks in the container.",
        (Option("link", "a symlink to create, as TARGET::LINK", repeat=True, metavar="T::L"), SPEC),
    ),
    "update-ldcache": Command(
        "Add folders to the container's loader cache by running ldconfig in it.",
        (
            Option("folder", "a container folder to add to the cache", repeat=True, metavar="DIR"),
            Option("ldconfig-path", "the host's ldconfig program", "/sbin/ldconfig", metavar="P"),
            SPEC,
        ),
    ),
    "chmod": Command(
        "Set the mode of paths in the container.",
        (
            Option("path", "a container path to change", repeat=True, metavar="PATH"),
            Option("mode", "the octal mode, e.g. 755", metavar="MODE"),
            SPEC,
        ),
    ),
    "enable-cuda-compat": Command(
        "Use the image's CUDA compat libraries when they are newer than the host driver.",
        (
            Option("host-driver-version", "the host driver version, e.g. 570.124.06"),
            Option("host-cuda-version", "accepted for compatibility; the driver version decides"),
            Option(
                "cuda-compat-container-root",
                "the compat folder in the container",
                "/usr/local/cuda/compat",
                metavar="DIR",
            ),
            SPEC,
        ),
    ),
    "update-application-profile": Command(
        "Limit EGL and Vulkan to the container's GPUs (an application profile).", (SPEC,)
    ),
    "disable-device-node-modification": Command(
        "Stop CUDA in the container from creating device nodes (ModifyDeviceFiles: 0).", (SPEC,)
    ),
}
GLOBAL_FLAGS = {"--debug", "-d", "--quiet", "-q"}


class UsageProblem(Exception):
    """The command line is wrong (exit 2)."""


class HelpWanted(Exception):
    """`--help` was given: show help for ``command`` (None: the program)."""

    def __init__(self, command: str | None) -> None:
        super().__init__(command)
        self.command = command


def _option(command: str, flag: str) -> Option:
    name = flag.lstrip("-")
    for option in COMMANDS[command].options:
        if option.name == name:
            return option
    raise UsageProblem(f"{command}: unknown option {flag}")


def parse(args: list[str]) -> tuple[str, dict[str, list[str]]]:
    """Return the subcommand and its option values (each a list, in order given)."""
    rest = list(args)
    while rest and rest[0] in GLOBAL_FLAGS:
        rest.pop(0)
    if not rest or rest[0] in ("-h", "--help", "help"):
        raise HelpWanted(None)
    command = rest.pop(0)
    if command not in COMMANDS:
        raise UsageProblem(f"unknown command {command!r} (one of: {', '.join(COMMANDS)})")
    values: dict[str, list[str]] = {}
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            raise HelpWanted(command)
        if not arg.startswith("-") or arg in ("-", "--"):
            raise UsageProblem(f"{command}: unexpected argument {arg!r}")
        flag, eq, value = arg.partition("=")
        option = _option(command, flag)
        if not eq:
            if not rest:
                raise UsageProblem(f"{command}: option {flag} needs a value")
            value = rest.pop(0)
        if option.name in values and not option.repeat:
            raise UsageProblem(f"{command}: option --{option.name} given more than once")
        values.setdefault(option.name, []).append(value)
    for option in COMMANDS[command].options:
        if option.name not in values and option.default is not None:
            values[option.name] = [option.default]
    return command, values


def _one(values: dict[str, list[str]], name: str) -> str:
    return values.get(name, [""])[0]


def run(command: str, values: dict[str, list[str]]) -> None:
    """Run ``command`` against the container named by the OCI state."""
    from ctk.hook.state import container_root, read_state

    root = container_root(read_state(_one(values, "container-spec")))
    if command == "create-symlinks":
        from ctk.hook.links import create_symlinks

        create_symlinks(root, values.get("link", []))
    elif command == "update-ldcache":
        from ctk.hook.ldcache import update_ldcache

        update_ldcache(root, values.get("folder", []), _one(values, "ldconfig-path"))
    elif command == "chmod":
        from ctk.hook.modes import change_modes

        change_modes(root, values.get("path", []), _one(values, "mode"))
    elif command == "enable-cuda-compat":
        from ctk.hook.compat import enable_cuda_compat

        enable_cuda_compat(
            root, _one(values, "host-driver-version"), _one(values, "cuda-compat-container-root")
        )
    elif command == "update-application-profile":
        from ctk.hook.profile import update_application_profile

        update_application_profile(root)
    else:
        from ctk.hook.params import disable_device_node_modification

        disable_device_node_modification(root)


def help_text(command: str | None) -> str:
    """Return the `--help` text of the program or of one subcommand (rendered by argparse)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=PROG, description="OCI createContainer hooks for CDI specs (nvidia-cdi-hook's CLI)."
    )
    parser.add_argument("--debug", "-d", action="store_true", help="show tracebacks of bugs")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, spec in COMMANDS.items():
        sub = subparsers.add_parser(name, help=spec.help, description=spec.help)
        for option in spec.options:
            sub.add_argument(
                f"--{option.name}",
                action="append" if option.repeat else "store",
                default=option.default,
                metavar=option.metavar,
                help=option.help
                + (" (repeatable)" if option.repeat else "")
                + (f" (default: {option.default})" if option.default else ""),
            )
        if name == command:
            return sub.format_help()
    return parser.format_help()


def main(argv: list[str] | None = None) -> int:
    """Run one hook subcommand and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        command, values = parse(args)
    except HelpWanted as wanted:
        sys.stdout.write(help_text(wanted.command))
        return 0 if args else EXIT_USAGE
    except UsageProblem as exc:
        sys.stderr.write(f"{PROG}: error: {exc} (see {PROG} --help)\n")
        return EXIT_USAGE
    try:
        run(command, values)
    except HookError as exc:
        sys.stderr.write(f"{PROG} {command}: error: {exc}\n")
        return EXIT_FAILED
    except Exception as exc:
        if "--debug" in args or "-d" in args or os.environ.get("NVIDIA_CTK_DEBUG") == "true":
            raise
        sys.stderr.write(f"{PROG} {command}: error: {type(exc).__name__}: {exc}\n")
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
