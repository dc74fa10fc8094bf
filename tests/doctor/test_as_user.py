"""`ctk doctor` without root on a healthy node: what needs root is unknown, never a failure.

The healthy fixture node is read by user nobody in a forked child (the parent stays root to
build and unmount the node), as an admin who forgot sudo would run it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml import TOPOLOGY_ENV, SkipNode
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401  (pytest fixture)
from tests.nodes import materialised
from tests.runners import main_as_nobody, open_to_nobody

# A deadline no load reaches: under load the doctor's 5 s deadline passes before every step is
# done, the timed-out steps' facts are unknown, and the modules they would have imported are
# missing from the child, which as nobody cannot read the Python installation to import them.
GATHER_FOR_AS_LONG_AS_IT_TAKES = ("--nvml-timeout", "600")


@pytest.fixture
def healthy_as_nobody(
    fake_nvml_library: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to build the node and switch to user nobody")
    # the node and a copy of the library in a directory of their own that nobody can reach:
    # pytest's base directory (where tmp_path and the session's library are) is made 0700 again
    # by every pytest session that starts beside this one
    with open_to_nobody() as base:
        library = base / fake_nvml_library.name
        shutil.copy2(fake_nvml_library, library)
        try:
            with materialised(
                getattr(request, "param", "healthy"), base / "node", library
            ) as built:
                monkeypatch.setenv(TOPOLOGY_ENV, str(built.topology))
                yield built.root
        except SkipNode as exc:
            pytest.skip(str(exc))


ROOT_ONLY = "is not readable without root"
CONTAINERD = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
TOOLKIT = "/etc/nvidia-container-runtime/config.toml"
IMPORTS = "containerd's imports are unknown"
DAEMON_JSON = "/etc/docker/daemon.json"
CHAR_LINKS = "dev.char-symlinks-missing"
PROCESSES = "cannot list GPU processes: other users' /proc/<pid>/fd need root"


def _skipped(after: str, *checks: str) -> dict[str, tuple[str, str]]:
    return {check: ("skip", f"skipped: {after} needs root") for check in checks}


def _containerd(path: str) -> dict[str, tuple[str, str]]:
    return {
        "containerd.drop-in-not-imported": ("unknown", f"{path} {ROOT_ONLY}: {IMPORTS}"),
        "containerd.runtime-not-configured": ("unknown", f"{path} {ROOT_ONLY}"),
        "containerd.drop-in-copy-stale": ("unknown", f"{path} {ROOT_ONLY}"),
        **_skipped(
            "containerd.runtime-not-configured",
            "containerd.systemd-cgroup-mismatch",
            "containerd.not-default-no-runtimeclass",
            "containerd.cdi-disabled",
        ),
    }


CASES = [
    pytest.param((), {}, id="nothing-root-only"),
    pytest.param((CONTAINERD,), _containerd(CONTAINERD), id="containerd-config-0600"),
    pytest.param((DROP_IN,), _containerd(DROP_IN), id="containerd-drop-in-0600"),
    pytest.param(
        (TOOLKIT,),
        {
            "toolkit.config-invalid": ("unknown", f"{TOOLKIT} {ROOT_ONLY}"),
            **_skipped(
                "toolkit.config-invalid",
                "toolkit.ldconfig-path",
                "toolkit.mode-mismatch",
                "toolkit.rootless-no-cgroups",
                "toolkit.unprivileged-envvar-accepted",
            ),
        },
        id="toolkit-config-0600",
    ),
    pytest.param(
        ("/proc/1/fd",),
        {"gpu.leftover-processes": ("unknown", PROCESSES)},
        id="other-users-processes",
    ),
]


def _make_root_only(root: Path, paths: tuple[str, ...]) -> None:
    """Make ``paths`` root-only, as they are on many nodes (/proc/1/fd always is)."""
    for path in paths:
        target = root / path.lstrip("/")
        if path.startswith("/proc/"):
            target.mkdir(parents=True)
        target.chmod(0o700 if target.is_dir() else 0o600)


@pytest.mark.parametrize(("private", "changes"), CASES)
def test_json_as_nobody(
    healthy_as_nobody: Path,
    capsys: pytest.CaptureFixture[str],
    private: tuple[str, ...],
    changes: dict[str, tuple[str, str]],
) -> None:
    """Every check says what it says as root, or unknown for want of root: never a problem."""
    _make_root_only(healthy_as_nobody, private)
    argv = ["doctor", "--json", "--root", str(healthy_as_nobody), *GATHER_FOR_AS_LONG_AS_IT_TAKES]
    assert main(argv) == 0  # as root first: it also imports every module the doctor needs
    as_root = json.loads(capsys.readouterr().out)
    code, out, err = main_as_nobody(argv)
    assert (code, err) == (0, "")
    document = json.loads(out)
    changed = {
        mine["id"]: (mine["status"], mine["summary"])
        for mine, theirs in zip(document["checks"], as_root["checks"], strict=True)
        if mine != theirs
    }
    assert changed == changes
    unknowns = sum(status == "unknown" for status, _ in changes.values())
    assert (document["summary"]["needs_root"], document["summary"]["fail"]) == (unknowns, 0)


def test_text_as_nobody(healthy_as_nobody: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The text report ends with the one line that says how many checks need root."""
    _make_root_only(healthy_as_nobody, (CONTAINERD, TOOLKIT, "/proc/1/fd"))
    argv = ["doctor", "--root", str(healthy_as_nobody), *GATHER_FOR_AS_LONG_AS_IT_TAKES]
    assert main(argv) == 0
    capsys.readouterr()
    code, out, err = main_as_nobody(argv)
    assert (code, err) == (0, "")
    assert out.endswith(
        "\n0 error(s), 0 warning(s), 34 ok, 49 skipped, 5 unknown.\n"
        "5 check(s) need root; rerun with sudo for a full report.\n"
    )
    assert out.count("rerun with sudo") == 1


@pytest.mark.parametrize("healthy_as_nobody", ["systemd-legacy"], indirect=True)
def test_a_warning_that_needs_root_is_unknown(
    healthy_as_nobody: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Missing /dev/char links matter only under the systemd cgroup driver, unknown to nobody."""
    _make_root_only(healthy_as_nobody, (DAEMON_JSON, CONTAINERD))
    argv = [
        *("doctor", "--json", "--root", str(healthy_as_nobody), "--check", CHAR_LINKS),
        *GATHER_FOR_AS_LONG_AS_IT_TAKES,
    ]
    assert main(argv) == 0
    capsys.readouterr()
    code, out, err = main_as_nobody(argv)
    assert (code, err) == (0, "")
    [finding] = json.loads(out)["checks"]

    assert (finding["id"], finding["status"], finding["summary"]) == (
        CHAR_LINKS,
        "unknown",
        "5 /dev/char link(s) are missing, and whether the systemd cgroup driver needs them is "
        f"unknown: {DAEMON_JSON} {ROOT_ONLY}",
    )
