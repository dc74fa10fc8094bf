"""`ctk config`: the toolkit's config.toml edited with every comment, the order and layout kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.toolkit_config import DEFAULT_CONFIG, apply_sets, driver_root, parse, parse_setting

CORPUS = Path(__file__).parent / "fixtures" / "toolkit-configs"
NAMES = sorted(p.name for p in CORPUS.iterdir())
SETS = [
    "nvidia-container-runtime.mode=cdi",
    "nvidia-container-cli.no-cgroups",
    "nvidia-container-runtime.runtimes=runc,crun",
    "features.disable-imex-channel-creation=true",
]


@pytest.mark.parametrize("name", [*NAMES, "default"])
def test_round_trip_and_sets(name: str) -> None:
    text = DEFAULT_CONFIG if name == "default" else (CORPUS / name).read_text()
    assert parse(text, name).as_string() == text
    settings = [parse_setting(s) for s in SETS]
    once = apply_sets(text, settings, name)
    assert apply_sets(once, settings, name) == once  # --set twice = once
    doc = parse(once, name).unwrap()
    runtime = doc["nvidia-container-runtime"]
    assert (runtime["mode"], runtime["runtimes"]) == ("cdi", ["runc", "crun"])
    assert doc["nvidia-container-cli"]["no-cgroups"] is True
    assert doc["features"] == {"disable-imex-channel-creation": True}
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert [line for line in once.splitlines() if line.lstrip().startswith("#")] == comments


def test_only_the_set_value_changes() -> None:
    text = (CORPUS / "operator.toml").read_text()
    after = apply_sets(text, [parse_setting("nvidia-container-runtime.mode=cdi")])
    assert after == text.replace('mode = "auto"', 'mode = "cdi"')
    assert driver_root(after, "operator.toml") == "/run/nvidia/driver"


def test_cli_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    original = (CORPUS / "no-final-newline.toml").read_text()
    config.write_text(original)
    argv = ["config", "--config-file", str(config), "--set", "nvidia-container-runtime.mode=cdi"]
    assert main([*argv, "-i"]) == 0
    assert config.read_text() == original.replace('"legacy"', '"cdi"')
    assert capsys.readouterr() == ("", f"wrote {config}\n")
    inode = config.stat().st_ino
    assert main([*argv, "--in-place"]) == 0
    assert config.stat().st_ino == inode
    assert capsys.readouterr().err == f"{config} already has these values; nothing written\n"
    assert main(argv) == 0  # without -i: printed
    assert capsys.readouterr().out == config.read_text()


@pytest.mark.parametrize(
    ("given", "code", "stderr"),
    [
        pytest.param(
            "nvidia-container-runtime.bogus=1",
            2,
            "error: invalid --set option 'nvidia-container-runtime.bogus': undefined field\n"
            "hint: keys are the toolkit's, e.g. nvidia-container-runtime.mode=cdi (see ctk config "
            "default)\n",
            id="undefined-field",
        ),
        pytest.param(
            "nvidia-container-cli.load-kmods=maybe",
            2,
            "error: --set nvidia-container-cli.load-kmods=maybe: nvidia-container-cli.load-kmods "
            "takes true or false\n",
            id="not-a-boolean",
        ),
        pytest.param(
            "nvidia-container-runtime.mode",
            2,
            "error: --set nvidia-container-runtime.mode: give a value: "
            "nvidia-container-runtime.mode=VALUE\n",
            id="no-value",
        ),
    ],
)
def test_bad_sets_change_nothing(
    given: str, code: int, stderr: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(DEFAULT_CONFIG)
    assert main(["config", "-c", str(config), "--set", given, "-i"]) == code
    assert capsys.readouterr() == ("", stderr)
    assert config.read_text() == DEFAULT_CONFIG


def test_broken_toml_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[nvidia-container-runtime\n")
    assert main(["config", "-c", str(config), "--set", "nvidia-ctk.path=/x", "-i"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {config}: not valid TOML: ")
    assert config.read_text() == "[nvidia-container-runtime\n"


@pytest.mark.parametrize("name", ["default", "create-default", "generate-default"])
def test_default(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", name]) == 0
    assert capsys.readouterr().out == DEFAULT_CONFIG
    target = tmp_path / "etc" / "config.toml"
    assert main(["config", name, "-o", str(target)]) == 0
    assert target.read_text() == DEFAULT_CONFIG


def test_missing_file_starts_from_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "config.toml"
    assert main(["config", "-c", str(missing), "--set", "nvidia-container-runtime.mode=cdi"]) == 0
    assert capsys.readouterr().out == DEFAULT_CONFIG.replace('mode = "auto"', 'mode = "cdi"')
    assert not missing.exists()
