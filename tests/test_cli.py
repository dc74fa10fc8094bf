"""The entry point: version, help, and the one error handler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctk import __version__
from ctk.cli.app import main
from ctk.errors import CtkError


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ctk {__version__}\n"


def test_help_lists_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for group in ("cdi", "runtime", "doctor", "system", "hook"):
        assert f" {group} " in out


def test_unknown_command_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert capsys.readouterr().err == (
        "error: no such command 'frobnicate'\nhint: run 'ctk --help' for its usage\n"
    )


def test_unknown_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", "--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"error: no such option: --no-such-flag\n"
        r"hint: run 'ctk cdi validate --help' for its usage\n",
        err,
    ), err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["-v"], id="nvidia-ctk-short-version"),
        pytest.param(["-d", "--version"], id="debug-then-version"),
        pytest.param(["--debug", "-V"], id="long-debug"),
    ],
)
def test_version_spellings(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 0
    assert capsys.readouterr().out == f"ctk {__version__}\n"


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    argv = ["runtime", "configure", "--runtime", "docker", "--config", str(tmp_path)]
    assert main(argv) == 1
    with pytest.raises(CtkError):
        main(["-d", *argv])


def test_hook_keeps_its_own_debug_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def fake_exec(args: list[str]) -> None:
        seen.append(list(args))

    monkeypatch.setattr("ctk.host.hook_program.exec_hook", fake_exec)
    assert main(["hook", "--debug", "chmod", "--mode", "755"]) == 0
    assert seen == [["--debug", "chmod", "--mode", "755"]]


def test_an_option_value_is_never_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The word after an option that takes a value is that value, whatever it looks like (as
    Go's flag package, nvidia-ctk's reader, takes it): not an nvidia-ctk spelling to rewrite."""
    monkeypatch.chdir(tmp_path)
    configure = ["runtime", "configure", "--runtime=docker", "--config"]
    assert main([*configure, "-dry-run"]) == 0
    assert main([*configure, "--dry-run=false"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "--dry-run=false",
        "-dry-run",
    ]
    capsys.readouterr()


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(["-dry-run"], id="one-dash"),
        pytest.param(["--dry-run=true"], id="go-true"),
        pytest.param(["-dry-run=1"], id="one-dash-go-true"),
        pytest.param(["-config", "{config}", "--dry-run"], id="one-dash-with-value"),
    ],
)
def test_nvidia_ctk_spellings_of_options(
    spelling: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text("{}\n")
    given = [w.replace("{config}", str(config)) for w in spelling]
    args = ["runtime", "configure", "--runtime=docker", *given]
    if "-config" not in spelling:
        args += ["--config", str(config)]
    assert main(args) == 0
    assert config.read_text() == "{}\n"  # a dry run
    assert '"nvidia"' in capsys.readouterr().out


def test_a_go_false_leaves_a_flag_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "daemon.json"
    config.write_text("{}\n")
    args = ["runtime", "configure", "--runtime=docker", "--config", str(config)]
    assert main([*args, "--dry-run=false"]) == 0
    assert '"nvidia"' in config.read_text()
    capsys.readouterr()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(["--no-configure=true"], ["--no-configure"], id="off-name-true"),
        pytest.param(["--no-configure=false"], ["--configure"], id="off-name-false"),
        pytest.param(["--configure=false"], ["--no-configure"], id="on-name-false"),
        pytest.param(["-no-configure"], ["--no-configure"], id="off-name-one-dash"),
    ],
)
def test_two_named_flags_take_go_values(given: list[str], expected: list[str]) -> None:
    from ctk.cli import compat
    from ctk.cli.commands import build_app

    assert compat.normalize(build_app(), ["agent", *given]) == ["agent", *expected]


def test_shell_completion(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bash's completion request (the script `ctk --show-completion bash` prints sets these)."""
    monkeypatch.setenv("_CTK_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "ctk cdi va")
    monkeypatch.setenv("COMP_CWORD", "2")
    assert main([]) == 0
    assert capsys.readouterr().out.split() == ["validate"]


def test_show_completion_prints_the_script(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The script of the shell ctk runs in (typer asks shellingham; here, as if in bash)."""
    monkeypatch.setattr("shellingham.detect_shell", lambda: ("bash", "/bin/bash"))
    assert main(["--show-completion"]) == 0
    assert "_CTK_COMPLETE=complete_bash" in capsys.readouterr().out


def test_help_at_60_columns_keeps_variable_names_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A variable's name is one word in every command's help on a 60-column terminal."""
    from ctk.cli.commands import build_app
    from tests.cli_tree import is_option, leaves

    monkeypatch.setenv("COLUMNS", "60")
    checked = 0
    for path, command in leaves(build_app()):
        names = [
            name
            for param in command.params
            if is_option(param) and param.envvar
            for name in ([param.envvar] if isinstance(param.envvar, str) else param.envvar)
        ]
        if not names:
            continue
        assert main([*path, "--help"]) == 0
        shown = capsys.readouterr().out
        assert [n for n in names if n not in shown] == [], path
        checked += len(names)
    assert checked >= 20
