"""`ctk cdi generate` refuses bad flags before touching the node: exit 2, one clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main


@pytest.mark.parametrize(
    ("flags", "stderr"),
    [
        pytest.param(
            ["--vendor", "-bad"],
            [
                "error: invalid --vendor: vendor '-bad' must start with an ASCII letter",
                "hint: a CDI kind is vendor/class: nvidia.com/gpu",
            ],
            id="vendor",
        ),
        pytest.param(
            ["--class", "gpu/x"],
            [
                "error: invalid --class: class 'gpu/x' contains '/'; allowed are ASCII letters, "
                "digits, '_', '-', '.'",
                "hint: a CDI kind is vendor/class: nvidia.com/gpu",
            ],
            id="class",
        ),
        pytest.param(
            ["--enable-hook", "all"],
            [
                "error: --enable-hook all: enabling all hooks is not supported",
                "hint: choose from chmod, create-symlinks, disable-device-node-modification, "
                "enable-cuda-compat, update-application-profile, update-ldcache",
            ],
            id="enable-all-hooks",
        ),
        pytest.param(
            ["--disable-hook", "bogus"],
            [
                "error: --disable-hook bogus: unknown hook",
                "hint: choose from chmod, create-symlinks, disable-device-node-modification, "
                "enable-cuda-compat, update-application-profile, update-ldcache, all",
            ],
            id="unknown-hook",
        ),
        pytest.param(
            ["--hook-path", "bin/nvidia-cdi-hook"],
            [
                "error: --hook-path bin/nvidia-cdi-hook: must be an absolute path",
                "hint: the runtime runs it",
            ],
            id="relative-hook-path",
        ),
        pytest.param(
            ["--feature-flag", "disable-ipc-discoverer,bogus"],
            [
                "error: --feature-flag bogus: unknown feature flag",
                "hint: choose from disable-ipc-discoverer, disable-multiple-csv-devices, "
                "disable-nvsandboxutils, enable-explicit-driver-libraries, "
                "no-additional-gids-for-device-nodes",
            ],
            id="unknown-feature-flag",
        ),
        pytest.param(
            ["--library-search-path", "/usr/lib64,lib"],
            [
                "error: --library-search-path lib: must be an absolute path",
                "hint: it is a directory as seen inside --driver-root, e.g. /usr/lib64",
            ],
            id="relative-library-search-path",
        ),
    ],
)
def test_bad_flags(
    flags: list[str], stderr: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [f.format(tmp=tmp_path) for f in flags]
    assert main(["cdi", "generate", "--driver-root", str(tmp_path), *args]) == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [line.format(tmp=tmp_path) for line in stderr])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--format", "toml"], "'toml' is not one of 'yaml', 'json'", id="format"),
        pytest.param(
            ["--mode", "bogus"],
            "'bogus' is not one of 'auto', 'nvml', 'management', 'csv', 'wsl', 'imex', 'gds', "
            "'gdrcopy', 'mofed', 'nvswitch'",
            id="mode",
        ),
        pytest.param(
            ["--device-name-strategy", "serial"],
            "'serial' is not one of 'index', 'uuid', 'type-index'",
            id="strategy",
        ),
    ],
)
def test_bad_choices(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "generate", *flags]) == 2
    assert message in capsys.readouterr().err


def test_missing_driver_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "run" / "nvidia" / "driver"
    assert main(["cdi", "generate", "--driver-root", str(missing)]) == 1
    assert capsys.readouterr().err == (
        f"error: --driver-root {missing}: no such directory\nhint: pass an existing directory\n"
    )


def test_management_mode_without_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "generate", "--mode", "management", "--driver-root", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: no NVIDIA driver libraries (libcuda.so.<version>) found under {tmp_path}\n"
        "hint: install the driver, or pass --driver-root where it is mounted\n"
    )
