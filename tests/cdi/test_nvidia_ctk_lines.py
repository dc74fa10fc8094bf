"""Command lines and environments written for nvidia-ctk (its install guide, the GPU Operator, the
toolkit's nvidia-cdi-refresh unit and env file), run by ctk against fixture nodes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctk.cli.app import main
from tests.fake_nvml import FakeNode
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library

__all__ = ["fake_node", "fake_nvml_library"]

MakeNode = Callable[[str], FakeNode]
RUN = Path(__file__).parent.parent / "fixtures" / "specs" / "run" / "cdi"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("NVIDIA_CTK_", "CTK_")):
            monkeypatch.delenv(name)
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        pytest.param(["help"], "Usage: ctk [OPTIONS] COMMAND [ARGS]...", id="help"),
        pytest.param(["h"], "Usage: ctk [OPTIONS] COMMAND [ARGS]...", id="h"),
        pytest.param(["cdi", "help"], "Usage: ctk cdi [OPTIONS] COMMAND [ARGS]...", id="cdi-help"),
        pytest.param(["cdi", "h"], "Usage: ctk cdi [OPTIONS] COMMAND [ARGS]...", id="cdi-h"),
        pytest.param(["help", "cdi", "list"], "Usage: ctk cdi list [OPTIONS]", id="help-cdi-list"),
        pytest.param(
            ["system", "help"], "Usage: ctk system [OPTIONS] COMMAND [ARGS]...", id="system-help"
        ),
    ],
)
def test_help_words(argv: list[str], usage: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == usage


@pytest.mark.parametrize(
    ("word", "flag"),
    [
        pytest.param(["config", "help"], ["config", "--help"], id="config-help"),
        pytest.param(["config", "h"], ["config", "--help"], id="config-h"),
    ],
)
def test_help_word_prints_the_help(
    word: list[str], flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`config` runs without a subcommand too, so its usage line is click's to word (8.5 writes
    `[COMMAND]`); what matters is that the help word prints exactly what --help prints."""
    assert main(flag) == 0
    expected = capsys.readouterr().out
    assert main(word) == 0
    assert capsys.readouterr().out == expected


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        pytest.param(["--quiet", "cdi", "list"], {}, id="quiet"),
        pytest.param(["--debug", "cdi", "list"], {}, id="debug"),
        pytest.param(["-d", "cdi", "list"], {}, id="d"),
        pytest.param(
            ["--config", "/etc/nvidia-container-runtime/config.toml", "cdi", "list"],
            {},
            id="config",
        ),
        pytest.param(["--config=/nonexistent.toml", "--quiet", "cdi", "list"], {}, id="config="),
        pytest.param(
            ["cdi", "list"], {"NVIDIA_CTK_DEBUG": "1", "NVIDIA_CTK_QUIET": "true"}, id="env"
        ),
    ],
)
def test_global_options(
    argv: list[str],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main([*argv, "--spec-dir", str(RUN)]) == 0
    assert capsys.readouterr() == ("nvidia.com/gpu=1\n", "")


def test_list_spec_dirs_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.yaml").write_text(
        "cdiVersion: 0.3.0\nkind: example.com/x\ndevices:\n- name: a\n"
        "  containerEdits:\n    env: [A=1]\n"
    )
    monkeypatch.setenv("NVIDIA_CTK_CDI_SPEC_DIRS", f"{RUN},{other}")
    assert main(["cdi", "list"]) == 0
    assert capsys.readouterr() == ("example.com/x=a\nnvidia.com/gpu=1\n", "")
    assert main(["cdi", "list", "--spec-dir", str(other)]) == 0  # the flag beats the variable
    assert capsys.readouterr() == ("example.com/x=a\n", "")
    monkeypatch.setenv("NVIDIA_CTK_CDI_SPEC_DIRS", f"{tmp_path}/missing,{other}")
    assert main(["cdi", "list"]) == 0
    assert capsys.readouterr() == (
        "example.com/x=a\n",
        f"{tmp_path}/missing: warning: spec directory does not exist; CDI runtimes skip it "
        "[spec-dir.missing]\n",
    )


# --- cdi generate ------------------------------------------------------------------------------


def _generate(node: FakeNode, *argv: str) -> int:
    return main(["cdi", "generate", "--disable-hook", "all", *argv])


@pytest.fixture
def workstation(fake_node: MakeNode, monkeypatch: pytest.MonkeyPatch) -> FakeNode:
    node = fake_node("workstation")
    monkeypatch.setenv("NVIDIA_CTK_DRIVER_ROOT", str(node.root))
    return node


@pytest.fixture
def reference(workstation: FakeNode, capsys: pytest.CaptureFixture[str]) -> str:
    """The spec `cdi generate` prints for the workstation node with every default."""
    assert _generate(workstation) == 0
    out, _ = capsys.readouterr()
    assert "name: all" in out
    return out


@pytest.mark.integration
def test_output_empty_is_stdout(
    workstation: FakeNode, reference: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _generate(workstation, "--output=") == 0
    assert capsys.readouterr() == (reference, "")


@pytest.mark.integration
def test_refresh_unit_environment(
    workstation: FakeNode,
    reference: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """nvidia-cdi-refresh.service: Environment=, its env file, then `nvidia-ctk cdi generate`."""
    output = tmp_path / "run" / "cdi" / "nvidia.yaml"
    monkeypatch.setenv("NVIDIA_CTK_CDI_OUTPUT_FILE_PATH", str(output))
    monkeypatch.setenv("NVIDIA_CTK_DEBUG", "false")
    assert _generate(workstation) == 0
    assert output.read_text() == reference
    assert capsys.readouterr() == (
        "",
        f"wrote {output} (cdiVersion 0.7.0, kind nvidia.com/gpu, 3 devices)\n",
    )
    flagged = tmp_path / "flag.yaml"
    assert _generate(workstation, "--output", str(flagged)) == 0  # the flag beats the variable
    assert flagged.read_text() == reference
    capsys.readouterr()
    monkeypatch.setenv("NVIDIA_CTK_QUIET", "true")
    assert _generate(workstation) == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("argv", "env", "names"),
    [
        pytest.param(
            ["--no-all-device=true"],
            {},
            ["0", "GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d"],
            id="no-all-device=true",
        ),
        pytest.param(
            ["--no-all-device=false"],
            {},
            ["0", "GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d", "all"],
            id="no-all-device=false",
        ),
        pytest.param(
            [],
            {"NVIDIA_CTK_CDI_GENERATE_NO_ALL_DEVICE": "true"},
            ["0", "GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d"],
            id="NO_ALL_DEVICE",
        ),
        pytest.param(
            [],
            {"NVIDIA_CTK_CDI_GENERATE_DEVICE_NAME_STRATEGIES": "type-index,index"},
            ["0", "gpu0", "all"],
            id="DEVICE_NAME_STRATEGIES",
        ),
        pytest.param(
            ["--device-name-strategy", "uuid"],
            {"NVIDIA_CTK_CDI_GENERATE_DEVICE_NAME_STRATEGIES": "index"},
            ["GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d", "all"],
            id="flag-beats-strategies",
        ),
        pytest.param([], {"NVIDIA_CTK_CDI_GENERATE_DEVICE_IDS": "none"}, ["none"], id="DEVICE_IDS"),
    ],
)
def test_device_flags_and_variables(  # noqa: PLR0917  (pytest passes fixtures by position)
    workstation: FakeNode,
    argv: list[str],
    env: dict[str, str],
    names: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _generate(workstation, *argv) == 0
    out = capsys.readouterr().out
    stripped = [line.strip() for line in out.splitlines()]
    found = [
        line.removeprefix("- name: ").strip('"') for line in stripped if line.startswith("- name:")
    ]
    assert found == names


@pytest.mark.integration
def test_kind_and_format_variables(
    workstation: FakeNode, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NVIDIA_CTK_CDI_GENERATE_VENDOR", "example.com")
    monkeypatch.setenv("NVIDIA_CTK_CDI_GENERATE_CLASS", "accel")
    monkeypatch.setenv("NVIDIA_CTK_CDI_GENERATE_OUTPUT_FORMAT", "json")
    assert _generate(workstation) == 0
    out = capsys.readouterr().out
    assert out.startswith('{"cdiVersion":"0.7.0","kind":"example.com/accel",')
    assert _generate(workstation, "--class", "gpu", "--format", "yaml") == 0
    assert "kind: example.com/gpu\n" in capsys.readouterr().out


ONLY_SPECS = "CDI runtimes read only .yaml and .json files; "


@pytest.mark.integration
@pytest.mark.parametrize(
    ("name", "fmt", "written", "warning"),
    [
        pytest.param(
            "nvidia.yml",
            [],
            "nvidia.yml.yaml",
            "--output {d}/nvidia.yml: "
            + ONLY_SPECS
            + "writing {d}/nvidia.yml.yaml, as nvidia-ctk does",
            id="yml",
        ),
        pytest.param(
            "nvidia",
            ["--format", "json"],
            "nvidia.json",
            "--output {d}/nvidia: " + ONLY_SPECS + "writing {d}/nvidia.json, as nvidia-ctk does",
            id="no-extension",
        ),
        pytest.param(
            "nvidia.yaml",
            ["--format", "json"],
            "nvidia.yaml",
            "--format json does not match --output {d}/nvidia.yaml; writing yaml as the file name "
            "says",
            id="format-clash",
        ),
        pytest.param("nvidia.json", ["--format=JSON"], "nvidia.json", None, id="format-upper-case"),
    ],
)
def test_output_names(  # noqa: PLR0917  (pytest passes fixtures by position)
    workstation: FakeNode,
    reference: str,
    name: str,
    fmt: list[str],
    written: str,
    warning: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out_dir = tmp_path / "out"
    assert _generate(workstation, "--output", str(out_dir / name), *fmt) == 0
    assert [p.name for p in out_dir.iterdir()] == [written]
    text = (out_dir / written).read_text()
    assert text.startswith("{") == written.endswith(".json")
    if written.endswith(".yaml"):
        assert text == reference
    err = capsys.readouterr().err.splitlines()
    assert err[:-1] == ([] if warning is None else [f"warning: {warning.format(d=out_dir)}"])


@pytest.mark.integration
def test_coherent_annotations_flag_is_a_warning(
    workstation: FakeNode, reference: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _generate(workstation, "--feature-flags=enable-coherent-annotations") == 0
    assert capsys.readouterr() == (
        reference,
        "warning: --feature-flag enable-coherent-annotations: ignored; ctk writes no "
        "gpu.nvidia.com/coherent annotations or .coherent/.noncoherent specs\n",
    )


@pytest.mark.integration
def test_driver_root_from_the_toolkit_config(
    fake_node: MakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GPU Operator nodes: `root = "/run/nvidia/driver"` in config.toml is the driver root."""
    node = fake_node("workstation")
    config = tmp_path / "config.toml"
    config.write_text(f'# driver container\n[nvidia-container-cli]\nroot = "{node.root}"\n')
    assert main(["--config", str(config), "cdi", "generate", "--disable-hook", "all"]) == 0
    from_config = capsys.readouterr().out
    monkeypatch.setenv("NVIDIA_CTK_DRIVER_ROOT", str(node.root))
    assert main(["cdi", "generate", "--disable-hook", "all"]) == 0
    assert capsys.readouterr().out == from_config
    monkeypatch.setenv("NVIDIA_CTK_DRIVER_ROOT", str(tmp_path / "nothing"))
    args = ["--config", str(config), "cdi", "generate", "--disable-hook", "all"]
    assert main(args) == 1  # the variable beats the config file, and has no driver


@pytest.mark.integration
def test_hook_program_by_name(
    workstation: FakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--nvidia-ctk-path nvidia-ctk`: a name is looked up on PATH, else /usr/bin/<name>."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hook = bin_dir / "ctk-test-hook"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert main(["cdi", "generate", "--nvidia-cdi-hook-path", "ctk-test-hook"]) == 0
    out, err = capsys.readouterr()
    assert (f"path: {hook}\n" in out, err) == (True, "")
    assert main(["cdi", "generate", "--nvidia-ctk-path=ctk-missing-hook"]) == 0
    out, err = capsys.readouterr()
    assert "path: /usr/bin/ctk-missing-hook\n" in out
    assert err.splitlines()[0] == (
        "warning: --hook-path ctk-missing-hook: not found on PATH; using /usr/bin/ctk-missing-hook"
    )


NVIDIA_CTK_FLAGS = {  # nvidia-ctk 1.20's flags of the commands ctk takes over (issue 12)
    (): "--debug -d --quiet --config --help -h --version -v",
    ("cdi", "generate"): "--config-search-path --output --format --mode --discovery-mode "
    "--dev-root --device-name-strategy --driver-root --library-search-path "
    "--nvidia-cdi-hook-path --nvidia-ctk-path --ldconfig-path --vendor --cdi-vendor --class "
    "--cdi-class --csv.file --csv.ignore-pattern --csv.compat-container-root --disable-hook "
    "--disable-hooks --enable-hook --enable-hooks --feature-flag --feature-flags --no-all-device "
    "--device-id --device-ids --device --devices",
    ("cdi", "list"): "--spec-dir",
    ("cdi", "transform", "root"): "--from --to --input --output --relative-to",
    ("system", "create-dev-char-symlinks"): "--dev-char-path --driver-root --create-all "
    "--load-kernel-modules --create-device-nodes --dry-run",
    ("system", "create-device-nodes"): "--root --driver-root --dev-root --control-devices "
    "--load-kernel-modules --dry-run",
    ("config",): "--config-file --config -c --set --in-place -i --output -o",
    ("config", "default"): "--output -o",
    ("config", "create-default"): "--output -o",
    ("config", "generate-default"): "--output -o",
    ("info",): "",
}


@pytest.mark.parametrize(
    ("path", "flags"),
    [pytest.param(p, f, id=" ".join(p) or "ctk") for p, f in NVIDIA_CTK_FLAGS.items()],
)
def test_every_nvidia_ctk_flag_exists(path: tuple[str, ...], flags: str) -> None:
    from ctk.cli.commands import build_app
    from tests.cli_tree import is_group

    command: Any = build_app()
    for name in path:
        assert is_group(command)
        command = command.commands[name]
    options = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    options |= {"--help", "-h"}
    assert set(flags.split()) - options == set()


def test_info(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from ctk import __version__

    monkeypatch.setenv("NVIDIA_CTK_CDI_HOOK_PATH", "/opt/hook")
    assert main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"version:        {__version__}"
    assert lines[2:5] == [
        "hook program:   /opt/hook",
        "spec output:    /etc/cdi/nvidia.yaml",
        "spec dirs:      /etc/cdi, /var/run/cdi",
    ]


def test_install_guide_rootless_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA's install guide, rootless Docker: `nvidia-ctk config --set
    nvidia-container-cli.no-cgroups --in-place` (here with -c: the test's file)."""
    config = tmp_path / "config.toml"
    from ctk.toolkit_config import DEFAULT_CONFIG

    config.write_text(DEFAULT_CONFIG)
    argv = ["config", "-c", str(config), "--set", "nvidia-container-cli.no-cgroups", "--in-place"]
    assert main(argv) == 0
    assert config.read_text() == DEFAULT_CONFIG.replace(
        "#no-cgroups = false\n", "#no-cgroups = false\n"
    ).replace('#user = "root:video"\n', '#user = "root:video"\nno-cgroups = true\n')


def test_an_option_value_named_help_is_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", "help", "cdi", "list", "--spec-dir", str(RUN)]) == 0
    assert capsys.readouterr().out == "nvidia.com/gpu=1\n"


# --- every documented cdi line: accepted (issue 12's done-when) -------------------------------

COMPAT_ROOT_IGNORED = (
    "warning: --csv.compat-container-root /usr/local/cuda/compat-orin: ignored; ctk's csv mode "
    "adds no enable-cuda-compat hook"
)
REFERENCE_LINES = [  # (node, argv after `cdi generate --driver-root <node>`, warnings)
    ("workstation", "", []),
    ("workstation", "--output=", []),
    ("workstation", "--output={tmp}/nvidia.yaml", []),
    ("workstation", "--output {tmp}/nvidia.json --format json", []),
    ("workstation", "--format=yaml", []),
    ("workstation", "--format JSON", []),
    ("workstation", "--mode auto", []),
    ("workstation", "--mode nvml", []),
    ("workstation", "--discovery-mode=nvml", []),
    ("workstation", "--mode management", []),
    ("workstation", "--mode management --vendor=management.nvidia.com", []),
    ("workstation", "--dev-root {root}", []),
    ("workstation", "--device-name-strategy index --device-name-strategy uuid", []),
    ("workstation", "--device-name-strategy type-index", []),
    ("workstation", "--library-search-path /usr/lib64 --config-search-path /usr/share", []),
    ("workstation", "--nvidia-cdi-hook-path nvidia-cdi-hook", []),
    ("workstation", "--nvidia-ctk-path {hook}", []),
    ("workstation", "--ldconfig-path /sbin/ldconfig", []),
    ("workstation", "--vendor nvidia.com --class gpu", []),
    ("workstation", "--cdi-vendor example.com --cdi-class accel", []),
    ("workstation", "--disable-hook all", []),
    ("workstation", "--disable-hooks update-ldcache --disable-hook create-symlinks", []),
    ("workstation", "--enable-hook chmod", []),
    ("workstation", "--disable-hook all --enable-hooks chmod", []),
    ("workstation", "--feature-flag enable-explicit-driver-libraries", []),
    ("workstation", "--feature-flag disable-nvsandboxutils", []),
    ("workstation", "--feature-flag disable-multiple-csv-devices", []),
    ("workstation", "--feature-flags no-additional-gids-for-device-nodes", []),
    ("workstation", "--feature-flag disable-ipc-discoverer", []),
    (
        "workstation",
        "--feature-flag enable-coherent-annotations",
        [
            "warning: --feature-flag enable-coherent-annotations: ignored; ctk writes no "
            "gpu.nvidia.com/coherent annotations or .coherent/.noncoherent specs"
        ],
    ),
    ("workstation", "--no-all-device", []),
    ("workstation", "--no-all-device=false", []),
    ("workstation", "--device-id 0", []),
    ("workstation", "--device-ids 0 --device all", []),
    ("workstation", "--devices GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d", []),
    ("workstation", "--device-id none", []),
    ("dgx-a100", "--device-id 2:0 --device-id 5", []),
    ("workstation", "--csv.file /x.csv --csv.ignore-pattern x --csv.compat-container-root /c", []),
    (
        "workstation",
        "--output {tmp}/nvidia.yaml --format json",
        [
            "warning: --format json does not match --output {tmp}/nvidia.yaml; writing yaml as "
            "the file name says"
        ],
    ),
    (
        "workstation",
        "--output {tmp}/nvidia.yml",
        [
            "warning: --output {tmp}/nvidia.yml: CDI runtimes read only .yaml and .json files; "
            "writing {tmp}/nvidia.yml.yaml, as nvidia-ctk does"
        ],
    ),
    ("jetson-orin", "", []),
    ("jetson-orin", "--mode csv", []),
    ("jetson-orin", "--mode csv --device-id 0", []),
    ("jetson-orin", "--mode csv --device-id all --no-all-device", []),
    ("jetson-orin", "--mode csv --device-id none", []),
    ("jetson-orin", "--mode csv --device-name-strategy type-index", []),
    (
        "jetson-orin",
        "--mode csv --device-name-strategy uuid",
        [
            "warning: --device-name-strategy uuid: the integrated GPU of csv mode has no UUID; "
            "naming it 0 (--device-name-strategy index)"
        ],
    ),
    (
        "jetson-orin",
        "--mode csv --csv.file {root}/etc/nvidia-container-runtime/host-files-for-container.d/"
        "devices.csv --csv.file {root}/etc/nvidia-container-runtime/host-files-for-container.d/"
        "drivers.csv",
        [],
    ),
    ("jetson-orin", "--mode csv --csv.ignore-pattern **/libv4l2.so.*", []),
    (
        "jetson-orin",
        "--mode csv --csv.compat-container-root /usr/local/cuda/compat-orin",
        [COMPAT_ROOT_IGNORED],
    ),
    ("jetson-orin", "--mode csv --feature-flag disable-multiple-csv-devices", []),
    ("jetson-orin", "--mode csv --library-search-path /usr/lib/aarch64-linux-gnu/tegra", []),
    ("wsl2", "", []),
    ("wsl2", "--mode wsl --device-id none", []),
    (
        "wsl2",
        "--mode wsl --device-id 0",
        ["warning: --device-id 0: ignored; wsl mode has one device, all"],
    ),
    ("gb200-imex", "--mode imex", []),
    ("gb200-imex", "--mode imex --device-id 0 --device-id channel2 --no-all-device", []),
    ("gb200-imex", "--mode imex --device-id none", []),
    ("gpudirect", "--mode gds", []),
    ("gpudirect", "--mode gdrcopy --class gpu", []),
    ("gpudirect", "--mode mofed", []),
    ("dgx-a100", "--mode nvswitch", []),
]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("node_name", "args", "warnings"),
    [pytest.param(n, a, w, id=f"{n}:{a or 'defaults'}") for n, a, w in REFERENCE_LINES],
)
def test_every_documented_generate_line_is_accepted(  # noqa: PLR0917  (pytest passes fixtures by position)
    node_name: str,
    args: str,
    warnings: list[str],
    fake_node: MakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each flag and value of nvidia-ctk 1.20's `cdi generate` (NVIDIA-CTK-REFERENCE.md),
    on a node of the kind it is for: exit 0, and the warnings listed are the only ones."""
    node = fake_node(node_name)
    hook = tmp_path / "bin" / "nvidia-cdi-hook"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    monkeypatch.setenv("PATH", f"{hook.parent}:{os.environ['PATH']}")
    out_dir = tmp_path / "out"
    values = {"root": str(node.root), "tmp": str(out_dir), "hook": str(hook)}
    argv = [a.format(**values) for a in args.split()]
    code = main(["cdi", "generate", "--driver-root", str(node.root), *argv])
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("warning:")]
    assert (code, said) == (0, [w.format(**values) for w in warnings])
