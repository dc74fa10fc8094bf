"""unconfigure takes back what configure added, record or not (QA round 3, items 3-5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main

MARK = "# Written by `ctk runtime configure`"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runtime", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_containerd_unconfigure_without_record_removes_import_and_drop_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    drop_in = tmp_path / "d" / "99-nvidia.toml"
    drop_in.parent.mkdir()
    other = tmp_path / "other.toml"
    other.write_text("version = 2\n")
    config.write_text(f'version = 2\nimports = ["{other}", "{drop_in}"]\n')
    drop_in.write_text(f"{MARK}; x\nversion = 2\n")
    args = ("--runtime", "containerd", "--config", str(config), "--drop-in-config", str(drop_in))
    assert run(capsys, "unconfigure", *args) == (
        0,
        f"updated {config}\nremoved {drop_in}\n"
        "Restart containerd to apply the change: systemctl restart containerd\n",
        "",
    )
    assert config.read_text() == f'version = 2\nimports = ["{other}"]\n'
    assert not drop_in.exists()


def test_containerd_unconfigure_without_record_drops_an_emptied_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    drop_in = tmp_path / "d" / "99-nvidia.toml"
    drop_in.parent.mkdir()
    config.write_text(f'version = 2\nimports = ["{drop_in}"]\n')
    drop_in.write_text(f"{MARK}; x\nversion = 2\n")
    args = ("--runtime", "containerd", "--config", str(config), "--drop-in-config", str(drop_in))
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == "version = 2\n"


def test_two_drop_ins_keep_their_own_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    original = '# main\nversion = 2\nimports = ["/etc/first.toml"]\n'
    config.write_text(original)
    (tmp_path / "d").mkdir()
    first, second = tmp_path / "d" / "98-a.toml", tmp_path / "d" / "99-b.toml"
    base = ("--runtime", "containerd", "--config", str(config))
    for drop_in in (first, second):
        assert run(capsys, "configure", *base, "--drop-in-config", str(drop_in))[0] == 0
    assert run(capsys, "unconfigure", *base, "--drop-in-config", str(second))[0] == 0
    assert config.read_text() == (
        f'# main\nversion = 2\nimports = ["/etc/first.toml", "{first}"]\n'
    )
    assert run(capsys, "unconfigure", *base, "--drop-in-config", str(first))[0] == 0
    assert config.read_text() == original
    assert not first.exists() and not second.exists()


@pytest.mark.parametrize(
    ("runtime", "name", "text"),
    [
        pytest.param(
            "docker",
            "daemon.json",
            '{"runtimes":{"nvidia":{"path":"/usr/bin/nvidia-container-runtime","args":[]}}}\n',
            id="docker",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            "version = 2\n"
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
            '  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            '  BinaryName = "/usr/bin/nvidia-container-runtime"\n',
            id="containerd",
        ),
        pytest.param(
            "crio",
            "crio.conf",
            "[crio.runtime.runtimes.nvidia]\n"
            'runtime_path = "/usr/bin/nvidia-container-runtime"\n'
            'runtime_type = "oci"\n',
            id="crio",
        ),
    ],
)
def test_runtime_that_was_there_before_survives_unconfigure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str, name: str, text: str
) -> None:
    config = tmp_path / name
    config.write_text(text)
    args: tuple[str, ...] = ("--runtime", runtime, "--config", str(config))
    args += ("--drop-in-config", "") if runtime != "docker" else ()
    assert run(capsys, "configure", *args) == (
        0,
        f"{runtime} is already configured; nothing changed\n",
        "",
    )
    assert run(capsys, "unconfigure", *args) == (
        0,
        f"{runtime} has nothing of ctk's to remove; nothing changed\n",
        "",
    )
    assert config.read_text() == text
    # Once the record is gone, unconfigure does what nvidia-ctk users expect: remove the runtime.
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() != text


def test_a_created_runtime_goes_whole_but_a_default_changed_since_stays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"default-runtime": "runc"}\n')
    args = ("--runtime", "docker", "--config", str(config))
    assert run(capsys, "configure", *args, "--set-as-default")[0] == 0
    config.write_text(
        '{"default-runtime": "crun", "runtimes": {"nvidia": {"path": "/opt/nv", "args": []}}}\n'
    )
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == '{"default-runtime": "crun"}\n'


def test_crio_drop_in_runtime_names_accumulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "crio.conf"
    config.write_text("[crio]\n")
    drop_in = tmp_path / "crio.conf.d" / "99-nvidia.toml"
    args = ("--runtime", "crio", "--config", str(config), "--drop-in-config", str(drop_in))
    assert run(capsys, "configure", *args, "--set-as-default")[0] == 0
    assert run(capsys, "configure", *args, "--nvidia-runtime-name", "nvidia-cdi")[0] == 0
    header = f"{MARK}; `ctk runtime unconfigure` removes it.\n"
    table = 'runtime_path = "/usr/bin/nvidia-container-runtime"\nruntime_type = "oci"\n'
    assert drop_in.read_text() == (
        f'{header}[crio.runtime]\ndefault_runtime = "nvidia"\n\n'
        f"[crio.runtime.runtimes.nvidia]\n{table}\n"
        f"[crio.runtime.runtimes.nvidia-cdi]\n{table}"
    )
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert drop_in.read_text() == (
        f"{header}[crio.runtime]\n\n[crio.runtime.runtimes.nvidia-cdi]\n{table}"
    )
    assert run(capsys, "unconfigure", *args, "--nvidia-runtime-name", "nvidia-cdi")[0] == 0
    assert not drop_in.exists()


def test_relative_state_dir_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTK_STATE_DIR", "state")
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "daemon.json"
    config.write_text("{}\n")
    assert run(capsys, "configure", "--runtime", "docker", "--config", str(config)) == (
        1,
        "",
        "error: CTK_STATE_DIR must be an absolute path, not 'state'\n"
        "hint: set it to an absolute directory, or unset it to use /var/lib/ctk\n",
    )
    assert config.read_text() == "{}\n"
    assert list(tmp_path.iterdir()) == [config]


NV = '{"path": "/usr/bin/nvidia-container-runtime", "args": []}'


def test_docker_unconfigure_removes_only_the_named_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"debug": true}\n')
    args = ("--runtime", "docker", "--config", str(config))
    for name in ("n1", "n2", "n3"):
        assert run(capsys, "configure", *args, "--nvidia-runtime-name", name)[0] == 0
    assert (
        run(capsys, "configure", *args, "--nvidia-runtime-name", "n1", "--set-as-default")[0] == 0
    )
    assert run(capsys, "unconfigure", *args, "--nvidia-runtime-name", "n3")[0] == 0
    assert config.read_text() == (
        f'{{"debug": true, "runtimes": {{"n1": {NV}, "n2": {NV}}}, "default-runtime": "n1"}}\n'
    )
    assert run(capsys, "unconfigure", *args, "--nvidia-runtime-name", "n1")[0] == 0
    assert config.read_text() == f'{{"debug": true, "runtimes": {{"n2": {NV}}}}}\n'
    assert run(capsys, "unconfigure", *args, "--nvidia-runtime-name", "n2")[0] == 0
    assert config.read_text() == '{"debug": true}\n'


def test_containerd_in_place_unconfigure_removes_only_the_named_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    original = "# mine\nversion = 2\n"
    config.write_text(original)
    args = ("--runtime", "containerd", "--config", str(config), "--drop-in-config", "")
    assert run(capsys, "configure", *args, "--set-as-default")[0] == 0
    assert run(capsys, "configure", *args, "--nvidia-runtime-name", "nvidia-cdi")[0] == 0
    both = config.read_text()
    assert run(capsys, "unconfigure", *args, "--nvidia-runtime-name", "nvidia-cdi")[0] == 0
    assert run(capsys, "configure", *args, "--nvidia-runtime-name", "nvidia-cdi")[0] == 0
    assert config.read_text() == both
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert "runtimes.nvidia-cdi]" in config.read_text()
    assert 'default_runtime_name = "nvidia"' not in config.read_text()
    assert run(capsys, "unconfigure", *args, "--nvidia-runtime-name", "nvidia-cdi")[0] == 0
    assert config.read_text() == original
