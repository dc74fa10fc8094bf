"""Entry point of the `ctk` command: the one place where errors become messages and exit codes.

`ctk --version` is answered before click or any command module is imported, so that the most
common probe of the tool costs little more than starting Python; a plain command line runs
without click too (`ctk.cli.direct`), and click reads the rest.
"""

from __future__ import annotations

import os
import sys

from ctk import __version__
from ctk.errors import CtkError

TYPE_CHECKING = False  # `typing` is too costly for `ctk --version`
if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_INTERNAL = 3


def _print_error(exc: CtkError) -> None:
    sys.stderr.write(f"error: {exc.message}\n")
    if exc.hint:
        sys.stderr.write(f"hint: {exc.hint}\n")


def _split_debug(args: list[str]) -> tuple[bool, list[str]]:
    """Take `--debug` (`-d` as in nvidia-ctk, before the command) out of ``args``.

    After the command `--debug` counts too, except for `ctk hook`, whose arguments belong to the
    hook program (which has a `--debug` of its own).
    """
    debug = False
    while args and args[0] in ("--debug", "-d"):
        debug, args = True, args[1:]
    if args[:1] != ["hook"] and "--debug" in args:
        debug, args = True, [a for a in args if a != "--debug"]
    return debug, args


def _env_debug() -> bool:
    """nvidia-ctk's NVIDIA_CTK_DEBUG (its refresh unit's env file may set it): a Go boolean."""
    return os.environ.get("NVIDIA_CTK_DEBUG", "").strip().lower() in ("1", "t", "true")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ctk with ``argv`` (default: the process arguments) and return its exit code."""
    debug, args = _split_debug(list(sys.argv[1:] if argv is None else argv))
    if args in (["--version"], ["-V"], ["-v"]):
        sys.stdout.write(f"ctk {__version__}\n")
        return 0
    debug = debug or os.environ.get("CTK_DEBUG", "") not in ("", "0") or _env_debug()
    try:
        return _run(args)
    except CtkError as exc:
        if debug:
            raise
        _print_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # a bug: one line, the traceback only with --debug
        if debug:
            raise
        sys.stderr.write(
            f"error: internal error ({type(exc).__name__}: {exc}); "
            "run again with --debug to see the traceback and report it\n"
        )
        return EXIT_INTERNAL


def _run(args: list[str]) -> int:
    from ctk.cli import compat, direct

    compat.set_global_options(compat.GlobalOptions())
    call = direct.plan(args, os.environ)
    if call is None:
        return _run_click(args)
    try:
        return direct.run(call)
    except direct.Aborted:
        return _aborted()


def _aborted() -> int:
    """An interrupted command, whichever way it ran."""
    sys.stderr.write("error: aborted\n")
    return 1


def _run_click(args: list[str]) -> int:
    """Run ``args`` through click: what `ctk.cli.direct` leaves to it (help, errors, the rest)."""
    import click

    from ctk.cli import compat
    from ctk.cli.commands import build_app

    command = build_app()
    try:
        args = compat.normalize(command, args)  # nvidia-ctk's help/h and --flag=true
        result = command.main(args=args, prog_name="ctk", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()
        return 2
    except click.ClickException as exc:
        exc.show()
        return 2 if isinstance(exc, click.UsageError) else 1
    except click.exceptions.Abort:
        return _aborted()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
