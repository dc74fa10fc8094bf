"""`ctk doctor --fix`: plan, confirmation, the real ctk command, re-check."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

DAEMON_JSON = "etc/docker/daemon.json"


@pytest.fixture
def docker_node(fake_node: Callable[[str], FakeNode]) -> Path:  # noqa: F811
    return fake_node("docker-no-runtime").root


def test_fix_configures_docker_and_rechecks(
    docker_node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = docker_node / DAEMON_JSON
    # the toolkit is in CDI mode: with the runtime there, Docker's CDI being off is found next
    # (an error, as every way Docker cannot serve a CDI request is), and fixed by a second run
    assert main(["doctor", "--root", str(docker_node), "--fix", "--yes"]) == 1
    out = capsys.readouterr().out
    tail = out[out.index("ctk can fix these findings itself:") :]
    assert tail == (
        "ctk can fix these findings itself:\n"
        "  add the nvidia runtime to the docker configuration (docker.runtime-not-configured)\n"
        f"    ctk runtime configure --runtime=docker --config={config}\n"
        f"$ ctk runtime configure --runtime=docker --config={config}\n"
        f"updated {config}\n"
        "Restart docker to apply the change: systemctl restart docker\n"
        "\nAfter the fixes:\n"
        "  docker.runtime-not-configured: fail -> ok  nvidia runtime configured "
        "(default runtime runc)\n"
        "Now found (the fixed checks had blocked them):\n"
        "  docker.cdi-not-enabled: skip -> fail  the toolkit uses CDI but Docker's CDI support "
        "is off: `--device nvidia.com/gpu=...` fails with 'could not select device driver "
        '"cdi"\'\n'
        "ctk can fix these too: run ctk doctor --fix again\n"
    )
    written = json.loads(config.read_text())
    assert written["runtimes"]["nvidia"]["path"] == "/usr/bin/nvidia-container-runtime"
    assert written["log-driver"] == "json-file"
    # the undo record belongs to the diagnosed node's state directory, not this machine's
    undo = docker_node / "var/lib/ctk/runtime/undo"
    assert [p.name.endswith("daemon.json.json") for p in undo.iterdir()] == [True]
    # the second run fixes what the first one uncovered
    assert main(["doctor", "--root", str(docker_node), "--fix", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "  docker.cdi-not-enabled: fail -> ok  " in out
    assert json.loads(config.read_text())["features"] == {"cdi": True}


def test_fix_declined_changes_nothing(
    docker_node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = docker_node / DAEMON_JSON
    before = config.read_bytes()
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    assert main(["doctor", "--root", str(docker_node), "--fix"]) == 1
    assert capsys.readouterr().out.endswith("Apply these fixes? [y/N]: Nothing changed.\n")
    assert config.read_bytes() == before


def test_fix_with_standard_input_closed_is_aborted(
    docker_node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No answer to the prompt (stdin at its end: a pipe, `< /dev/null`): `error: aborted`,
    exit 1, nothing changed."""
    config = docker_node / DAEMON_JSON
    before = config.read_bytes()
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(""))
    assert main(["doctor", "--root", str(docker_node), "--fix"]) == 1
    captured = capsys.readouterr()
    assert captured.out.endswith("Apply these fixes? [y/N]: ")
    assert captured.err.endswith("error: aborted\n")
    assert config.read_bytes() == before


def test_fix_with_json_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--fix", "--json"]) == 2
    assert capsys.readouterr().err == (
        "error: --fix and --json cannot be combined\nhint: run --fix without --json\n"
    )


@pytest.fixture
def legacy_node(fake_node: Callable[[str], FakeNode]) -> Path:  # noqa: F811
    return fake_node("systemd-legacy").root


def test_fix_dev_char_links_under_root_point_inside_it(
    legacy_node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--root", str(legacy_node), "--fix", "--yes"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(
        "\nAfter the fixes:\n"
        "  dev.char-symlinks-missing: warn -> ok  the /dev/char links for the NVIDIA devices "
        "exist\n"
    )
    char = legacy_node / "dev" / "char"
    links = {entry.name: os.readlink(entry) for entry in sorted(char.iterdir())}
    assert links == {
        "195:0": "../nvidia0",
        "195:1": "../nvidia1",
        "195:254": "../nvidia-modeset",
        "195:255": "../nvidiactl",
        "510:0": "../nvidia-uvm",
        "510:1": "../nvidia-uvm-tools",
    }


def test_a_fix_that_does_not_take_fails_and_says_so(
    legacy_node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fix "succeeds", changes nothing
    monkeypatch.setattr("ctk.cli.doctor_fix.apply", lambda fix, root: None)
    assert main(["doctor", "--root", str(legacy_node), "--fix", "--yes"]) == 1
    out = capsys.readouterr().out
    assert out.endswith(
        "  dev.char-symlinks-missing: warn -> warn  containers will lose GPU access after "
        "`systemctl daemon-reload` (NVML: Unknown Error): the systemd cgroup driver rebuilds "
        "device rules from /dev/char and 5 NVIDIA link(s) are missing\n"
        "the fixes did not take: dev.char-symlinks-missing still warn\n"
    )


def test_no_fix_is_offered_for_an_unparseable_config(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = fake_node("containerd-config-invalid").root
    assert main(["doctor", "--root", str(root), "--fix", "--yes"]) == 1
    out = capsys.readouterr().out
    assert out.endswith(
        "Fix first: containerd.runtime-not-configured.\n"
        "\nNothing that ctk can fix by itself; apply the commands shown above.\n"
    )


TOOLKIT_CONFIG = "etc/nvidia-container-runtime/config.toml"


def test_fix_sets_a_key_of_a_parseable_toolkit_config(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = fake_node("ldconfig-real-on-rhel").root
    config = root / TOOLKIT_CONFIG
    assert main(["doctor", "--root", str(root), "--fix", "--yes"]) == 0
    captured = capsys.readouterr()
    command = (
        "ctk config --in-place --set nvidia-container-cli.ldconfig=@/sbin/ldconfig "
        f"--config={config}"
    )
    out = captured.out
    assert out[out.index("ctk can fix these findings itself:") :] == (
        "ctk can fix these findings itself:\n"
        "  set nvidia-container-cli.ldconfig = @/sbin/ldconfig (toolkit.ldconfig-path)\n"
        f"    {command}\n"
        f"$ {command}\n"
        "\nAfter the fixes:\n"
        "  toolkit.ldconfig-path: fail -> ok  ldconfig @/sbin/ldconfig exists\n"
    )
    assert captured.err.endswith(f"wrote {config}\n")
    assert config.read_text() == (
        '[nvidia-container-cli]\nldconfig = "@/sbin/ldconfig"\n\n'
        '[nvidia-container-runtime]\nmode = "cdi"\n'
    )


def test_fix_edits_the_toolkit_config_the_doctor_read(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """NVIDIA_CTK_CONFIG_FILE_PATH names the config the toolkit (and the doctor) read: the fix
    edits that one and leaves the default file byte for byte."""
    root = fake_node("toolkit-config-env").root
    config = root / "opt/nvidia/toolkit/config.toml"
    default = (root / TOOLKIT_CONFIG).read_bytes()
    assert main(["doctor", "--root", str(root), "--fix", "--yes"]) == 0
    captured = capsys.readouterr()
    command = (
        "ctk config --in-place --set nvidia-container-cli.ldconfig=@/sbin/ldconfig "
        f"--config={config}"
    )
    out = captured.out
    assert out[out.index("ctk can fix these findings itself:") :] == (
        "ctk can fix these findings itself:\n"
        "  set nvidia-container-cli.ldconfig = @/sbin/ldconfig in "
        "/opt/nvidia/toolkit/config.toml (toolkit.ldconfig-path)\n"
        f"    {command}\n"
        f"$ {command}\n"
        "\nAfter the fixes:\n"
        "  toolkit.ldconfig-path: fail -> ok  ldconfig @/sbin/ldconfig exists\n"
    )
    assert captured.err.endswith(f"wrote {config}\n")
    assert config.read_text() == (
        '[nvidia-container-cli]\nldconfig = "@/sbin/ldconfig"\n\n'
        '[nvidia-container-runtime]\nmode = "cdi"\n'
    )
    assert (root / TOOLKIT_CONFIG).read_bytes() == default


def test_the_remedy_names_the_toolkit_config_the_doctor_read(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = fake_node("toolkit-config-env").root
    main(["doctor", "--root", str(root), "--json", "--check", "toolkit.ldconfig-path"])
    [finding] = json.loads(capsys.readouterr().out)["checks"]
    config = "/opt/nvidia/toolkit/config.toml"
    assert (finding["evidence"][0], finding["remedy"]) == (
        {"source": config, "value": 'ldconfig = "@/sbin/ldconfig.real"'},
        {
            "text": "Point nvidia-container-cli.ldconfig at the host's ldconfig.",
            "commands": [
                "sudo ctk config --in-place --set nvidia-container-cli.ldconfig=@/sbin/ldconfig "
                f"--config={root}{config}"  # the command --fix runs: the node's file
            ],
            "notes": [],
            "fixable": True,
        },
    )


def test_fix_refuses_to_replace_a_toolkit_config_that_does_not_parse(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = fake_node("toolkit-config-invalid").root
    config = root / TOOLKIT_CONFIG
    before = config.read_bytes()
    assert main(["doctor", "--root", str(root), "--fix", "--yes"]) == 1
    out = capsys.readouterr().out
    assert out[out.index("ctk can fix these findings itself:") :] == (
        "ctk can fix these findings itself:\n"
        "  write a default /etc/nvidia-container-runtime/config.toml "
        "(toolkit.config-invalid)\n"
        "    (not applied by --fix: a default config would replace "
        "/etc/nvidia-container-runtime/config.toml, which does not parse, and lose every "
        "setting in it; fix the reported line, or run the command shown above yourself)\n"
    )
    assert config.read_bytes() == before


def test_a_toolkit_setting_on_a_config_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    from ctk.cli import doctor_fix
    from ctk.doctor.fixes import SetToolkitConfig
    from ctk.errors import CtkError

    config = tmp_path / TOOLKIT_CONFIG
    config.parent.mkdir(parents=True)
    config.write_text("[nvidia-container-runtime]\nmode = cdi\n")
    fix = SetToolkitConfig(settings=(("nvidia-container-runtime.mode", "auto"),))
    with pytest.raises(CtkError) as raised:
        doctor_fix.apply(fix, tmp_path)
    assert str(raised.value).startswith(f"{config}: not valid TOML")
    assert config.read_text() == "[nvidia-container-runtime]\nmode = cdi\n"
