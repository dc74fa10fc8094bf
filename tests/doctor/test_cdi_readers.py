"""`cdi_readers`: which programs on a node read CDI specs, from which directories; and what the
cdi and toolkit checks make of it (facts built directly, every engine kind, CRI-O included)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctk.doctor.checks.cdi import cdi_consumers
from ctk.doctor.checks.cdi_readers import CdiReader, cdi_readers, engine_cdi_route, spec_to_keep
from ctk.doctor.checks.engine_cdi import cdi_only, cdi_unusable
from ctk.doctor.checks.engine_config import CONFIG_SETTING
from ctk.doctor.checks.toolkit import cdi_route
from ctk.doctor.facts import (
    CdiFacts,
    ConfigFile,
    EngineFacts,
    NodeFacts,
    SpecFileFacts,
    ToolkitFacts,
)
from ctk.doctor.model import Evidence, Severity, Status
from ctk.runtime_config.engines import Runtime

DOCKER = EngineFacts(
    engine="docker", installed=True, config_path="/etc/docker/daemon.json", cdi_enabled=True
)
CONTAINERD = EngineFacts(
    engine="containerd",
    installed=True,
    config_path="/etc/containerd/config.toml",
    cdi_enabled=True,
    cdi_spec_dirs=("/opt/cdi/",),
)
CRIO = EngineFacts(engine="crio", installed=True, config_path="/etc/crio/crio.conf")
DOCKER_28_2 = replace(DOCKER, cdi_enabled=None, version="28.2.0")
CONTAINERD_2 = replace(CONTAINERD, cdi_enabled=None, config_version=3)
DEFAULT_DIRS = ("/etc/cdi", "/var/run/cdi")

DOCKER_READER = CdiReader(
    name="docker",
    evidence=Evidence("/etc/docker/daemon.json", "features.cdi = true"),
    dirs=DEFAULT_DIRS,
    switched_on=True,
)
CONTAINERD_READER = CdiReader(
    name="containerd",
    evidence=Evidence("/etc/containerd/config.toml", "enable_cdi = true"),
    dirs=("/opt/cdi/",),
    switched_on=True,
)
CRIO_READER = CdiReader(
    name="crio",
    evidence=Evidence("/etc/crio/crio.conf", "crio always reads CDI specs"),
    dirs=DEFAULT_DIRS,
    switched_on=False,
)
PODMAN_READER = CdiReader(
    name="podman",
    evidence=Evidence("/usr/bin/podman", "podman uses CDI natively"),
    dirs=DEFAULT_DIRS,
    switched_on=False,  # installed is not used (issue 23, item 5)
)


def node(
    *engines: EngineFacts, podman: bool = False, mode: str | None = None, kubelet: bool = True
) -> NodeFacts:
    binaries = {"podman": "/usr/bin/podman"} if podman else {}
    config = ConfigFile(path="/etc/nvidia-container-runtime/config.toml")
    if mode is not None:
        binaries["nvidia-container-runtime"] = "/usr/bin/nvidia-container-runtime"
        config = ConfigFile(
            path=config.path, exists=True, data={"nvidia-container-runtime": {"mode": mode}}
        )
    return NodeFacts(
        engines={Runtime(engine.engine): engine for engine in engines},
        toolkit=ToolkitFacts(binaries=binaries, config=config),
        kubelet=kubelet,
    )


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param(node(), (), id="nothing"),
        pytest.param(node(DOCKER), (DOCKER_READER,), id="docker-cdi-on"),
        pytest.param(node(replace(DOCKER, cdi_enabled=None)), (), id="docker-cdi-unset"),
        pytest.param(node(replace(DOCKER, cdi_enabled=False)), (), id="docker-cdi-off"),
        pytest.param(node(replace(DOCKER, installed=False)), (), id="docker-not-installed"),
        pytest.param(
            node(DOCKER_28_2),
            (
                replace(
                    DOCKER_READER,
                    evidence=Evidence(
                        DOCKER.config_path, "docker 28.2.0: CDI on by default since 28.2"
                    ),
                    switched_on=False,
                ),
            ),
            id="docker-28.2-cdi-unset",
        ),
        pytest.param(node(replace(DOCKER_28_2, version="28.1.1")), (), id="docker-28.1-unset"),
        pytest.param(node(replace(DOCKER_28_2, cdi_enabled=False)), (), id="docker-28.2-cdi-off"),
        pytest.param(
            node(replace(DOCKER_28_2, version="28.2.0", cdi_enabled=True)),
            (DOCKER_READER,),
            id="docker-28.2-cdi-on",
        ),
        pytest.param(
            node(replace(DOCKER, cdi_spec_dirs=("/opt/cdi",))),
            (replace(DOCKER_READER, dirs=("/opt/cdi",)),),
            id="docker-own-dirs-replace-the-defaults",
        ),
        pytest.param(
            node(replace(DOCKER, cdi_spec_dirs=())),
            (replace(DOCKER_READER, dirs=()),),
            id="docker-empty-list-reads-no-directory",
        ),
        pytest.param(
            node(replace(DOCKER, cdi_spec_dirs=("",))),
            (replace(DOCKER_READER, dirs=()),),
            id="docker-blank-entry-reads-no-directory",
        ),
        pytest.param(
            node(replace(DOCKER, cdi_spec_dirs=("", "/opt/cdi"))),
            (replace(DOCKER_READER, dirs=("/opt/cdi",)),),
            id="docker-blank-entry-among-others",
        ),
        pytest.param(
            node(replace(DOCKER, version="24.0.9")), (), id="docker-24-cdi-on-but-no-cdi-support"
        ),
        pytest.param(
            node(replace(DOCKER, version="25.0.0")), (DOCKER_READER,), id="docker-25-cdi-on"
        ),
        pytest.param(node(CONTAINERD), (CONTAINERD_READER,), id="containerd-own-dirs"),
        pytest.param(
            node(replace(CONTAINERD, version="1.6.20")), (), id="containerd-1.6-ignores-enable-cdi"
        ),
        pytest.param(
            node(replace(CONTAINERD, version="1.7.0")),
            (CONTAINERD_READER,),
            id="containerd-1.7-enable-cdi",
        ),
        pytest.param(
            node(CONTAINERD_2),
            (
                replace(
                    CONTAINERD_READER,
                    evidence=Evidence(
                        CONTAINERD.config_path,
                        "config version 3 (containerd 2.x): CDI on by default since 2.0",
                    ),
                    switched_on=False,
                ),
            ),
            id="containerd-config-v3-cdi-unset",
        ),
        pytest.param(
            node(replace(CONTAINERD_2, config_version=2, version="2.1.4")),
            (
                replace(
                    CONTAINERD_READER,
                    evidence=Evidence(
                        CONTAINERD.config_path, "containerd 2.1.4: CDI on by default since 2.0"
                    ),
                    switched_on=False,
                ),
            ),
            id="containerd-2-package-cdi-unset",
        ),
        pytest.param(
            node(replace(CONTAINERD_2, config_version=2)), (), id="containerd-config-v2-unset"
        ),
        pytest.param(
            node(replace(CONTAINERD_2, version="1.7.27")), (), id="containerd-1.7-package-unset"
        ),
        pytest.param(node(replace(CONTAINERD_2, cdi_enabled=False)), (), id="containerd-2-cdi-off"),
        pytest.param(
            node(replace(CONTAINERD, cdi_spec_dirs=None)),
            (replace(CONTAINERD_READER, dirs=DEFAULT_DIRS),),
            id="containerd-default-dirs",
        ),
        pytest.param(
            node(replace(CONTAINERD, cdi_spec_dirs=())),
            (replace(CONTAINERD_READER, dirs=()),),
            id="containerd-empty-list-reads-no-directory",
        ),
        pytest.param(
            node(DOCKER, CONTAINERD, kubelet=False),
            (DOCKER_READER,),
            id="containerd-under-docker-alone",
        ),
        pytest.param(
            node(CONTAINERD, kubelet=False), (CONTAINERD_READER,), id="containerd-without-docker"
        ),
        pytest.param(node(CRIO), (CRIO_READER,), id="crio-always-reads"),
        pytest.param(
            node(replace(CRIO, cdi_spec_dirs=("/opt/cdi",))),
            (replace(CRIO_READER, dirs=("/opt/cdi",)),),
            id="crio-own-dirs",
        ),
        pytest.param(node(replace(CRIO, installed=False)), (), id="crio-not-installed"),
        pytest.param(node(replace(CRIO, error="line 1: bad")), (), id="crio-config-broken"),
        pytest.param(node(replace(CRIO, needs_root=True)), (), id="crio-config-root-only"),
        pytest.param(node(podman=True), (PODMAN_READER,), id="podman"),
        pytest.param(
            node(DOCKER, CONTAINERD, CRIO, podman=True),
            (DOCKER_READER, CONTAINERD_READER, CRIO_READER, PODMAN_READER),
            id="all",
        ),
    ],
)
def test_cdi_readers(facts: NodeFacts, expected: tuple[CdiReader, ...]) -> None:
    assert cdi_readers(facts) == expected


def test_every_engine_says_how_cdi_is_switched_on() -> None:
    assert set(CONFIG_SETTING) == set(Runtime)


@pytest.mark.parametrize(
    ("reader", "path", "expected"),
    [
        pytest.param(DOCKER_READER, "/var/run/cdi/nvidia.yaml", True, id="default-dir"),
        pytest.param(DOCKER_READER, "/opt/cdi/nvidia.yaml", False, id="other-dir"),
        pytest.param(DOCKER_READER, "/etc/cdi/sub/nvidia.yaml", False, id="subdirectory"),
        pytest.param(CONTAINERD_READER, "/opt/cdi/nvidia.yaml", True, id="trailing-slash"),
        pytest.param(CONTAINERD_READER, "/etc/cdi/nvidia.yaml", False, id="own-dirs-only"),
    ],
)
def test_reads(reader: CdiReader, path: str, expected: bool) -> None:
    assert reader.reads(SpecFileFacts(path=path, kind="nvidia.com/gpu")) is expected


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param(node(CRIO), [], id="crio-reads-but-relies-on-nothing"),
        pytest.param(
            node(DOCKER, CONTAINERD, CRIO, podman=True),
            [DOCKER_READER.evidence, CONTAINERD_READER.evidence],
            id="switched-on-only",
        ),
        pytest.param(node(podman=True), [], id="podman-installed-is-not-used"),
        pytest.param(
            replace(node(CRIO), kubernetes={"device_list_strategy": "envvar,cdi-cri"}),
            [Evidence("device plugin", "deviceListStrategy=cdi-cri,envvar")],
            id="device-plugin-in-a-cdi-strategy",
        ),
        pytest.param(
            replace(node(CRIO), kubernetes={"device_list_strategy": "envvar"}),
            [],
            id="device-plugin-envvar",
        ),
        pytest.param(node(DOCKER_28_2, CONTAINERD_2), [], id="a-default-asks-for-nothing"),
        pytest.param(
            node(mode="cdi"),
            [
                Evidence(
                    "/etc/nvidia-container-runtime/config.toml",
                    'nvidia-container-runtime.mode = "cdi"',
                )
            ],
            id="toolkit-mode-cdi",
        ),
        pytest.param(node(mode="auto"), [], id="toolkit-mode-auto"),
    ],
)
def test_cdi_consumers(facts: NodeFacts, expected: list[Evidence]) -> None:
    """What makes cdi.spec-missing fail: something set up to request CDI devices. CRI-O always
    reads specs and podman may run no GPU container: they alone make it a warning."""
    assert cdi_consumers(facts) == expected


SPEC = SpecFileFacts(
    path="/var/run/cdi/nvidia.yaml",
    kind="nvidia.com/gpu",
    devices=("0", "all"),
    hook_paths=("/usr/local/libexec/ctk/ctk-hook",),
)


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param(
            node(CRIO),
            "/var/run/cdi/nvidia.yaml (hooks: /usr/local/libexec/ctk/ctk-hook; "
            "crio: crio always reads CDI specs)",
            id="crio",
        ),
        pytest.param(
            node(DOCKER, podman=True),
            "/var/run/cdi/nvidia.yaml (hooks: /usr/local/libexec/ctk/ctk-hook; "
            "docker: features.cdi = true, podman: podman uses CDI natively)",
            id="docker-and-podman",
        ),
        pytest.param(
            node(DOCKER_28_2),
            "/var/run/cdi/nvidia.yaml (hooks: /usr/local/libexec/ctk/ctk-hook; "
            "docker: docker 28.2.0: CDI on by default since 28.2)",
            id="docker-28.2-by-default",
        ),
        pytest.param(node(replace(DOCKER, cdi_enabled=False)), None, id="no-reader"),
        pytest.param(node(CONTAINERD), None, id="spec-outside-the-readers-dirs"),
        pytest.param(
            node(replace(DOCKER, cdi_spec_dirs=())), None, id="docker-reading-no-directory"
        ),
        pytest.param(
            node(CONTAINERD, CRIO),
            "/var/run/cdi/nvidia.yaml (hooks: /usr/local/libexec/ctk/ctk-hook; "
            "crio: crio always reads CDI specs)",
            id="only-the-readers-of-the-spec",
        ),
    ],
)
def test_cdi_route(facts: NodeFacts, expected: str | None) -> None:
    """How toolkit.not-installed sees GPUs reach containers without the toolkit."""
    assert cdi_route(replace(facts, cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)))) == expected


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(replace(SPEC, kind="nvidia.com/pgpu"), id="other-kind"),
        pytest.param(replace(SPEC, problems=("line 3: bad",)), id="invalid"),
        pytest.param(replace(SPEC, missing_hook_paths=SPEC.hook_paths), id="hook-missing"),
    ],
)
def test_cdi_route_needs_a_usable_gpu_spec(spec: SpecFileFacts) -> None:
    facts = replace(node(DOCKER), cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(spec,)))
    assert cdi_route(facts) is None


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        pytest.param(
            ["/var/run/cdi/a-copy.yaml", "/var/run/cdi/nvidia.json"],
            "/var/run/cdi/nvidia.json",
            id="generated-json-over-a-copy",
        ),
        pytest.param(
            ["/var/run/cdi/nvidia.json", "/var/run/cdi/nvidia.yaml"],
            "/var/run/cdi/nvidia.yaml",
            id="yaml-over-json",
        ),
        pytest.param(
            ["/etc/cdi/a.yaml", "/var/run/cdi/nvidia.yaml"],
            "/var/run/cdi/nvidia.yaml",
            id="generated-in-a-later-directory",
        ),
        pytest.param(
            ["/var/run/cdi/nvidia.yaml", "/etc/cdi/nvidia.json"],
            "/etc/cdi/nvidia.json",
            id="first-directory-with-a-generated-one",
        ),
        pytest.param(
            ["/etc/cdi/b.yaml", "/etc/cdi/a.yaml"],
            "/etc/cdi/a.yaml",
            id="none-generated-first-by-path",
        ),
    ],
)
def test_spec_to_keep(paths: list[str], expected: str) -> None:
    """What a clash keeps is what regenerating rewrites (cdi.spec-conflict, mig.spec_output)."""
    assert spec_to_keep(paths) == expected


def gpus_through_cdi(facts: NodeFacts, runtime: Runtime, **kubernetes: str) -> Status | None:
    """What an engine's runtime check makes of ``facts`` with SPEC in /var/run/cdi and no nvidia
    runtime (`cdi_only`): ok, a warning of severity info, or None (it fails as before)."""
    facts = replace(facts, cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)), kubernetes=kubernetes)
    result = cdi_only(facts, runtime)
    if result is None:
        return None
    assert result.severity is (Severity.INFO if result.status is Status.WARN else None)
    return result.status


CONTAINERD_DEFAULT_DIRS = replace(CONTAINERD, cdi_spec_dirs=None)


@pytest.mark.parametrize(
    ("facts", "runtime", "kubernetes", "expected"),
    [
        pytest.param(node(CRIO, mode="auto"), Runtime.CRIO, {}, Status.WARN, id="crio-by-itself"),
        pytest.param(
            node(CRIO, mode="auto"),
            Runtime.CRIO,
            {"device_list_strategy": "cdi-cri"},
            Status.OK,
            id="crio-device-plugin-cdi-cri",
        ),
        pytest.param(
            node(CRIO, mode="auto"),
            Runtime.CRIO,
            {"device_list_strategy": "envvar"},
            None,
            id="crio-device-plugin-envvar",
        ),
        pytest.param(
            node(CRIO, mode="auto"),
            Runtime.CRIO,
            {"device_list_strategy": "envvar, cdi-annotations"},
            Status.OK,
            id="crio-device-plugin-cdi-among-others",
        ),
        pytest.param(node(CRIO), Runtime.CRIO, {}, Status.OK, id="crio-no-toolkit"),
        pytest.param(
            node(replace(CRIO, cdi_spec_dirs=("/etc/cdi",))),
            Runtime.CRIO,
            {},
            None,
            id="crio-spec-outside-its-dirs",
        ),
        pytest.param(
            node(CONTAINERD_DEFAULT_DIRS, mode="auto"),
            Runtime.CONTAINERD,
            {},
            Status.OK,
            id="containerd-enable-cdi",
        ),
        pytest.param(
            node(CONTAINERD, mode="auto"), Runtime.CONTAINERD, {}, None, id="containerd-own-dirs"
        ),
        pytest.param(
            node(replace(CONTAINERD_2, cdi_spec_dirs=None), mode="auto"),
            Runtime.CONTAINERD,
            {},
            Status.WARN,
            id="containerd-2-by-default",
        ),
        pytest.param(
            node(replace(CONTAINERD_DEFAULT_DIRS, cdi_enabled=False), mode="auto"),
            Runtime.CONTAINERD,
            {},
            None,
            id="containerd-cdi-off",
        ),
        pytest.param(node(DOCKER, mode="auto"), Runtime.DOCKER, {}, Status.OK, id="docker-cdi-on"),
        pytest.param(
            node(DOCKER_28_2, mode="auto"), Runtime.DOCKER, {}, Status.WARN, id="docker-28.2"
        ),
    ],
)
def test_cdi_only(
    facts: NodeFacts, runtime: Runtime, kubernetes: dict[str, str], expected: Status | None
) -> None:
    """An engine with no nvidia runtime that reads a usable spec: chosen (a setting, the device
    plugin, no toolkit) is ok; by default an info finding; a device plugin that hands out GPUs
    as NVIDIA_VISIBLE_DEVICES, or a spec outside the engine's directories, leaves the failure."""
    assert gpus_through_cdi(facts, runtime, **kubernetes) is expected


def test_no_cdi_route_through_containerd_under_docker_alone() -> None:
    """containerd that only runs Docker's containers serves no CDI request of its own."""
    facts = node(DOCKER, CONTAINERD_DEFAULT_DIRS, kubelet=False)
    facts = replace(facts, cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)))
    assert engine_cdi_route(facts, Runtime.DOCKER) == (DOCKER_READER, (SPEC,))
    assert engine_cdi_route(facts, Runtime.CONTAINERD) is None


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        pytest.param(
            replace(DOCKER, cdi_spec_dirs=()),
            (
                Evidence(
                    "/etc/docker/daemon.json",
                    "features.cdi = true, reading no directory: "
                    "no usable nvidia.com/gpu spec there",
                ),
            ),
            id="reads-no-directory",
        ),
        pytest.param(
            replace(DOCKER, cdi_spec_dirs=("/opt/cdi",)),
            (
                Evidence(
                    "/etc/docker/daemon.json",
                    "features.cdi = true, reading /opt/cdi: no usable nvidia.com/gpu spec there",
                ),
            ),
            id="reads-other-directories",
        ),
        pytest.param(DOCKER, (), id="reads-the-spec"),
        pytest.param(replace(DOCKER, cdi_enabled=False), (), id="reads-no-spec-at-all"),
    ],
)
def test_cdi_unusable(engine: EngineFacts, expected: tuple[Evidence, ...]) -> None:
    """Why an engine that reads CDI specs still fails its runtime check: where it looks."""
    facts = replace(node(engine), cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)))
    assert cdi_unusable(facts, Runtime.DOCKER) == expected


ALICE_DIRS = ("/home/alice/.config/cdi", "/run/user/1000/cdi")
ROOTLESS = replace(
    DOCKER,
    config_path="/home/alice/.config/docker/daemon.json",
    user_cdi_dirs=ALICE_DIRS,
)


@pytest.mark.parametrize(
    ("version", "dirs", "expected"),
    [
        pytest.param("29.2.0", None, (*DEFAULT_DIRS, *ALICE_DIRS), id="29.2-user-dirs-after"),
        pytest.param("29.1.5", None, DEFAULT_DIRS, id="29.1-defaults-only"),
        pytest.param("30.0.0", None, (*DEFAULT_DIRS, *ALICE_DIRS), id="30.0"),
        pytest.param(None, None, DEFAULT_DIRS, id="unknown-version"),
        pytest.param("29.2.0", ("/opt/cdi",), ("/opt/cdi",), id="own-list-replaces-all"),
    ],
)
def test_a_rootless_docker_reads_its_user_dirs_from_29_2(
    version: str | None, dirs: tuple[str, ...] | None, expected: tuple[str, ...]
) -> None:
    """A rootless dockerd 29.2+ (moby cd4397b) reads $XDG_CONFIG_HOME/cdi and $XDG_RUNTIME_DIR/cdi
    after the defaults when cdi-spec-dirs is not set; it is a CDI reader of its own."""
    rootless = replace(ROOTLESS, version=version, cdi_spec_dirs=dirs)
    facts = replace(node(), docker_rootless=rootless)
    [reader] = cdi_readers(facts)
    assert (reader.name, reader.dirs) == ("rootless docker", expected)
    assert reader.evidence.source == "/home/alice/.config/docker/daemon.json"
    mine = SpecFileFacts(path="/home/alice/.config/cdi/nvidia.yaml", kind="nvidia.com/gpu")
    assert reader.reads(mine) is (ALICE_DIRS[0] in expected)


def test_a_rootless_docker_with_cdi_off_reads_nothing() -> None:
    rootless = replace(ROOTLESS, version="29.2.0", cdi_enabled=False)
    assert cdi_readers(replace(node(), docker_rootless=rootless)) == ()


@pytest.mark.parametrize(
    ("version", "hook", "expected"),
    [
        pytest.param("29.2.0", True, Status.OK, id="29.2-with-nvidia-cdi-hook"),
        pytest.param("29.10.1", True, Status.OK, id="29.10"),
        pytest.param("29.1.5", True, Status.WARN, id="29.1"),
        pytest.param("29.2.0", False, Status.WARN, id="29.2-without-the-hook"),
        pytest.param(None, True, None, id="version-unknown-cdi-off"),
    ],
)
def test_docker_29_2_sends_gpus_through_cdi(
    version: str | None, hook: bool, expected: Status | None
) -> None:
    """Docker 29.2+ with nvidia-cdi-hook on its PATH turns `--gpus` into nvidia.com/gpu CDI
    requests (moby 86f122a): the usual GPU request gets GPUs from the spec without the nvidia
    runtime, so a node that reads CDI by default (28.2+) is fine, and says how."""
    facts = node(replace(DOCKER_28_2, version=version), mode="auto")
    if hook:
        binaries = {**facts.toolkit.binaries, "nvidia-cdi-hook": "/usr/bin/nvidia-cdi-hook"}
        facts = replace(facts, toolkit=replace(facts.toolkit, binaries=binaries))
    facts = replace(facts, cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)))
    result = cdi_only(facts, Runtime.DOCKER)
    assert (result.status if result is not None else None) is expected, result
    if result is not None and expected is Status.OK:
        assert "(docker run --device nvidia.com/gpu=... or --gpus)" in result.summary
        assert (
            Evidence(
                "/usr/bin/nvidia-cdi-hook",
                f"docker {version}: --gpus asks for nvidia.com/gpu CDI devices",
            )
            in result.evidence
        )


def test_cdi_only_names_the_device_plugin_strategies_it_went_by() -> None:
    """The whole result: the reader, the spec and the strategies, sorted and comma-joined."""
    facts = node(CRIO, mode="auto")
    facts = replace(
        facts,
        cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)),
        kubernetes={"device_list_strategy": "envvar, cdi-cri,cdi-annotations"},
    )
    result = cdi_only(facts, Runtime.CRIO)
    assert result is not None
    assert (result.status, result.summary) == (
        Status.OK,
        "no nvidia runtime: GPUs reach containers through CDI (a device plugin or DRA driver "
        "handing out CDI devices) from "
        "/var/run/cdi/nvidia.yaml",
    )
    assert result.evidence[-2:] == (
        Evidence("/var/run/cdi/nvidia.yaml", "nvidia.com/gpu spec crio reads"),
        Evidence("device plugin", "deviceListStrategy=cdi-annotations,cdi-cri,envvar"),
    )


def test_docker_gpus_through_cdi_speaks_for_docker_only() -> None:
    """containerd beside a Docker 29.2 with nvidia-cdi-hook: `--gpus` is Docker's request,
    never containerd's (its result names neither --gpus nor the hook)."""
    docker = replace(DOCKER_28_2, version="29.2.0")
    facts = node(docker, CONTAINERD_DEFAULT_DIRS, mode="auto")
    binaries = {**facts.toolkit.binaries, "nvidia-cdi-hook": "/usr/bin/nvidia-cdi-hook"}
    facts = replace(
        facts,
        toolkit=replace(facts.toolkit, binaries=binaries),
        cdi=CdiFacts(dirs=DEFAULT_DIRS, specs=(SPEC,)),
    )
    result = cdi_only(facts, Runtime.CONTAINERD)
    assert result is not None and result.status is Status.OK
    assert "--gpus" not in result.summary
    assert all(e.source != "/usr/bin/nvidia-cdi-hook" for e in result.evidence)
