"""Hostile and odd configs (issue 15): each a clear error or a correct edit, never exit 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctk.cli.app import main

CRIO_DROP_IN = "crio.conf.d/99-nvidia.toml"
NVIDIA_RUNTIME = {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runtime", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            '{"é": 1}',
            '{"é": 1, "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", '
            '"args": []}}}\n',
            id="non-ascii-key",
        ),
        pytest.param(
            '{"\\u00e9\\n" :1, "b":2}',
            '{"\\u00e9\\n" :1, "b":2, "runtimes" :{"nvidia" :{"path": '
            '"/usr/bin/nvidia-container-runtime", "args": []}}}\n',
            id="escaped-key-spaced-colon",
        ),
    ],
)
def test_daemon_json_keys_with_escapes_keep_their_separator(
    content: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text(content, encoding="utf-8")
    code, _, err = run(capsys, "configure", "--runtime=docker", "--config", str(config))
    assert (code, err) == (0, "")
    assert config.read_text(encoding="utf-8") == expected
    assert json.loads(expected)["runtimes"] == NVIDIA_RUNTIME
    code, _, err = run(capsys, "unconfigure", "--runtime=docker", "--config", str(config))
    assert (code, err, config.read_text(encoding="utf-8")) == (0, "", content)


def test_crio_dotted_key_thousands_deep_is_refused_in_drop_in_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "crio.conf"
    content = "[crio.runtime.runtimes.runc]\n" + ".".join(f"a{i}" for i in range(3000)) + " = 1\n"
    config.write_text(content)
    drop_in = tmp_path / CRIO_DROP_IN
    code, out, err = run(
        capsys,
        "configure",
        "--runtime=crio",
        "--config",
        str(config),
        "--drop-in-config",
        str(drop_in),
    )
    assert (code, out) == (1, "")
    assert err == (
        f"error: {config}: not valid TOML: tables nested more than 64 deep (line 2)\n"
        "hint: no engine config nests like this; fix the file, or pass another one with "
        "--config\n"
    )
    assert config.read_text() == content
    assert not drop_in.parent.exists()


LONG = "1" + "0" * 5000


@pytest.mark.parametrize(
    ("runtime", "name", "content", "error"),
    [
        pytest.param(
            "containerd",
            "config.toml",
            f'version = 2\nnote = "{LONG}"\nx = {LONG}\n',
            "not valid TOML: a number with thousands of digits (line 3, column 5)",
            id="toml",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            f'{{"s": "{LONG}",\n "a": [{LONG}]}}',
            "not valid JSON: a number with thousands of digits (line 2, column 8)",
            id="json",
        ),
    ],
)
def test_integers_over_4300_digits_name_file_and_line(
    *,
    runtime: str,
    name: str,
    content: str,
    error: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / name
    config.write_text(content)
    drop_in = [] if runtime == "docker" else ["--drop-in-config", str(tmp_path / "d/99.toml")]
    for verb in ("configure", "unconfigure"):
        code, out, err = run(
            capsys, verb, f"--runtime={runtime}", "--config", str(config), *drop_in
        )
        assert (code, out) == (1, "")
        assert err == (
            f"error: {config}: {error}\nhint: no engine reads a number this long; fix the file, "
            "or pass another one with --config\n"
        )
    assert config.read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_nan_in_containerd_config_is_kept_and_the_drop_in_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    content = "version = 2\n\n[debug]\n  level = nan\n"
    config.write_text(content)
    drop_in = tmp_path / "conf.d/99-nvidia.toml"
    args = ["--runtime=containerd", "--config", str(config), "--drop-in-config", str(drop_in)]
    code, _, err = run(capsys, "configure", *args)
    assert (code, err) == (0, "")
    assert config.read_text() == content.replace(
        "version = 2\n", f'version = 2\nimports = ["{drop_in}"]\n'
    )
    assert drop_in.exists()
    code, _, err = run(capsys, "unconfigure", *args)
    assert (code, err, config.read_text(), drop_in.exists()) == (0, "", content, False)


def test_import_glob_matching_a_directory_is_a_warning_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etc = tmp_path / "etc"
    (etc / "conf.d").mkdir(parents=True)
    config = etc / "config.toml"
    content = f'version = 2\nimports = ["{etc}/*"]\n'
    config.write_text(content)
    drop_in = etc / "conf.d/99-nvidia.toml"
    args = ["--runtime=containerd", "--config", str(config), "--drop-in-config", str(drop_in)]
    warning = (
        f"warning: containerd is told to import {etc}/conf.d, which is a directory: containerd "
        "fails to start on it (is a directory); make the import match files only, like "
        "conf.d/*.toml\n"
    )
    code, _, err = run(capsys, "configure", *args)
    assert (code, err) == (0, warning)
    assert config.read_text() == f'version = 2\nimports = ["{etc}/*", "{drop_in}"]\n'
    code, _, err = run(capsys, "unconfigure", *args)
    assert (code, err, config.read_text(), drop_in.exists()) == (0, warning, content, False)
    code, _, err = run(
        capsys, "configure", "--runtime=containerd", "--config", str(config), "--drop-in-config="
    )
    assert (code, err) == (0, warning)
