"""What the engine's nvidia handler runs: ctk ships no runtime binary, so the agent chooses one
it can see on the host, says which and why, and is not ready while the handler would fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctk.agent.model import HandlerBinary, choose_handler_binary
from ctk.toml_compat import loads as toml_loads
from tests.agent.conftest import Host
from tests.agent.test_containerd import IMPORT

NCR = "/usr/bin/nvidia-container-runtime"
OPERATOR = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
MISSING = (
    f"{NCR} is not on the host (ctk does not ship it): install nvidia-container-toolkit, or "
    "enable CDI (--enable-cdi) to run the handler with plain runc"
)
RUNC = "/usr/sbin/runc"  # Debian's
NO_RUNC = (
    "neither nvidia-container-runtime nor runc is on the host (looked for runc in /usr/bin, "
    "/usr/sbin, /usr/local/bin, /usr/local/sbin): install nvidia-container-toolkit, or runc"
)
PLAIN = (
    "no nvidia-container-runtime on the host and CDI is on: plain runc, GPUs only through CDI "
    "device requests (e.g. nvidia.com/gpu=all)"
)


@pytest.mark.parametrize(
    ("explicit", "present", "found", "cdi", "runc", "expected"),
    [
        pytest.param(
            None, False, (NCR, OPERATOR), False, RUNC,
            HandlerBinary(NCR, True, "nvidia-container-runtime is on the host"),
            id="toolkit-package-first",
        ),
        pytest.param(
            None, False, (OPERATOR,), True, RUNC,
            HandlerBinary(OPERATOR, True, "nvidia-container-runtime is on the host"),
            id="operator-install-even-with-cdi",
        ),
        pytest.param(
            None, False, (), True, RUNC, HandlerBinary(RUNC, True, PLAIN), id="cdi-runc"
        ),
        pytest.param(
            None, False, (), True, None, HandlerBinary("/usr/bin/runc", False, NO_RUNC),
            id="cdi-no-runc",
        ),
        pytest.param(
            None, False, (), False, RUNC, HandlerBinary(NCR, False, MISSING), id="missing"
        ),
        pytest.param(
            "/opt/x/runtime", True, (NCR,), False, RUNC,
            HandlerBinary("/opt/x/runtime", True, "--runtime-path"),
            id="explicit-wins",
        ),
        pytest.param(
            "/opt/x/runtime", False, (), True, RUNC,
            HandlerBinary(
                "/opt/x/runtime", False, "/opt/x/runtime (--runtime-path) is not on the host"
            ),
            id="explicit-missing",
        ),
    ],
)  # fmt: skip
def test_choose_handler_binary(
    *,
    explicit: str | None,
    present: bool,
    found: tuple[str, ...],
    cdi: bool,
    runc: str | None,
    expected: HandlerBinary,
) -> None:
    assert choose_handler_binary(explicit, present, found, cdi=cdi, runc=runc) == expected


def drop_in_runtime(host: Host) -> dict[str, object]:
    data = toml_loads(host.path(DROP_IN).read_text())
    cri = data["plugins"][host.cri]
    return {
        "enable_cdi": cri.get("enable_cdi"),
        "nvidia": cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"],
    }


def test_cdi_without_the_toolkit_runs_plain_runc_and_is_ready(
    containerd_host: Host, tmp_path: Path
) -> None:
    host = containerd_host
    host.path(NCR).unlink()
    ready = tmp_path / "ready"
    done = host.agent("--once", "--enable-cdi", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert f"nvidia runtime: runc ({PLAIN})\n" in done.stderr
    # Bare: containerd's shim finds it in its PATH, as for its own runc handler.
    assert drop_in_runtime(host) == {"enable_cdi": True, "nvidia": "runc"}
    dumped = host.dump()
    assert dumped.returncode == 0, dumped.stderr
    cri = toml_loads(dumped.stdout)["plugins"][host.cri]
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "runc"
    assert ready.exists()
    state = json.loads(host.path("/var/lib/ctk/agent/state.json").read_text())
    assert state["runtime_path"] == "runc"


@pytest.mark.parametrize(
    ("places", "expected"),
    [
        ((), None),
        (("/usr/local/sbin/runc", RUNC), RUNC),
        (("/usr/local/bin/runc",), "/usr/local/bin/runc"),
        (("/usr/bin/runc", RUNC), "/usr/bin/runc"),
    ],
)
def test_the_hosts_runc_is_found_in_its_root(
    places: tuple[str, ...], expected: str | None, tmp_path: Path
) -> None:
    """CRI-O is given the absolute path of the host's runc (it stats runtime_path as given)."""
    from ctk.host.agent import handler_binaries
    from ctk.host.root import HostRoot

    for place in places:
        path = tmp_path / place.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    (tmp_path / "usr/bin").mkdir(parents=True, exist_ok=True)
    (tmp_path / "usr/bin/runc.txt").write_text("not runc")
    assert handler_binaries(HostRoot(tmp_path), None) == (False, (), expected)


def test_no_toolkit_and_no_cdi_is_not_ready_and_says_why(
    containerd_host: Host, tmp_path: Path
) -> None:
    host = containerd_host
    host.path(NCR).unlink()
    ready = tmp_path / "ready"
    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr  # the files are as they should be
    assert drop_in_runtime(host) == {"enable_cdi": None, "nvidia": NCR}
    assert f"\nnot ready: the nvidia runtime's binary {MISSING}\n" in done.stderr
    assert not ready.exists()
    doctor = subprocess.run(
        [sys.executable, "-m", "ctk.cli.app", "doctor", "--root", str(host.root), "--json"],
        capture_output=True,
        text=True,
        env=host.env(),
        check=False,
        timeout=120,
    )
    # ctk doctor names the same root cause on this host.
    checks = {c["id"]: c for c in json.loads(doctor.stdout)["checks"]}
    toolkit = checks["toolkit.not-installed"]
    if host.containerd_2:  # CDI is on by default: the agent's spec is a route, the handler not
        assert toolkit["status"] == "ok"
        assert "(containerd 2.x): CDI on by default since 2.0)" in toolkit["summary"]
        runtime = checks["containerd.runtime-not-configured"]
        assert (runtime["status"], runtime["summary"]) == (
            "fail",
            f"{IMPORT} names the nvidia runtime {NCR}, which does not exist: GPU containers "
            "fail to start",  # the drop-in that defines it, not the main file
        )
    else:
        assert (toolkit["status"], toolkit["summary"]) == (
            "fail",
            "the NVIDIA Container Toolkit is not installed: no engine can inject GPUs",
        )
    # The toolkit arrives: the next pass is ready, without touching the engine again.
    host.path(NCR).write_text('#!/bin/sh\nexec runc "$@"\n')
    host.path(NCR).chmod(0o755)
    restarts = host.restarts
    done = host.agent("--once", "--ready-file", str(ready))
    assert done.returncode == 0, done.stderr
    assert "not ready" not in done.stderr
    assert ready.exists()
    assert host.restarts == restarts


def test_the_toolkit_appearing_later_switches_runc_to_it(
    containerd_host: Host, tmp_path: Path
) -> None:
    host = containerd_host
    host.path(NCR).unlink()
    assert host.agent("--once", "--enable-cdi").returncode == 0
    assert drop_in_runtime(host)["nvidia"] == "runc"
    host.path(NCR).write_text('#!/bin/sh\nexec runc "$@"\n')
    host.path(NCR).chmod(0o755)
    done = host.agent("--once", "--enable-cdi")
    assert done.returncode == 0, done.stderr
    assert f"nvidia runtime: {NCR} (nvidia-container-runtime is on the host)\n" in done.stderr
    assert drop_in_runtime(host) == {"enable_cdi": True, "nvidia": NCR}


def test_crio_gets_the_hosts_runc_as_an_absolute_path(tmp_path: Path) -> None:
    """CRI-O stats runtime_path as written: a bare runc would make it refuse the handler."""
    host = tmp_path / "host"
    (host / "etc/crio").mkdir(parents=True)
    (host / "etc/crio/crio.conf").write_text("[crio.runtime]\n")
    runc = host / RUNC.lstrip("/")
    runc.parent.mkdir(parents=True)
    runc.write_text("#!/bin/sh\n")
    runc.chmod(0o755)
    args = ["--host-root", str(host), "--runtime", "crio", "--once", "--enable-cdi"]
    done = subprocess.run(
        [sys.executable, "-m", "ctk.cli.app", "agent", *args, "--restart-mode", "none"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert f"nvidia runtime: {RUNC} ({PLAIN})\n" in done.stderr, done.stderr
    drop_in = toml_loads((host / "etc/crio/crio.conf.d/99-nvidia.toml").read_text())
    assert drop_in["crio"]["runtime"]["runtimes"]["nvidia"]["runtime_path"] == RUNC
