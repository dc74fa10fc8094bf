"""Ways the tests run ctk and containers, written once: ctk's main() as user nobody, Podman.

`main_as_nobody` forks: the child has every module the parent imported, and nothing else it can
load, because nobody cannot read the Python installation under /root (0700). So the caller runs
the same command as root first, to completion (for the doctor: with a deadline no load reaches),
and the child finds everything imported.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ctk.cli.app import main
from tests.hook.native import hook_binary

NOBODY = 65534

CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
netns = "none"
[network]
network_backend = "cni"
[engine]
runtime = "runc"
"""


def containers_conf(work: Path) -> str:
    """`CONTAINERS_CONF` with Podman's CNI folder under ``work``: Podman locks that folder
    (/etc/cni/net.d/cni.lock by default) even for a container without a network."""
    return CONTAINERS_CONF.replace(
        'network_backend = "cni"\n', f'network_backend = "cni"\nnetwork_config_dir = "{work}/cni"\n'
    )


BUSYBOX_APPLETS = (
    "sh",
    "ls",
    "cat",
    "grep",
    "env",
    "sort",
    "sed",
    "cut",
    "head",
    "echo",
    "test",
    "readlink",
)
# Podman 4.3 reads specs only from /etc/cdi and /run/cdi, and refuses a run root longer than 50
# characters: both live on a tmpfs over /run in a private mount namespace.
_PODMAN = (
    "specs=$1 store=$2 && shift 2 && "
    'mount -n -t tmpfs tmpfs /run && mkdir /run/cdi && cp "$specs"/* /run/cdi/ && '
    'exec podman --root "$store/root" --runroot /run/ctk-podman --tmpdir "$store/tmp" '
    'run --rm "$@"'
)


@contextlib.contextmanager
def open_to_nobody() -> Iterator[Path]:
    """A temporary directory that user nobody can reach, removed after: not under pytest's own
    base directory, which every pytest session that starts (CI's other Python, mutmut's runs)
    sets back to mode 0700, whatever a test had opened."""
    base = Path(tempfile.mkdtemp(prefix="ctk-nobody-"))
    try:
        base.chmod(0o755)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main_as_nobody(argv: list[str], timeout: float = 120) -> tuple[int, str, str]:
    """ctk's main(``argv``) in a forked child that dropped root for user nobody: exit code,
    stdout, stderr.

    A child still running after ``timeout`` seconds is killed and the test fails. The output goes
    to files, not pipes, so a child that writes much to one stream never waits
    on a parent that reads the other.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            code = 3
            try:
                os.setgroups([])
                os.setresgid(NOBODY, NOBODY, NOBODY)
                os.setresuid(NOBODY, NOBODY, NOBODY)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = os.fdopen(1, "w", closefd=False)
                sys.stderr = os.fdopen(2, "w", closefd=False)
                code = main(argv)
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:  # a wait with a timeout: a child that hangs is killed, and the test fails
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise AssertionError(f"main({argv}) as nobody ran past {timeout} s")
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), err.read()


_NEW_DIRS_PRIVATE = (
    "mount -n --bind /var/lib /mnt && mount -n -t tmpfs tmpfs /var/lib && "
    'for d in /mnt/*; do [ -d "$d" ] || continue; n="${d#/mnt/}"; '
    'mkdir "/var/lib/$n" && mount -n --bind "$d" "/var/lib/$n" || exit 1; done && exec "$@"'
)
PRIVATE_VAR_LIB = ("unshare", "--mount", "--propagation", "private", "sh", "-c",
                   _NEW_DIRS_PRIVATE, "sh")  # fmt: skip
PRIVATE_VAR_LIB_AND_RUN = ("unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f"mount -n -t tmpfs tmpfs /run && {_NEW_DIRS_PRIVATE}",
                           "sh")  # fmt: skip
"""`PRIVATE_VAR_LIB` with /run a tmpfs too: podman keeps its events log in /run/libpod."""
OWN_RUN: tuple[str, ...] = (
    ("unshare", "--mount", "--propagation", "private", "sh", "-c",
     'mount -n -t tmpfs tmpfs /run && exec "$@"', "sh")
    if os.geteuid() == 0
    else ()
)  # fmt: skip
"""A prefix that gives a command (run as root) a /run of its own: `systemd-analyze verify`
leaves /run/systemd/systemd-units-load behind. Empty for a user, who cannot write /run."""
"""A prefix that runs a command in a mount namespace where a directory it makes in /var/lib is
its own (a tmpfs; the machine's directories there stay as they are): podman and skopeo, as
root, create /var/lib/containers/cache for a blob cache whatever their --root says, which would
land on the machine (tests write only under their own directories). Needs root."""


def busybox_rootfs(directory: Path) -> Path:
    """A container root file system of busybox and the applets the tests use."""
    rootfs = directory / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    busybox = shutil.which("busybox")
    assert busybox is not None
    shutil.copy(busybox, rootfs / "bin/busybox")
    for applet in BUSYBOX_APPLETS:
        (rootfs / "bin" / applet).symlink_to("busybox")
    return rootfs


def podman_run(
    work: Path,
    specs: Path,
    run: Iterable[str],
    *,
    env: Mapping[str, str] = {},
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`podman run --rm RUN...` (Podman with runc) with the CDI specs of ``specs``, in a private
    mount namespace; Podman's storage and its containers.conf live under ``work``."""
    conf = work / "containers.conf"
    conf.write_text(containers_conf(work))
    return subprocess.run(
        [
            *("unshare", "--mount", "--propagation", "private", "sh", "-c", _PODMAN, "sh"),
            *(str(specs), str(work / "podman"), *run),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "CONTAINERS_CONF": str(conf), **env},
        timeout=timeout,
        check=False,
    )


def installed_hook(directory: Path) -> Path:
    """The native `ctk-hook`, copied out of the Python environment as `ctk install` does (a spec
    names it by absolute path)."""
    installed = directory / "bin" / "ctk-hook"
    installed.parent.mkdir()
    shutil.copy2(hook_binary(), installed)
    return installed
