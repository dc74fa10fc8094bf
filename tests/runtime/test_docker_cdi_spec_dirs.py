"""`--cdi.enabled` leaves dockerd able to read CDI specs: `cdi-spec-dirs` [] or [""] is fixed.

dockerd (25.0 on, moby daemon/cdi.go) replaces its defaults /etc/cdi and /var/run/cdi with
`cdi-spec-dirs` when the key is set; [] and [""] then name no directory and every CDI device
request fails ("no CDI specification directories specified").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.runtime_config.configure import Inputs, configure, unconfigure
from ctk.runtime_config.engines import Runtime, RuntimeRequest

NAME = "/etc/docker/daemon.json"
CDI = RuntimeRequest(enable_cdi=True)
NV = '{"path": "/usr/bin/nvidia-container-runtime", "args": []}'


def note(before: str) -> str:
    return (
        f"{NAME}: cdi-spec-dirs = {before} names no directory, so dockerd would fail every CDI "
        'device request; setting it to ["/etc/cdi", "/var/run/cdi"], dockerd\'s defaults '
        "(unconfigure puts it back)"
    )


@pytest.mark.parametrize(
    ("given", "expected", "notes"),
    [
        pytest.param(
            '{"cdi-spec-dirs": []}\n',
            '{"cdi-spec-dirs": ["/etc/cdi", "/var/run/cdi"], "runtimes": {"nvidia": '
            f'{NV}}}, "features": {{"cdi": true}}}}\n',
            (note("[]"),),
            id="empty-list-one-line",
        ),
        pytest.param(
            '{"cdi-spec-dirs": [""], "features": {"cdi": true}}\n',
            '{"cdi-spec-dirs": ["/etc/cdi", "/var/run/cdi"], "features": {"cdi": true}, '
            f'"runtimes": {{"nvidia": {NV}}}}}\n',
            (note('[""]'),),
            id="empty-string-cdi-already-on",
        ),
        pytest.param(
            '{\n    "debug": true,\n    "cdi-spec-dirs": [ ]\n}\n',
            '{\n    "debug": true,\n    "cdi-spec-dirs": [\n        "/etc/cdi",\n'
            '        "/var/run/cdi"\n    ],\n    "runtimes": {\n        "nvidia": {\n'
            '            "path": "/usr/bin/nvidia-container-runtime",\n            "args": []\n'
            '        }\n    },\n    "features": {\n        "cdi": true\n    }\n}\n',
            (note("[]"),),
            id="blank-list-indented",
        ),
        pytest.param(
            '{"cdi-spec-dirs": ["/opt/cdi"]}\n',
            '{"cdi-spec-dirs": ["/opt/cdi"], "runtimes": {"nvidia": '
            f'{NV}}}, "features": {{"cdi": true}}}}\n',
            (),
            id="user-list-untouched",
        ),
        pytest.param(
            '{"cdi-spec-dirs": ["", "/opt/cdi"]}\n',
            '{"cdi-spec-dirs": ["", "/opt/cdi"], "runtimes": {"nvidia": '
            f'{NV}}}, "features": {{"cdi": true}}}}\n',
            (),
            id="list-naming-a-directory-untouched",
        ),
    ],
)
def test_cdi_enabled_sets_default_spec_dirs_and_unconfigure_undoes_it(
    given: str, expected: str, notes: tuple[str, ...]
) -> None:
    plan = configure(Runtime.DOCKER, Inputs(config=NAME, config_text=given), CDI)
    (change,) = plan.files
    assert (change.after, plan.notes, plan.warnings) == (expected, notes, ())
    written = Inputs(config=NAME, config_text=expected, record=change.record or (), recorded=True)
    assert configure(Runtime.DOCKER, written, CDI).changes == ()
    (undone,) = unconfigure(Runtime.DOCKER, written, "nvidia").files
    assert undone.after == given


def test_without_cdi_enabled_an_empty_list_stays() -> None:
    given = '{"cdi-spec-dirs": []}\n'
    plan = configure(Runtime.DOCKER, Inputs(config=NAME, config_text=given), RuntimeRequest())
    (change,) = plan.files
    assert (change.after, plan.notes) == (
        f'{{"cdi-spec-dirs": [], "runtimes": {{"nvidia": {NV}}}}}\n',
        (),
    )


def test_unconfigure_keeps_spec_dirs_the_user_changed_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"cdi-spec-dirs": []}\n')
    args = ["runtime", "configure", "--runtime=docker", "--config", str(config)]
    assert main([*args, "--cdi.enabled"]) == 0
    config.write_text(config.read_text().replace('"/var/run/cdi"', '"/run/cdi"'))
    assert main(["runtime", "unconfigure", *args[2:]]) == 0
    assert config.read_text() == '{"cdi-spec-dirs": ["/etc/cdi", "/run/cdi"]}\n'
    capsys.readouterr()


def test_dry_run_says_so_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"cdi-spec-dirs": [""]}\n')
    args = ["--runtime=docker", "--config", str(config), "--cdi.enabled", "--dry-run"]
    assert main(["runtime", "configure", *args]) == 0
    out, err = capsys.readouterr()
    assert out == (
        '{"cdi-spec-dirs": ["/etc/cdi", "/var/run/cdi"], "runtimes": {"nvidia": '
        f'{NV}}}, "features": {{"cdi": true}}}}\n'
    )
    empty = '[""]'
    assert err == (
        f"note: {note(empty).replace(NAME, str(config))}\ndry run: {config} would be updated:\n"
    )
    assert config.read_text() == '{"cdi-spec-dirs": [""]}\n'
