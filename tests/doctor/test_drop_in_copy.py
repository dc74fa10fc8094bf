"""The doctor and ctk's containerd drop-in (issue 21): a carried copy of config.toml's CRI
settings that no longer matches it is named setting by setting (`containerd.drop-in-copy-stale`),
and containerd's files are merged as the installed version merges them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.doctor.checks.containerd import drop_in_copy_stale, systemd_cgroup_mismatch
from ctk.doctor.facts import NodeFacts
from ctk.doctor.fixes import ConfigureRuntime
from ctk.doctor.model import Status
from ctk.host.facts.engine_configs import gather_containerd
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot
from ctk.runtime_config.engines import Runtime
from ctk.runtime_config.inspect import stale_copy

CRI = 'plugins."io.containerd.grpc.v1.cri"'
OWN = "# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
MAIN = (
    f"version = 2\n[{CRI}]\n  enable_selinux = true\n"
    f"[{CRI}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n"
)
COPY = (
    OWN + f"version = 2\n[{CRI}]\n  enable_selinux = true\n  enable_cdi = true\n"
    f'[{CRI}.containerd]\n  default_runtime_name = "nvidia"\n'
    f"[{CRI}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n"
    f"[{CRI}.containerd.runtimes.nvidia.options]\n"
    '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
)
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"


@pytest.mark.parametrize(
    ("main_text", "copy", "expected"),
    [
        pytest.param(MAIN, COPY, (), id="as-copied"),
        pytest.param(
            MAIN.replace("enable_selinux = true", "enable_selinux = false"),
            COPY,
            ("enable_selinux",),
            id="changed",
        ),
        pytest.param(
            MAIN + "  restrict_oom_score_adj = true\n",
            COPY,
            ("containerd.runtimes.runc.options.restrict_oom_score_adj",),
            id="added-in-main",
        ),
        pytest.param(
            MAIN.replace("  enable_selinux = true\n", ""), COPY, ("enable_selinux",), id="removed"
        ),
        pytest.param(
            MAIN + f'[{CRI}.containerd.runtimes.nvidia.options]\n  BinaryName = "/opt/x"\n',
            COPY,
            (),
            id="nvidia-runtime-replaced-on-purpose",
        ),
        pytest.param(
            MAIN + f'[{CRI}.containerd]\n  default_runtime_name = "crun"\n', COPY, (), id="default"
        ),
        pytest.param(
            MAIN.replace("enable_selinux = true", "enable_selinux = false"),
            COPY.replace("# Written by", "# Written by hand, not"),
            None,
            id="not-ctks",
        ),
        pytest.param(
            MAIN,
            COPY.replace(OWN, OWN + "# containerd 2.x merges this file into the others\n"),
            None,
            id="merged-drop-in",
        ),
        pytest.param(
            f"version = 2\n[{CRI}]\n  enable_selinux = true\n",
            COPY.replace("runc.options]\n  SystemdCgroup = true", 'runc]\n  runtime_type = "x"'),
            (),
            id="built-in-runc-written-out",
        ),
        pytest.param(
            "version = 1\n", COPY.replace("version = 2", "version = 1"), None, id="version-1"
        ),
        pytest.param(
            f"version = 2\n[{CRI}]\n  enable_selinux = true\n[{CRI}.containerd.runtimes]\n",
            COPY.replace(f"[{CRI}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n", ""),
            (),
            id="an-empty-runtimes-table-and-ctks-own",
        ),
    ],
)
def test_stale_copy_names_what_differs(
    main_text: str, copy: str, expected: tuple[str, ...] | None
) -> None:
    found = stale_copy([("/etc/containerd/config.toml", main_text), (DROP_IN, copy)])
    assert found == (None if expected is None else (DROP_IN, expected))


def test_files_before_the_drop_in_count_those_after_it_do_not() -> None:
    before = (
        "/etc/containerd/conf.d/10-registry.toml",
        f'version = 2\n[{CRI}.registry]\n  config_path = "/r"\n',
    )
    after = ("/etc/containerd/conf.d/zz.toml", f"version = 2\n[{CRI}]\n  enable_selinux = false\n")
    files = [("/etc/containerd/config.toml", MAIN), before, (DROP_IN, COPY), after]
    assert stale_copy(files) == (DROP_IN, ("registry.config_path",))


def node(tmp_path: Path, main_text: str, drop_in: str, release: str | None = None) -> NodeFacts:
    etc = tmp_path / "etc/containerd"
    (etc / "conf.d").mkdir(parents=True, exist_ok=True)
    (etc / "config.toml").write_text(
        main_text.replace("\n", '\nimports = ["/etc/containerd/conf.d/*.toml"]\n', 1)
    )
    (etc / "conf.d/99-nvidia.toml").write_text(drop_in)
    if release is not None:
        status = tmp_path / "var/lib/dpkg/status"
        status.parent.mkdir(parents=True, exist_ok=True)
        status.write_text(
            f"Package: containerd\nStatus: install ok installed\nVersion: {release}\n"
        )
    return gathered(tmp_path)


def gathered(root: Path) -> NodeFacts:
    containerd = gather_containerd(Gatherer(HostRoot(root)), {"containerd": "/usr/bin/containerd"})
    return NodeFacts(engines={Runtime.CONTAINERD: containerd})


def test_the_check_warns_with_the_settings_and_the_fix(tmp_path: Path) -> None:
    facts = node(tmp_path, MAIN.replace("= true", "= false"), COPY)
    result = drop_in_copy_stale(facts)
    assert (result.status, result.summary) == (
        Status.WARN,
        f"{DROP_IN} carries an old copy of containerd's CRI settings: containerd uses the copy's "
        "containerd.runtimes.runc.options.SystemdCgroup, enable_selinux, not what "
        "/etc/containerd/config.toml and the files before the drop-in say now",
    )
    assert result.fixes == (ConfigureRuntime(runtime=Runtime.CONTAINERD),)
    assert drop_in_copy_stale(node(tmp_path, MAIN, COPY)).status is Status.OK


@pytest.mark.parametrize(
    ("release", "mismatch"), [(None, False), ("1.7.24~ds1-6", False), ("2.1.9+ds1-5", True)]
)
def test_the_doctor_merges_as_the_installed_containerd_does(
    release: str | None, mismatch: bool, tmp_path: Path
) -> None:
    """A hand-written drop-in with only an nvidia runtime: 2.x keeps config.toml's runc (and
    its SystemdCgroup, which nvidia's contradicts); 1.x lets the drop-in's table replace it."""
    drop_in = (
        f"version = 2\n[{CRI}.containerd.runtimes.nvidia.options]\n"
        '  BinaryName = "/usr/bin/nvidia-container-runtime"\n  SystemdCgroup = false\n'
    )
    facts = node(tmp_path, MAIN, drop_in, release)
    result = systemd_cgroup_mismatch(facts)
    assert (result.status is Status.FAIL) == mismatch


def test_configure_edit_doctor_configure_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loop a user goes through: the note, the edit, the doctor's warning, the fix."""
    etc = tmp_path / "etc/containerd"
    etc.mkdir(parents=True)
    (etc / "config.toml").write_text(MAIN)
    configure = ["runtime", "configure", "--runtime=containerd", "--root", str(tmp_path)]
    assert main(configure) == 0
    assert "carries a copy" in capsys.readouterr().err
    facts = gathered(tmp_path)
    assert drop_in_copy_stale(facts).status is Status.OK
    edited = (etc / "config.toml").read_text().replace("selinux = true", "selinux = false")
    (etc / "config.toml").write_text(edited)
    facts = gathered(tmp_path)
    result = drop_in_copy_stale(facts)
    print(result)
    assert (result.status, result.evidence[0].value) == (
        Status.WARN,
        "copied settings that differ: enable_selinux",
    )
    assert main(configure) == 0
    capsys.readouterr()
    facts = gathered(tmp_path)
    assert drop_in_copy_stale(facts).status is Status.OK
