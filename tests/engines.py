"""The real engines the tests drive: this machine's own (Debian 12's containerd 1.6 and dockerd
20.10) and today's, as `scripts/fetch-engines DIR` unpacked them and ``CTK_ENGINES=DIR`` names
them (containerd 2.1 and 1.7, Docker 28 and 26, CRI-O 1.36; CI fetches them). Where
``CTK_ENGINES`` is set, an engine missing from it is a failure, not a skip."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctk import toml_compat as tomllib
from tests.runners import containers_conf

FETCHED = os.environ.get("CTK_ENGINES")
WANTED = {"containerd": ((2, 1), (1, 7)), "docker.io": ((28,), (26,)), "cri-o": ((1, 36),)}
"""What CI fetches, newest first: the versions that must be present under ``CTK_ENGINES``. The
newest counts as present in any later release too (Debian's testing moves on), the others by
their major and minor."""


def default_signals() -> None:
    """`preexec_fn` for the daemons the tests start: the default action for every signal a
    caller may ignore (under `nohup` SIGHUP is ignored, and an ignored signal stays ignored
    across exec: containerd would then outlive the SIGHUP its test sends)."""
    for number in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)


@dataclass(frozen=True, slots=True)
class Engine:
    """One build of an engine: its daemon binary, the client that goes with it, its version."""

    package: str  # the Debian package: containerd or docker.io
    version: tuple[int, ...]
    daemon: Path
    client: Path
    path: str  # PATH for the daemon: its own binaries (containerd's shims) first

    @property
    def id(self) -> str:
        name = {"docker.io": "docker"}.get(self.package, self.package)
        return f"{name}-" + ".".join(map(str, self.version))


def _version(text: str) -> tuple[int, ...]:
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    assert found is not None, text
    return tuple(int(part) for part in found.groups())


def _fetched(package: str) -> list[Engine]:
    if not FETCHED:
        return []
    out = []
    for unpacked in sorted(Path(FETCHED).glob(f"{package}-[0-9]*")):
        version = _version(unpacked.name.removeprefix(package))
        if package == "containerd":
            daemon, client = unpacked / "usr/bin/containerd", unpacked / "usr/bin/ctr"
            path = f"{unpacked / 'usr/bin'}:{os.environ.get('PATH', '')}"
        elif package == "cri-o":  # crio is its own client (`crio config`, `crio status`)
            daemon = client = unpacked / "usr/bin/crio"
            path = f"{unpacked / 'usr/bin'}:{os.environ.get('PATH', '')}"
        else:
            clients = Path(FETCHED).glob(f"docker-cli-{'.'.join(map(str, version))}*")
            daemon, client = unpacked / "usr/sbin/dockerd", next(clients) / "usr/bin/docker"
            shims = [p / "usr/bin" for p in Path(FETCHED).glob("containerd-2.*")][:1]
            path = ":".join(map(str, [unpacked / "usr/bin", *shims])) + ":" + os.environ["PATH"]
        out.append(Engine(package, version, daemon, client, path))
    for index, wanted in enumerate(WANTED[package]):
        assert any(
            e.version >= wanted if index == 0 else e.version[: len(wanted)] == wanted for e in out
        ), (
            f"CTK_ENGINES={FETCHED} has no {package} {'.'.join(map(str, wanted))}: "
            "run scripts/fetch-engines there"
        )
    return out


def _own(package: str, daemon: str, client: str) -> list[Engine]:
    found = shutil.which(daemon)
    if found is None or not Path(client).exists():
        return []
    result = subprocess.run(
        [found, "--version"], capture_output=True, text=True, timeout=30, check=True
    )
    return [Engine(package, _version(result.stdout), Path(found), Path(client), os.environ["PATH"])]


def containerds() -> list[Engine]:
    """This machine's containerd, then today's."""
    return _own("containerd", "containerd", shutil.which("ctr") or "/usr/bin/ctr") + _fetched(
        "containerd"
    )


def dockers() -> list[Engine]:
    """This machine's dockerd (with the /usr/bin/docker client of its version), then today's."""
    return _own("docker.io", "dockerd", "/usr/bin/docker") + _fetched("docker.io")


CRIO_TOOLS = next(
    (
        found
        for above in Path(__file__).resolve().parents[1:]
        if (found := above / "shared/tools/cri-o").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared/tools/cri-o",
)
"""Where CRI-O's build lies beside the checkout (Debian packages none); absent on a laptop.
Looked for above the checkout too: `.ci/run` runs the suite again in a copy inside `.ci/`."""


def crios() -> list[Engine]:
    """Today's CRI-O, built from upstream (`CRIO_TOOLS`): wanted only where those tools are."""
    return _fetched("cri-o") if CRIO_TOOLS.is_dir() else []


def engine_output(engine: Engine, *args: str) -> str:
    """The standard output of ``engine``'s daemon binary run with ``args`` (it must succeed)."""
    result = subprocess.run(
        [str(engine.daemon), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PATH": engine.path},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def containerd_dump(config: Path, engine: Engine) -> dict[str, Any]:
    """What ``engine`` makes of ``config`` and its imports: `containerd config dump`, parsed."""
    return tomllib.loads(engine_output(engine, "--config", str(config), "config", "dump"))


def crio_config(config: Path, drop_ins: Path, engine: Engine) -> dict[str, Any]:
    """What CRI-O makes of ``config`` and the drop-in folder ``drop_ins``: `crio config`."""
    return tomllib.loads(
        engine_output(engine, "--config", str(config), "--config-dir", str(drop_ins), "config")
    )


DOCKERD_PRIVATE = (
    *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
    "mount -n -t tmpfs tmpfs /run && "
    "{ [ ! -d /etc/docker ] || mount -n -t tmpfs tmpfs /etc/docker; } "
    '&& exec "$@"',
    "sh",
)
"""A prefix that runs a test dockerd with /run and /etc/docker of its own: the containerd 2.x
that Docker 26+ start serves NRI at /var/run/nri/nri.sock, and dockerd 20.10 writes its trust
key to /etc/docker/key.json whatever --config-file says."""

DOCKERD_ISOLATED = (
    "--iptables=false",
    "--ip6tables=false",
    "--ip-forward=false",
    "--ip-masq=false",
    "--bridge=none",
)
"""dockerd flags that keep a test daemon off the machine's network configuration."""


@contextlib.contextmanager
def dockerd(config: Path, work: Path, engine: Engine) -> Iterator[str]:
    """Run ``engine``'s dockerd on ``config`` with throwaway state under ``work``; yield its
    socket."""
    sock = work / "sock"
    data = json.loads(config.read_text())
    args = [
        str(engine.daemon),
        "--config-file",
        str(config),
        "--exec-root",
        str(work / "exec"),
        "--pidfile",
        str(work / "pid"),
        "-H",
        f"unix://{sock}",
        *DOCKERD_ISOLATED,
    ]
    if "data-root" not in data:
        args += ["--data-root", str(work / "data")]
    log = (work / "log").open("w")
    process = subprocess.Popen(
        [*DOCKERD_PRIVATE, *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=default_signals,  # noqa: PLW1509
        env={**os.environ, "PATH": engine.path},
    )
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert process.poll() is None, (work / "log").read_text()
            assert time.monotonic() < deadline, "dockerd did not start"
            time.sleep(0.05)
        yield str(sock)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()
        for mount in (work / "data", work / "exec"):
            if os.path.ismount(mount):  # dockerd bind-mounts its roots; a killed one leaves them
                subprocess.run(["umount", "-n", "-l", str(mount)], check=False, timeout=10)


def docker_info(sock: str, engine: Engine, fields: str) -> Mapping[str, Any]:
    """`docker info` of the daemon at ``sock``: the JSON of the template ``fields``."""
    deadline = time.monotonic() + 10
    while True:
        result = subprocess.run(
            [str(engine.client), "-H", f"unix://{sock}", "info", "--format", fields],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode == 0:
            loaded: Mapping[str, Any] = json.loads(result.stdout)
            return loaded
        assert time.monotonic() < deadline, result.stderr
        time.sleep(0.1)


CDI_TEST_SPEC = (
    "cdiVersion: 0.5.0\nkind: vendor.com/class\ndevices:\n"
    '  - name: dev0\n    containerEdits:\n      env: ["CTK_CDI=injected"]\n'
)
"""A CDI spec whose one device, `vendor.com/class=dev0`, sets CTK_CDI=injected."""


def docker_run_cdi_device(
    sock: str, engine: Engine, image: bytes
) -> subprocess.CompletedProcess[str]:
    """Import ``image`` (a root filesystem as a tar stream) into the dockerd at ``sock`` and run
    it with `--device vendor.com/class=dev0` (`CDI_TEST_SPEC`'s device), echoing CTK_CDI; a
    container that got the device prints `CTK_CDI=injected`."""
    docker = [str(engine.client), "-H", f"unix://{sock}"]
    subprocess.run(
        [*docker, "import", "-", "bb"], input=image, capture_output=True, check=True, timeout=60
    )
    return subprocess.run(
        [*docker, "run", "--rm", "--network", "none", "--device", "vendor.com/class=dev0",
         "bb", "/bin/sh", "-c", "echo CTK_CDI=$CTK_CDI"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


PRIVATE_RUN = 'mount -n -t tmpfs tmpfs /run && mkdir -p /run/cdi /run/containerd && exec "$@"'
"""A mount namespace's start: /run its own tmpfs (containerd's shim sockets under
/run/containerd, runc's state under /run/runc, /var/run/cdi), so nothing lands on the host's."""


@dataclass(frozen=True, slots=True)
class Daemon:
    """A running engine: its PID (its mount namespace's too) and socket."""

    pid: int
    socket: Path
    log: Path

    def inside(self, *argv: str) -> list[str]:
        """``argv`` run in the daemon's mount namespace (to see its /run)."""
        return ["nsenter", f"--mount=/proc/{self.pid}/ns/mnt", "--", *argv]

    def podman_load(self, archive: Path, work: Path) -> None:
        """`podman load` of ``archive`` into CRI-O's store (`crio_drop_in`'s, under ``work``):
        in a copy of the daemon's namespace (its /run) whose /var/lib is a tmpfs, where podman
        keeps its blob cache (/var/lib/containers/cache), which would land on the host."""
        conf = work / "containers.conf"
        conf.write_text(containers_conf(work))
        script = 'mount -n -t tmpfs tmpfs /var/lib && exec "$@"'
        podman = ["podman", "--root", str(work / "storage"), "--storage-driver", "vfs"]
        podman += ["--runroot", "/run/containers/storage", "load", "-i", str(archive)]
        subprocess.run(
            self.inside("unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                        "sh", *podman),
            capture_output=True, check=True, timeout=120,
            env={**os.environ, "CONTAINERS_CONF": str(conf)},
        )  # fmt: skip


def containerd_config(engine: Engine, work: Path, cri: str = "") -> str:
    """A containerd config of ``engine``'s own version (3 on 2.x, else 2) whose state is under
    ``work`` (socket ``work/c.sock``), the CRI plugin's CNI dirs too; ``cri`` is TOML lines for
    the CRI runtime plugin's table (``cri.v1.runtime`` on 2.x, ``grpc.v1.cri`` on 1.x)."""
    if engine.version >= (2,):
        head, table, quote = "version = 3", "plugins.'io.containerd.cri.v1.runtime'", "'"
        cni = f"bin_dirs = ['{work}/cni-bin']"
    else:
        head, table, quote = "version = 2", 'plugins."io.containerd.grpc.v1.cri"', '"'
        cni = f'bin_dir = "{work}/cni-bin"'
    q = quote
    return (
        f"{head}\nroot = {q}{work}/root{q}\nstate = {q}{work}/state{q}\n\n"
        f"[grpc]\n  address = {q}{work}/c.sock{q}\n\n[ttrpc]\n  address = {q}{work}/t.sock{q}\n\n"
        f"[{table}]\n{cri}\n[{table}.cni]\n  conf_dir = {q}{work}/cni{q}\n  {cni}\n"
    )


def containerd_pod_config(engine: Engine, work: Path, sandbox_image: str, cri: str = "") -> str:
    """`containerd_config` for CRI pods here: ``sandbox_image`` (already in the store: nothing
    is pulled), `restrict_oom_score_adj` (this machine has no CAP_SYS_RESOURCE), ``cri``."""
    if engine.version >= (2,):
        images = "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n"
        images += f"  sandbox = '{sandbox_image}'\n"
        return containerd_config(engine, work, f"  restrict_oom_score_adj = true\n{cri}") + images
    lines = f'  restrict_oom_score_adj = true\n  sandbox_image = "{sandbox_image}"\n{cri}'
    return containerd_config(engine, work, lines)


@contextlib.contextmanager
def _private(
    engine: Engine,
    args: list[str],
    sock: Path,
    log_path: Path,
    *,
    timeout: float,
    etc: Path | None = None,
) -> Iterator[Daemon]:
    """Run ``engine``'s daemon with ``args`` in a private mount namespace (`PRIVATE_RUN`); yield
    it once ``sock`` exists; stop it (SIGKILL to its group when SIGTERM is not enough).

    ``etc``: a folder for what the daemon writes under /etc, which it sees as an overlay of the
    host's (CRI-O makes /etc/crio/auth and /etc/crio/policies, and its CNI /etc/cni/net.d's
    cni.lock, whatever its config says)."""
    script = PRIVATE_RUN
    if etc is not None:
        (etc / "upper").mkdir(parents=True, exist_ok=True)
        (etc / "work").mkdir(parents=True, exist_ok=True)
        layers = f"lowerdir=/etc,upperdir={etc}/upper,workdir={etc}/work"
        script = f"mount -n -t overlay overlay -o {shlex.quote(layers)} /etc && {script}"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                *("unshare", "--mount", "--propagation", "private", "sh", "-c", script),
                *("sh", str(engine.daemon), *args),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=default_signals,  # noqa: PLW1509
            env={**os.environ, "PATH": engine.path},
        )
    try:
        deadline = time.monotonic() + timeout
        while not sock.exists():
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, f"{engine.id} did not start"
            time.sleep(0.05)
        yield Daemon(process.pid, sock, log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def _unmount_under(*directories: Path) -> None:
    """Lazily unmount what a stopped daemon left mounted under ``directories`` (deepest first)."""
    for directory in directories:
        found = [directory, *directory.rglob("*")] if directory.is_dir() else []
        for mount in sorted(found, reverse=True):
            if mount.is_dir() and os.path.ismount(mount):
                subprocess.run(["umount", "-n", "-l", str(mount)], check=False, timeout=10)


@contextlib.contextmanager
def containerd(config: Path, work: Path, engine: Engine) -> Iterator[Daemon]:
    """Run ``engine``'s containerd on ``config`` (whose socket is ``work/c.sock``: see
    `containerd_config`) in a private mount namespace (`PRIVATE_RUN`); yield it once the socket
    is up."""
    try:
        args = ["--config", str(config)]
        with _private(engine, args, work / "c.sock", work / "containerd.log", timeout=30) as d:
            yield d
    finally:
        _unmount_under(work / "root", work / "state")


def crio_drop_in(
    work: Path, specs: Path | None, pause_image: str, *, default_runtime: str | None = None
) -> str:
    """A CRI-O drop-in that runs a test daemon here: state under ``work`` (socket
    ``work/crio.sock``), vfs storage, cgroupfs, a runc runtime (crun, the default, cannot run
    here), the CDI spec directory ``specs`` (None: CRI-O's default ones), ``pause_image``
    (``default_runtime`` if given)
    (already in the store: nothing is pulled), no NRI, any image accepted; the rest of /run is
    `PRIVATE_RUN`'s."""
    pinns = next(p for p in Path(FETCHED or "/nonexistent").glob("cri-o-*/usr/bin/pinns"))
    (work / "policy.json").write_text('{"default": [{"type": "insecureAcceptAnything"}]}')
    cdi = "" if specs is None else f'cdi_spec_dirs = ["{specs}"]\n'
    if default_runtime is not None:
        cdi += f'default_runtime = "{default_runtime}"\n'
    return f"""\
[crio]
root = "{work}/storage"
runroot = "/run/containers/storage"
storage_driver = "vfs"
log_dir = "{work}/logs"
clean_shutdown_file = "{work}/clean.shutdown"
[crio.api]
listen = "{work}/crio.sock"
[crio.runtime]
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
pinns_path = "{pinns}"
{cdi}irqbalance_config_file = "{work}/irqbalance"
irqbalance_config_restore_file = "disable"
[crio.runtime.runtimes.runc]
runtime_path = "/usr/sbin/runc"
runtime_type = "oci"
[crio.image]
pause_image = "{pause_image}"
signature_policy = "{work}/policy.json"
[crio.network]
network_dir = "{work}/cni"
plugin_dirs = ["{work}/cni-bin"]
[crio.nri]
enable_nri = false
"""


@contextlib.contextmanager
def crio(config: Path, drop_ins: Path, work: Path, engine: Engine) -> Iterator[Daemon]:
    """Run ``engine`` (CRI-O) on ``config`` and ``drop_ins`` (with `crio_drop_in`'s settings) in
    a private mount namespace; yield it once its socket answers."""
    try:
        args = ["--config", str(config), "--config-dir", str(drop_ins)]
        sock, log = work / "crio.sock", work / "crio.log"
        with _private(engine, args, sock, log, timeout=60, etc=work / "etc") as d:
            yield d
    finally:
        _unmount_under(work / "storage")
