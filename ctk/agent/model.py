"""What `ctk agent` decides in a pass: which engine, whether and how to restart it, its state.

Pure: the host adapter (`ctk.host.agent`) observes the node, these functions decide, the CLI
acts. The state is the agent's memory between passes and processes (counters, what it wrote).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import PurePosixPath
from typing import Final

from ctk.enums import StrEnum
from ctk.errors import CtkError, UsageError
from ctk.runtime_config.engines import Runtime

STATE_DIR: Final = PurePosixPath("/var/lib/ctk/agent")  # on the host: survives reboots
LOCK_DIR: Final = PurePosixPath("/run/ctk")  # on the host: one agent per node
STATE_VERSION: Final = 1


class RuntimeChoice(StrEnum):
    """`--runtime`: an engine, or `auto` (the one whose socket is on the host)."""

    AUTO = "auto"
    CONTAINERD = "containerd"
    DOCKER = "docker"
    CRIO = "crio"


class RestartMode(StrEnum):
    """`--restart-mode`: how a changed engine config is put into effect."""

    SYSTEMD = "systemd"  # systemctl restart, run in the host's root
    SIGNAL = "signal"  # SIGHUP: dockerd reloads; containerd 1.6 exits (status 129)
    NONE = "none"  # report "restart needed", do nothing


# Where each engine listens, and the systemd unit that runs it.
SOCKETS: Final[Mapping[Runtime, PurePosixPath]] = {
    Runtime.CONTAINERD: PurePosixPath("/run/containerd/containerd.sock"),
    Runtime.DOCKER: PurePosixPath("/var/run/docker.sock"),
    Runtime.CRIO: PurePosixPath("/var/run/crio/crio.sock"),
}
UNITS: Final[Mapping[Runtime, str]] = {
    Runtime.CONTAINERD: "containerd",
    Runtime.DOCKER: "docker",
    Runtime.CRIO: "crio",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Presence:
    """What the host shows of one engine."""

    socket: bool = False
    config: bool = False
    cri_disabled: bool = False  # containerd only: Docker's own containerd (CRI plugin off)


def detect_runtime(present: Mapping[Runtime, Presence]) -> Runtime:
    """The engine to configure: the one with a live socket (then the one with a config).

    Docker hosts also run a containerd, whose CRI plugin is usually disabled: that one does
    not count as containerd. Two candidates (or none) need `--runtime`.
    """

    def counts(runtime: Runtime, seen: Presence) -> bool:
        return not (runtime is Runtime.CONTAINERD and seen.cri_disabled)

    for attribute in ("socket", "config"):
        found = [
            r
            for r in Runtime
            if r in present and getattr(present[r], attribute) and counts(r, present[r])
        ]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = " and ".join(found)
            raise UsageError(
                f"found more than one container engine on the host ({names}); "
                "ctk agent configures one",
                hint="pass --runtime (or CTK_AGENT_RUNTIME) with the engine Kubernetes uses",
            )
    raise UsageError(
        "no container engine found on the host (no containerd, dockerd or CRI-O socket or "
        "config under --host-root)",
        hint="check --host-root, or pass --runtime",
    )


# Where nvidia-container-toolkit puts its runtime: its packages, then the GPU Operator's install.
NVIDIA_RUNTIME_PATHS: Final = (
    "/usr/bin/nvidia-container-runtime",
    "/usr/local/nvidia/toolkit/nvidia-container-runtime",
)
# The OCI runtime the nvidia handler runs when CDI is on and no nvidia-container-runtime is
# there. containerd's runc shim and dockerd look a bare name up in their PATH, as for their own
# `runc` handler (microk8s and k3s bundle theirs there); CRI-O stats runtime_path as given, so it
# gets the absolute path of the first of `RUNC_PATHS` the host has.
PLAIN_RUNC: Final = "runc"
RUNC_PATHS: Final = (
    "/usr/bin/runc",
    "/usr/sbin/runc",
    "/usr/local/bin/runc",
    "/usr/local/sbin/runc",
)


@dataclass(frozen=True, slots=True)
class HandlerBinary:
    """The binary the engine's nvidia handler runs, whether the host has it, and why this one."""

    path: str
    present: bool
    why: str


def choose_handler_binary(
    explicit: str | None,
    explicit_present: bool,
    found: tuple[str, ...],
    *,
    cdi: bool,
    runc: str | None,
) -> HandlerBinary:
    """What the nvidia handler runs (ctk ships no runtime binary of its own).

    ``--runtime-path`` wins. Else nvidia-container-runtime where the host has it (``found``:
    the `NVIDIA_RUNTIME_PATHS` present), as nvidia-ctk users expect of the handler. Else, with
    CDI on, plain runc (``runc``: what the engine is given for it, `PLAIN_RUNC` or an absolute
    path; None where the host has none): the engine injects the CDI devices a pod asks for,
    whatever its handler. Else
    nvidia-container-runtime's usual path, reported missing: the handler would fail every
    container, so the node is not ready.
    """
    if explicit:
        why = (
            "--runtime-path"
            if explicit_present
            else f"{explicit} (--runtime-path) is not on the host"
        )
        return HandlerBinary(explicit, explicit_present, why)
    if found:
        return HandlerBinary(found[0], True, "nvidia-container-runtime is on the host")
    if cdi and runc is not None:
        return HandlerBinary(
            runc,
            True,
            "no nvidia-container-runtime on the host and CDI is on: plain runc, GPUs only "
            "through CDI device requests (e.g. nvidia.com/gpu=all)",
        )
    if cdi:
        return HandlerBinary(
            RUNC_PATHS[0],
            False,
            "neither nvidia-container-runtime nor runc is on the host (looked for runc in "
            f"{', '.join(str(PurePosixPath(p).parent) for p in RUNC_PATHS)}): install "
            "nvidia-container-toolkit, or runc",
        )
    return HandlerBinary(
        NVIDIA_RUNTIME_PATHS[0],
        False,
        f"{NVIDIA_RUNTIME_PATHS[0]} is not on the host (ctk does not ship it): install "
        "nvidia-container-toolkit, or enable CDI (--enable-cdi) to run the handler with "
        "plain runc",
    )


def check_restart_mode(runtime: Runtime, mode: RestartMode) -> None:
    """Refuse a restart mode that would harm the engine, before anything is written."""
    if mode is not RestartMode.SIGNAL or runtime is Runtime.DOCKER:
        return
    if runtime is Runtime.CONTAINERD:
        raise UsageError(
            "--restart-mode signal cannot apply a containerd config: containerd does not "
            "reload on SIGHUP, it exits (status 129) and stays down until systemd restarts it",
            hint="use --restart-mode systemd (a restart keeps running containers) or none",
        )
    raise UsageError(
        f"--restart-mode signal is not supported for {runtime}: it does not reload on SIGHUP",
        hint="use --restart-mode systemd or none",
    )


class RestartKind(StrEnum):
    """What the agent does to put a changed config into effect."""

    NOTHING = "nothing"  # no change, or the live engine already has what the file says
    SYSTEMCTL = "systemctl"
    SIGHUP = "sighup"
    REPORT = "report"  # restart needed: the operator (or --restart-mode none) does it


@dataclass(frozen=True, slots=True)
class Restart:
    """The restart a pass decided on; ``argv`` for systemctl, ``reason`` for a report."""

    kind: RestartKind
    argv: tuple[str, ...] = ()
    reason: str = ""


def decide_restart(
    runtime: Runtime,
    mode: RestartMode,
    *,
    changed: bool,
    live_ok: bool,
    removal: bool,
    unit: str | None = None,
) -> Restart:
    """How to make the engine use its changed config.

    ``live_ok``: the running engine already has the nvidia runtime (a config overwritten on disk
    while the engine kept running is repaired without a restart). ``removal``: the change takes
    something out; dockerd keeps removed keys across a SIGHUP reload, so only a restart works.
    ``unit``: the systemd unit running the engine (default: the engine's own; k3s: `k3s`).
    """
    if not changed or (live_ok and not removal):
        return Restart(RestartKind.NOTHING)
    unit = unit or UNITS[runtime]
    if mode is RestartMode.SYSTEMD:
        return Restart(RestartKind.SYSTEMCTL, ("systemctl", "restart", unit))
    if mode is RestartMode.SIGNAL and runtime is Runtime.DOCKER and not removal:
        return Restart(RestartKind.SIGHUP)
    if mode is RestartMode.SIGNAL:
        return Restart(
            RestartKind.REPORT,
            reason=f"restart needed: systemctl restart {unit} (dockerd keeps removed runtimes "
            "across a SIGHUP reload)",
        )
    return Restart(RestartKind.REPORT, reason=f"restart needed: systemctl restart {unit}")


def digest(text: str | None) -> str | None:
    """The sha256 of a file's text (None: missing)."""
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    """A host file the agent changed: what was there first, and the digest of what it left."""

    original: str | None  # the text before ctk's first change (None: there was no file)
    left: str | None  # sha256 of what ctk left (None: ctk removed it)


@dataclass(frozen=True, slots=True)
class OwnFile:
    """A file of the agent's own (ready file, outlet) as its state names it: a host path when the
    file lies under the host root (``on_host``: found under whatever --host-root the next agent
    has), else a path in the agent's own file system (a pod's mount)."""

    path: str
    on_host: bool = False


def own_file(host_root: str, path: str) -> OwnFile:
    """``path`` (absolute, normalised, as the agent sees it) as the state records it: under
    ``host_root`` (the agent's view of the host's `/`), the host's own path."""
    root = host_root.rstrip("/")
    if not root:  # the agent runs on the host: its view is the host's
        return OwnFile(path, on_host=True)
    if path.startswith(root + "/"):
        return OwnFile(path[len(root) :], on_host=True)
    return OwnFile(path)


def made_folders(missing: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
    """The folders the agent made (host paths): ``known`` and the newly ``missing`` ones, deepest
    first, so that uninstall removes each once it is empty, children before parents."""
    folders = dict.fromkeys((*missing, *known))
    return tuple(sorted(folders, key=lambda p: len(PurePosixPath(p).parts), reverse=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class State:
    """The agent's memory across passes and processes (the JSON under /var/lib/ctk/agent)."""

    runtime: Runtime | None = None
    drift_repairs: int = 0
    engine_restarts: int = 0
    ready_pid: int | None = None  # the engine process last seen with the nvidia runtime
    restart_pending: bool = False  # a change waits for a restart the agent did not do
    configs: Mapping[str, Written] = field(default_factory=dict)  # engine config files
    record: str | None = None  # `ctk runtime configure`'s undo record of the main config
    spec: str | None = None  # the host's CDI spec the agent wrote
    spec_inputs: str | None = None  # digest of the NVML facts the spec was built from
    spec_digest: str | None = None  # digest of the spec text written
    driver: str | None = None  # the driver version the spec was built for
    hook: bool = False  # the agent installed the native hook (uninstall removes it)
    runtime_path: str | None = None  # the binary the nvidia handler was configured with
    template: str | None = None  # digest of the k3s/RKE2 template the engine was restarted for
    # files of its own (outlets, ready): where -> digest of the bytes it wrote there (None:
    # unknown, from an earlier version's state; such a file is kept)
    created: Mapping[OwnFile, str | None] = field(default_factory=dict)
    # folders on the host it made for the engine's files and the spec (host paths, deepest
    # first): uninstall removes each that is empty (etc/containerd/conf.d)
    folders: tuple[str, ...] = ()


def untouched(state: State, current: Mapping[str, str | None]) -> bool:
    """Whether every config ctk changed is still exactly what it left (nothing to plan)."""
    return bool(state.configs) and all(
        digest(current.get(path)) == written.left for path, written in state.configs.items()
    )


def spec_fresh(state: State, inputs: str | None, current: str | None) -> bool:
    """Whether the spec needs no rebuild: same driver, GPUs and MIG layout, file as written."""
    return (
        inputs is not None
        and inputs == state.spec_inputs
        and current is not None
        and current == state.spec_digest
    )


def drifted(state: State, path: str, current: str | None) -> bool:
    """Whether a config file ctk wrote was changed by someone else since."""
    known = state.configs.get(path)
    return known is not None and known.left != digest(current)


def after_write(state: State, path: str, before: str | None, after: str | None) -> State:
    """``state`` once ``path`` went from ``before`` to ``after``.

    The original is what was there before ctk's first change; when someone else rewrote the
    file since (drift), their version becomes the original that uninstall restores.
    """
    known = state.configs.get(path)
    original = before if known is None or known.left != digest(before) else known.original
    configs = {**state.configs, path: Written(original=original, left=digest(after))}
    return replace(state, configs=configs)


def dump_state(state: State) -> str:
    """The state as JSON text."""
    data = {
        "version": STATE_VERSION,
        "runtime": state.runtime,
        "drift_repairs": state.drift_repairs,
        "engine_restarts": state.engine_restarts,
        "ready_pid": state.ready_pid,
        "restart_pending": state.restart_pending,
        "configs": {
            path: {"original": w.original, "left": w.left} for path, w in state.configs.items()
        },
        "record": state.record,
        "spec": state.spec,
        "spec_inputs": state.spec_inputs,
        "spec_digest": state.spec_digest,
        "driver": state.driver,
        "hook": state.hook,
        "runtime_path": state.runtime_path,
        "template": state.template,
        "created": [_own_entry(f, d) for f, d in state.created.items()],  # in order
        "folders": list(state.folders),
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _own_entry(own: OwnFile, written: str | None) -> dict[str, object]:
    entry: dict[str, object] = {"path": own.path, "digest": written}
    if own.on_host:
        entry["host"] = True
    return entry


def _schema_problem(data: object) -> str | None:
    """Where and how ``data`` breaks ctk/schemas/agent-state.json (None: it matches)."""
    import jsonschema

    schema = json.loads(resources.files("ctk").joinpath("schemas/agent-state.json").read_text())
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(data)
    )
    if error is None:
        return None
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where.lstrip('.') or 'the document'}: {error.message}"


def load_state(name: str, text: str | None) -> State:
    """Parse the state file ``name`` (missing: a fresh state); `CtkError` when it is not JSON or
    does not match its schema (ctk/schemas/agent-state.json): the agent restores, overwrites and
    deletes files by what it says, so a value it does not expect is never acted on."""
    if text is None:
        return State()
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError(f"not a version {STATE_VERSION} agent state")
        problem = _schema_problem(data)
        if problem is not None:
            raise ValueError(problem)
        configs = {
            str(path): Written(original=_opt_str(w["original"]), left=_opt_str(w["left"]))
            for path, w in dict(data.get("configs", {})).items()
        }
        runtime = data.get("runtime")
        ready = data.get("ready_pid")
        return State(
            runtime=None if runtime is None else Runtime(runtime),
            drift_repairs=int(data.get("drift_repairs", 0)),
            engine_restarts=int(data.get("engine_restarts", 0)),
            ready_pid=None if ready is None else int(ready),
            restart_pending=bool(data.get("restart_pending", False)),
            configs=configs,
            record=_opt_str(data.get("record")),
            spec=_opt_str(data.get("spec")),
            spec_inputs=_opt_str(data.get("spec_inputs")),
            spec_digest=_opt_str(data.get("spec_digest")),
            driver=_opt_str(data.get("driver")),
            hook=bool(data.get("hook", False)),
            runtime_path=_opt_str(data.get("runtime_path")),
            template=_opt_str(data.get("template")),
            created=_created(data.get("created", [])),
            folders=tuple(str(p) for p in data.get("folders", [])),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CtkError(
            f"{name}: not a ctk agent state file ({exc})",
            hint="move it away; the next pass starts afresh (its counters restart at 0)",
        ) from exc


def _created(value: object) -> dict[OwnFile, str | None]:
    """Where -> digest, in the order the agent made them (a plain path: an earlier version's
    entry, what it wrote unknown; no ``host``: an earlier version's path in the agent's view)."""
    assert isinstance(value, list)  # the schema allows nothing else
    found: dict[OwnFile, str | None] = {}
    for entry in value:
        if isinstance(entry, dict):
            own = OwnFile(str(entry["path"]), on_host=bool(entry.get("host", False)))
            found[own] = None if entry["digest"] is None else str(entry["digest"])
        else:
            found[OwnFile(str(entry))] = None
    return found


def _opt_str(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected a string or null, not {type(value).__name__}")
