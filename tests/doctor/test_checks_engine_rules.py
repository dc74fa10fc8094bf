"""The engine checks' rules on facts built here: which containerd imports load a drop-in (a
relative glob, a malformed one), where an engine that reads CDI looks, a rootless Docker beside
the system one, and the `runtime configure` fix (survivors of issue 26's mutation run)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import ctk.doctor.checks  # noqa: F401  (fills the registry)
from ctk.doctor.checks.cdi_readers import CdiReader, cdi_readers
from ctk.doctor.checks.engine_config import configure_fix
from ctk.doctor.facts import CdiFacts, EngineFacts, NodeFacts, SpecFileFacts
from ctk.doctor.fixes import ConfigureRuntime, argv
from ctk.doctor.model import REGISTRY, Evidence, Result, Status
from ctk.runtime_config.engines import Runtime

CONTAINERD = EngineFacts(
    engine="containerd",
    installed=True,
    config_path="/etc/containerd/config.toml",
    config_exists=True,
    drop_ins=("/etc/containerd/conf.d/99-nvidia.toml",),
)


def _orphaned(imports: str) -> Result:
    return Result(
        status=Status.FAIL,
        summary="containerd ignores /etc/containerd/conf.d/99-nvidia.toml: "
        "/etc/containerd/config.toml does not import it",
        evidence=(
            Evidence("/etc/containerd/config.toml", f"imports: {imports}"),
            Evidence("/etc/containerd/conf.d/99-nvidia.toml", "exists, not imported"),
        ),
        commands=("sudo systemctl restart containerd",),
        fixes=(ConfigureRuntime(runtime=Runtime.CONTAINERD),),
    )


IMPORTED = Result(status=Status.OK, summary="1 drop-in(s) imported")


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        pytest.param(("conf.d/*.toml",), IMPORTED, id="relative-to-config-toml"),
        pytest.param(("/etc/containerd/conf.d/*.toml",), IMPORTED, id="absolute"),
        pytest.param(
            ("/etc/containerd/conf.d/[*.toml",),
            _orphaned("/etc/containerd/conf.d/[*.toml"),
            id="malformed-glob-loads-nothing",
        ),
        pytest.param(
            ("/etc/containerd/conf.d/*.toml", "/etc/containerd/extra/[*.toml"),
            _orphaned("/etc/containerd/conf.d/*.toml, /etc/containerd/extra/[*.toml"),
            id="a-malformed-glob-beside-a-good-one",
        ),
    ],
)
def test_drop_in_not_imported(imports: tuple[str, ...], expected: Result) -> None:
    """A relative entry counts from config.toml's folder; containerd refuses to start on a
    malformed glob (Go's filepath.Match), so nothing it names is loaded."""
    engine = replace(CONTAINERD, imports=imports)
    facts = NodeFacts(engines={Runtime.CONTAINERD: engine}, kubelet=True)
    assert REGISTRY["containerd.drop-in-not-imported"].run(facts) == expected


def test_a_failing_runtime_check_names_every_directory_the_engine_reads() -> None:
    """containerd reads CDI specs, but its directories hold no usable nvidia.com/gpu spec."""
    engine = replace(CONTAINERD, drop_ins=(), cdi_enabled=True)
    spec = SpecFileFacts(path="/opt/cdi/nvidia.yaml", kind="nvidia.com/gpu", devices=("all",))
    facts = NodeFacts(
        engines={Runtime.CONTAINERD: engine},
        kubelet=True,
        cdi=CdiFacts(dirs=("/etc/cdi", "/var/run/cdi"), specs=(spec,)),
    )
    result = REGISTRY["containerd.runtime-not-configured"].run(facts)
    assert (result.status, result.evidence) == (
        Status.FAIL,
        (
            Evidence("/etc/containerd/config.toml", "runtimes: none (no nvidia)"),
            Evidence(
                "/etc/containerd/config.toml",
                "enable_cdi = true, reading /etc/cdi, /var/run/cdi: no usable nvidia.com/gpu spec "
                "there",
            ),
        ),
    )


def test_a_rootless_docker_is_a_reader_beside_the_system_one() -> None:
    docker = EngineFacts(
        engine="docker", installed=True, config_path="/etc/docker/daemon.json", cdi_enabled=True
    )
    rootless = replace(
        docker,
        config_path="/home/alice/.config/docker/daemon.json",
        version="29.2.0",
        user_cdi_dirs=("/home/alice/.config/cdi",),
    )
    facts = NodeFacts(engines={Runtime.DOCKER: docker}, docker_rootless=rootless)
    assert cdi_readers(facts) == (
        CdiReader(
            name="docker",
            evidence=Evidence("/etc/docker/daemon.json", "features.cdi = true"),
            dirs=("/etc/cdi", "/var/run/cdi"),
            switched_on=True,
        ),
        CdiReader(
            name="rootless docker",
            evidence=Evidence("/home/alice/.config/docker/daemon.json", "features.cdi = true"),
            dirs=("/etc/cdi", "/var/run/cdi", "/home/alice/.config/cdi"),
            switched_on=True,
        ),
    )


@pytest.mark.parametrize(
    ("engine", "set_as_default", "enable_cdi", "fix", "line"),
    [
        pytest.param(
            "crio",
            False,
            False,
            ConfigureRuntime(runtime=Runtime.CRIO, set_as_default=False, enable_cdi=False),
            ("runtime", "configure", "--runtime=crio"),
            id="plain",
        ),
        pytest.param(
            "containerd",
            True,
            False,
            ConfigureRuntime(runtime=Runtime.CONTAINERD, set_as_default=True),
            ("runtime", "configure", "--runtime=containerd", "--set-as-default"),
            id="as-the-default",
        ),
        pytest.param(
            "docker",
            False,
            True,
            ConfigureRuntime(runtime=Runtime.DOCKER, enable_cdi=True),
            ("runtime", "configure", "--runtime=docker", "--cdi.enabled"),
            id="cdi-on",
        ),
    ],
)
def test_configure_fix(
    engine: str,
    set_as_default: bool,
    enable_cdi: bool,
    fix: ConfigureRuntime,
    line: tuple[str, ...],
) -> None:
    """The fix an engine check offers, and the command `doctor` shows for it."""
    made = configure_fix(engine, set_as_default=set_as_default, enable_cdi=enable_cdi)
    assert (made, argv(made)) == (fix, line)
    assert made.set_as_default is set_as_default
