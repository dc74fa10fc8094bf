"""The host side of `ctk agent`: its lock and state, the engine's socket, files and commands.

Everything is read and written under the host root (`--host-root`, `/host` in a DaemonSet pod),
but every path the agent writes *into* a host file is the host's own path: the runtime planner
works on host names and texts, and only this module maps names onto the root.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import http.client
import json
import os
import shlex
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final

from ctk.agent.model import (
    LOCK_DIR,
    SOCKETS,
    STATE_DIR,
    UNITS,
    Presence,
    State,
    dump_state,
    load_state,
)
from ctk.errors import CtkError
from ctk.host import files
from ctk.host.root import HostRoot
from ctk.runtime_config.engines import ENGINES, Runtime
from ctk.runtime_config.parse import load_toml

if TYPE_CHECKING:  # the planner (tomlkit) loads only when a pass has something to plan
    from ctk.runtime_config.configure import Inputs
    from ctk.runtime_config.plan import FileChange

STATE_FILE = "state.json"
LOCK_FILE = "agent.lock"


@dataclass(frozen=True, slots=True)
class Done:
    """A host command's outcome."""

    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str]], Done]


def host_runner(root: Path, exec_prefix: str | None) -> Runner:
    """Run a command in the host's root: ``exec_prefix`` (a command line) or `chroot ROOT`."""
    if exec_prefix:
        prefix = shlex.split(exec_prefix)
    elif os.path.abspath(root) == "/":
        prefix = []
    else:
        prefix = ["chroot", str(root)]

    def run(argv: Sequence[str]) -> Done:
        try:
            done = subprocess.run(
                [*prefix, *argv], capture_output=True, text=True, timeout=120, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Done(127, "", f"{' '.join([*prefix, *argv])}: {exc}")
        return Done(done.returncode, done.stdout, done.stderr)

    return run


# --- lock and state -----------------------------------------------------------------------


# struct flock on 64-bit Linux (x86-64, arm64): l_type, l_whence, l_start, l_len, l_pid
_FLOCK: Final = "hhqqi"


@contextlib.contextmanager
def agent_lock(host: HostRoot) -> Iterator[None]:
    """Hold the node's agent lock (<host>/run/ctk/agent.lock); `CtkError` naming the holder.

    Two locks on the one file: `flock`, which agents of earlier versions take too, and a POSIX
    record lock, through which the kernel tells a second agent the holder's PID (as its own PID
    namespace sees it). The file holds the holder's hostname (a pod's name: whose it is from
    another pod), written only when it names another: a pass with nothing to do writes nothing.
    """
    path = host.path(LOCK_DIR / LOCK_FILE)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise CtkError(f"{path}: cannot open the agent lock: {exc.strerror}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise CtkError(f"{path}: cannot lock: {exc.strerror}") from exc
            raise CtkError(
                f"another ctk agent is running on this node ({_holder(fd)} holds {path})",
                hint="one agent per node: stop the other one first",
            ) from exc
        mine = f"{socket.gethostname()}\n".encode()
        if os.pread(fd, 300, 0) != mine:
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine, 0)
        yield
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    """Who holds the lock: `PID n` (from the kernel; an earlier version wrote `PID hostname` into
    the file), with the hostname when it is not ours."""
    parts = os.pread(fd, 300, 0).decode(errors="replace").split()
    pid = _lock_pid(fd)
    if pid is None and len(parts) == 2 and parts[0].isdigit():  # an earlier version's holder
        pid, parts = int(parts[0]), parts[1:]
    who = f"PID {pid}" if pid else "PID unknown"
    if parts and parts[0] != socket.gethostname():
        return f"{who} on {parts[0]}"
    return who


def _lock_pid(fd: int) -> int | None:
    """The PID of the process holding the POSIX lock on ``fd``'s file (None: none, or one this
    PID namespace does not see)."""
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        answer = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
    except (OSError, struct.error):
        return None
    return answer[4] if answer[0] != fcntl.F_UNLCK and answer[4] > 0 else None


def remove_lock(host: HostRoot) -> None:
    """Remove the lock file (held: call it last, inside `agent_lock`) and its folder if empty:
    an uninstall that is complete leaves nothing of the agent."""
    path = host.path(LOCK_DIR / LOCK_FILE)
    files.remove(path)
    with contextlib.suppress(OSError):  # not empty, or a pod's mount point
        path.parent.rmdir()


def missing_folders(host: HostRoot, path: str | PurePosixPath) -> list[PurePosixPath]:
    """The folders (host paths, deepest first) that writing ``path`` on the host would make."""
    missing = []
    for folder in PurePosixPath(path).parents:
        if folder == PurePosixPath("/") or os.path.lexists(host.path(folder)):
            break
        missing.append(folder)
    return missing


def remove_empty_folder(host: HostRoot, folder: str) -> None:
    """Remove the host's ``folder`` if it is an empty directory (else leave it)."""
    with contextlib.suppress(OSError):
        host.path(folder).rmdir()


def state_path(host: HostRoot) -> Path:
    """The agent's state file on the host."""
    return host.path(STATE_DIR / STATE_FILE)


def read_state(host: HostRoot) -> State:
    """The state the last pass left (a fresh one on a new node)."""
    path = state_path(host)
    return load_state(str(path), files.read_text(path, missing_ok=True))


def forget_state(host: HostRoot) -> None:
    """Remove the state file and its folders, when empty (an uninstall that is complete)."""
    path = state_path(host)
    files.remove(path)
    with contextlib.suppress(OSError):  # not empty (ctk runtime's undo records), or a mount
        path.parent.rmdir()
        path.parent.parent.rmdir()


def write_state(host: HostRoot, state: State) -> None:
    """Keep ``state`` for the next pass (and the next agent process)."""
    files.write_atomic(state_path(host), dump_state(state), mode=0o600, make_parents=True)


# --- the engine -----------------------------------------------------------------------------


def presence(host: HostRoot) -> dict[Runtime, Presence]:
    """Which engines' sockets and configs the host has."""
    found = {}
    for runtime, engine in ENGINES.items():
        sock = host.path(SOCKETS[runtime])
        config = host.path(engine.config_path)
        cri_disabled = False
        if runtime is Runtime.CONTAINERD and config.is_file():
            with contextlib.suppress(CtkError):
                data = load_toml(str(engine.config_path), files.read_text(config) or "")
                disabled = data.get("disabled_plugins")
                cri_disabled = isinstance(disabled, list) and bool(
                    {"cri", "io.containerd.grpc.v1.cri"} & set(map(str, disabled))
                )
        found[runtime] = Presence(
            socket=sock.is_socket(), config=config.is_file(), cri_disabled=cri_disabled
        )
    return found


def engine_pid(host: HostRoot, sock: PurePosixPath) -> int | None:
    """The PID of the process serving the engine's socket (None: down, or not in our PID space).

    From the socket's peer credentials: a pod sees the engine's PID only with `hostPID: true`.
    """
    path = host.path(sock)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(2)
        try:
            conn.connect(str(path))
        except OSError:
            return None
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid = int(struct.unpack("3i", creds)[0])
    return pid or None


def engine_up(host: HostRoot, sock: PurePosixPath) -> bool:
    """Whether something accepts connections on the engine's socket."""
    path = host.path(sock)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(2)
        try:
            conn.connect(str(path))
        except OSError:
            return False
    return True


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=5)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(5)
        sock.connect(self._path)
        self.sock = sock


# dockerd's `GET /info` is a few KiB; anything near this is not dockerd (or is broken).
INFO_LIMIT: Final = 1 << 20
INFO_DEADLINE: Final = 10.0  # seconds for the whole answer: a slow drip is refused too


def docker_runtimes(
    host: HostRoot, sock: PurePosixPath = SOCKETS[Runtime.DOCKER]
) -> frozenset[str] | None:
    """The runtimes the running dockerd has (its `GET /info`); None when it does not answer.

    The answer is read up to `INFO_LIMIT` bytes within `INFO_DEADLINE` seconds: whatever serves
    the socket cannot make the agent hang or fill its memory (`CtkError` naming the socket).
    """
    path = host.path(sock)
    conn = _UnixHTTP(str(path))
    try:
        conn.request("GET", "/info")
        response = conn.getresponse()
        if response.status != 200:
            return None
        info = json.loads(_read_capped(response, path))
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    runtimes = info.get("Runtimes") if isinstance(info, dict) else None
    return frozenset(runtimes) if isinstance(runtimes, dict) else None


def _read_capped(response: http.client.HTTPResponse, path: Path) -> bytes:
    """The body of ``response``: at most `INFO_LIMIT` bytes, within `INFO_DEADLINE` seconds."""
    deadline = time.monotonic() + INFO_DEADLINE
    body = bytearray()
    while chunk := response.read1(1 << 16):  # one recv each: the deadline is checked
        body += chunk
        if len(body) > INFO_LIMIT:
            raise CtkError(
                f"{path}: the engine's GET /info answer is larger than "
                f"{INFO_LIMIT >> 20} MiB; not read",
                hint="is dockerd what listens on this socket? check --socket",
            )
        if time.monotonic() > deadline:
            raise CtkError(
                f"{path}: the engine's GET /info answer took longer than "
                f"{INFO_DEADLINE:g} s; not read",
                hint="is dockerd what listens on this socket? check --socket",
            )
    return bytes(body)


def containerd_runtimes(run: Runner, config: PurePosixPath) -> frozenset[str] | None:
    """The CRI runtimes `containerd config dump` shows for ``config`` (run in the host's root)."""
    done = run(["containerd", "--config", str(config), "config", "dump"])
    if done.returncode != 0:
        return None
    try:
        data = load_toml("containerd config dump", done.stdout)
    except CtkError:
        return None
    plugins = data.get("plugins")
    found: set[str] = set()
    if isinstance(plugins, dict):
        for key in ("io.containerd.grpc.v1.cri", "cri", "io.containerd.cri.v1.runtime"):
            cri = plugins.get(key)
            table = cri.get("containerd") if isinstance(cri, dict) else None
            runtimes = table.get("runtimes") if isinstance(table, dict) else None
            if isinstance(runtimes, dict):
                found.update(runtimes)
    return frozenset(found)


def wait_for_engine(
    host: HostRoot, runtime: Runtime, sock: PurePosixPath, timeout: float = 60.0
) -> float | None:
    """Seconds until the engine's socket answers again (None: not within ``timeout``)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        up = engine_up(host, sock)
        if up and runtime is Runtime.DOCKER:  # dockerd listens before its API answers
            up = docker_runtimes(host, sock) is not None
        if up:
            return time.monotonic() - start
        time.sleep(0.05)
    return None


# Where systemd keeps unit files, most specific first.
UNIT_DIRS: Final = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)


def pick_unit(host: HostRoot, units: str | None, runtime: Runtime) -> str:
    """The unit to restart: the first of the comma-separated ``units`` the host has a unit
    file for (k3s servers run `k3s`, agents `k3s-agent`), else the first; default: the
    engine's own."""
    names = [u.strip() for u in (units or "").split(",") if u.strip()]
    if not names:
        return UNITS[runtime]
    for name in names:
        for directory in UNIT_DIRS:
            with contextlib.suppress(CtkError):
                if host.path(f"{directory}/{name}.service").is_file():
                    return name
    return names[0]


def reload_engine(pid: int) -> None:
    """SIGHUP the engine (dockerd reloads its daemon.json)."""
    try:
        os.kill(pid, signal.SIGHUP)
    except OSError as exc:
        raise CtkError(f"cannot signal the engine (PID {pid}): {exc.strerror}") from exc


# --- the engine's config files ------------------------------------------------------------------


def _read(host: HostRoot, name: str) -> str | None:
    return files.read_text(host.path(name), missing_ok=True)


def gather_runtime(
    host: HostRoot,
    runtime: Runtime,
    config: str | None,
    *,
    drop_in: str | None,
    record: str | None,
    say: Callable[[str], None],
) -> Inputs:
    """The files `ctk runtime configure` reads (its own gather, under the host root), with the
    agent's record of what it changed instead of the runtime command's."""
    from dataclasses import replace

    from ctk.host.engine_files import Place, gather
    from ctk.runtime_config.changes import load_record
    from ctk.runtime_config.editor import editor_for

    gathered = gather(runtime, config=config, drop_in=drop_in, place=Place(host.root))
    for warning in gathered.warnings:
        say(f"warning: {warning}")
    nested_null = editor_for(runtime).records_hold_null
    loaded = load_record("the agent's record", record, nested_null=nested_null)
    return replace(gathered.inputs, record=loaded, recorded=record is not None)


def write_change(host: HostRoot, change: FileChange) -> None:
    """Write (or delete) one planned file under the host root."""
    path = host.path(change.path)
    if change.after is None:
        files.remove(path)
    else:
        files.write_atomic(path, change.after, make_parents=True)


def read_config(host: HostRoot, name: str) -> str | None:
    """A config file's current text (None: missing)."""
    return _read(host, name)


def restore(host: HostRoot, name: str, text: str | None) -> None:
    """Put a config's original text back (None: it did not exist: remove it)."""
    path = host.path(name)
    if text is None:
        files.remove(path)
    else:
        files.write_atomic(path, text)


def handler_binaries(
    host: HostRoot, explicit: str | None
) -> tuple[bool, tuple[str, ...], str | None]:
    """Whether ``explicit`` is on the host, which nvidia-container-runtimes are, and the first
    runc it has."""
    from ctk.agent.model import NVIDIA_RUNTIME_PATHS, RUNC_PATHS
    from ctk.host.engine_files import runtime_binary_found

    present = bool(explicit) and runtime_binary_found(str(explicit), host.root)
    found = tuple(p for p in NVIDIA_RUNTIME_PATHS if runtime_binary_found(p, host.root))
    runc = next((p for p in RUNC_PATHS if runtime_binary_found(p, host.root)), None)
    return present, found, runc


# --- the CDI spec ---------------------------------------------------------------------------


def find_hook(host: HostRoot) -> str | None:
    """The first hook program the host has (a host path), None when there is none."""
    from ctk.agent.spec import HOOK_CANDIDATES

    for candidate in HOOK_CANDIDATES:
        with contextlib.suppress(CtkError):
            path = host.path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return candidate
    return None


def nvml_inputs(host: HostRoot, driver_root: PurePosixPath) -> str | None:
    """A digest of what NVML says (driver, GPUs, MIG layout); None when NVML cannot answer."""
    import hashlib

    from ctk.host.nvml import read_nvml

    try:
        facts = read_nvml(host.path(driver_root))
    except CtkError:
        return None
    return hashlib.sha256(repr(facts).encode()).hexdigest()


def file_digest(path: Path) -> str | None:
    """The sha256 of a file's bytes (None: missing)."""
    import hashlib

    data = files.read_bytes(path, missing_ok=True)
    return None if data is None else hashlib.sha256(data).hexdigest()


def files_digest(paths: Sequence[Path]) -> str | None:
    """One digest for the files of ``paths`` that exist (None: none does); a single one's is its
    own `file_digest`, so state kept for one template stays valid when more are watched."""
    import hashlib

    found = [(path, digest) for path in paths if (digest := file_digest(path)) is not None]
    if len(found) <= 1:
        return found[0][1] if found else None
    return hashlib.sha256("".join(f"{p.name}={d}\n" for p, d in found).encode()).hexdigest()


def generate_spec(host: HostRoot, driver_root: PurePosixPath) -> tuple[dict[str, object], str, str]:
    """The node's CDI spec with host paths: its data, its checked text, the driver version."""
    from ctk.agent.spec import host_paths
    from ctk.cdi.discover import HookProgram
    from ctk.cdi.generate import GenerateOptions, build_spec
    from ctk.cdi.options import Mode, SpecFormat
    from ctk.cdi.serialize import render, spec_data
    from ctk.cdi.validate import validate_text
    from ctk.host.driver import gather

    node = gather(host.path(driver_root), host.root, Mode.NVML)
    hook = find_hook(host)
    if hook is None:
        raise CtkError(
            "no hook program on the host (ctk-hook or nvidia-cdi-hook)",
            hint="run `ctk install --root <host-root>` to install ctk's native hook",
        )
    options = GenerateOptions(hooks=HookProgram(hook))
    spec = build_spec(node.nvml, node.driver, options, version=node.driver_version)
    spec = host_paths(spec, str(host.root))
    text = render(spec, SpecFormat.YAML)
    report = validate_text(text, SPEC_SOURCE)
    if not report.valid:
        first = report.errors[0]
        raise CtkError(f"the generated spec is invalid ({first.rule}: {first.message})")
    return dict(spec_data(spec)), text, node.driver_version


SPEC_SOURCE = "nvidia.yaml"
