"""`ctk.cli.direct`: which command lines it runs without click, and how it runs them.

That the values it reads are click's is tests/test_declare.py's `test_direct_reads_as_click`;
here: the root's options, finding the command click would run, what it leaves to click on
purpose, and running a command as click's ``main`` does.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import pytest

from ctk.cli import direct, plain_args
from ctk.cli.commands import GROUPS, build_app, load_group
from ctk.cli.compat import GlobalOptions, global_options
from ctk.cli.declare import Argument, Commands, Declared, Option

REPO = Path(__file__).resolve().parents[1]
SPEC = str(REPO / "tests/fixtures/expected/workstation.yaml")


def test_root_options_are_the_roots() -> None:
    """The root options direct reads are the root's, with the same variables."""
    flags: dict[str, object] = {}
    values: dict[str, object] = {}
    for param in build_app().params:
        if not param.expose_value:  # --version and --debug: ctk.cli.app takes them first
            continue
        assert isinstance(param, click.Option)
        (name,) = param.opts
        (flags if param.is_flag else values)[name] = param.envvar
    assert flags == direct.ROOT_FLAGS
    assert values == direct.ROOT_VALUES


def _paths() -> list[list[str]]:
    paths = []
    for group in GROUPS:
        paths += [[group.name, c.name] for c in group.commands] or [[group.name]]
    return paths


@pytest.mark.parametrize("path", _paths(), ids=" ".join)
def test_plan_calls_what_click_calls(path: list[str]) -> None:
    call = direct.plan(path, {})
    command = load_group(next(g for g in GROUPS if g.name == path[0]))
    for name in path[1:]:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    if isinstance(command, click.Group) or command.callback is None:
        assert call is None  # a group (config): click's to run
        return
    wrapped = command.callback.__wrapped__  # type: ignore[attr-defined]
    if call is not None:
        assert call.function is wrapped
    else:  # only a command that needs something on its command line, or takes click's context
        assert any(p.required for p in command.params) or "ctx" in wrapped.__code__.co_varnames


def test_plan_runs_most_commands_directly() -> None:
    planned = [p for p in _paths() if direct.plan(p, {}) is not None]
    assert len(planned) >= 10, planned


def test_root_options_and_their_variables() -> None:
    call = direct.plan(["--quiet", "--config=/c.toml", "cdi", "validate", SPEC], {})
    assert call is not None
    assert (call.options.quiet, call.options.config) == (True, "/c.toml")
    call = direct.plan(["--config", "/d.toml", "cdi", "validate", SPEC], {})
    assert call is not None
    assert (call.options.quiet, call.options.config) == (False, "/d.toml")
    for var in ("NVIDIA_CTK_QUIET", "NVIDIA_CTK_CONFIG"):  # click reads them (and their forms)
        assert direct.plan(["cdi", "validate", SPEC], {var: ""}) is None


@pytest.mark.parametrize(
    "args",
    [
        ["--quiet", "--quiet", "cdi", "validate", SPEC],  # repeated
        ["--quiet=true", "cdi", "validate", SPEC],
        ["--config"],
        ["--verbose", "cdi", "validate", SPEC],
        [],
        ["nonsense"],
        ["help", "cdi"],
        ["cdi"],
        ["cdi", "help"],
        ["cdi", "--help"],
        ["cdi", "validate", "--help"],
        ["cdi", "validate", "-h"],
        ["cdi", "validate", "--", SPEC],
        ["runtime", "configure", "--dry-run=true"],  # nvidia-ctk's spelling: click's to read
        ["runtime", "configure", "-dry-run"],
        ["config"],  # a group with a callback of its own
    ],
    ids=repr,
)
def test_left_to_click(args: list[str]) -> None:
    assert direct.plan(args, {}) is None


def test_completion_is_left_to_click() -> None:
    assert direct.plan(["cdi", "validate", SPEC], {}) is not None
    assert direct.plan(["cdi", "validate", SPEC], {"_CTK_COMPLETE": "bash_complete"}) is None


def test_a_dash_is_an_argument() -> None:
    """`cdi validate -` reads standard input: "-" is a value, as click takes it."""
    call = direct.plan(["cdi", "validate", "-"], {})
    assert call is not None
    assert call.values["files"] == [Path("-")]


FLAGS = Commands()


@FLAGS.command("maybe")
def maybe(maybe: Annotated[bool | None, Option("--maybe")] = None) -> None:
    """A flag without a boolean default."""


@FLAGS.command("on")
def on(on: Annotated[bool, Option("--on")] = True) -> None:
    """A flag with one name that is on: `--on` turns it off in some click versions."""


@FLAGS.command("both")
def both(keep: Annotated[bool, Option("--keep/--drop")] = True) -> None:
    """A flag with both names."""


def _declared(name: str) -> Declared:
    return next(d for d in FLAGS.commands if d.name == name)


def test_flags_click_versions_disagree_on_are_left_to_click() -> None:
    """click 8.2 to 8.5 differ on flags without a boolean default and one-named flags that are
    on; direct reads neither (not even when absent), so every click version reads its own."""
    assert plain_args.read(_declared("maybe"), [], {}) is None
    assert plain_args.read(_declared("on"), [], {}) is None
    assert plain_args.read(_declared("both"), [], {}) == {"keep": True}
    assert plain_args.read(_declared("both"), ["--drop"], {}) == {"keep": False}


def test_a_list_argument_takes_the_rest() -> None:
    app = Commands()

    @app.command("take")
    def take(
        first: Annotated[str, Argument()],
        rest: Annotated[list[str], Argument()] = [],  # noqa: B006
    ) -> None:
        """Take."""

    declared = app.commands[0]
    assert plain_args.read(declared, ["a", "b", "c"], {}) == {"first": "a", "rest": ["b", "c"]}
    assert plain_args.read(declared, [], {}) is None  # missing: click says so


# --- running ------------------------------------------------------------------------------


def _call(function: Any, **values: Any) -> direct.Call:
    return direct.Call(function, values, GlobalOptions(quiet=True, config="/x"))


def test_run_returns_the_functions_code_and_sets_the_global_options() -> None:
    seen: list[GlobalOptions] = []

    def code(n: int) -> int:
        seen.append(global_options())
        return n

    assert direct.run(_call(code, n=3)) == 3
    assert (seen[0].quiet, seen[0].config) == (True, "/x")
    assert direct.run(_call(lambda: None)) == 0


def test_run_takes_clicks_exit_as_the_code() -> None:
    def leave() -> None:
        raise click.exceptions.Exit(4)

    assert direct.run(_call(leave)) == 4


@pytest.mark.parametrize("exc", [KeyboardInterrupt, EOFError])
def test_run_aborts_on_interrupt_as_click_does(
    exc: type[BaseException], capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> None:
        raise exc

    with pytest.raises(direct.Aborted):
        direct.run(_call(interrupted))
    assert capsys.readouterr().err == "\n"


def test_run_lets_other_errors_through() -> None:
    def broken() -> None:
        raise OSError(errno.EACCES, "denied")

    with pytest.raises(OSError, match="denied"):
        direct.run(_call(broken))


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh Python with this checkout's ctk, standard output buffered."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        check=False,
    )


def test_a_closed_pipe_ends_quietly_with_1() -> None:
    """A reader that went away (`ctk ... | head`): exit 1, and no complaint from Python's last
    flush of standard output."""
    code = (
        "import errno, sys\n"
        "from ctk.cli import direct\n"
        "from ctk.cli.compat import GlobalOptions\n"
        "def write():\n"
        "    sys.stdout.write('x' * 100)\n"
        "    raise BrokenPipeError(errno.EPIPE, 'Broken pipe')\n"
        "sys.exit(direct.run(direct.Call(write, {}, GlobalOptions())))\n"
    )
    result = _python(code)  # buffered: what it still holds is flushed at exit
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout == ""  # what was still buffered went to /dev/null


def test_help_is_left_to_click_before_any_command_module_loads() -> None:
    """`ctk doctor --help` must not pay for importing the doctor's module twice over (direct
    would import it to find the command, then click shows the help)."""
    code = (
        "import sys\n"
        "from ctk.cli import direct\n"
        "assert direct.plan(['doctor', '--verbose', '--help'], {}) is None\n"
        "assert direct.plan(['doctor', '-h'], {}) is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('ctk.cli.')))\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert "ctk.cli.doctor" not in result.stdout
    assert "ctk.cli.plain_args" not in result.stdout
