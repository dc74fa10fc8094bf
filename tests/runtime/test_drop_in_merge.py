"""containerd's drop-in by version (issue 21): containerd 2.x merges an imported file into the
others key by key, so the drop-in holds only ctk's additions and a later edit of config.toml takes
effect; 1.x lets it replace the CRI table, so the drop-in carries a copy and configure says so.
A version 3 config means 2.x; otherwise the installed package's version decides (dpkg's status
under the root), and an unknown one counts as 1.x. Checked with the real engines' `config dump`
(this machine's 1.6, and 2.1 and 1.7 where ``CTK_ENGINES`` names them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from tests import engines
from tests.engines import Engine

CRI_V2 = 'plugins."io.containerd.grpc.v1.cri"'
CRI_V3 = "plugins.'io.containerd.cri.v1.runtime'"
MAIN = {
    2: f"version = 2\n[{CRI_V2}]\n  enable_selinux = true\n"
    f'[{CRI_V2}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
    f"[{CRI_V2}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n",
    3: f"version = 3\n[{CRI_V3}]\n  enable_selinux = true\n"
    f"[{CRI_V3}.containerd.runtimes.runc]\n  runtime_type = 'io.containerd.runc.v2'\n"
    f"[{CRI_V3}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n",
}
MERGED_HEADER = (
    "# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
    "# containerd 2.x merges this file into the ones before it key by key: it holds only\n"
    "# what ctk adds.\n"
)
NVIDIA_V3 = (
    'version = 3\n\n[plugins."io.containerd.cri.v1.runtime".containerd]\n'
    'default_runtime_name = "nvidia"\n\n'
    '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
    'runtime_type = "io.containerd.runc.v2"\n\n'
    '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
    'SystemdCgroup = true\nBinaryName = "/usr/bin/nvidia-container-runtime"\n'
)
DPKG_STATUS = "Package: {name}\nStatus: install ok installed\nVersion: {version}\n\n"
NEW = [e for e in engines.containerds() if e.version[0] >= 2]
OLD = [e for e in engines.containerds() if e.version[0] < 2]


def configure(
    capsys: pytest.CaptureFixture[str], config: Path, *extra: str, verb: str = "configure"
) -> tuple[int, str]:
    drop_in = config.parent / "conf.d/99-nvidia.toml"
    args = ["--runtime=containerd", "--config", str(config), "--drop-in-config", str(drop_in)]
    code = main(["runtime", verb, *args, *extra])
    return code, capsys.readouterr().err


def node(tmp_path: Path, version: int, *, release: str | None = None) -> Path:
    """A root with /etc/containerd/config.toml of ``version`` (and a dpkg status that says
    containerd ``release`` is installed)."""
    root = tmp_path / "node"
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(MAIN[version])
    if release is not None:
        status = root / "var/lib/dpkg/status"
        status.parent.mkdir(parents=True)
        status.write_text(DPKG_STATUS.format(name="containerd", version=release))
    return root


def in_root(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["runtime", "configure", "--runtime=containerd", "--root", str(root), *extra])
    err = capsys.readouterr().err
    drop_in = root / "etc/containerd/conf.d/99-nvidia.toml"
    return code, err, drop_in.read_text() if drop_in.exists() else ""


def test_a_version_3_drop_in_holds_only_what_ctk_adds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err, drop_in = in_root(capsys, node(tmp_path, 3), "--set-as-default")
    assert (code, err) == (0, "")
    assert drop_in == MERGED_HEADER + NVIDIA_V3


@pytest.mark.parametrize(
    ("package", "release", "merges"),
    [
        ("containerd", "2.1.9+ds1-5", True),
        ("containerd.io", "2.0.5-1", True),
        ("containerd", "1.7.24~ds1-6+deb13u1", False),
        ("containerd.io", "1:1.6.20-1", False),
    ],
)
def test_a_version_2_drop_in_follows_the_installed_release(
    package: str, release: str, merges: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = node(tmp_path, 2)
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    other = DPKG_STATUS.format(name="containerd-rootless", version="9.9.9")  # not the engine
    status.write_text(other + DPKG_STATUS.format(name=package, version=release))
    code, err, drop_in = in_root(capsys, root)
    assert code == 0
    assert ("enable_selinux" in drop_in, "runtimes.runc" in drop_in) == (not merges, not merges)
    assert drop_in.startswith(MERGED_HEADER) == merges
    assert err.startswith("note: /etc/containerd/conf.d/99-nvidia.toml carries a copy") != merges


@pytest.mark.parametrize("status", ["missing", "directory", "link-out-of-root", "not-installed"])
def test_an_unknown_release_carries_the_copy(
    status: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing known of the release: the copy, which works on 1.x and 2.x alike."""
    root = node(tmp_path, 2)
    path = root / "var/lib/dpkg/status"
    path.parent.mkdir(parents=True)
    outside = tmp_path / "outside-status"
    outside.write_text(DPKG_STATUS.format(name="containerd", version="2.1.9"))
    if status == "directory":
        path.mkdir()
    elif status == "link-out-of-root":
        path.symlink_to("../../../../outside-status")
    elif status == "not-installed":
        path.write_text(
            DPKG_STATUS.format(name="containerd", version="2.1.9").replace(
                "install ok installed", "deinstall ok config-files"
            )
        )
    code, err, drop_in = in_root(capsys, root)
    assert (code, "enable_selinux = true" in drop_in) == (0, True)
    assert err.startswith("note: ")


def test_the_note_comes_when_the_copy_changes_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = node(tmp_path, 2)
    assert in_root(capsys, root)[1].startswith("note: ")
    assert in_root(capsys, root)[:2] == (0, "")
    config = root / "etc/containerd/config.toml"
    config.write_text(config.read_text().replace("enable_selinux = true", "enable_selinux = false"))
    code, err, drop_in = in_root(capsys, root)
    assert (code, err.startswith("note: "), "enable_selinux = false" in drop_in) == (0, True, True)


def test_a_later_file_that_sets_what_ctk_sets_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = node(tmp_path, 3)
    config = root / "etc/containerd/config.toml"
    config.write_text(
        MAIN[3].replace(
            "version = 3\n", "version = 3\nimports = ['/etc/containerd/conf.d/*.toml']\n"
        )
    )
    later = root / "etc/containerd/conf.d/zz-site.toml"
    later.parent.mkdir()
    later.write_text(
        f"version = 3\n[{CRI_V3}.containerd]\n  default_runtime_name = 'crun'\n"
        f"[{CRI_V3}.containerd.runtimes.crun]\n  runtime_type = 'io.containerd.runc.v2'\n"
    )
    code, err, drop_in = in_root(capsys, root, "--set-as-default")
    assert code == 0
    assert err == (
        "warning: /etc/containerd/conf.d/zz-site.toml is imported after "
        "/etc/containerd/conf.d/99-nvidia.toml and also sets "
        'plugins."io.containerd.cri.v1.runtime".containerd.default_runtime_name: containerd uses '
        "its value instead of ctk's\n"
    )
    assert drop_in == MERGED_HEADER + NVIDIA_V3


@pytest.mark.integration
@pytest.mark.parametrize("engine", NEW, ids=[e.id for e in NEW])
def test_on_2x_a_later_edit_of_the_main_file_takes_effect(
    engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(MAIN[3])
    assert configure(capsys, config, "--set-as-default") == (0, "")

    def effective() -> tuple[bool, str, bool, str | None]:
        cri = engines.containerd_dump(config, engine)["plugins"]["io.containerd.cri.v1.runtime"]
        runtimes = cri["containerd"]["runtimes"]
        return (
            cri["enable_selinux"],
            cri["containerd"]["default_runtime_name"],
            runtimes["runc"]["options"]["SystemdCgroup"],
            runtimes.get("nvidia", {}).get("options", {}).get("BinaryName"),
        )

    nvidia = "/usr/bin/nvidia-container-runtime"
    assert effective() == (True, "nvidia", True, nvidia)
    config.write_text(
        config.read_text()
        .replace("enable_selinux = true", "enable_selinux = false")
        .replace("SystemdCgroup = true", "SystemdCgroup = false")
    )
    assert effective() == (False, "nvidia", False, nvidia)
    assert configure(capsys, config, verb="unconfigure")[0] == 0
    assert effective() == (False, "runc", False, None)
    assert not (tmp_path / "conf.d/99-nvidia.toml").exists()


@pytest.mark.integration
@pytest.mark.parametrize("engine", [*OLD, *NEW], ids=[e.id for e in [*OLD, *NEW]])
def test_a_carried_copy_holds_until_configure_runs_again_as_the_note_says(
    engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Version 2 on a node whose containerd package ctk cannot see (this machine has 1.6): the
    copy, which every engine reads with the main file's settings; an edit takes effect after
    configure runs again."""
    config = tmp_path / "config.toml"
    config.write_text(MAIN[2])
    code, err = configure(capsys, config)
    assert (code, err.startswith(f"note: {tmp_path}/conf.d/99-nvidia.toml carries a copy")) == (
        0,
        True,
    )

    def effective() -> tuple[bool, bool]:
        dump = engines.containerd_dump(config, engine)["plugins"]
        cri = dump.get("io.containerd.cri.v1.runtime") or dump["io.containerd.grpc.v1.cri"]
        return cri["enable_selinux"], "nvidia" in cri["containerd"]["runtimes"]

    assert effective() == (True, True)
    config.write_text(config.read_text().replace("enable_selinux = true", "enable_selinux = false"))
    assert effective() == (True, True)  # the copy wins
    code, err = configure(capsys, config)
    assert (code, err.startswith("note: ")) == (0, True)
    assert effective() == (False, True)


def test_release_parsing_reads_only_installed_engine_packages() -> None:
    from ctk.host.packages import engine_release, parse_dpkg_status
    from ctk.runtime_config.engines import Runtime
    from ctk.runtime_config.inspect import PluginMerge

    text = (
        DPKG_STATUS.format(name="containerd", version="1.7.24~ds1-6")
        + DPKG_STATUS.format(name="containerd.io", version="1:2.1.4-1")
        + "Package: docker.io\nStatus: deinstall ok config-files\nVersion: 28.5.2\n"
    )
    packages = parse_dpkg_status(text)
    assert engine_release(packages, Runtime.CONTAINERD) == "2.1.4"  # containerd.io first
    assert engine_release(packages, Runtime.DOCKER) is None
    releases = ("2.1.4", "10", "1.7.24", "", None, "x.1", "1234567.0")
    merges = [PluginMerge.of(2, r) is PluginMerge.DEEP for r in releases]
    assert merges == [True, True, False, False, False, False, False]
    assert PluginMerge.of(3, None) is PluginMerge.DEEP
