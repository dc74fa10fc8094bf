"""The doctor's model of each engine's CDI settings against the real daemons.

The doctor decides from config files and the engine's packaged version whether an engine reads CDI
specs (`cdi_on`) and from which directories (`spec_dirs`); it asks no daemon. Here each real
dockerd (Debian 12's 20.10, today's 26 and 28) runs on a set of daemon.json files, and what it
reports (`docker info`: CDI spec directories) and does (`docker run --device vendor.com/class=dev0`
with the spec in the test's own directory) must be what the doctor concluded from the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctk.doctor.checks.docker import daemon_json_invalid
from ctk.doctor.checks.engine_config import cdi_on, spec_dirs
from ctk.doctor.facts import NodeFacts
from ctk.doctor.model import Result, Status
from ctk.host.facts.engine_configs import gather_docker
from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot
from ctk.runtime_config.engines import Runtime
from tests import engines
from tests.engines import Engine
from tests.runners import busybox_rootfs

DOCKERS = engines.dockers()
IS_ROOT = os.geteuid() == 0
SPECS = "@SPECS@"  # stands for the test's own spec directory in the cases below

DAEMON_JSONS = {
    "nothing": {},
    "cdi-on": {"features": {"cdi": True}},
    "cdi-off": {"features": {"cdi": False}},
    "dirs-only": {"cdi-spec-dirs": [SPECS]},
    "cdi-on-dirs": {"features": {"cdi": True}, "cdi-spec-dirs": [SPECS]},
    "cdi-off-dirs": {"features": {"cdi": False}, "cdi-spec-dirs": [SPECS]},
    "cdi-on-empty-dirs": {"features": {"cdi": True}, "cdi-spec-dirs": []},
    "cdi-on-blank-dir": {"features": {"cdi": True}, "cdi-spec-dirs": [""]},
}

STATUS = """\
Package: {package}
Status: install ok installed
Architecture: amd64
Version: {version}

"""


def _with_specs(value: Any, specs: Path) -> Any:
    if isinstance(value, dict):
        return {key: _with_specs(item, specs) for key, item in value.items()}
    if isinstance(value, list):
        return [str(specs) if item == SPECS else item for item in value]
    return value


def _doctor_view(root: Path, engine: Engine) -> tuple[Result, bool, tuple[str, ...]]:
    """What the doctor concludes from ``root``'s daemon.json and the dpkg record of ``engine``:
    its daemon.json check, whether dockerd reads CDI specs, and from where."""
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    version = ".".join(map(str, engine.version)) + "+dfsg1-1"
    status.write_text(STATUS.format(package=engine.package, version=version))
    facts = gather_docker(
        Gatherer(HostRoot(root)),
        "/etc/docker/daemon.json",
        {"dockerd": "/usr/sbin"},
        installed=True,
    )
    assert facts.error is None, facts.error
    parsed = daemon_json_invalid(NodeFacts(engines={Runtime.DOCKER: facts}))
    return parsed, cdi_on(Runtime.DOCKER, facts), spec_dirs(facts)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[bytes]:
    """A busybox root filesystem as the tar stream `docker import` takes."""
    rootfs = busybox_rootfs(tmp_path_factory.mktemp("image"))
    yield subprocess.run(
        ["tar", "-C", str(rootfs), "-c", "."], capture_output=True, check=True, timeout=60
    ).stdout


@pytest.mark.integration
@pytest.mark.skipif(not IS_ROOT, reason="dockerd needs root")
@pytest.mark.parametrize("case", sorted(DAEMON_JSONS))
@pytest.mark.parametrize("engine", DOCKERS, ids=[e.id for e in DOCKERS])
def test_doctor_reads_docker_cdi_settings_as_dockerd_does(
    engine: Engine, case: str, image: bytes, tmp_path: Path
) -> None:
    specs = tmp_path / "cdi"
    specs.mkdir()
    (specs / "test.yaml").write_text(engines.CDI_TEST_SPEC)
    root = tmp_path / "root"
    config = root / "etc/docker/daemon.json"
    config.parent.mkdir(parents=True)
    daemon_json = {"storage-driver": "vfs", **_with_specs(DAEMON_JSONS[case], specs)}
    config.write_text(json.dumps(daemon_json))
    parsed, doctor_on, doctor_dirs = _doctor_view(root, engine)
    if parsed.status is Status.FAIL:  # the doctor says dockerd will not start: it must not
        refused = subprocess.run(
            [*engines.DOCKERD_PRIVATE, str(engine.daemon), "--config-file", str(config),
             "--data-root", str(tmp_path / "d"),
             "--exec-root", str(tmp_path / "e"), "-H", f"unix://{tmp_path / 's'}",
             *engines.DOCKERD_ISOLATED],
            capture_output=True, text=True, check=False, timeout=60,
            env={**os.environ, "PATH": engine.path},
        )  # fmt: skip
        assert refused.returncode == 1, refused.stderr
        assert "directives don't match any configuration option: cdi-spec-dirs" in refused.stderr
        return
    assert parsed.status is Status.OK, parsed

    work = Path(tempfile.mkdtemp(prefix="ctk-dockerd-"))  # a socket path must stay short
    try:
        with engines.dockerd(config, work, engine) as sock:
            if engine.version >= (25,):  # `CDISpecDirs` in GET /info: API 1.44, Docker 25
                reported = engines.docker_info(sock, engine, "{{json .CDISpecDirs}}")
            else:
                reported = None
            run = engines.docker_run_cdi_device(sock, engine, image)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    injected = (run.returncode, run.stdout) == (0, "CTK_CDI=injected\n")
    # The daemon reads the test's spec directory exactly where the doctor says it reads CDI specs
    # from a list holding it; with the default directories (outside the test) the daemon's run
    # shows only that CDI is on or off, and `docker info` names the directories.
    reads_specs = doctor_on and str(specs) in doctor_dirs
    assert injected == reads_specs, (doctor_on, doctor_dirs, run.stderr)
    if not doctor_on:
        message = (
            'could not select device driver "cdi"'
            if engine.version >= (25,)
            else "vendor.com/class=dev0 is not an absolute path"  # 20.10 knows no CDI names
        )
        assert message in run.stderr, run.stderr
    elif not doctor_dirs:
        # "No CDI ..." on 26, "no CDI ..." on 28
        assert "o CDI specification directories specified" in run.stderr, run.stderr
    elif not injected:
        assert "unresolvable CDI devices vendor.com/class=dev0" in run.stderr, run.stderr
    if reported is not None:
        assert tuple(reported or ()) == (doctor_dirs if doctor_on else ()), reported
