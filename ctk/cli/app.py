"""Entry point of the `ctk` command: the one place where errors become messages and exit codes.

typer reads every command line (`ctk.cli.commands`). Only `ctk --version`, the most common probe
of the tool, is answered before typer is imported, so that it costs little more than starting
Python.
"""

from __future__ import annotations

import os
import sys

from ctk import __version__
from ctk.errors import CtkError

TYPE_CHECKING = False  # `typing` is too costly for `ctk --version`
if TYPE_CHECKING:
    from collections.abc import Sequence

    import typer

EXIT_INTERNAL = 3


def _print_error(exc: CtkError) -> None:
    sys.stderr.write(f"error: {exc.message}\n")
    if exc.hint:
        sys.stderr.write(f"hint: {exc.hint}\n")


VERSION_WORDS = frozenset({"--version", "-V", "-v"})
DEBUG_WORDS = frozenset({"--debug", "-d"})


def _is_version(args: Sequence[str]) -> bool:
    """Whether ``args`` asks for the version alone (after `--debug`, which changes nothing)."""
    words = list(args)
    while words[:1] and words[0] in DEBUG_WORDS:
        del words[0]
    return len(words) == 1 and words[0] in VERSION_WORDS


def _env_debug() -> bool:
    """nvidia-ctk's NVIDIA_CTK_DEBUG (its refresh unit's env file may set it): a Go boolean."""
    return os.environ.get("NVIDIA_CTK_DEBUG", "").strip().lower() in ("1", "t", "true")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ctk with ``argv`` (default: the process arguments) and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if _is_version(args):
        sys.stdout.write(f"ctk {__version__}\n")
        return 0
    debug = os.environ.get("CTK_DEBUG", "") not in ("", "0") or _env_debug()
    try:
        return _run(args)
    except CtkError as exc:
        if debug or _debug_given():
            raise
        _print_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # a bug: one line, the traceback only with --debug
        if debug or _debug_given():
            raise
        sys.stderr.write(
            f"error: internal error ({type(exc).__name__}: {exc}); "
            "run again with --debug to see the traceback and report it\n"
        )
        return EXIT_INTERNAL


def _debug_given() -> bool:
    from ctk.cli.compat import global_options

    return global_options().debug


def _run(args: list[str]) -> int:
    import typer

    from ctk.cli import compat
    from ctk.cli.commands import build_app

    compat.set_global_options(compat.GlobalOptions())
    command = build_app()
    try:
        args = compat.normalize(command, args)  # nvidia-ctk's spellings
        result = command.main(args=args, prog_name="ctk", standalone_mode=False)
    except SystemExit as exc:  # typer's shell completion ends the process itself
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except typer.Abort:
        return _aborted()
    except typer.TyperException as exc:
        return _typer_error(exc)
    return result if isinstance(result, int) else 0


def _aborted() -> int:
    """An interrupted prompt (Ctrl-C, or standard input closed)."""
    sys.stderr.write("error: aborted\n")
    return 1


def _typer_error(exc: typer.TyperException) -> int:
    """What typer refused (a usage error: exit 2), said as every other error is."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group run bare: its help, exit 2
        exc.show()  # type: ignore[attr-defined]  # click's exceptions have it
        return 2
    ctx = getattr(exc, "ctx", None)  # a usage error's: the command it was reading
    hint = None if ctx is None else f"run '{ctx.command_path} --help' for its usage"
    _print_error(CtkError(_sentence(exc.format_message()), hint=hint))
    return exc.exit_code


def _sentence(message: str) -> str:
    """click's message as ctk's are written: a lower-case start, no closing full stop."""
    message = message.strip().rstrip(".")
    return message[:1].lower() + message[1:]


if __name__ == "__main__":
    raise SystemExit(main())
