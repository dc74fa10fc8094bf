"""A CDI device reaches a container through each real engine after `ctk runtime configure`: a CRI
pod with `CDI_devices` through the `nvidia` runtime handler on containerd 2.1 and 1.7 (what the
kubelet asks for), `ctr run --device` on containerd 2.x, a CRI-O pod (tests/cri.py speaks CRI).

The user's config has what this machine needs for a pod (`restrict_oom_score_adj`: no
CAP_SYS_RESOURCE here), the test's CDI spec directory, and a sandbox image that is already
there; `ctk runtime configure --cdi.enabled` adds the rest. On containerd 2.x the drop-in carries
only ctk's settings, so the pod starting at all shows the main file's settings still hold.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests import cri, engines
from tests.engines import Engine

pytestmark = pytest.mark.integration

IMAGE = cri.IMAGE
ECHO = ["/bin/sh", "-c", "echo CTK_CDI=$CTK_CDI"]
CDI_CONTAINERDS = [e for e in engines.containerds() if e.version >= (1, 7)]  # 1.6: no CDI
NVIDIA_RUNTIME = '#!/bin/sh\necho "$@" >> {log}\nexec runc "$@"\n'


@pytest.fixture
def work() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ctk-cri-"))  # short: socket paths are limited
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def image(work: Path) -> Path:
    return cri.busybox_image(work)


def nvidia_runtime(work: Path) -> Path:
    """A stand-in for nvidia-container-runtime that logs its arguments and runs runc."""
    runtime = work / "nvidia-container-runtime"
    runtime.write_text(NVIDIA_RUNTIME.format(log=work / "nvidia-runtime.log"))
    runtime.chmod(0o755)
    return runtime


def configured_containerd(engine: Engine, work: Path, drop_in: bool) -> Path:
    """The user's containerd config, then `ctk runtime configure --cdi.enabled` on it."""
    specs = work / "cdi"
    specs.mkdir()
    (specs / "test.yaml").write_text(engines.CDI_TEST_SPEC)
    config = work / "config.toml"
    cri_lines = f'  cdi_spec_dirs = ["{specs}"]\n'
    config.write_text(engines.containerd_pod_config(engine, work, IMAGE, cri_lines))
    where = str(work / "conf.d/99-nvidia.toml") if drop_in else ""
    args = [
        *("runtime", "configure", "--runtime=containerd", "--config", str(config)),
        *("--drop-in-config", where, "--cdi.enabled"),
        *("--nvidia-runtime-path", str(nvidia_runtime(work))),
    ]
    assert main(args) == 0
    return config


def import_image(daemon: engines.Daemon, engine: Engine, archive: Path) -> None:
    ctr = [str(engine.client), "--address", str(daemon.socket), "-n", "k8s.io"]
    subprocess.run(
        [*ctr, "images", "import", str(archive)],
        capture_output=True,
        check=True,
        timeout=60,
    )


@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "in-place"])
@pytest.mark.parametrize("engine", CDI_CONTAINERDS, ids=[e.id for e in CDI_CONTAINERDS])
def test_containerd_cri_pod_gets_its_cdi_device_through_the_nvidia_handler(
    engine: Engine, drop_in: bool, work: Path, image: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = configured_containerd(engine, work, drop_in)
    capsys.readouterr()
    with engines.containerd(config, work, engine) as daemon:
        import_image(daemon, engine, image)
        client = cri.Cri(daemon.socket)
        try:
            client.wait_ready()
            status = client.status()
            if engine.version >= (2,):  # 1.7 lists no handlers
                assert "nvidia" in status.handlers
            pods = work / "pods"
            pods.mkdir()
            code, lines = cri.run_to_exit(
                client, pods, IMAGE, ECHO, handler="nvidia", cdi_devices=["vendor.com/class=dev0"]
            )
        finally:
            client.close()
    assert (code, lines) == (0, ["CTK_CDI=injected"]), daemon.log.read_text()[-3000:]
    assert " create " in f" {(work / 'nvidia-runtime.log').read_text()}"  # through the handler


CTR_CONTAINERDS = [e for e in CDI_CONTAINERDS if e.version >= (2,)]  # 1.7's ctr: a file path


@pytest.mark.parametrize("engine", CTR_CONTAINERDS, ids=[e.id for e in CTR_CONTAINERDS])
def test_ctr_run_device_resolves_the_cdi_device(
    engine: Engine, work: Path, image: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ctr run --device vendor.com/class=dev0` (ctr reads /etc/cdi and /var/run/cdi: the
    daemon's private /run here) with the nvidia runtime binary ctk configured as its runc."""
    config = configured_containerd(engine, work, drop_in=True)
    capsys.readouterr()
    with engines.containerd(config, work, engine) as daemon:
        import_image(daemon, engine, image)
        subprocess.run(
            daemon.inside("sh", "-c", "cat > /run/cdi/test.yaml"),
            input=engines.CDI_TEST_SPEC,
            text=True,
            check=True,
            timeout=30,
        )
        ctr = [str(engine.client), "--address", str(daemon.socket), "-n", "k8s.io"]
        run = subprocess.run(
            daemon.inside(
                *(*ctr, "run", "--rm", "--device", "vendor.com/class=dev0"),
                *("--runc-binary", str(work / "nvidia-container-runtime"), IMAGE, "ctk-ctr"),
                *ECHO,
            ),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    assert (run.returncode, run.stdout) == (0, "CTK_CDI=injected\n"), run.stderr
    assert " create " in f" {(work / 'nvidia-runtime.log').read_text()}"


CRIOS = engines.crios()


@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "in-place"])
@pytest.mark.parametrize("engine", CRIOS, ids=[e.id for e in CRIOS])
def test_crio_pod_gets_its_cdi_device_through_the_nvidia_handler(
    engine: Engine, drop_in: bool, work: Path, image: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CRI-O's own defaults (`crio config`), the test daemon's settings in a drop-in, then
    `ctk runtime configure --set-as-default`: a pod (its own PID namespace per container, so no
    infra container) asking for the CDI device with no handler runs through nvidia."""
    specs, drop_ins = work / "cdi", work / "crio.conf.d"
    specs.mkdir()
    drop_ins.mkdir()
    (specs / "test.yaml").write_text(engines.CDI_TEST_SPEC)
    config = work / "crio.conf"
    config.write_text(engines.engine_output(engine, "--config", "", "--config-dir", "", "config"))
    (drop_ins / "00-test.conf").write_text(engines.crio_drop_in(work, specs, IMAGE))
    where = str(drop_ins / "99-nvidia.toml") if drop_in else ""
    args = [
        *("runtime", "configure", "--runtime=crio", "--config", str(config)),
        *("--drop-in-config", where, "--set-as-default"),
        *("--nvidia-runtime-path", str(nvidia_runtime(work))),
    ]
    assert main(args) == 0
    capsys.readouterr()
    with engines.crio(config, drop_ins, work, engine) as daemon:
        daemon.podman_load(image, work)
        client = cri.Cri(daemon.socket, timeout=120)
        try:
            client.wait_ready(timeout=60)
            pods = work / "pods"
            pods.mkdir()
            code, lines = cri.run_to_exit(
                client,
                pods,
                IMAGE,
                ECHO,
                handler="",
                cdi_devices=["vendor.com/class=dev0"],
                pid=cri.CONTAINER,
                timeout=120,
            )
        finally:
            client.close()
    assert (code, lines) == (0, ["CTK_CDI=injected"]), daemon.log.read_text()[-3000:]
    assert " create " in f" {(work / 'nvidia-runtime.log').read_text()}"
