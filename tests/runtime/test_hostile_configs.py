"""Hostile and odd configs (issue 15): each a clear error or a correct edit, never exit 3."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
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


def test_config_over_the_size_cap_is_refused_in_milliseconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    content = 'version = 2\nx = "' + "a" * 10_000_000 + '"\n'
    config.write_text(content)
    started = time.monotonic()
    code, out, err = run(capsys, "configure", "--runtime=containerd", "--config", str(config))
    assert time.monotonic() - started < 1.0
    assert (code, out) == (1, "")
    assert err == (
        f"error: {config}: file is larger than 262144 bytes; not read\n"
        "hint: check that this is the right file\n"
    )
    assert config.read_text() == content


@pytest.mark.parametrize("which", ["config", "drop-in"])
def test_dangling_symlink_is_refused_and_nothing_created(
    which: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "crio.conf"
    drop_in = tmp_path / "crio.conf.d/99-nvidia.toml"
    target = tmp_path / "missing/dir/file.toml"
    link = config if which == "config" else drop_in
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(target)
    if which == "drop-in":
        config.write_text("[crio.runtime]\n")
    state = Path(os.environ["CTK_STATE_DIR"])
    records = sorted(state.rglob("*"))
    args = ["--runtime=crio", "--config", str(config), "--drop-in-config", str(drop_in)]
    code, out, err = run(capsys, "configure", *args)
    assert (code, out) == (1, "")
    assert err == (
        f"error: {link}: is a symlink to {target}, which does not exist; not written\n"
        "hint: remove the link or create its target first\n"
    )
    assert (target.parent.exists(), sorted(state.rglob("*"))) == (False, records)


def test_backup_never_writes_through_an_existing_bak_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "daemon.json"
    config.write_text('{"debug": true}\n')
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (tmp_path / "daemon.json.bak").symlink_to(victim)
    code, _, _ = run(capsys, "configure", "--runtime=docker", "--config", str(config), "--backup")
    assert code == 0
    assert victim.read_text() == "keep me\n"
    backup = tmp_path / "daemon.json.bak"
    assert (backup.is_symlink(), backup.read_text()) == (False, '{"debug": true}\n')


def test_temp_file_left_by_a_kill_in_crio_conf_d_is_swept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A killed write leaves `.99-nvidia.toml.<random>.ctk-tmp`: never read, gone next run."""
    config = tmp_path / "crio.conf"
    config.write_text("[crio.runtime]\n")
    drop_in = tmp_path / "crio.conf.d/99-nvidia.toml"
    args = ["--runtime=crio", "--config", str(config), "--drop-in-config", str(drop_in)]
    assert run(capsys, "configure", *args)[0] == 0
    stale = drop_in.with_name(".99-nvidia.toml.0badf00d.ctk-tmp")
    stale.write_text(drop_in.read_text())
    code, _, err = run(capsys, "configure", *args)  # already configured: nothing to write
    assert (code, err, stale.exists()) == (0, "", False)
    stale.write_text(drop_in.read_text())
    code, _, err = run(capsys, "unconfigure", *args)
    # the stale file is swept, so crio.conf.d (which configure made) is empty and goes too
    assert (code, err, drop_in.parent.exists()) == (0, "", False)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
)
def test_enospc_in_crio_drop_in_mode_leaves_no_directory(tmp_path: Path) -> None:
    """A full file system: exit 1, no crio.conf.d left behind, crio.conf untouched."""
    etc = tmp_path / "etc"
    etc.mkdir()
    script = (
        f"mount -n -t tmpfs -o size=8k tmpfs {etc} && printf '[crio.runtime]\\n' > {etc}/crio.conf"
        f" && (head -c 65536 /dev/zero > {etc}/fill 2>/dev/null; true)"
        f" && {sys.executable} -m ctk.cli.app runtime configure --runtime=crio"
        f" --config {etc}/crio.conf --drop-in-config {etc}/crio.conf.d/99-nvidia.toml;"
        f" echo rc=$?; ls {etc}; cat {etc}/crio.conf"
    )
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, check=False
    )
    assert result.stdout == "rc=1\ncrio.conf\nfill\n[crio.runtime]\n"
    assert result.stderr.splitlines()[-2:] == [
        f"error: {etc}/crio.conf.d/99-nvidia.toml: cannot write: No space left on device",
        "hint: the file system is full; free some space and run again",
    ]


def test_root_configures_the_node_mounted_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--root R: config, drop-in and imports as seen inside R; records under R's state dir."""
    monkeypatch.delenv("CTK_STATE_DIR")
    root = tmp_path / "node"
    etc = root / "etc/containerd"
    (etc / "conf.d").mkdir(parents=True)
    main_text = (
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "x"\n'
    )
    (etc / "config.toml").write_text(main_text)
    (etc / "conf.d/10-registry.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/r"\n'
    )
    (root / "etc/containerd/link.toml").symlink_to("/etc/containerd/config.toml")
    args = ["--runtime=containerd", "--root", str(root)]
    code, out, err = run(capsys, "configure", *args, "--config", "/etc/containerd/link.toml")
    assert (code, err) == (
        0,
        "note: /etc/containerd/conf.d/99-nvidia.toml carries a copy of the "
        '[plugins."io.containerd.grpc.v1.cri"] settings of /etc/containerd/link.toml, '
        "/etc/containerd/conf.d/10-registry.toml (containerd 1.x replaces the whole table per "
        "imported file): after editing them, run `ctk runtime configure` again\n",
    )
    drop_in = (etc / "conf.d/99-nvidia.toml").read_text()
    # The imported file was read inside the root; its glob already imports the drop-in.
    assert ('config_path = "/r"' in drop_in, 'snapshotter = "x"' in drop_in) == (True, True)
    assert (etc / "config.toml").read_text() == main_text
    assert out.splitlines()[0] == "created /etc/containerd/conf.d/99-nvidia.toml"
    undo = root / "var/lib/ctk/runtime/undo"
    assert len(list(undo.iterdir())) == 1
    code, _, err = run(capsys, "unconfigure", *args, "--config", "/etc/containerd/link.toml")
    assert (code, err, (etc / "conf.d/99-nvidia.toml").exists()) == (0, "", False)
    assert not undo.exists()  # the state folders configure made go with the last record
    code, out, err = run(capsys, "configure", *args, "--config", "etc/containerd/config.toml")
    assert (code, out) == (2, "")
    assert err == (
        "error: --config etc/containerd/config.toml: give an absolute path as seen inside "
        "--root\nhint: e.g. --config /etc/containerd/config.toml\n"
    )


@pytest.mark.parametrize("where", ["config", "import", "record", "crio-drop-in"])
def test_a_fifo_anywhere_is_refused_at_once(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A named pipe as config, imported file, undo record or CRI-O drop-in: exit 1, no hang."""
    runtime = "crio" if where == "crio-drop-in" else "containerd"
    config = tmp_path / ("crio.conf" if runtime == "crio" else "config.toml")
    drop_in = tmp_path / ("crio.conf.d" if runtime == "crio" else "conf.d") / "99-nvidia.toml"
    drop_in.parent.mkdir()
    fifo = {
        "config": config,
        "import": tmp_path / "conf.d/10-x.toml",
        "record": Path(os.environ["CTK_STATE_DIR"]) / "fifo-record.json",
        "crio-drop-in": tmp_path / "crio.conf.d/50-x.toml",
    }[where]
    if where != "config":
        config.write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml"]\n')
    args = ["--runtime", runtime, "--config", str(config), "--drop-in-config", str(drop_in)]
    if where == "record":
        from ctk.host.engine_files import record_path

        fifo = record_path(config, str(drop_in))
        fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    started = time.monotonic()
    code, out, err = run(capsys, "configure", *args)
    assert time.monotonic() - started < 2.0
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == (
        f"error: {fifo}: is a named pipe (FIFO), not a regular file; not read (reading it would "
        "block)"
    )
    assert not drop_in.exists()
    fifo.unlink()


@pytest.mark.parametrize("how", ["import-glob", "config-link"])
def test_dev_zero_as_config_or_import_is_refused(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    if how == "import-glob":
        config.write_text('version = 2\nimports = ["/dev/zer*"]\n')
    else:
        config.symlink_to("/dev/zero")
    code, out, err = run(
        capsys, "configure", "--runtime=containerd", "--config", str(config), "--dry-run"
    )
    named = "/dev/zero" if how == "import-glob" else str(config)
    assert (code, out, err) == (
        1,
        "",
        f"error: {named}: is a character device, not a regular file; not read\n"
        "hint: pass the path of a regular file\n",
    )
