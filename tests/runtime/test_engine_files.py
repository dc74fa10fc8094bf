"""Reading the files an engine loads, in its order, and the later-drop-in warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.host.engine_files import ContainerdFiles, containerd_imports, crio_drop_ins

CRI = '[plugins."io.containerd.grpc.v1.cri"]\n'


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("@ROOT@", str(root)))


def test_containerd_files_in_load_order(tmp_path: Path) -> None:
    """Breadth first, globs sorted, relative entries against the importing file's folder."""
    _tree(
        tmp_path,
        {
            "config.toml": 'version = 2\nimports = ["conf.d/*.toml", "extra/more.toml"]\n',
            "conf.d/20-b.toml": 'version = 2\nimports = ["../nested/n.toml"]\n',
            "conf.d/10-a.toml": "version = 2\n",
            "nested/n.toml": "version = 2\n",
            "conf.d/ignored.conf": "not toml at all",
            "extra/more.toml": 'version = 2\nimports = ["gone.toml"]\n',
        },
    )
    main = tmp_path / "config.toml"
    found = containerd_imports(main, main.read_text(), str(tmp_path / "conf.d/50-nvidia.toml"))
    assert found == ContainerdFiles(
        before=(
            (str(tmp_path / "conf.d/10-a.toml"), "version = 2\n"),
            (str(tmp_path / "conf.d/20-b.toml"), 'version = 2\nimports = ["../nested/n.toml"]\n'),
        ),
        after=(
            (str(tmp_path / "extra/more.toml"), 'version = 2\nimports = ["gone.toml"]\n'),
            (str(tmp_path / "nested/n.toml"), "version = 2\n"),
        ),
        missing=(str(tmp_path / "extra/gone.toml"),),
    )


def test_drop_in_not_yet_imported_comes_last(tmp_path: Path) -> None:
    _tree(tmp_path, {"config.toml": 'version = 2\nimports = ["/nowhere/*.toml"]\n'})
    main = tmp_path / "config.toml"
    found = containerd_imports(main, main.read_text(), str(tmp_path / "d/99-nvidia.toml"))
    assert found == ContainerdFiles(before=(), after=(), missing=())


def test_crio_drop_ins(tmp_path: Path) -> None:
    _tree(tmp_path, {"crio.conf.d/20.conf": "b", "crio.conf.d/10.toml": "a", "crio.conf.d/30": "c"})
    assert crio_drop_ins(tmp_path / "crio.conf.d/25-nvidia.toml") == (
        [
            (str(tmp_path / "crio.conf.d/10.toml"), "a"),
            (str(tmp_path / "crio.conf.d/20.conf"), "b"),
        ],
        [(str(tmp_path / "crio.conf.d/30"), "c")],
    )


def test_later_drop_in_with_cri_table_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(
        tmp_path,
        {
            "config.toml": 'version = 2\nimports = ["@ROOT@/conf.d/*.toml"]\n',
            "conf.d/zz-site.toml": "version = 2\n" + CRI + "max_concurrent_downloads = 9\n",
            "conf.d/10-missing-import.toml": 'version = 2\nimports = ["@ROOT@/gone.toml"]\n',
        },
    )
    drop_in = tmp_path / "conf.d/99-nvidia.toml"
    code = main(
        [
            "runtime",
            "configure",
            "--runtime",
            "containerd",
            "--config",
            str(tmp_path / "config.toml"),
            "--drop-in-config",
            str(drop_in),
        ]
    )
    out, err = capsys.readouterr()
    assert (code, out) == (
        0,
        f"created {drop_in}\n"
        "Restart containerd to apply the change: systemctl restart containerd\n",
    )
    assert err == (
        f"warning: containerd is told to import {tmp_path / 'gone.toml'}, which does not exist\n"
        f"warning: {tmp_path / 'conf.d/zz-site.toml'} is imported after {drop_in} and also "
        'defines [plugins."io.containerd.grpc.v1.cri"]: containerd 1.x will use that table '
        "instead, without the nvidia runtime\n"
    )
