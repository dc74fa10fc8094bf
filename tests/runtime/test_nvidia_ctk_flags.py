"""nvidia-ctk spellings: `--flag=true|false` (urfave/cli) and a bare --runtime-path (QA3 #6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctk.cli.app import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runtime", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param(["--set-as-default=false"], {}, id="false"),
        pytest.param(["--nvidia-set-as-default=true"], {"default-runtime": "nvidia"}, id="true"),
        pytest.param(
            ["--set-as-default=1", "--cdi.enabled=0"], {"default-runtime": "nvidia"}, id="1-0"
        ),
        pytest.param(["--cdi.enabled=T"], {"features": {"cdi": True}}, id="cdi-T"),
        pytest.param(["--enable-cdi=FALSE", "--dry-run=false"], {}, id="cdi-FALSE"),
    ],
)
def test_bool_flags_take_go_bool_values(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    expected: dict[str, object],
) -> None:
    config = tmp_path / "daemon.json"
    assert run(capsys, "configure", "--runtime", "docker", "--config", str(config), *flags)[0] == 0
    runtimes = {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}
    assert json.loads(config.read_text()) == {"runtimes": runtimes, **expected}


def test_bad_bool_value_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    args = ("configure", "--runtime", "docker", "--config", str(config), "--set-as-default=yes")
    assert run(capsys, *args) == (
        2,
        "",
        "error: invalid value 'yes' for --set-as-default\nhint: use true or false (or 1 / 0)\n",
    )
    assert not config.exists()


@pytest.mark.parametrize(
    ("runtime", "name", "written", "note"),
    [
        pytest.param("docker", "daemon.json", "nvidia-container-runtime", "", id="docker"),
        pytest.param(
            "crio",
            "crio.conf",
            "/usr/bin/nvidia-container-runtime",
            "note: --nvidia-runtime-path nvidia-container-runtime is a bare name; crio needs an "
            "absolute path: using /usr/bin/nvidia-container-runtime\n",
            id="crio",
        ),
    ],
)
def test_bare_runtime_path_is_resolved_as_nvidia_ctk_does(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    runtime: str,
    name: str,
    written: str,
    note: str,
) -> None:
    config = tmp_path / name
    args = ["configure", "--runtime", runtime, "--config", str(config)]
    args += ["--runtime-path", "nvidia-container-runtime"]
    args += ["--drop-in-config", ""] if runtime == "crio" else []
    code, _, err = run(capsys, *args)
    assert (code, err) == (0, note)
    assert f'"{written}"' in config.read_text()
