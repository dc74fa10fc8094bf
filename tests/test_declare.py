"""The click commands ctk runs (`ctk.cli.click_build.to_click`, built without typer) are the
ones typer builds from the same declarations (`ctk.cli.twin.to_typer`): command by command,
parameter by parameter, in the values the command functions are called with, and in `--help`.
Command lines that `ctk.cli.direct` runs without click give the functions the values click
gives them."""

from __future__ import annotations

import ast
import functools
import importlib
import os
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import click
import pytest

import ctk.cli
from ctk.cli import plain_args
from ctk.cli.click_build import DeclaredCommand, GoBoolFlags, to_click
from ctk.cli.commands import GROUPS
from ctk.cli.declare import (
    REQUIRED,
    Argument,
    Commands,
    DeclarationError,
    Declared,
    Option,
    parameters,
)
from ctk.cli.twin import to_typer
from ctk.errors import CtkError

MODULES = sorted({g.module for g in GROUPS} | {c.module for g in GROUPS for c in g.commands})
Pair = tuple[str, click.Command, click.Command]


def _walk(path: str, ours: click.Command, theirs: click.Command) -> Iterator[Pair]:
    yield path, ours, theirs
    if isinstance(ours, click.Group) and isinstance(theirs, click.Group):
        for name in ours.commands:
            if name in theirs.commands:
                yield from _walk(f"{path} {name}", ours.commands[name], theirs.commands[name])


def _app(module: str) -> Commands:
    app = EXTRA if module == "extra" else importlib.import_module(module).app
    assert isinstance(app, Commands)
    return app


# Declarations the builder supports beyond what ctk's commands use today, compared the same way.
class Colour(Enum):
    RED = "red"
    GREEN = "Green"


Count = Annotated[int, Option("--count", "-c", min=1, max=9, clamp=True, envvar=["A", "B"])]
Level = Annotated[int, Option("--level", count=True)]
Ratio = Annotated[float, Option("--ratio", max=1.5, clamp=True)]
Colours = Annotated[list[Colour] | None, Option("--colour", case_sensitive=True, hidden=True)]
Paths = Annotated[
    list[Path], Option("--path", exists=True, dir_okay=False, writable=True, metavar="F")
]
Plain = Annotated[int | None, Option(help="No names given: typer makes --plain.")]
Switch = Annotated[bool, Option(help="A flag with a --no- form.", show_default=False)]
Needed = Annotated[str, Option("--needed", show_envvar=False, envvar="NEEDED")]
Yes = Annotated[bool, Argument(help="A boolean argument.")]
Numbers = Annotated[list[int] | None, Argument(show_default=False, metavar="N...")]
Shade = Annotated[Colour, Argument(help="An enum argument.", envvar=["SHADE", "TINT"])]
Where = Annotated[Path, Argument(envvar="WHERE", show_default="the current directory")]
Tidy = Annotated[bool, Option(help="A flag with a --no- form, off.")]
Tags = Annotated[list[str], Option("--tag", help="A list with a default.")]
Shades = Annotated[list[Colour], Option("--shade")]
Slashed = Annotated[bool, Option("/slash;/no-slash", help="Names of Windows' style.")]


def _today() -> str:
    return "today"


Stamp = Annotated[str, Option("--stamp", help="A default made when asked.")]

EXTRA = Commands(help="  Extra declarations.\n\n  Indented.", no_args_is_help=True)
EXTRA_SUB = Commands(help="A sub-group.")


@EXTRA.callback(invoke_without_command=True)
def extra(ctx: click.Context, *, switch: Switch = True, plain: Plain = None) -> None:
    """Its docstring loses to the help it was given."""


@EXTRA.command(hidden=True, context_settings={"allow_extra_args": True})
def first_command(
    yes: Yes,
    numbers: Numbers = None,
    *,
    count: Count = 3,
    level: Level = 0,
    ratio: Ratio = 0.5,
    colours: Colours = None,
    paths: Paths = [],  # noqa: B006
    needed: Needed,
) -> None:
    """First line.

    More.
    """


@EXTRA.command("defaults", context_settings={"auto_envvar_prefix": "EXTRA"})
def defaults(
    shade: Shade = Colour.RED,
    where: Where = Path("."),
    secret: Annotated[str, Argument(hidden=True, help="Not listed.")] = "s",
    *,
    named: Annotated[str, Option("--named", show_envvar=True)] = "n",
    tidy: Tidy = False,
    tags: Tags = ["a", "b"],  # noqa: B006
    shades: Shades = [Colour.RED, Colour.GREEN],  # noqa: B006
    slashed: Slashed = False,
    stamp: Stamp = _today,  # type: ignore[assignment]
) -> None:
    """Defaults of every kind, and how help shows them."""


@EXTRA_SUB.command("leaf", help="  Given help.", add_help_option=False)
def leaf(*, colour: Annotated[Colour, Option("--colour")] = Colour.GREEN) -> None:
    """Not shown."""


EXTRA.add_group(EXTRA_SUB, name="sub")


def _pairs() -> list[Pair]:
    built = [(m, to_click(_app(m)), to_typer(_app(m))) for m in MODULES]
    built.append(("extra", to_click(EXTRA), to_typer(EXTRA)))
    return [pair for path, ours, theirs in built for pair in _walk(path, ours, theirs)]


PAIRS = _pairs()
IDS = [path for path, _, _ in PAIRS]


def _own_classes(command: click.Command) -> list[str]:
    """The classes a declaration gave (``cls=``, ``go_flags=``), not the builders' own."""
    builders = ("click.", "typer.", "ctk.cli.click_build", "ctk.cli.twin", "builtins")
    return [
        c.__qualname__
        for c in type(command).__mro__
        if c is GoBoolFlags or not c.__module__.startswith(builders)
    ]


COMMAND_ATTRIBUTES = (
    "name",
    "help",
    "short_help",
    "epilog",
    "hidden",
    "deprecated",
    "no_args_is_help",
    "add_help_option",
    "options_metavar",
    "context_settings",
    "allow_extra_args",
    "allow_interspersed_args",
    "ignore_unknown_options",
    "invoke_without_command",
    "chain",
    "subcommand_metavar",
)


def _command_view(command: click.Command) -> dict[str, Any]:
    ctx = click.Context(command, info_name="ctk")
    view = {a: getattr(command, a, "(none)") for a in COMMAND_ATTRIBUTES}
    view["group"] = isinstance(command, click.Group)
    view["classes"] = _own_classes(command)
    view["callback"] = command.callback is not None
    view["params"] = [p.name for p in command.params]
    if isinstance(command, click.Group):
        view["commands"] = command.list_commands(ctx)
    return view


@pytest.mark.parametrize(("path", "ours", "theirs"), PAIRS, ids=IDS)
def test_commands_are_typers(path: str, ours: click.Command, theirs: click.Command) -> None:
    assert _command_view(ours) == _command_view(theirs)
    assert isinstance(ours, DeclaredCommand)


def _click_class(value: object) -> str:
    """The nearest class of click's own (typer's subclasses only change completion)."""
    return next(c.__name__ for c in type(value).__mro__ if c.__module__.startswith("click."))


def _type_view(param_type: click.ParamType[Any]) -> tuple[object, ...]:
    kind = _click_class(param_type)
    if isinstance(param_type, click.Path):
        settings = ("exists", "file_okay", "dir_okay", "writable", "readable", "resolve_path")
        return (kind, *(getattr(param_type, s) for s in settings), param_type.allow_dash)
    if isinstance(param_type, click.Choice):
        return (kind, tuple(param_type.choices), param_type.case_sensitive)
    if isinstance(param_type, click.types._NumberRangeBase):
        bounds = ("min", "max", "min_open", "max_open", "clamp")
        return (kind, *(getattr(param_type, b) for b in bounds))
    return (kind, param_type.name)


PARAM_ATTRIBUTES = (
    "name",
    "opts",
    "secondary_opts",
    "required",
    "multiple",
    "nargs",
    "envvar",
    "metavar",
    "expose_value",
    "is_eager",
    "param_type_name",
    # options only
    "is_flag",
    "is_bool_flag",
    "flag_value",
    "count",
    "hidden",
    "help",
    "show_default",
    "show_choices",
    "show_envvar",
    "allow_from_autoenv",
    "prompt",
    "hide_input",
)


def _param_view(param: click.Parameter, ctx: click.Context) -> dict[str, object]:
    view: dict[str, object] = {a: getattr(param, a, "(none)") for a in PARAM_ATTRIBUTES}
    if isinstance(param, click.Argument):  # shown by typer only (click 8.5 drops typer's own)
        del view["help"]
    view["class"] = _click_class(param)
    view["type"] = _type_view(param.type)
    view["default"] = repr(param.default)
    view["callback"] = param.callback is not None
    view["metavar shown"] = param.make_metavar(ctx)
    view["error hint"] = param.get_error_hint(ctx)
    view["missing None"] = param.value_is_missing(None)
    view["missing ()"] = param.value_is_missing(())
    return view


@pytest.mark.parametrize(("path", "ours", "theirs"), PAIRS, ids=IDS)
def test_parameters_are_typers(path: str, ours: click.Command, theirs: click.Command) -> None:
    assert len(ours.params) == len(theirs.params)
    ours_ctx = click.Context(ours, info_name="ctk")
    theirs_ctx = click.Context(theirs, info_name="ctk")
    for mine, typers in zip(ours.params, theirs.params, strict=True):
        assert _param_view(mine, ours_ctx) == _param_view(typers, theirs_ctx), mine.name


# --- the values the command functions get -------------------------------------------------


def _recorder(function: Callable[..., Any], log: list[dict[str, Any]]) -> Callable[..., Any]:
    @functools.wraps(function)
    def record(**values: Any) -> None:
        log.append(values)

    return record


def _recording(commands: Commands, log: list[dict[str, Any]]) -> Commands:
    """``commands`` with every function replaced by one that logs what it is called with."""
    copy = Commands(**commands.settings)
    for declared in commands.commands:
        copy.command(declared.name, **declared.settings)(_recorder(declared.function, log))
    if commands.group_callback is not None:
        declared = commands.group_callback
        copy.callback(**declared.settings)(_recorder(declared.function, log))
    for group, settings in commands.groups:
        copy.add_group(_recording(group, log), **settings)
    return copy


def _sample_values(param: click.Parameter) -> list[str]:
    """Values to give a parameter: good ones, odd ones, wrong ones."""
    param_type = param.type
    if isinstance(param_type, click.Choice):
        first = str(param_type.choices[0])
        return [first, first.upper(), "no-such-choice"]
    if isinstance(param_type, (click.types.FloatParamType, click.types.IntParamType)):
        return ["3", "0.05", "-1", "x"]
    if isinstance(param_type, click.Path):
        return [__file__, "some/dir", "/", "-", ""]
    if isinstance(param_type, click.types.BoolParamType):
        return ["true", "0", "maybe"]
    return ["value", "", "-"]


def _samples(command: click.Command) -> list[tuple[list[str], dict[str, str]]]:
    """Command lines (and environments) to parse: each option alone, then all of them."""
    required: list[str] = []
    for param in command.params:
        if param.required and isinstance(param, click.Option):
            required += [param.opts[0], "nvidia.com/gpu=0"]
        elif param.required:
            required.append(_sample_values(param)[0])
    samples: list[tuple[list[str], dict[str, str]]] = [([], {}), (required, {})]
    everything = list(required)
    env: dict[str, str] = {}
    for param in command.params:
        if isinstance(param, click.Argument):
            samples += [([*required, "a", "b"], {})]
            continue
        assert isinstance(param, click.Option)
        opt = param.opts[-1]
        if param.is_flag:
            samples += [([*required, opt], {}), ([*required, f"{opt}=false"], {})]
            samples += [([*required, o], {}) for o in param.secondary_opts]
            everything.append(opt)
        else:
            values = _sample_values(param)
            samples += [([*required, opt, v], {}) for v in values]
            samples += [([*required, opt, values[0], opt, values[0]], {})]
            everything += [opt, values[0]]
        for var in [param.envvar] if isinstance(param.envvar, str) else param.envvar or []:
            env[var] = "1" if param.is_flag else _sample_values(param)[0]
            samples.append((required, {var: env[var]}))
    samples += [(everything, {}), (required, env), ([*required, "--no-such-option"], {})]
    return samples


def _outcome(command: click.Command, argv: list[str], log: list[dict[str, Any]]) -> object:
    log.clear()
    try:
        click.Command.main(command, argv, prog_name="ctk", standalone_mode=False)
    except click.ClickException as exc:
        return (type(exc).__name__, exc.format_message())
    except CtkError as exc:
        return (type(exc).__name__, exc.message, exc.hint)
    return [
        {k: ("<ctx>", v.args) if isinstance(v, click.Context) else repr(v) for k, v in call.items()}
        for call in log
    ]


def _called(module: str) -> list[tuple[str, str]]:
    """The commands (and groups with options of their own) of ``module``, by path."""
    built = to_click(_app(module))
    return [(module, path) for path, c, _ in _walk(module, built, built) if c.callback is not None]


CALLED = [leaf for m in [*MODULES, "extra"] for leaf in _called(m)]


@pytest.mark.parametrize(("module", "path"), CALLED, ids=[p for _, p in CALLED])
def test_functions_get_typers_values(
    module: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours_log: list[dict[str, Any]] = []
    theirs_log: list[dict[str, Any]] = []
    ours = _find(to_click(_recording(_app(module), ours_log)), path)
    theirs = _find(to_typer(_recording(_app(module), theirs_log)), path)
    for param in ours.params:  # the test's environment must not set what the samples set
        for var in [param.envvar] if isinstance(param.envvar, str) else param.envvar or []:
            monkeypatch.delenv(var, raising=False)
    compared = 0
    for argv, env in _samples(ours):
        with monkeypatch.context() as patch:
            for var, value in env.items():
                patch.setenv(var, value)
            mine = _outcome(ours, argv, ours_log)
            typers = _outcome(theirs, argv, theirs_log)
        assert mine == typers, (argv, env)
        compared += isinstance(mine, list) and bool(mine)
    assert compared > 0  # some command lines reached the function


def _find(command: click.Command, path: str) -> click.Command:
    for name in path.split()[1:]:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


# --- help --------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize(("path", "ours", "theirs"), PAIRS, ids=IDS)
def test_help_is_typers(path: str, ours: click.Command, theirs: click.Command, width: int) -> None:
    """The command that runs shows typer's help and usage line, at any width."""

    def context(command: click.Command) -> click.Context:
        root = click.Context(click.Group("ctk"), info_name="ctk")
        return click.Context(command, info_name="cmd", parent=root, terminal_width=width)

    assert ours.get_help(context(ours)) == theirs.get_help(context(theirs))
    assert ours.get_usage(context(ours)) == theirs.get_usage(context(theirs))


RUN_LOG: list[dict[str, Any]] = []
"""What the recorded commands below were called with (nothing of the machine is touched)."""


def _recorded_pairs() -> list[Pair]:
    built = [
        (m, to_click(_recording(_app(m), RUN_LOG)), to_typer(_recording(_app(m), RUN_LOG)))
        for m in [*MODULES, "extra"]
    ]
    return [pair for path, ours, theirs in built for pair in _walk(path, ours, theirs)]


RECORDED = _recorded_pairs()


def _usage_lines(command: click.Command) -> list[list[str]]:
    """Command lines that show help or fail in parsing: help, nothing, an unknown option or
    command, an option without its value, a bad value of each typed option and argument."""
    lines = [["--help"], [], ["--no-such-option"], ["--help", "--no-such-option"]]
    if isinstance(command, click.Group):
        lines.append(["no-such-command"])
    for param in command.params:
        typed = not isinstance(param.type, click.types.StringParamType)
        if isinstance(param, click.Option) and not (param.is_flag or param.count):
            lines += [[param.opts[0]], *([[param.opts[0], "no-such-value"]] if typed else [])]
        elif isinstance(param, click.Argument) and typed:
            lines.append(["no-such-value"])
    return lines


def _shown(command: click.Command, argv: list[str], capsys: pytest.CaptureFixture[str]) -> object:
    """What a user sees of ``argv``: stdout, stderr and the exit code, as `ctk.cli.app` shows
    usage errors."""
    try:
        code = command.main(argv, prog_name="ctk cmd", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    captured = capsys.readouterr()
    return captured.out, captured.err, code


ENVIRONMENTS = {"plain": {}, "no-color": {"NO_COLOR": "1", "TERM": "dumb"}}
TERMINALS = [
    pytest.param({"COLUMNS": str(columns), **env}, id=f"{columns}-{name}")
    for columns in (60, 80, 120)
    for name, env in ENVIRONMENTS.items()
]


@pytest.fixture(params=TERMINALS)
def terminal(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal's width and colour settings, as the environment gives them."""
    for var in ("NO_COLOR", "TERM", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    for var, value in request.param.items():
        monkeypatch.setenv(var, value)


@pytest.mark.usefixtures("terminal")
@pytest.mark.parametrize(("path", "ours", "theirs"), RECORDED, ids=[p for p, _, _ in RECORDED])
def test_help_and_usage_errors_are_typers(
    path: str, ours: click.Command, theirs: click.Command, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--help`, the help of no arguments and each kind of usage error, byte for byte, at each
    terminal width, with colours off or not."""
    for argv in _usage_lines(ours):
        assert _shown(ours, argv, capsys) == _shown(theirs, argv, capsys), argv


# --- what the builder refuses --------------------------------------------------------------


def _with_parameter(annotation: Any, default: Any = None) -> Commands:
    commands = Commands()

    def command(value: Any = default) -> None:
        """A command."""

    command.__annotations__ = {"value": annotation}
    commands.command("c")(command)
    return commands


@pytest.mark.parametrize(
    "annotation",
    [
        pytest.param(Annotated[tuple[str, int], Option("--v")], id="tuple"),
        pytest.param(Annotated[int | str, Option("--v")], id="union"),
        pytest.param(Annotated[dict[str, str], Option("--v")], id="dict"),
        pytest.param(Annotated[list[bool], Option("--v")], id="list-of-flags"),
        pytest.param(Annotated[bytes, Option("--v")], id="bytes"),
        pytest.param(Annotated[str, Option("--v", parser=str)], id="parser"),
        pytest.param(Annotated[str, Option("--v", callback=print)], id="callback"),
        pytest.param(Annotated[str, Option("--v", readable=False)], id="path-setting-on-str"),
        pytest.param(Annotated[str, Option("--v", case_sensitive=False)], id="choice-on-str"),
        pytest.param(Annotated[Path, Option("--v", resolve_path=True)], id="resolve-path"),
        pytest.param(Annotated[Colour, Option("--v", is_flag=True)], id="is-flag"),
        pytest.param(Annotated[str, Argument("x")], id="argument-default-in-marker"),
        pytest.param(Annotated[str, Option("--v"), Option("--w")], id="two-markers"),
        pytest.param(str, id="no-marker"),
    ],
)
def test_unsupported_declarations_are_refused(annotation: Any) -> None:
    with pytest.raises(DeclarationError):
        to_click(_with_parameter(annotation))


def test_unsupported_settings_are_refused() -> None:
    commands = Commands(rich_markup_mode="rich")
    commands.command("a")(print)
    commands.command("b")(print)
    with pytest.raises(DeclarationError):
        to_click(commands)


def test_only_the_twin_imports_typer() -> None:
    """Running a command imports its module: no module of ctk.cli but twin.py may import typer
    on load (a function may, for what only it needs)."""
    found = []
    for path in sorted(Path(ctk.cli.__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [path.name for n in names if n == "typer" or n.startswith("typer.")]
    assert sorted(set(found)) == ["twin.py"]


def test_nothing_in_ctk_imports_the_twin() -> None:
    """typer's build is the tests' reference: no module of ctk imports it, even in a function."""
    found = []
    for path in sorted(Path(ctk.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in ("ctk.cli", "ctk.cli.twin"):
                found += [
                    path.name
                    for a in node.names
                    if node.module.endswith("twin") or a.name == "twin"
                ]
            elif isinstance(node, ast.Import):
                found += [path.name for a in node.names if a.name == "ctk.cli.twin"]
    assert found == []


def _all_functions() -> list[Callable[..., Any]]:
    def walk(commands: Commands) -> Iterator[Callable[..., Any]]:
        yield from (d.function for d in commands.commands)
        if commands.group_callback is not None:
            yield commands.group_callback.function
        for group, _ in commands.groups:
            yield from walk(group)

    return [f for m in [*MODULES, "extra"] for f in walk(_app(m))]


@pytest.mark.parametrize("function", _all_functions(), ids=lambda f: f.__qualname__)
def test_parameters_read_as_inspect_reads_them(function: Callable[..., Any]) -> None:
    """`parameters` reads the code object (no `inspect` at start-up): the names, kinds,
    annotations and defaults `inspect.signature(eval_str=True)` gives."""
    import inspect

    def marked(annotation: Any) -> object:  # a marker by what it says (eval makes new ones)
        if get_origin(annotation) is not Annotated:
            return annotation
        kept, *extra = get_args(annotation)
        return kept, [(type(m).__name__, m.args, m.kwargs) for m in extra]

    seen = inspect.signature(functools.wraps(function)(lambda: None), eval_str=True)
    expected = [
        (p.name, p.kind is p.KEYWORD_ONLY, marked(p.annotation), p.default)
        for p in seen.parameters.values()
    ]
    mine = [
        (
            p.name,
            p.keyword_only,
            marked(p.annotation if p.marker is None else Annotated[p.annotation, p.marker]),
            inspect.Parameter.empty if p.default is REQUIRED else p.default,
        )
        for p in parameters(functools.wraps(function)(lambda: None))
    ]
    assert mine == expected


# --- command lines `ctk.cli.direct` reads without click ------------------------------------


def _declared_commands(commands: Commands) -> Iterator[Declared]:
    yield from commands.commands
    for group, _ in commands.groups:
        yield from _declared_commands(group)


# Declarations `direct` reads, and each kind it must leave to click, beside the real commands.
PLAIN = Commands(help="Declarations for ctk.cli.direct.")


@PLAIN.command("files")
def files(
    names: Annotated[list[str] | None, Argument()] = None,
    *,
    inputs: Annotated[list[Path], Option("--input", "-i", exists=True, dir_okay=False)] = [],  # noqa: B006
    out_dir: Annotated[Path | None, Option("--out-dir", file_okay=False)] = None,
    level: Annotated[int, Option("--level", "-l", min=0, max=5)] = 1,
    ratio: Annotated[float, Option("--ratio", min=0.0, max=1.0)] = 0.5,
    colour: Annotated[Colour, Option("--colour")] = Colour.RED,
    label: Annotated[str, Option("--label")] = Path("x"),  # type: ignore[assignment]
    keep: Annotated[bool, Option("--keep/--drop")] = True,
    force: Annotated[bool, Option("--force")] = False,
) -> None:
    """Options of every kind direct reads."""


@PLAIN.command("needs")
def needs(
    first: Annotated[str, Argument()],
    rest: Annotated[list[str], Argument()] = [],  # noqa: B006
    *,
    name: Annotated[str, Option("--name")],
) -> None:
    """A required argument and option, and a list argument after them."""


@PLAIN.command("list-first")
def list_first(
    many: Annotated[list[str], Argument()],
    last: Annotated[str, Argument()] = "z",
) -> None:
    """A list argument before another: click fills the last one first."""


@PLAIN.command("dynamic")
def dynamic(stamp: Stamp = _today) -> None:  # type: ignore[assignment]
    """A default made when asked."""


@PLAIN.command("counted")
def counted(level: Level = 0) -> None:
    """A counted option."""


@PLAIN.command("slashed")
def slashed(
    words: Annotated[list[str] | None, Argument()] = None, *, slashed: Slashed = False
) -> None:
    """Names of another prefix than dashes."""


class Shout(click.Command):
    """Reads its command line in capitals."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, [a if a.startswith("-") else a.upper() for a in args])


@PLAIN.command("shout", cls=Shout)
def shout(words: Annotated[list[str] | None, Argument()] = None) -> None:
    """A command class of its own."""


@PLAIN.command("env", context_settings={"auto_envvar_prefix": "PLAIN"})
def env(name: Annotated[str, Option("--name")] = "n") -> None:
    """Context settings of its own."""


@PLAIN.command("maybe")
def maybe(maybe: Annotated[bool | None, Option("--maybe")] = None) -> None:
    """A flag without a boolean default."""


@PLAIN.command("on")
def on(on: Annotated[bool, Option("--on")] = True) -> None:
    """A one-named flag that is on."""


@PLAIN.command("context")
def context(ctx: click.Context, *, name: Annotated[str, Option("--name")] = "n") -> None:
    """A command that takes click's context."""


DECLARED = [
    (module, declared)
    for module in [*MODULES, "extra", "plain"]
    for declared in _declared_commands(PLAIN if module == "plain" else _app(module))
]


def _direct_samples(command: click.Command) -> list[tuple[list[str], dict[str, str]]]:
    """`_samples`, and the same lines with ``--name=value``, arguments first and "-" values."""
    samples = _samples(command)
    more: list[tuple[list[str], dict[str, str]]] = []
    for argv, env in samples:
        joined: list[str] = []
        for token in argv:
            if joined and joined[-1].startswith("--") and "=" not in joined[-1]:
                option = next((p for p in command.params if joined[-1] in p.opts), None)
                if isinstance(option, click.Option) and not option.is_flag:
                    joined[-1] += "=" + token
                    continue
            joined.append(token)
        more.append((joined, env))
        positional = [t for t in argv if not t.startswith("-")]
        if positional and len(positional) < len(argv):
            more.append(([*positional[-1:], *argv[: argv.index(positional[-1])]], env))
    for param in command.params:
        if not isinstance(param, click.Option) or param.is_flag:
            continue
        for name in (o for o in param.opts if o.startswith("--")):
            more += [([name, v], {}) for v in _sample_values(param)]
        prefix = (command.context_settings or {}).get("auto_envvar_prefix")
        if prefix:
            more.append(([], {f"{prefix}_{(param.name or '').upper()}": "from-env"}))
        value = _sample_values(param)[0]
        more += [([param.opts[-1], "-"], {}), ([param.opts[-1], "--x"], {}), ([param.opts[-1]], {})]
        for short in (o for o in param.opts if not o.startswith("--")):
            more += [([short, value], {}), ([f"{short}={value}"], {}), ([short + value], {})]
    more += [(["a", "b", "c"], {}), (["--", "a"], {}), (["-"], {})]
    return samples + more


@pytest.mark.parametrize(
    ("module", "declared"), DECLARED, ids=[f"{m}:{d.function.__name__}" for m, d in DECLARED]
)
def test_direct_reads_as_click(
    module: str, declared: Declared, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every command line `ctk.cli.direct` reads gives the function what click gives it; what
    click refuses, `direct` leaves to click. Some lines of every plain command are read."""
    log: list[dict[str, Any]] = []
    recording = Commands()
    recording.command(declared.name, **declared.settings)(_recorder(declared.function, log))
    command = to_click(recording)
    for param in command.params:
        for var in [param.envvar] if isinstance(param.envvar, str) else param.envvar or []:
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # "some/dir", "a", "b": paths that do not exist
    read = 0
    for argv, env in _direct_samples(command):
        with monkeypatch.context() as patch:
            for var, value in env.items():
                patch.setenv(var, value)
            values = plain_args.read(declared, argv, dict(os.environ))
            clicks = _outcome(command, argv, log)
        if values is None:
            continue
        assert isinstance(clicks, list), (argv, env, clicks)
        assert clicks == [{k: repr(v) for k, v in values.items()}], (argv, env)
        read += 1
    plain = declared.settings.keys() <= {"help", "hidden", "go_flags"} and all(
        p.marker is not None for p in parameters(declared.function)
    )
    if module != "extra" and (module != "plain" or declared.function in (files, needs)):
        assert (read > 0) == plain


@pytest.mark.parametrize(
    "source",
    ["def f(*names): pass", "def f(**names): pass", "def f(name, /): pass"],
)
def test_parameters_refuse_what_a_command_line_cannot_fill(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the test's own literal source
    with pytest.raises(DeclarationError, match="not supported"):
        parameters(namespace["f"])
