"""Entry point of the `ctk` command: the one place where errors become messages and exit codes.

typer reads every command line (`ctk.cli.commands`). Only `ctk --version`, the most common probe
of the tool, is answered before typer is imported, so that it costs little more than starting
Python.
"""

from __future__ import annotations

import errno
import io
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
    if sys.stdout is None:  # started with descriptor 1 closed: fails where something is written
        sys.stdout = _ClosedOutput()
    if _is_version(args):
        try:
            sys.stdout.write(f"ctk {__version__}\n")
            sys.stdout.flush()
        except OSError as exc:
            return _output_failed(exc)
        return 0
    debug = os.environ.get("CTK_DEBUG", "") not in ("", "0") or _env_debug()
    try:
        code = _run(args)
        sys.stdout.flush()  # a full or closed output fails here, not at the interpreter's exit
        return code
    except CtkError as exc:
        if debug or _debug_given():
            raise
        _print_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return 1
    except Exception as exc:  # a bug: one line, the traceback only with --debug
        if isinstance(exc, OSError) and exc.errno in OUTPUT_ERRNOS and not exc.filename:
            return _output_failed(exc)  # a write to standard output names no file
        if debug or _debug_given():
            raise
        sys.stderr.write(
            f"error: internal error ({type(exc).__name__}: {exc}); "
            "run again with --debug to see the traceback and report it\n"
        )
        return EXIT_INTERNAL


OUTPUT_ERRNOS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF, errno.EFBIG))
"""What writing standard output can fail with through no fault of ctk's."""


def _output_failed(exc: OSError) -> int:
    """The user's condition (a full disk, a closed or failing output), not a bug: one line and
    a hint, exit 1."""
    _drop_stdout()
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    hint = "free space on the device it goes to" if full else "check where it goes"
    sys.stderr.write(
        f"error: cannot write standard output: {exc.strerror or exc}\n"
        f"hint: {hint}, or write elsewhere\n"
    )
    return 1


class _ClosedOutput(io.TextIOBase):
    """Standard output when the process started without one: writing fails as a closed
    descriptor does (EBADF), so the command ends with the one error for a failing output."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush of what could not
    be written raises nothing more (Python's documented way for a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


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
