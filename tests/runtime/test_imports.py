"""containerd's `imports`, resolved by one pure resolver (review item 9), checked by containerd."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from ctk import toml_compat as tomllib
from ctk.errors import CtkError
from ctk.runtime_config import imports

TREE = {
    "/etc/containerd": ["config.toml", "conf.d", "other"],
    "/etc/containerd/conf.d": ["b.toml", ".hidden.toml", "a.toml", "c.conf"],
    "/etc/containerd/other": ["x1.toml", "xy.toml", "x?.toml", "[a].toml"],
    "/etc": ["containerd", "k3s"],
    "/etc/k3s": ["conf.d"],
    "/etc/k3s/conf.d": ["k.toml"],
}
MAIN = "/etc/containerd/config.toml"


def listing(directory: str) -> Sequence[str] | None:
    return TREE.get(directory)


@pytest.mark.parametrize(
    ("entries", "paths"),
    [
        pytest.param(
            ["conf.d/*.toml"],
            [
                "/etc/containerd/conf.d/.hidden.toml",
                "/etc/containerd/conf.d/a.toml",
                "/etc/containerd/conf.d/b.toml",
            ],
            id="relative-glob-joined-to-config-folder-hidden-too",
        ),
        pytest.param(["./other/../conf.d/a.toml"], ["/etc/containerd/conf.d/a.toml"], id="clean"),
        pytest.param(["other/x?.toml"], ["/etc/containerd/other/x?.toml"], id="no-star-literal"),
        pytest.param(
            ["other/x?.toml*"],
            [
                "/etc/containerd/other/x1.toml",
                "/etc/containerd/other/x?.toml",
                "/etc/containerd/other/xy.toml",
            ],
            id="question-with-star-globs",
        ),
        pytest.param(
            ["other/x[0-9]*", "other/x[^0-9]*"],
            [
                "/etc/containerd/other/x1.toml",
                "/etc/containerd/other/x?.toml",
                "/etc/containerd/other/xy.toml",
            ],
            id="classes",
        ),
        pytest.param(["other/\\[a]*"], ["/etc/containerd/other/[a].toml"], id="escape"),
        pytest.param(["/etc/*/conf.d/[k]*"], ["/etc/k3s/conf.d/k.toml"], id="glob-in-folder"),
        pytest.param(["/missing/*.toml", "gone.toml"], ["/etc/containerd/gone.toml"], id="none"),
    ],
)
def test_resolve(entries: list[str], paths: list[str]) -> None:
    assert imports.resolve(MAIN, entries, listing) == paths


@pytest.mark.parametrize("entry", ["conf.d/[*.toml", "conf.d/*\\", "conf.d/[]*", "[z-]*"])
def test_bad_glob_is_a_clear_error(entry: str) -> None:
    with pytest.raises(CtkError) as caught:
        imports.resolve(MAIN, [entry], listing)
    assert str(caught.value).startswith(f"{MAIN}: the import {entry!r} is not a valid glob pattern")


@pytest.mark.parametrize(
    ("entries", "wanted"),
    [
        pytest.param(["conf.d/*.toml"], True, id="relative-glob"),
        pytest.param(["/etc/*/conf.d/9?-*.toml"], True, id="glob-in-folder"),
        pytest.param(["conf.d/99-nvidia.toml"], True, id="relative-plain"),
        pytest.param(["conf.d/9?-nvidia.toml"], False, id="no-star-is-literal"),
        pytest.param(["conf.d/*.conf"], False, id="other-glob"),
    ],
)
def test_drop_in_imported(entries: list[str], wanted: bool) -> None:
    assert imports.imported(MAIN, entries, "/etc/containerd/conf.d/99-nvidia.toml") is wanted


def test_walk_follows_nested_imports_breadth_first() -> None:
    configs = {
        MAIN: ["conf.d/a.toml", "conf.d/b.toml"],
        "/etc/containerd/conf.d/a.toml": ["../other/x1.toml", "gone.toml"],
        "/etc/containerd/conf.d/b.toml": ["/etc/containerd/config.toml", "a.toml"],
        "/etc/containerd/other/x1.toml": [],
    }
    loaded = imports.walk(MAIN, configs.get, listing)
    assert loaded == imports.ImportedFiles(
        files=(
            "/etc/containerd/conf.d/a.toml",
            "/etc/containerd/conf.d/b.toml",
            "/etc/containerd/other/x1.toml",
        ),
        missing=("/etc/containerd/conf.d/gone.toml",),
    )


CONTAINERD = shutil.which("containerd")


@pytest.mark.integration
@pytest.mark.skipif(CONTAINERD is None, reason="containerd is not installed")
def test_real_containerd_loads_the_same_files_in_the_same_order(tmp_path: Path) -> None:
    """`containerd config dump` loads exactly the files walk() finds; the last one's value wins.

    Relative plain imports (nested too) and absolute globs: containerd 1.6 globbed a relative
    pattern against its working directory, without joining it (test_resolve has today's rule).
    """
    root = tmp_path / "etc"
    files = {
        "config.toml": f'imports = ["{root}/conf.d/*.toml", "sub/plain.toml", '
        f'"{root}/other/x[0-9]*", "{root}/other/x?.toml"]\n',
        "conf.d/.hidden.toml": "",
        "conf.d/a.toml": "",
        "conf.d/b.conf": "",
        "sub/plain.toml": 'imports = ["nested.toml", "../conf.d/a.toml"]\n',
        "sub/nested.toml": "",
        "other/x1.toml": "",
        "other/xy.toml": "",
        "other/x?.toml": "",
    }
    for score, (name, text) in enumerate(files.items(), start=1):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"version = 2\noom_score = {score}\n{text}")
    main = str(root / "config.toml")

    def imports_of(path: str) -> list[str] | None:
        return imports.imports_in(path, Path(path).read_text()) if Path(path).is_file() else None

    def list_dir(directory: str) -> list[str] | None:
        return os.listdir(directory) if os.path.isdir(directory) else None

    loaded = imports.walk(main, imports_of, list_dir)
    assert CONTAINERD is not None
    result = subprocess.run(
        [CONTAINERD, "--config", main, "config", "dump"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    dump = tomllib.loads(result.stdout)
    assert loaded == imports.ImportedFiles(
        files=tuple(
            str(root / n)
            for n in (
                "conf.d/.hidden.toml",
                "conf.d/a.toml",
                "sub/plain.toml",
                "other/x1.toml",
                "other/x?.toml",
                "sub/nested.toml",
            )
        ),
        missing=(),
    )
    assert sorted(dump["imports"]) == sorted([main, *loaded.files])
    last = loaded.files[-1]
    assert dump["oom_score"] == list(files).index(str(Path(last).relative_to(root))) + 1


def test_doctor_reads_the_same_files_under_its_root(tmp_path: Path) -> None:
    """The doctor's reader uses the same resolver, inside --root: nested, relative, globs."""
    from ctk.host.facts.engine_configs import containerd_files
    from ctk.host.facts.gatherer import Gatherer
    from ctk.host.root import HostRoot

    for name, text in {
        "etc/containerd/config.toml": 'imports = ["conf.d/*.toml"]\n',
        "etc/containerd/conf.d/.early.toml": 'imports = ["../extra/nested.toml"]\n',
        "etc/containerd/conf.d/b.toml": "",
        "etc/containerd/extra/nested.toml": 'imports = ["/etc/containerd/*/b.toml"]\n',
    }.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    g = Gatherer(HostRoot(tmp_path))
    assert containerd_files(g, MAIN, ["conf.d/*.toml"]) == [
        "/etc/containerd/conf.d/.early.toml",
        "/etc/containerd/conf.d/b.toml",
        "/etc/containerd/extra/nested.toml",
    ]


def test_a_version_3_config_reads_its_relative_glob_one_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only containerd 2.x reads version 3, from the config's folder: nothing to warn about."""
    from ctk.cli.app import main

    config = tmp_path / "config.toml"
    config.write_text("version = 3\nimports = ['conf.d/*.toml']\n")
    args = ["--config", str(config), "--drop-in-config", str(tmp_path / "conf.d/99-nvidia.toml")]
    assert main(["runtime", "configure", "--runtime", "containerd", *args]) == 0
    assert capsys.readouterr().err == ""


def test_relative_glob_import_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ctk.cli.app import main

    config = tmp_path / "config.toml"
    config.write_text('version = 2\nimports = ["conf.d/*.toml", "/abs/*.toml", "plain.toml"]\n')
    (tmp_path / "plain.toml").write_text("version = 2\n")
    drop_in = tmp_path / "conf.d/99-nvidia.toml"
    args = ["--config", str(config), "--drop-in-config", str(drop_in)]
    code = main(["runtime", "configure", "--runtime", "containerd", *args])
    out, err = capsys.readouterr()
    assert (code, out, err) == (
        0,
        f"updated {config}\ncreated {drop_in}\nRestart containerd to apply the change: "
        "systemctl restart containerd\n",
        f"warning: {config}: the import 'conf.d/*.toml' is a relative glob: containerd 2.x reads "
        "it from the config's folder, containerd 1.6 and 1.7 from their working directory (/ "
        "under systemd); write it as an absolute path\n",
    )
    # imported by absolute path as well, so that containerd 1.6 and 1.7 read it too
    assert config.read_text() == (
        f'version = 2\nimports = ["conf.d/*.toml", "/abs/*.toml", "plain.toml", "{drop_in}"]\n'
    )
