"""What each containerd does on SIGHUP, measured (issue 21): the agent's restart rules rest on it.
Every version here exits with status 129 (it does not reload), so `--restart-mode signal` stays
refused for containerd; this machine's 1.6 and today's 1.7 and 2.1 (tests/engines.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from ctk.agent.model import RestartMode, check_restart_mode
from ctk.errors import UsageError
from ctk.runtime_config.engines import Runtime
from tests import engines
from tests.engines import Engine

pytestmark = pytest.mark.integration
CONTAINERDS = engines.containerds()


@pytest.mark.skipif(os.geteuid() != 0, reason="containerd needs root")
@pytest.mark.parametrize("engine", CONTAINERDS, ids=[e.id for e in CONTAINERDS])
def test_containerd_exits_on_sighup_so_signal_mode_is_refused(engine: Engine) -> None:
    work = Path(tempfile.mkdtemp(prefix="ctk-hup-"))  # socket paths are limited to 108 bytes
    config = work / "config.toml"
    config.write_text(
        f'version = 2\nroot = "{work}/root"\nstate = "{work}/state"\n'
        f'[grpc]\n  address = "{work}/c.sock"\n[ttrpc]\n  address = "{work}/t.sock"\n'
    )
    with (work / "log").open("w") as log:
        process = subprocess.Popen(
            [
                # /run of its own: containerd 2.x serves NRI at /var/run/nri/nri.sock
                *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
                *(engines.PRIVATE_RUN, "sh", str(engine.daemon), "--config", str(config)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PATH": engine.path},
            # SIGHUP's default action, whatever this run inherited (a sh cannot reset it:
            # POSIX keeps a signal ignored on entry ignored)
            preexec_fn=engines.default_signals,  # noqa: PLW1509
        )
    try:
        deadline = time.monotonic() + 20
        while not (work / "c.sock").exists():
            assert process.poll() is None, (work / "log").read_text()
            assert time.monotonic() < deadline, "containerd did not start"
            time.sleep(0.05)
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=15) == -signal.SIGHUP  # the shell's status 129
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        shutil.rmtree(work, ignore_errors=True)
    with pytest.raises(UsageError, match=r"exits \(status 129\)"):
        check_restart_mode(Runtime.CONTAINERD, RestartMode.SIGNAL)
