"""The README's first command, verbatim, in a clean Debian 12 root made with mmdebstrap (issue 22):
as root on an image without sudo, and as a user with sudo. The root has python3 and nothing else
of ctk's: the script installs python3.11-venv with apt, makes /opt/ctk, has pip build ctk from
the checkout copied into the root (the hook compiled with Go from the package index), runs `ctk
install` and `ctk cdi generate` (which fails: no driver), shows the sample node, and ends with
the doctor's report naming the root cause.

pip reaches the index only with this machine's pip settings visible in the root
(../shared/REAL-CONSUMERS.md): the configuration files and the CA bundle are copied in, the local
folders they name are bind-mounted read-only, in a private mount namespace of the command's own
(`unshare --mount --propagation private`), so that nothing is mounted on the machine, during or
after; the PIP_*, SSL_CERT_* and REQUESTS_CA_BUNDLE variables are passed on."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from ctk import __version__
from tests.packaging.conftest import REPO, run
from tests.test_first_command import first_command  # the README's first line, verbatim

pytestmark = [pytest.mark.integration, pytest.mark.same_on_every_python]

MIRROR = os.environ.get("CTK_DEB_TEST_MIRROR", "http://deb.debian.org/debian")
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"}
#: pip's configuration files on this machine, but the user's (copied to root's home in the root)
PIP_FILES = (Path("/etc/pip.conf"), Path("/etc/xdg/pip"))
#: the CA bundle, and the machine's own CAs, which the root's update-ca-certificates (run when apt
#: installs ca-certificates there) adds to the bundle it makes
CA_FILES = (Path("/etc/ssl/certs"), Path("/usr/local/share/ca-certificates"))
#: the settings pip and Python's ssl take from the environment (scripts/install passes them on)
PASSED = re.compile(r"(PIP_|SSL_CERT_)\w*|REQUESTS_CA_BUNDLE|https?_proxy|HTTPS?_PROXY|no_proxy")
#: the host's places scripts/install would write were it run on the machine itself
HOST_PLACES = (
    Path("/opt/ctk"),
    Path("/usr/local/bin/ctk"),
    Path("/usr/local/libexec/ctk"),
    Path("/etc/cdi/nvidia.yaml"),
)


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    user: str  # who runs the command in the root
    home: str
    sudo: bool


AS_ROOT = Case("as-root-without-sudo", "root", "/root", sudo=False)
AS_USER = Case("as-a-user-with-sudo", "user", "/home/user", sudo=True)


def _needs() -> None:
    if os.geteuid() != 0:
        pytest.skip("making a Debian root and entering it (chroot, mount) needs root")
    for tool in ("mmdebstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install mmdebstrap)")
    if not (REPO / ".git").exists():
        pytest.skip("the checkout's files are what git lists: not a git checkout")


def _pip_settings() -> tuple[dict[str, str], list[Path]]:
    """The variables pip needs from this environment, and the local folders and files that they
    and pip's configuration name (find-links, file:// indexes, constraints, the CA bundle)."""
    env = {k: v for k, v in os.environ.items() if PASSED.fullmatch(k)}
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    values = [line.split("=", 1)[1].strip("'\"") for line in listed.splitlines() if "=" in line]
    places: list[Path] = []
    for token in " ".join([*values, *env.values()]).split():
        path = Path(urlparse(token).path if token.startswith("file:") else token)
        if token.startswith("file:") and path.name == "simple":
            path = path.parent  # a PEP 503 index's pages link to files beside it (../../files)
        if path.is_absolute() and path.exists() and path not in places:
            places.append(path)
    return env, places


def _copied(path: Path) -> bool:
    """Whether ``path`` is copied into the root (configuration: a file, or anything under /etc,
    where the root's apt may write), else bound read-only (a folder of packages, gigabytes)."""
    return not path.is_dir() or path.is_relative_to("/etc")


def _copy_in(root: Path, path: Path, *, into: Path | None = None) -> None:
    """``path`` (a file, or a folder with its files, links followed) at the same place in
    ``root`` (or at ``into`` there)."""
    target = root / (into or path).relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        shutil.copytree(path, target, dirs_exist_ok=True, ignore_dangling_symlinks=True)
    else:
        shutil.copyfile(path, target)


def _make_root(target: Path, case: Case) -> float:
    """A clean bookworm root (minbase: essential packages and apt, with python3, and sudo for
    ``case.sudo``); the seconds it took."""
    started = time.monotonic()
    include = "python3,sudo" if case.sudo else "python3"
    run(
        [
            "mmdebstrap", "--quiet", "--variant=minbase", f"--include={include}",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr", "bookworm", str(target), MIRROR,
        ],
        timeout=600,
    )  # fmt: skip
    return time.monotonic() - started


def _add_user(root: Path, home: str) -> None:
    """User `user` (uid 1000) in ``root``, allowed everything by sudo without a password."""
    with open(root / "etc/passwd", "a") as passwd:
        passwd.write(f"user:x:1000:1000::{home}:/bin/sh\n")
    with open(root / "etc/group", "a") as group:
        group.write("user:x:1000:\n")
    with open(root / "etc/shadow", "a") as shadow:
        shadow.write("user:!:20000:0:99999:7:::\n")
    rule = root / "etc/sudoers.d/user"
    rule.write_text("user ALL=(ALL:ALL) NOPASSWD: ALL\n")
    rule.chmod(0o440)


def _checkout(root: Path, case: Case) -> str:
    """The checkout's files (tracked, and new ones git does not ignore; nothing built) at
    ``case.home``/ctk in ``root``, owned by ``case.user``; the path as seen there."""
    listed = run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    ).stdout
    inside = f"{case.home}/ctk"
    target = root / inside.lstrip("/")
    for name in sorted(set(listed.split("\0")) - {""}):
        source = REPO / name
        if not os.path.lexists(source) or (source.is_dir() and not source.is_symlink()):
            continue  # deleted in the work tree, or a submodule
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)
    if case.user != "root":
        os.lchown(target.parent, 1000, 1000)
        for folder, dirs, files in os.walk(target):  # links not followed
            for name in (".", *dirs, *files):
                os.lchown(os.path.join(folder, name), 1000, 1000)
    return inside


def _host_state() -> dict[str, object]:
    """What must not change on the machine: the places scripts/install writes, the mounts."""
    state: dict[str, object] = {str(p): os.path.lexists(p) for p in HOST_PLACES}
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    state["mounts"] = sorted(line.split(" ", 4)[4] for line in mounts)  # without the ids
    return state


def _run_in_root(
    root: Path, case: Case, inside: str, places: list[Path], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The README's first command, verbatim, by ``case.user`` in ``inside``: chroot in a mount
    namespace of its own, where ``places`` are bound read-only into the root. Output and errors
    in one stream, in the order they were written."""
    binds = []
    for place in places:
        if not _copied(place):
            (root / place.relative_to("/")).mkdir(parents=True, exist_ok=True)
            dest = shlex.quote(str(root / place.relative_to("/")))
            binds.append(f"mount -n --bind -o ro {shlex.quote(str(place))} {dest}")
    userspec = [] if case.user == "root" else ["--userspec=1000:1000", "--groups=1000"]
    command = f"cd {shlex.quote(inside)} && {first_command()}"
    script = " && ".join([*binds, 'exec chroot "$@"'])
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
    argv += [*userspec, str(root), "/bin/sh", "-c", command]
    return subprocess.run(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
        check=False,
        env={**ENV, **env, "HOME": case.home, "USER": case.user, "LOGNAME": case.user},
    )


@pytest.mark.parametrize("case", [AS_ROOT, AS_USER], ids=lambda c: c.name)
def test_the_first_command_verbatim_in_a_clean_debian_12_root(tmp_path: Path, case: Case) -> None:
    _needs()
    root = tmp_path / "root"
    made = _make_root(root, case)
    assert (root / "usr/bin/sudo").exists() == case.sudo
    assert not (root / "usr/lib/python3.11/ensurepip").exists()  # python3.11-venv: not yet
    if case.sudo:
        _add_user(root, case.home)
    env, places = _pip_settings()
    for path in [*PIP_FILES, *CA_FILES, *[p for p in places if _copied(p)]]:
        if path.exists():
            _copy_in(root, path)
    user_config = Path.home() / ".config/pip/pip.conf"
    if user_config.exists():  # pip in the root runs as root (sudo sets HOME=/root)
        _copy_in(root, user_config, into=Path("/root/.config/pip/pip.conf"))
    inside = _checkout(root, case)
    host = _host_state()
    started = time.monotonic()
    result = _run_in_root(root, case, inside, places, env)
    took = time.monotonic() - started
    print(f"{case.name}: mmdebstrap {made:.0f} s, the first command {took:.0f} s")
    out = result.stdout
    (tmp_path / "output.txt").write_text(out)  # what it showed, to read when this fails
    assert _host_state() == host

    # Something is wrong (no driver): exit 1, after every step ran.
    assert result.returncode == 1, out[-4000:]
    assert "Traceback" not in out
    steps = [line for line in out.splitlines() if line.startswith("scripts/install: ")]
    expected = [
        *(["not root: running again as root with sudo"] if case.sudo else []),
        "/usr/bin/python3 has no venv module: installing python3.11-venv with apt-get",
        "making /opt/ctk with /usr/bin/python3 (Python 3.11.",
        f"pip: installing ctk from {inside} (copied to /tmp/ctk-build.",
        "ctk is /usr/local/bin/ctk -> /opt/ctk/bin/ctk",
        "ctk install: the native hook, the systemd units, the udev rule",
        "ctk cdi generate: the CDI spec of this node's GPUs, to /etc/cdi/nvidia.yaml",
        "no NVIDIA driver here, so no spec for this node: the doctor below says why.",
        "sample: ctk cdi generate --mode management --driver-root /tmp/ctk-sample-node.",
        "ctk doctor: the node end to end",
    ]
    shown = [line.removeprefix("scripts/install: ") for line in steps]
    assert len(shown) == len(expected), steps
    for line, start in zip(shown, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert "Building wheel for ctk" in out and "Successfully installed" in out  # pip shows it
    assert "wrote /usr/local/libexec/ctk/ctk-hook\n" in out
    assert re.search(r"/ctk-sample-node\.\w+/etc/cdi/management\.yaml: valid \(", out), out
    # The doctor's report is the last thing printed, and names the root cause.
    report = out.split("scripts/install: ctk doctor: the node end to end\n", 1)[1]
    assert report.startswith("ctk doctor: host, root /"), report
    assert "scripts/install: " not in report
    assert "\n  [FAIL] driver.not-loaded " in report
    assert report.rstrip().splitlines()[-1].endswith("Fix first: driver.not-loaded."), report
    assert not (root / "etc/cdi/nvidia.yaml").exists()
    leftovers = [*(root / "tmp").glob("ctk-build.*"), *(root / "tmp").glob("ctk-sample-node.*")]
    assert leftovers == []  # the build's copy of the checkout, the sample node: removed

    # What it installed works in the root.
    assert os.readlink(root / "usr/local/bin/ctk") == "/opt/ctk/bin/ctk"
    version = subprocess.run(
        ["chroot", str(root), "/usr/local/bin/ctk", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**ENV, "HOME": "/root"},
    )
    assert (version.returncode, version.stdout) == (0, f"ctk {__version__}\n"), version.stderr
    hook = root / "usr/local/libexec/ctk/ctk-hook"
    assert hook.is_file() and not hook.is_symlink() and os.access(hook, os.X_OK)
    ran = subprocess.run(
        ["chroot", str(root), "/usr/local/libexec/ctk/ctk-hook", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=ENV,
    )
    assert (ran.returncode, ran.stdout) == (0, f"ctk-hook version {__version__}\n"), ran.stderr
    # The checkout in the root: pip built a copy, nothing was written into it.
    assert not (root / inside.lstrip("/") / "build").exists()
    assert list((root / inside.lstrip("/")).glob("*.egg-info")) == []
