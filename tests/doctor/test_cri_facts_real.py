"""The doctor's model of containerd's and CRI-O's CDI settings against the real daemons.

The doctor reads config files and the engine's packaged version and decides whether the engine
reads CDI specs (`cdi_on`) and from which directories (`spec_dirs`); it asks no daemon. Here each
real containerd (Debian 12's 1.6, today's 1.7 and 2.1) and CRI-O 1.36 runs on a set of configs.
What it reports (CRI Status, verbose: what `crictl info` shows) and does (a CRI pod asking for a
device whose spec lies in the test's directory, another for one in /var/run/cdi, a default
directory: the daemon's private /run) must be what the doctor concluded from the same files.
How each reads an empty `cdi_spec_dirs` list is measured here (see `spec_dirs`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ctk import toml_compat as tomllib
from ctk.doctor.checks.engine_config import cdi_on, spec_dirs
from ctk.doctor.facts import EngineFacts
from ctk.host.facts.engine_configs import gather_containerd, gather_crio
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot
from ctk.runtime_config.engines import Runtime
from tests import cri, engines
from tests.doctor.test_engine_facts_real import STATUS
from tests.engines import Daemon, Engine

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the engines need root"),
]

SPECS = "@SPECS@"  # stands for the test's own spec directory in the cases below
CONTAINERD_CASES = {
    "nothing": "",
    "cdi-on": "enable_cdi = true",
    "cdi-off": "enable_cdi = false",
    "dirs-only": f"cdi_spec_dirs = ['{SPECS}']",
    "cdi-on-dirs": f"enable_cdi = true\ncdi_spec_dirs = ['{SPECS}']",
    "cdi-off-dirs": f"enable_cdi = false\ncdi_spec_dirs = ['{SPECS}']",
    "cdi-on-empty-dirs": "enable_cdi = true\ncdi_spec_dirs = []",
    "cdi-on-blank-dir": "enable_cdi = true\ncdi_spec_dirs = ['']",
}
CRIO_CASES = {
    "nothing": None,
    "dirs": f"cdi_spec_dirs = ['{SPECS}']",
    "empty-dirs": "cdi_spec_dirs = []",
    "blank-dir": "cdi_spec_dirs = ['']",
}
TEST_DEVICE, DEFAULT_DEVICE = "vendor.com/class=dev0", "vendor.com/default=dev0"
DEFAULT_SPEC = engines.CDI_TEST_SPEC.replace("vendor.com/class", "vendor.com/default")


@pytest.fixture
def work() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ctk-crf-"))  # short: socket paths are limited
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _doctor_view(runtime: Runtime, facts: EngineFacts) -> tuple[bool, tuple[str, ...]]:
    assert facts.error is None, facts.error
    return cdi_on(runtime, facts), spec_dirs(facts)


def _injected(client: cri.Cri, pods: Path, device: str) -> bool:
    """Whether a container asking for ``device`` gets it; a request the engine cannot resolve
    fails (CDI on) or goes unheeded (an engine without CDI)."""
    shutil.rmtree(pods, ignore_errors=True)
    pods.mkdir()
    try:
        code, lines = cri.run_to_exit(
            client, pods, cri.IMAGE, ["/bin/sh", "-c", "echo CTK_CDI=$CTK_CDI"],
            handler="", cdi_devices=[device], pid=cri.CONTAINER, timeout=120,
        )  # fmt: skip
    except grpc.RpcError as exc:
        details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
        assert "unresolvable CDI devices" in (details or ""), details
        return False
    assert code == 0, lines
    return lines == ["CTK_CDI=injected"]


def _put_default_spec(daemon: Daemon) -> None:
    subprocess.run(
        daemon.inside("sh", "-c", "cat > /run/cdi/default.yaml"),
        input=DEFAULT_SPEC, text=True, check=True, timeout=30,
    )  # fmt: skip


def _check(
    doctor: tuple[bool, tuple[str, ...]], reads_test: bool, reads_default: bool, specs: Path
) -> None:
    """The engine read the test's spec directory, and the default /var/run/cdi, exactly where
    the doctor says it reads CDI specs from a list holding them."""
    on, dirs = doctor
    assert (reads_test, reads_default) == (
        on and str(specs) in dirs,
        on and "/var/run/cdi" in dirs,
    ), doctor


CONTAINERDS = engines.containerds()


@pytest.mark.parametrize("case", sorted(CONTAINERD_CASES))
@pytest.mark.parametrize("engine", CONTAINERDS, ids=[e.id for e in CONTAINERDS])
def test_doctor_reads_containerd_cdi_settings_as_containerd_does(
    engine: Engine, case: str, work: Path
) -> None:
    specs = work / "cdi"
    specs.mkdir()
    (specs / "test.yaml").write_text(engines.CDI_TEST_SPEC)
    root = work / "root"
    config = root / "etc/containerd/config.toml"
    config.parent.mkdir(parents=True)
    lines = "".join(f"  {line}\n" for line in CONTAINERD_CASES[case].splitlines())
    if engine.version < (2,):
        lines = lines.replace("'", '"')
    config_text = engines.containerd_pod_config(engine, work, cri.IMAGE, lines)
    config.write_text(config_text.replace(SPECS, str(specs)))
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    version = ".".join(map(str, engine.version)) + "~ds1-1"
    status.write_text(STATUS.format(package="containerd", version=version))
    facts = gather_containerd(Gatherer(HostRoot(root)), {"containerd": "/usr/bin"})
    doctor = _doctor_view(Runtime.CONTAINERD, facts)

    archive = cri.busybox_image(work)
    with engines.containerd(config, work, engine) as daemon:
        ctr = [str(engine.client), "--address", str(daemon.socket), "-n", "k8s.io"]
        subprocess.run(
            [*ctr, "images", "import", str(archive)], capture_output=True, check=True, timeout=60
        )
        _put_default_spec(daemon)
        client = cri.Cri(daemon.socket)
        try:
            client.wait_ready()
            reported = client.status().info["config"]
            reads_test = _injected(client, work / "pods", TEST_DEVICE)
            reads_default = _injected(client, work / "pods", DEFAULT_DEVICE)
        finally:
            client.close()
    _check(doctor, reads_test, reads_default, specs)
    # CRI Status: what the daemon read (1.6 knows no CDI and reports nothing of it)
    assert reported.get("enableCDI", False) == doctor[0], reported
    if doctor[0]:
        listed = tuple(d for d in reported["cdiSpecDirs"] if d)
        assert listed == doctor[1], reported


CRIOS = engines.crios()


@pytest.mark.parametrize("case", sorted(CRIO_CASES))
@pytest.mark.parametrize("engine", CRIOS, ids=[e.id for e in CRIOS])
def test_doctor_reads_crio_cdi_settings_as_crio_does(engine: Engine, case: str, work: Path) -> None:
    specs = work / "cdi"
    specs.mkdir()
    (specs / "test.yaml").write_text(engines.CDI_TEST_SPEC)
    root = work / "root"
    config, drop_ins = root / "etc/crio/crio.conf", root / "etc/crio/crio.conf.d"
    drop_ins.mkdir(parents=True)
    config.write_text(engines.engine_output(engine, "--config", "", "--config-dir", "", "config"))
    drop_in = engines.crio_drop_in(work, None, cri.IMAGE, default_runtime="runc")
    setting = CRIO_CASES[case]
    if setting is not None:
        drop_in = drop_in.replace("[crio.runtime]\n", f"[crio.runtime]\n{setting}\n")
    (drop_ins / "00-test.conf").write_text(drop_in.replace(SPECS, str(specs)))
    facts = gather_crio(Gatherer(HostRoot(root)), {"crio": "/usr/bin"})
    doctor = _doctor_view(Runtime.CRIO, facts)

    archive = cri.busybox_image(work)
    with engines.crio(config, drop_ins, work, engine) as daemon:
        daemon.podman_load(archive, work)
        _put_default_spec(daemon)
        client = cri.Cri(daemon.socket, timeout=120)
        try:
            client.wait_ready(timeout=60)
            reads_test = _injected(client, work / "pods", TEST_DEVICE)
            reads_default = _injected(client, work / "pods", DEFAULT_DEVICE)
        finally:
            client.close()
        shown = subprocess.run(
            [str(engine.client), "status", "--socket", str(daemon.socket), "config"],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
    _check(doctor, reads_test, reads_default, specs)
    # `crio status config` (GET /config on its socket): what the daemon read
    listed = tuple(tomllib.loads(shown.stdout)["crio"]["runtime"].get("cdi_spec_dirs", ()))
    assert tuple(d for d in listed if d) == doctor[1], listed
