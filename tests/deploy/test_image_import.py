"""`ctr images import` of the archive build.sh writes, into a real containerd 1.6 the test starts
in a temporary root: the way docs/fleet.md gets the image onto a node without a registry."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.chart import BUILD_SH, one, pod_spec, render
from tests.engines import PRIVATE_RUN, default_signals

pytestmark = pytest.mark.integration

CONFIG = """\
version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{d}/c.sock"
[ttrpc]
  address = "{d}/t.sock"
"""


@pytest.fixture
def ctr() -> Iterator[tuple[str, ...]]:
    """A private containerd (CRI plugin on, as on a node); yields the ctr command for it."""
    for tool in ("containerd", "ctr"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    work = Path(tempfile.mkdtemp(prefix="ctk-ctr-", dir="/tmp"))  # socket paths are short
    (work / "config.toml").write_text(CONFIG.format(d=work))
    with (work / "log").open("wb") as log:
        daemon = subprocess.Popen(
            # /run its own (PRIVATE_RUN): the CRI plugin keeps runc's state, fifos and shim
            # sockets under /run/containerd whatever the config says
            [
                *("unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_RUN),
                *("sh", "containerd", "--config", str(work / "config.toml")),
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=default_signals,  # noqa: PLW1509
        )
    try:
        deadline = time.monotonic() + 30
        while not (work / "c.sock").exists():
            assert time.monotonic() < deadline, (work / "log").read_text()
            time.sleep(0.05)
        # in the daemon's mount namespace: ctr makes a task's fifos under its own /run too
        inside = ("nsenter", f"--mount=/proc/{daemon.pid}/ns/mnt", "--")
        yield (*inside, "ctr", "--address", str(work / "c.sock"), "--namespace", "k8s.io")
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


def ctr_run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)


def test_ctr_imports_the_archive_under_the_charts_image_name(
    image_dir: Path, ctr: tuple[str, ...]
) -> None:
    ref = subprocess.run(
        [str(BUILD_SH), "--print-ref"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (agent,) = pod_spec(one(render(), "DaemonSet", "ctk"))["containers"]
    assert agent["image"] == ref  # what the chart asks the node's containerd for

    done = ctr_run(*ctr, "images", "import", str(image_dir / "ctk.oci.tar"))
    assert done.returncode == 0, done.stderr
    manifest = json.loads(
        subprocess.run(
            ["tar", "-xOf", str(image_dir / "ctk.oci.tar"), "index.json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["manifests"][0]["digest"]
    assert done.stdout == f"unpacking {ref} ({manifest})...done\n"

    listed = ctr_run(*ctr, "images", "check")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    # The name and tag the chart uses; the CRI plugin also lists it by its config digest.
    names = sorted(rows)
    assert names[0] == ref and len(names) == 2 and names[1].startswith("sha256:"), names
    for row in rows.values():
        assert row[2] == manifest
        assert row[3:5] == ["complete", "(3/3)"]
        assert row[-1] == "true"  # unpacked into the snapshotter: runnable as it is
    labels = ctr_run(*ctr, "images", "ls")
    assert f"{ref} " in labels.stdout
    assert "io.cri-containerd.image=managed" in labels.stdout.splitlines()[1]

    # The imported image runs, and it is this ctk.
    version = ref.rsplit(":", 1)[1]
    ran = ctr_run(*ctr, "run", "--rm", "--net-host", ref, f"ctk-import-{os.getpid()}", "ctk",
                  "--version")  # fmt: skip
    assert (ran.returncode, ran.stdout) == (0, f"ctk {version}\n"), ran.stderr
