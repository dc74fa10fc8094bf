"""`ctk runtime configure|unconfigure` end to end: errors, dry run, symlinks, backups, locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.runners import main_as_nobody

REPO = Path(__file__).resolve().parents[2]
V2 = """\
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runtime", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("runtime", "name", "content", "error"),
    [
        pytest.param(
            "containerd",
            "config.toml",
            "version = 2\n[plugins\n",
            "not valid TOML: Expected ']' at the end of a table declaration (at line 2, column 9)",
            id="malformed-toml",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            'version = "2"\n',
            "`version` must be an integer (1, 2 or 3), found a string",
            id="version-not-integer",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            "version = 2\nimports = 7\n",
            "`imports` must be an array of strings",
            id="imports-not-array",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\ncontainerd = { runtimes = {} }\n',
            '`plugins."io.containerd.grpc.v1.cri".containerd` is an inline table; '
            "ctk edits only [tables]",
            id="inline-table",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            "",
            "empty file, expected a JSON object",
            id="empty-daemon-json",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"debug": true,\n "runtimes": ',
            "not valid JSON: Expecting value (line 2, column 14)",
            id="truncated-json",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"runtimes": ["nvidia"]}\n',
            "`runtimes` must be an object, found an array",
            id="runtimes-not-object",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"features": true}\n',
            "`features` must be an object, found a boolean",
            id="features-not-object",
        ),
        pytest.param(
            "crio",
            "crio.conf",
            "[crio.runtime]\nruntimes = 1\n",
            "`crio.runtime.runtimes` must be a table, found a number",
            id="crio-runtimes-not-table",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"debug": true, "a": NaN}\n',
            "not valid JSON: NaN is not a JSON number (line 1, column 22)",
            id="json-nan",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"x": "NaN Infinity",\n "a": [-Infinity]}\n',
            "not valid JSON: -Infinity is not a JSON number (line 2, column 8)",
            id="json-infinity",
        ),
    ],
)
def test_bad_input_is_refused_and_untouched(
    runtime: str,
    name: str,
    content: str,
    error: str,
    *,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / name
    config.write_text(content)
    drop_in = ["--drop-in-config="] if runtime != "docker" else []
    code, out, err = run(
        capsys, "configure", "--runtime", runtime, "--config", str(config), *drop_in
    )
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"error: {config}: {error}"
    assert config.read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_config_that_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "configure", "--runtime", "docker", "--config", str(tmp_path))
    assert (code, out, err) == (
        1,
        "",
        f"error: {tmp_path}: cannot read: Is a directory\n"
        "hint: pass the path of a file, not of a directory\n",
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(
            ["--runtime", "docker", "--drop-in-config", "/etc/docker/99.json"],
            "error: docker has no drop-in configs\nhint: drop --drop-in-config\n",
            id="docker-drop-in",
        ),
        pytest.param(
            ["--runtime", "containerd", "--drop-in-config", "conf.d/99-nvidia.toml"],
            "error: --drop-in-config must be an absolute path, not 'conf.d/99-nvidia.toml'\n",
            id="relative-drop-in",
        ),
        pytest.param(
            ["--runtime", "docker", "--nvidia-runtime-name", "runc"],
            "error: dockerd reserves the runtime name 'runc'\nhint: use a name like nvidia\n",
            id="docker-runc-name",
        ),
        pytest.param(
            ["--runtime", "docker", "--nvidia-runtime-path", "bin/nvidia-container-runtime"],
            "error: --nvidia-runtime-path must be absolute, not 'bin/nvidia-container-runtime'\n"
            "hint: for example /usr/bin/nvidia-container-runtime\n",
            id="relative-runtime-path",
        ),
    ],
)
def test_usage_errors(
    args: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config"
    assert run(capsys, "configure", "--config", str(config), *args) == (2, "", error)
    assert not config.exists()


def test_k3s_generated_config_points_at_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "var/lib/rancher/k3s/agent/etc/containerd"
    directory.mkdir(parents=True)
    (directory / "config.toml").write_text(V2)
    (directory / "config.toml.tmpl").write_text('{{ template "base" . }}\n')
    code, out, err = run(
        capsys, "configure", "--runtime", "containerd", "--config", str(directory / "config.toml")
    )
    config, template = directory / "config.toml", directory / "config.toml.tmpl"
    assert (code, out, err) == (
        1,
        "",
        f"error: {config}: is generated by k3s/RKE2 from the template {template} at every "
        "start; a change here would be lost\n"
        f"hint: edit {template} instead (k3s and RKE2 also add the nvidia runtime themselves "
        "when they find nvidia-container-runtime)\n",
    )
    code, out, err = run(capsys, "configure", "--runtime", "containerd", "--config", str(template))
    assert (code, err.splitlines()[0]) == (
        1,
        f"error: {template}: is a Go template (k3s/RKE2 config.toml.tmpl), not TOML; ctk does "
        "not edit templates",
    )
    assert config.read_text() == V2
    assert sorted(p.name for p in directory.iterdir()) == ["config.toml", "config.toml.tmpl"]


def test_rke2_config_without_template_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "var/lib/rancher/rke2/agent/etc/containerd"
    directory.mkdir(parents=True)
    config = directory / "config.toml"
    config.write_text(V2)
    code, _, err = run(capsys, "configure", "--runtime", "containerd", "--config", str(config))
    assert (code, err.splitlines()[0]) == (
        1,
        f"error: {config}: is regenerated by k3s/RKE2 at every start; a change here would be lost",
    )


def test_diff_prints_diff_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{\n  "debug": true\n}')
    code, out, err = run(
        capsys, "configure", "--runtime", "docker", "--config", str(config), "--diff"
    )
    assert (code, err) == (0, "")
    assert out == (
        f"--- {config}\n"
        f"+++ {config}\n"
        "@@ -1,3 +1,9 @@\n"
        " {\n"
        '-  "debug": true\n'
        "-}\n"
        "\\ No newline at end of file\n"
        '+  "debug": true,\n'
        '+  "runtimes": {\n'
        '+    "nvidia": {\n'
        '+      "path": "/usr/bin/nvidia-container-runtime",\n'
        '+      "args": []\n'
        "+    }\n"
        "+  }\n"
        "+}\n"
    )
    assert config.read_text() == '{\n  "debug": true\n}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.json"]


def test_diff_of_new_drop_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "crio.conf"
    config.write_text('[crio.runtime]\ncgroup_manager = "systemd"\n')
    drop_in = tmp_path / "crio.conf.d" / "99-nvidia.toml"
    code, out, err = run(
        capsys,
        "configure",
        "--runtime",
        "crio",
        "--config",
        str(config),
        "--drop-in-config",
        str(drop_in),
        "--diff",
    )
    assert (code, err) == (0, "")
    assert out == (
        "--- /dev/null\n"
        f"+++ {drop_in}\n"
        "@@ -0,0 +1,4 @@\n"
        "+# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
        "+[crio.runtime.runtimes.nvidia]\n"
        '+runtime_path = "/usr/bin/nvidia-container-runtime"\n'
        '+runtime_type = "oci"\n'
    )
    assert not drop_in.parent.exists()


def test_writes_through_symlink_and_keeps_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real" / "config.toml"
    real.parent.mkdir()
    real.write_text(V2)
    real.chmod(0o600)
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    code, out, _ = run(
        capsys, "configure", "--runtime", "containerd", "--config", str(link), "--drop-in-config="
    )
    assert (code, out.splitlines()[0]) == (0, f"updated {link}")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert (real.stat().st_mode & 0o777) == 0o600
    assert "BinaryName" in real.read_text()
    assert (
        run(
            capsys,
            "unconfigure",
            "--runtime",
            "containerd",
            "--config",
            str(link),
            "--drop-in-config=",
        )[0]
        == 0
    )
    assert real.read_text() == V2
    assert sorted(p.name for p in real.parent.iterdir()) == ["config.toml"]


def test_backup_keeps_old_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"debug": true}\n')
    code, _, _ = run(
        capsys, "configure", "--runtime", "docker", "--config", str(config), "--backup"
    )
    assert code == 0
    assert (tmp_path / "daemon.json.bak").read_text() == '{"debug": true}\n'
    assert config.read_text() == (
        '{"debug": true, "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime",'
        ' "args": []}}}\n'
    )


def test_unconfigure_keeps_features_cdi_it_did_not_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = '{\n  "features": {\n    "cdi": true\n  }\n}\n'
    config = tmp_path / "daemon.json"
    config.write_text(original)
    args = ["--runtime", "docker", "--config", str(config)]
    assert run(capsys, "configure", *args, "--cdi.enabled", "--set-as-default")[0] == 0
    assert run(capsys, "unconfigure", *args) == (
        0,
        f"updated {config}\nRestart docker to apply the change: systemctl restart docker\n",
        "",
    )
    assert config.read_text() == original
    assert run(capsys, "unconfigure", *args) == (
        0,
        "docker has nothing of ctk's to remove; nothing changed\n",
        "",
    )


def test_unconfigure_keeps_user_edits_made_after_configure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(V2)
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config="]
    assert run(capsys, "configure", *args, "--cdi.enabled")[0] == 0
    # The user now adds a setting to the CRI table that ctk created.
    text = config.read_text().replace(
        "enable_cdi = true\n", 'enable_cdi = true\ncdi_spec_dirs = ["/etc/cdi"]\n'
    )
    config.write_text(text)
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == (
        "version = 2\n"
        "\n"
        '[plugins."io.containerd.grpc.v1.cri"]\n'
        'cdi_spec_dirs = ["/etc/cdi"]\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
    )


def test_concurrent_runs_lose_nothing(tmp_path: Path) -> None:
    config = tmp_path / "daemon.json"
    config.write_text("{}\n")
    codes: list[int] = []

    def configure(name: str) -> None:
        codes.append(
            main(
                [
                    "runtime",
                    "configure",
                    "--runtime",
                    "docker",
                    "--config",
                    str(config),
                    "--nvidia-runtime-name",
                    name,
                ]
            )
        )

    threads = [threading.Thread(target=configure, args=(f"nvidia{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes == [0, 0, 0, 0]
    runtimes = json.loads(config.read_text())["runtimes"]
    assert sorted(runtimes) == ["nvidia0", "nvidia1", "nvidia2", "nvidia3"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to user nobody")
def test_permission_denied_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(V2)
    config.chmod(0o600)
    tmp_path.chmod(0o755)  # nobody may enter the directory but not read the file
    argv = ["runtime", "configure", "--runtime", "containerd", "--config", str(config)]
    assert main_as_nobody(argv) == (
        1,
        "",
        f"error: {config}: cannot read: Permission denied\n"
        "hint: run as root (sudo) or choose a path you can access\n",
    )
    assert config.read_text() == V2


@pytest.mark.parametrize(
    ("runtime", "config_name", "config_text"),
    [
        pytest.param("containerd", "config.toml", V2, id="containerd"),
        pytest.param(
            "crio", "crio.conf", '[crio.runtime]\ncgroup_manager = "systemd"\n', id="crio"
        ),
    ],
)
def test_rerun_without_flags_keeps_default_and_cdi_in_drop_in(
    runtime: str,
    config_name: str,
    config_text: str,
    *,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / config_name
    config.write_text(config_text)
    drop_in = tmp_path / "conf.d" / "99-nvidia.toml"
    args = ["--runtime", runtime, "--config", str(config), "--drop-in-config", str(drop_in)]
    assert run(capsys, "configure", *args, "--set-as-default", "--cdi.enabled")[0] == 0
    written = drop_in.read_text()
    assert run(capsys, "configure", *args) == (
        0,
        f"{runtime} is already configured; nothing changed\n",
        "",
    )
    assert drop_in.read_text() == written


def test_crio_later_drop_in_overriding_ours_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "crio.conf"
    config.write_text("[crio.runtime]\n")
    directory = tmp_path / "crio.conf.d"
    directory.mkdir()
    (directory / "99-zz-site.conf").write_text('[crio.runtime]\ndefault_runtime = "crun"\n')
    (directory / "99-zz-other.conf").write_text('[crio.image]\npause_image = "p"\n')
    drop_in = directory / "99-nvidia.toml"
    drop_in.write_text("# Written by `ctk runtime configure`; an earlier run\n")
    code, _, err = run(
        capsys,
        "configure",
        "--runtime",
        "crio",
        "--config",
        str(config),
        "--drop-in-config",
        str(drop_in),
        "--set-as-default",
        "--backup",
    )
    assert (code, err) == (
        0,
        f"warning: {directory / '99-zz-site.conf'} is read after {drop_in} and overrides its "
        "settings\n",
    )
    # No 99-nvidia.toml.bak: CRI-O reads every file of crio.conf.d, a backup too.
    assert sorted(p.name for p in directory.iterdir()) == [
        "99-nvidia.toml",
        "99-zz-other.conf",
        "99-zz-site.conf",
    ]


def test_help_does_not_load_the_editors() -> None:
    code = (
        "import sys\n"
        "from ctk.cli.app import main\n"
        "main(['runtime', 'configure', '--help'])\n"
        # (not difflib, which typer.core imports for its "did you mean" suggestions)
        "print(sorted(m for m in ('tomlkit', 'ctk.runtime_config.tomledit',"
        " 'ctk.runtime_config.plan', 'ctk.runtime_config.configure') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    assert result.stdout.splitlines()[-1] == "[]"


def test_runc_with_inline_options_is_copied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = (
        "version = 2\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        "  options = { SystemdCgroup = true }\n"
    )
    config = tmp_path / "config.toml"
    config.write_text(original)
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config="]
    assert run(capsys, "configure", *args)[0] == 0
    assert config.read_text() == original + (
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '  options = {SystemdCgroup = true, BinaryName = "/usr/bin/nvidia-container-runtime"}\n'
    )
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == original


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "version = 2\n",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
            'runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            'runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            'BinaryName = "/usr/bin/nvidia-container-runtime"\n',
            id="v2",
        ),
        pytest.param(
            'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\n'
            '  default_runtime_name = "runc"\n',
            'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\n'
            '  default_runtime_name = "runc"\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
            'runtime_type = "io.containerd.runc.v2"\nsandboxer = "podsandbox"\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
            'runtime_type = "io.containerd.runc.v2"\nsandboxer = "podsandbox"\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
            'BinaryName = "/usr/bin/nvidia-container-runtime"\n',
            id="v3",
        ),
    ],
)
def test_containerd_builtin_runc_is_written_out(
    before: str, after: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no `runtimes` in the file containerd uses its built-in runc; adding ours drops it."""
    config = tmp_path / "config.toml"
    config.write_text(before)
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config", ""]
    assert run(capsys, "configure", *args)[0] == 0
    assert config.read_text() == after
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == before


def test_nothing_of_ctk_lands_in_a_drop_in_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CRI-O reads every file of crio.conf.d: no undo record, no .bak may go there."""
    directory = tmp_path / "crio.conf.d"
    directory.mkdir()
    config = directory / "10-user.conf"
    original = '[crio.runtime]\ndefault_runtime = "runc"\n'
    config.write_text(original)
    args = ["--runtime", "crio", "--config", str(config), "--drop-in-config", ""]
    code, out, _ = run(capsys, "configure", *args, "--backup")
    state = Path(os.environ["CTK_STATE_DIR"]) / "runtime"
    kept = state / "backup" / (str(config).replace("/", "%2F") + ".bak")
    assert (code, out.splitlines()[0]) == (0, f"backed up {config} to {kept}")
    assert kept.read_text() == original
    assert sorted(p.name for p in directory.iterdir()) == ["10-user.conf"]
    assert (state / "undo" / (str(config).replace("/", "%2F") + ".json")).is_file()
    assert run(capsys, "unconfigure", *args, "--backup")[0] == 0
    assert sorted(p.name for p in directory.iterdir()) == ["10-user.conf"]
    assert config.read_text() == original


def test_record_of_an_earlier_version_beside_the_config_is_used_and_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"runtimes": {"nvidia": {"path": "/x", "args": []}}}\n')
    legacy = tmp_path / ".daemon.json.ctk-undo.json"
    legacy.write_text(
        '{"changes": [{"keys": ["runtimes"], "existed": false, "before": null, "after": {}}]}\n'
    )
    assert run(capsys, "unconfigure", "--runtime", "docker", "--config", str(config))[0] == 0
    assert config.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.json"]


@pytest.mark.parametrize(
    ("runtime", "name", "original", "extra"),
    [
        pytest.param(
            "docker",
            "daemon.json",
            '{\n  "runtimes": {\n    "nvidia": {\n'
            '      "path": "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n    }\n  }\n}\n',
            [],
            id="docker",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"runtimes": {"nvidia": {"path": "/opt/ncr", "args": ["-x"]}}}\n',
            ["--set-as-default", "--cdi.enabled"],
            id="docker-default-cdi",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n'
            '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            '    BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"  # mine\n',
            ["--set-as-default"],
            id="containerd",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            "  privileged_without_host_devices = true\n",
            [],
            id="containerd-no-options",
        ),
        pytest.param(
            "crio",
            "crio.conf",
            '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/local/bin/ncr"\n',
            [],
            id="crio",
        ),
    ],
)
def test_users_own_nvidia_runtime_is_given_back(
    *,
    runtime: str,
    name: str,
    original: str,
    extra: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / name
    config.write_text(original)
    args = ["--runtime", runtime, "--config", str(config), "--drop-in-config", ""]
    if runtime == "docker":
        args = args[:-2]
    assert run(capsys, "configure", *args, *extra)[0] == 0
    assert "/usr/bin/nvidia-container-runtime" in config.read_text()
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == original


@pytest.mark.parametrize(
    ("runtime", "name", "content", "error"),
    [
        pytest.param(
            "containerd",
            "config.toml",
            "version = 2\na = " + "[" * 500 + "]" * 500 + "\n",
            "not valid TOML: arrays or tables nested more than 64 deep (line 2, column 69)",
            id="toml-arrays",
        ),
        pytest.param(
            "crio",
            "crio.conf",
            '# [[[[\nb = "{{{"\na = ' + "{ b = " * 300 + "1" + " }" * 300 + "\n",
            "not valid TOML: arrays or tables nested more than 64 deep (line 3, column 389)",
            id="toml-inline-tables",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{"a": ' + "[" * 100000 + "]" * 100000 + "}\n",
            "not valid JSON: arrays or objects nested more than 64 deep (line 1, column 70)",
            id="json",
        ),
    ],
)
def test_deeply_nested_input_is_a_positioned_error(
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
    for verb in ("configure", "unconfigure"):
        args = ["--runtime", runtime, "--config", str(config)]
        code, out, err = run(capsys, verb, *args, "--drop-in-config", "")
        if runtime == "docker":
            code, out, err = run(capsys, verb, *args)
        assert (code, out) == (1, "")
        assert err == (
            f"error: {config}: {error}\nhint: no engine config nests like this; fix the file, "
            "or pass another one with --config\n"
        )
    assert config.read_text() == content


SPLIT_CONTAINERD = (
    'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'
    '[grpc]\n  address = "/x"\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
    '  snapshotter = "y"\n'
)
SPLIT_CRIO = (
    '[crio.runtime.runtimes.crun]\nruntime_path = "/usr/bin/crun"\n[crio.api]\nlisten = "x"\n'
    '[crio.runtime]\ndefault_runtime = "crun"\n'
)


@pytest.mark.parametrize(
    ("runtime", "original", "configured"),
    [
        pytest.param(
            "containerd",
            SPLIT_CONTAINERD,
            'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'
            'enable_cdi = true\n[grpc]\n  address = "/x"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "y"\n'
            '  default_runtime_name = "nvidia"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
            'runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            'runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            'BinaryName = "/usr/bin/nvidia-container-runtime"\n',
            id="containerd-split-tables",
        ),
        pytest.param(
            "crio",
            SPLIT_CRIO,
            '[crio.runtime.runtimes.crun]\nruntime_path = "/usr/bin/crun"\n'
            '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n'
            'runtime_type = "oci"\n[crio.api]\nlisten = "x"\n'
            '[crio.runtime]\ndefault_runtime = "nvidia"\n',
            id="crio-split-tables",
        ),
    ],
)
def test_tables_defined_in_several_places_are_tables(
    runtime: str, original: str, configured: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(original)
    args = ["--runtime", runtime, "--config", str(config), "--drop-in-config", ""]
    assert run(capsys, "configure", *args, "--set-as-default", "--cdi.enabled")[0] == 0
    assert config.read_text() == configured
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == original


DOTTED = (
    'version = 2\nplugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name = "runc"\n'
    'plugins."io.containerd.grpc.v1.cri".enable_cdi = false\n'
)


def test_dotted_key_tables_go_into_a_drop_in_or_are_refused_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tomlkit cannot put new [tables] among dotted keys: in place that is a clear error."""
    config = tmp_path / "config.toml"
    config.write_text(DOTTED)
    args = ["--runtime", "containerd", "--config", str(config)]
    assert run(capsys, "configure", *args, "--drop-in-config", "") == (
        1,
        "",
        f"error: {config}: ctk cannot edit this file's layout without changing other lines; "
        "nothing was written\nhint: use a drop-in (the default), or add the runtime by hand\n",
    )
    assert config.read_text() == DOTTED
    drop_in = tmp_path / "conf.d" / "99-nvidia.toml"
    assert run(capsys, "configure", *args, "--drop-in-config", str(drop_in))[0] == 0
    assert config.read_text() == f'version = 2\nimports = ["{drop_in}"]\n' + DOTTED[12:]
    assert "runtimes.nvidia" in drop_in.read_text()


def test_config_below_a_file_gets_the_not_a_directory_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "daemon.json").write_text("{}\n")
    config = tmp_path / "daemon.json" / "x"
    assert run(capsys, "configure", "--runtime", "docker", "--config", str(config)) == (
        1,
        "",
        f"error: {config}: cannot read: Not a directory\n"
        "hint: a part of this path is a file, not a directory: check the path\n",
    )


@pytest.mark.parametrize(
    ("original", "configured"),
    [
        pytest.param(
            '{\n    "debug": true, "runtimes": {"x": {"path": "/x"}}\n}\n',
            '{\n    "debug": true, "runtimes": {"x": {"path": "/x"}, "nvidia": {"path": '
            '"/usr/bin/nvidia-container-runtime", "args": []}}\n}\n',
            id="one-line-runtimes",
        ),
        pytest.param(
            '{"runtimes": {\n  "x": {"path": "/x"}}, "debug": true}\n',
            '{"runtimes": {\n  "x": {"path": "/x"},\n  "nvidia": {"path": '
            '"/usr/bin/nvidia-container-runtime", "args": []}}, "debug": true}\n',
            id="one-line-sibling",
        ),
        pytest.param(
            '{\n  "runtimes": {\n    "x": {\n      "path": "/x"\n    }\n  }\n}\n',
            '{\n  "runtimes": {\n    "x": {\n      "path": "/x"\n    },\n    "nvidia": {\n'
            '      "path": "/usr/bin/nvidia-container-runtime",\n      "args": []\n    }\n'
            "  }\n}\n",
            id="block-sibling",
        ),
    ],
)
def test_docker_runtime_is_laid_out_like_its_siblings(
    original: str, configured: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text(original)
    args = ["--runtime", "docker", "--config", str(config)]
    assert run(capsys, "configure", *args)[0] == 0
    assert config.read_text() == configured
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == original


@pytest.mark.parametrize(
    ("runtime", "name", "original", "configured"),
    [
        pytest.param(
            "containerd",
            "config.toml",
            'version = 2\r\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\r\n'
            '  runtime_type = "io.containerd.runc.v2"',
            'version = 2\r\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\r\n'
            '  runtime_type = "io.containerd.runc.v2"\r\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\r\n'
            '  runtime_type = "io.containerd.runc.v2"\r\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\r\n'
            'BinaryName = "/usr/bin/nvidia-container-runtime"\r\n',
            id="containerd",
        ),
        pytest.param(
            "docker",
            "daemon.json",
            '{\r\n  "debug": true\r\n}\r\n',
            '{\r\n  "debug": true,\r\n  "runtimes": {\r\n    "nvidia": {\r\n'
            '      "path": "/usr/bin/nvidia-container-runtime",\r\n      "args": []\r\n'
            "    }\r\n  }\r\n}\r\n",
            id="docker",
        ),
    ],
)
def test_crlf_files_keep_crlf(
    *,
    runtime: str,
    name: str,
    original: str,
    configured: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / name
    config.write_bytes(original.encode())
    args = ["--runtime", runtime, "--config", str(config)]
    args += ["--drop-in-config="] if runtime != "docker" else []
    assert run(capsys, "configure", *args)[0] == 0
    assert config.read_bytes() == configured.encode()
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_bytes() == original.encode()


def test_copied_runtime_leaves_the_users_comments_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runc = (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc] # default\n'
        '  # shim v2\n  runtime_type = "io.containerd.runc.v2"  # keep\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
        "    SystemdCgroup = true # important\n    # end\n"
    )
    config = tmp_path / "config.toml"
    config.write_text(runc)
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config="]
    assert run(capsys, "configure", *args)[0] == 0
    assert config.read_text() == runc + (
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        "    SystemdCgroup = true\n"
        '    BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    )


@pytest.mark.parametrize(
    ("runtime", "name", "content", "lines"),
    [
        pytest.param(
            "docker",
            "daemon.json",
            '{"runtimes": {"nvidia": "/usr/bin/x"}}\n',
            "`runtimes.nvidia` must be an object, found a string\nhint: dockerd refuses this "
            'file too; make it {"path": "/usr/bin/...", "args": []}',
            id="docker-runtime",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\ncontainerd = 1\n',
            '`plugins."io.containerd.grpc.v1.cri".containerd` must be a table, found a number\n'
            "hint: the engine cannot use this value either; fix that key and run again",
            id="containerd-table",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            "version = 2\nimports = [1]\n",
            "`imports` must be an array of strings\n"
            'hint: write it like imports = ["/etc/containerd/conf.d/*.toml"]',
            id="imports",
        ),
    ],
)
def test_type_errors_come_with_a_hint(
    *,
    runtime: str,
    name: str,
    content: str,
    lines: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / name
    config.write_text(content)
    args = ["--runtime", runtime, "--config", str(config)]
    args += ["--drop-in-config="] if runtime != "docker" else []
    assert run(capsys, "configure", *args) == (1, "", f"error: {config}: {lines}\n")
    assert config.read_text() == content


@pytest.mark.parametrize(
    ("flags", "code", "err"),
    [
        pytest.param(["--config-source", "file", "--config-mode", "config-file"], 0, "", id="same"),
        pytest.param(
            ["--config-source", "command,file", "--executable-path", "/usr/bin/containerd"],
            0,
            "warning: --config-source=command is read as file: ctk reads the config files and "
            "everything they import itself, as containerd and CRI-O merge them\n"
            "warning: --executable-path is ignored: nvidia-ctk uses it only with "
            "--config-source=command, which ctk reads as file\n",
            id="command",
        ),
        pytest.param(
            ["--oci-hook-path", "/h", "--nvidia-runtime-hook-path", "/usr/bin/hook"],
            0,
            "warning: --oci-hook-path is ignored: nvidia-ctk uses it only in the oci-hook config "
            "mode\nwarning: --nvidia-runtime-hook-path is ignored: nvidia-ctk uses it only in "
            "the oci-hook config mode\n",
            id="hook-paths",
        ),
        pytest.param(
            ["--config-mode", "bogus"],
            0,
            "warning: unknown --config-mode 'bogus'; using config-file\n",
            id="unknown-mode",
        ),
        pytest.param(
            ["--config-source", "stdin"],
            2,
            "error: invalid --config-source 'stdin'\nhint: use file (or command, read as file)\n",
            id="bad-source",
        ),
    ],
)
def test_nvidia_ctk_flags_are_accepted_or_refused_clearly(
    flags: list[str], code: int, err: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config="]
    result = run(capsys, "configure", *args, *flags)
    assert (result[0], result[2]) == (code, err)
    assert config.exists() == (code == 0)


def test_disabled_cri_plugin_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Docker's containerd.io ships `disabled_plugins = ["cri"]`: nothing would read the runtime."""
    config = tmp_path / "config.toml"
    config.write_text('disabled_plugins = ["cri"]\n')
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config="]
    code, _, err = run(capsys, "configure", *args)
    assert (code, err) == (
        0,
        f"warning: {config} disables containerd's CRI plugin (disabled_plugins); the runtime is "
        "written, but only CRI clients (Kubernetes, crictl) use it, and not until `cri` is "
        "removed from disabled_plugins (Docker: use --runtime docker)\n",
    )


@pytest.mark.parametrize(
    ("runtime", "original", "flags"),
    [
        pytest.param(
            "containerd",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
            "  SystemdCgroup = true\n",
            ["--set-as-default"],
            id="containerd-implicit-tables",
        ),
        pytest.param("crio", '[crio.api]\nlisten = "/x"\n', ["--set-as-default"], id="crio-api"),
        pytest.param("crio", "[crio.api]\n", ["--set-as-default"], id="crio-api-empty"),
        pytest.param(
            "containerd",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"',
            ["--set-as-default", "--cdi.enabled"],
            id="no-final-newline",
        ),
        pytest.param(
            "crio", '[crio.runtime]\r\ncgroup_manager = "systemd"', [], id="crlf-no-final-newline"
        ),
    ],
)
def test_unconfigure_gives_back_the_bytes(
    runtime: str,
    original: str,
    flags: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """QA 8: after configure + unconfigure the file is byte for byte what it was."""
    config = tmp_path / "config.toml"
    config.write_bytes(original.encode())
    args = ["--runtime", runtime, "--config", str(config), "--drop-in-config="]
    assert run(capsys, "configure", *args, *flags)[0] == 0
    assert config.read_bytes() != original.encode()
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_bytes() == original.encode()


def test_unwritable_state_dir_leaves_the_config_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "state").write_text("a file, not a directory\n")
    monkeypatch.setenv("CTK_STATE_DIR", str(tmp_path / "state"))
    config = tmp_path / "daemon.json"
    config.write_text('{"debug": true}\n')
    code, out, err = run(capsys, "configure", "--runtime", "docker", "--config", str(config))
    record = tmp_path / "state/runtime/undo" / (str(config).replace("/", "%2F") + ".json")
    assert (code, out, err) == (
        1,
        "",
        f"error: {record}: cannot read: Not a directory\n"
        "hint: a part of this path is a file, not a directory: check the path\n",
    )
    assert config.read_text() == '{"debug": true}\n'


@pytest.mark.parametrize(
    ("runtime", "name", "original"),
    [
        pytest.param(
            "docker",
            "daemon.json",
            '{"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "/opt/ncr"}}}\n',
            id="docker",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            '  default_runtime_name = "nvidia"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n',
            id="containerd",
        ),
        pytest.param(
            "crio",
            "crio.conf",
            '[crio.runtime]\ndefault_runtime = "nvidia"\n'
            '[crio.runtime.runtimes.nvidia]\nruntime_path = "/opt/ncr"\n',
            id="crio",
        ),
    ],
)
def test_users_own_default_nvidia_runtime_is_given_back(
    runtime: str, name: str, original: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / name
    config.write_text(original)
    args = ["--runtime", runtime, "--config", str(config)]
    args += ["--drop-in-config="] if runtime != "docker" else []
    assert run(capsys, "configure", *args, "--set-as-default")[0] == 0
    assert config.read_text() != original
    assert run(capsys, "unconfigure", *args)[0] == 0
    assert config.read_text() == original


@pytest.mark.skipif(os.geteuid() != 0, reason="a private mount namespace needs root")
def test_a_scratch_configs_undo_record_in_this_machines_state_dir_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runtime configure --config SCRATCH` without --root keeps its undo record in this
    machine's /var/lib/ctk, and says so; with --root or $CTK_STATE_DIR it says nothing (the
    record is where the user put it). /var/lib is a tmpfs of the test's own namespace here."""
    config = tmp_path / "daemon.json"
    config.write_text("{}\n")
    env = {k: v for k, v in os.environ.items() if k != "CTK_STATE_DIR"}
    script = 'mount -n -t tmpfs tmpfs /var/lib && exec "$@"'
    done = subprocess.run(
        [
            *("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"),
            *(sys.executable, "-m", "ctk.cli.app", "runtime", "configure", "--runtime=docker"),
            *("--config", str(config)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    record = "/var/lib/ctk/runtime/undo/" + str(config).replace("/", "%2F") + ".json"
    assert (
        f"note: the undo record is {record} (unconfigure reads it; --root keeps it under the "
        "config's root, $CTK_STATE_DIR elsewhere)\n"
    ) in done.stderr
    config.write_text("{}\n")  # with the tests' own state directory: nothing to say
    capsys.readouterr()
    assert main(["runtime", "configure", "--runtime=docker", "--config", str(config)]) == 0
    assert "undo record" not in capsys.readouterr().err
