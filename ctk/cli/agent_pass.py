"""One `ctk agent` pass, and its uninstall: gather through `ctk.host.agent`, decide with
`ctk.agent.model` and the runtime planner, write under the host root."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ctk import __version__
from ctk.agent import outlets
from ctk.agent.model import (
    PLAIN_RUNC,
    HandlerBinary,
    OwnFile,
    RestartKind,
    RestartMode,
    State,
    after_write,
    choose_handler_binary,
    decide_restart,
    digest,
    drifted,
    made_folders,
    own_file,
    spec_fresh,
    untouched,
)
from ctk.errors import CtkError
from ctk.host import agent as host_agent
from ctk.host import files
from ctk.host.root import HostRoot
from ctk.runtime_config.engines import ENGINES, Runtime, RuntimeRequest

SPEC_NAME = "nvidia.yaml"


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    """What a pass works on: the host, its engine, and where the outlets go."""

    host: HostRoot
    runtime: Runtime
    restart_mode: RestartMode
    cdi_dir: PurePosixPath  # on the host
    socket: PurePosixPath  # the engine's socket, on the host
    config: str | None = None  # the engine's main config on the host (None: the engine's own)
    drop_in: str | None = None  # ctk's drop-in on the host (None: the engine's own)
    unit: str  # the systemd unit that runs the engine
    configure: bool = True  # False: the distribution owns the config (k3s/RKE2 templates)
    template: tuple[PurePosixPath, ...] = ()  # the templates it renders the config from (host)
    driver_root: PurePosixPath  # on the host
    run: host_agent.Runner
    ready_file: Path | None = None  # in the agent's own file system (a pod's mount)
    prometheus_dir: Path | None = None
    nfd_dir: Path | None = None
    enable_cdi: bool = False
    runtime_path: str | None = None  # --runtime-path (None: chosen per host)
    say: Callable[[str], None] = field(default=_stderr)
    told: set[str] = field(default_factory=set)
    """What `say_once` said: a state that stays as it is (a foreign hook kept) gets one line
    from the agent's process, not one a pass."""

    def say_once(self, line: str) -> None:
        if line not in self.told:
            self.told.add(line)
            self.say(line)


@dataclass(frozen=True, slots=True)
class PassResult:
    """A pass's result: the new state, whether the host's files are right, and readiness."""

    state: State
    ok: bool
    ready: bool


def _config(agent: Agent) -> PurePosixPath:
    return PurePosixPath(agent.config) if agent.config else ENGINES[agent.runtime].config_path


def managed_configs(agent: Agent) -> frozenset[str]:
    """The engine config files this agent may write, restore or remove (host paths)."""
    drop_in = agent.drop_in or ENGINES[agent.runtime].drop_in_path
    return frozenset(str(p) for p in (_config(agent), drop_in) if p)


def check_state(agent: Agent, state: State, name: str) -> None:
    """Refuse a state file (``name``) that names engine configs other than this agent's own: a
    pass or uninstall would overwrite or restore them by what it says."""
    managed = managed_configs(agent)
    foreign = sorted(set(state.configs) - managed)
    if foreign:
        raise CtkError(
            f"{name}: names {', '.join(foreign)}, which this agent does not manage "
            f"({', '.join(sorted(managed))}); nothing was touched",
            hint="run the agent with the --runtime, --config and --drop-in it was installed "
            "with, or move the state file away (the next pass starts afresh)",
        )


def _spec_path(agent: Agent) -> PurePosixPath:
    return agent.cdi_dir / SPEC_NAME


def _configure(agent: Agent, state: State) -> tuple[State, bool, bool]:
    """Apply `ctk runtime configure`'s plan; return the state, whether it changed, and drift."""
    from ctk.runtime_config.changes import dump_record
    from ctk.runtime_config.configure import configure

    handler = _handler(agent)
    current = {name: host_agent.read_config(agent.host, name) for name in state.configs}
    if untouched(state, current) and state.runtime_path == handler.path:
        return state, False, False
    inputs = host_agent.gather_runtime(
        agent.host,
        agent.runtime,
        agent.config,
        drop_in=agent.drop_in,
        record=state.record,
        say=agent.say,
    )
    request = RuntimeRequest(path=handler.path, enable_cdi=agent.enable_cdi)
    plan = configure(agent.runtime, inputs, request)
    for warning in plan.warnings:
        agent.say(f"warning: {warning}")
    changed = plan.changes
    drift = any(drifted(state, c.path, c.before) for c in changed)
    for change in plan.files:
        if change.record is not None:
            state = replace(state, record=dump_record(change.record))
        if change.changed:
            state = after_write(state, change.path, change.before, change.after)
    if drift:
        state = replace(state, drift_repairs=state.drift_repairs + 1)
    if state.runtime_path != handler.path:
        agent.say(f"nvidia runtime: {handler.path} ({handler.why})")
        state = replace(state, runtime_path=handler.path)
    if changed:  # the originals are kept before any file changes: a kill in between loses none
        state = _making(agent, state, [c.path for c in changed if c.after is not None])
        host_agent.write_state(agent.host, state)
    for change in changed:
        host_agent.write_change(agent.host, change)
        what = "created" if change.before is None else "updated"
        agent.say(f"{what} {change.path}" + (" (overwritten by someone else: repaired)" * drift))
    return state, bool(changed), drift


def _making(agent: Agent, state: State, paths: list[str | PurePosixPath]) -> State:
    """``state`` knowing the folders on the host that writing ``paths`` (host paths) will make
    (uninstall removes them once empty, as it found the host)."""
    missing = tuple(str(f) for p in paths for f in host_agent.missing_folders(agent.host, p))
    return replace(state, folders=made_folders(missing, state.folders)) if missing else state


def _handler(agent: Agent) -> HandlerBinary:
    """The binary the nvidia handler runs on this host, and whether the host has it."""
    present, found, runc = host_agent.handler_binaries(agent.host, agent.runtime_path)
    plain = runc if agent.runtime is Runtime.CRIO else PLAIN_RUNC  # (see PLAIN_RUNC)
    return choose_handler_binary(
        agent.runtime_path, present, found, cdi=agent.enable_cdi, runc=plain
    )


def _live_nvidia(agent: Agent, state: State, *, trust_files: bool) -> tuple[bool, int | None]:
    """Whether the running engine has the nvidia runtime, and its PID.

    dockerd says so itself (`GET /info`). containerd and CRI-O are asked nothing live: the
    engine process last seen ready still is; a new process has what its files say
    (`containerd config dump`), when ``trust_files`` (nothing was written since it started).
    """
    pid = host_agent.engine_pid(agent.host, agent.socket)
    if agent.runtime is Runtime.DOCKER:
        try:
            runtimes = host_agent.docker_runtimes(agent.host, agent.socket)
        except CtkError as exc:
            agent.say(f"not ready: {exc.message}")
            return False, pid
        return runtimes is not None and "nvidia" in runtimes, pid
    if not host_agent.engine_up(agent.host, agent.socket):
        return False, None
    if pid is not None and pid == state.ready_pid:
        return True, pid
    if not trust_files:
        return False, pid
    if agent.runtime is Runtime.CONTAINERD:
        runtimes = host_agent.containerd_runtimes(agent.run, _config(agent))
        return runtimes is not None and "nvidia" in runtimes, pid
    return True, pid


def _restart(agent: Agent, state: State, *, changed: bool, live: bool, removal: bool) -> State:
    """Restart (or reload) the engine when the change needs it; count it, report downtime."""
    pending = changed or state.restart_pending
    decision = decide_restart(
        agent.runtime,
        agent.restart_mode,
        changed=pending,
        live_ok=live,
        removal=removal,
        unit=agent.unit,
    )
    if decision.kind is RestartKind.NOTHING:
        return replace(state, restart_pending=False)
    if decision.kind is RestartKind.REPORT:
        agent.say(decision.reason)
        return replace(state, restart_pending=True)
    start = time.monotonic()
    if decision.kind is RestartKind.SIGHUP:
        pid = host_agent.engine_pid(agent.host, agent.socket)
        if pid is None:
            agent.say("restart needed: dockerd's PID is not visible (run with hostPID)")
            return replace(state, restart_pending=True)
        host_agent.reload_engine(pid)
        agent.say(f"reloaded dockerd (SIGHUP to PID {pid}); no downtime")
        return replace(state, restart_pending=False, engine_restarts=state.engine_restarts + 1)
    done = agent.run(decision.argv)
    command = " ".join(decision.argv)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CtkError(
            f"{command} failed (exit {done.returncode}): {detail[0]}",
            hint="the config is written; restart the engine by hand, or use --restart-mode none",
        )
    up = host_agent.wait_for_engine(agent.host, agent.runtime, agent.socket)
    took = time.monotonic() - start
    if up is None:
        agent.say(
            f"restarted {agent.runtime} ({command}); its socket is not back after {took:.1f} s"
        )
    else:
        agent.say(f"restarted {agent.runtime} ({command}); down {took:.2f} s")
    return replace(state, restart_pending=False, engine_restarts=state.engine_restarts + 1)


def _from_template(agent: Agent, state: State) -> tuple[State, bool, int | None]:
    """k3s/RKE2 (--no-configure): their engine lacks the nvidia runtime. It renders its config
    from ``--template`` at start: with --restart-mode systemd, restart it once for each new
    version of the template (never again for the same one, so a template that does not help
    cannot cause a restart loop); otherwise say which restart it needs."""
    current = host_agent.files_digest([agent.host.path(str(t)) for t in agent.template])
    if (
        current is not None
        and current != state.template
        and agent.restart_mode is RestartMode.SYSTEMD
    ):
        # Kept before the restart: an agent killed by it (its pod's engine restarts) must not
        # restart again for the same template.
        state = replace(state, template=current)
        host_agent.write_state(agent.host, state)
        before = state.engine_restarts
        try:
            state = _restart(agent, state, changed=True, live=False, removal=False)
        except CtkError as exc:
            agent.say(f"error: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else ""))
        if state.engine_restarts != before:
            live, pid = _live_nvidia(agent, state, trust_files=True)
            if live:
                return state, live, pid
    agent.say(
        f"not ready: {agent.runtime} has no nvidia runtime, and its config "
        f"{_config(agent)} is the distribution's (--no-configure): it adds the runtime "
        f"from its template at start (systemctl restart {agent.unit})"
    )
    return state, False, None


def _hook(agent: Agent, state: State) -> State:
    """Step 5: the native hook on the host where `ctk install --root` puts it, when missing or
    different (the hook only: the units would name a ctk that lives in the agent's image)."""
    from ctk.host import installation
    from ctk.host.hook_program import packaged_hook
    from ctk.install import DEFAULT_PREFIX, ForeignFile, InstallFile, hook_path, manifest_path

    try:
        content = files.read_bytes(packaged_hook(), limit=64 << 20) or b""
    except CtkError as exc:
        agent.say(f"hook: {exc.message}; the spec names a hook program already on the host")
        return state
    wanted = InstallFile(hook_path(DEFAULT_PREFIX), content, 0o755)
    manifest = files.read_text(agent.host.path(manifest_path(DEFAULT_PREFIX)), missing_ok=True)
    if (
        manifest is not None
        and not state.hook
        and any(str(wanted.path) != entry for entry in _manifest_paths(manifest))
    ):
        return state  # a person's `ctk install` (with units) owns it: theirs to update
    kept = f"hook: kept {wanted.path}: not written by ctk; the spec names it as it is"
    try:  # a file there that ctk did not write is never replaced (the agent has no --force)
        outcome = installation.install(agent.host.root, DEFAULT_PREFIX, (wanted,))
    except ForeignFile:
        agent.say_once(kept)
        return state
    agent.told.discard(kept)  # the hook is the agent's now: a foreign one later is said again
    for item in outcome.written:
        agent.say(f"hook: installed {item.path}")
    return state if state.hook else replace(state, hook=True)


def _manifest_paths(text: str) -> list[str]:
    from ctk.install import parse_manifest

    try:
        return [str(path) for path, _ in parse_manifest(text, "install manifest").files]
    except CtkError:
        return []


def _spec(agent: Agent, state: State) -> tuple[State, bool, str | None]:
    """Refresh the CDI spec on the host; return the state, whether it is valid, driver version."""
    from ctk.cdi.refresh import Outcome as Refresh
    from ctk.cdi.refresh import plan_refresh

    target = agent.host.path(_spec_path(agent))
    inputs = host_agent.nvml_inputs(agent.host, agent.driver_root)
    if spec_fresh(state, inputs, host_agent.file_digest(target)):
        return state, True, state.driver
    try:
        data, text, version = host_agent.generate_spec(agent.host, agent.driver_root)
    except CtkError as exc:
        agent.say(f"cdi: cannot generate the spec: {exc.message}")
        return state, False, None
    plan = plan_refresh(files.read_bytes(target, missing_ok=True), text, data)
    if plan.outcome is not Refresh.KEEP:
        state = _making(agent, state, [_spec_path(agent)])
        files.write_atomic(target, text, mode=0o644, make_parents=True)
        os.chmod(files.write_target(target), 0o644)
        why = "; ".join(plan.changes)
        agent.say(f"cdi: {plan.outcome} {_spec_path(agent)}" + (f" ({why})" if why else ""))
    # Kept: the file holds the same spec in its own layout, so its bytes are what to recognise
    # next time (else every later pass would rebuild the spec to keep it again).
    kept = plan.outcome is Refresh.KEEP
    fresh = replace(
        state,
        spec=str(_spec_path(agent)),
        spec_inputs=inputs,
        spec_digest=host_agent.file_digest(target) if kept else digest(text),
        driver=version,
    )
    return fresh, True, version


def _own(agent: Agent, state: State, path: Path) -> State:
    """``state`` knowing the agent's own file ``path`` as it is now (uninstall removes it only
    while it still holds those bytes), by its host path when it lies under the host root."""
    absolute = Path(os.path.abspath(path))
    seen = str(Path(os.path.realpath(absolute.parent), absolute.name))  # as host.root is
    own = own_file(str(agent.host.root), seen)
    now = host_agent.file_digest(path)
    if own in state.created and (now is None or state.created[own] == now):
        return state  # known, and unchanged or gone (a ready file while not ready)
    legacy = OwnFile(seen)  # an earlier version named it as the agent saw it: renamed in place
    if own.on_host and legacy in state.created:
        created = {(own if f == legacy else f): d for f, d in state.created.items()}
        return replace(state, created={**created, own: now})
    return replace(state, created={**state.created, own: now})  # first seen: in that order


def _own_path(agent: Agent, own: OwnFile) -> Path:
    """Where the agent finds its own file ``own`` (a host path under this agent's host root)."""
    return agent.host.path(own.path) if own.on_host else Path(own.path)


def _mark_ready(agent: Agent, state: State, ready: bool) -> State:
    if agent.ready_file is None:
        return state
    if ready and not agent.ready_file.exists():
        files.write_atomic(agent.ready_file, "", make_parents=True)
        agent.say(f"ready: wrote {agent.ready_file}")
    elif not ready and files.remove(agent.ready_file):
        agent.say(f"not ready: removed {agent.ready_file}")
    return _own(agent, state, agent.ready_file)


def _outlets(agent: Agent, state: State, *, ready: bool, driver: str | None) -> State:
    if agent.prometheus_dir is not None:
        from ctk.doctor.run import diagnose
        from ctk.host.facts import gather

        facts, _ = gather(agent.host.root)
        counters = outlets.Counters(
            drift_repairs=state.drift_repairs,
            engine_restarts=state.engine_restarts,
            last_reconcile=time.time(),
            ready=ready,
            restart_pending=state.restart_pending,
        )
        text = outlets.prometheus_text(diagnose(facts), counters, __version__)
        path = agent.prometheus_dir / outlets.PROM_FILE
        files.write_atomic(path, text, mode=0o644, make_parents=True)
        state = _own(agent, state, path)
    if agent.nfd_dir is not None:
        path = agent.nfd_dir / outlets.NFD_FILE
        text = outlets.nfd_text(ready=ready, driver_version=driver, version=__version__)
        if files.read_text(path, missing_ok=True) != text:
            files.write_atomic(path, text, mode=0o644, make_parents=True)
        state = _own(agent, state, path)
    return state


def reconcile(agent: Agent, state: State) -> PassResult:
    """One pass: configure, restart if needed, hook, spec, readiness, outlets."""
    state = replace(state, runtime=agent.runtime)
    changed = restarted = False
    engine_ok = True
    restarts = state.engine_restarts
    try:  # a config the planner refuses, a failed restart: said, and the loop goes on
        live_before, _ = _live_nvidia(agent, state, trust_files=not state.restart_pending)
        if agent.configure:
            state, changed, _ = _configure(agent, state)
        restarted_before = state.engine_restarts
        state = _restart(agent, state, changed=changed, live=live_before, removal=False)
        restarted = state.engine_restarts != restarted_before
    except CtkError as exc:
        agent.say(f"error: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else ""))
        engine_ok = False
        state = replace(state, restart_pending=state.restart_pending or changed)
    state = _hook(agent, state)
    state, spec_ok, driver = _spec(agent, state)
    trust = restarted or (not changed and not state.restart_pending)
    live, pid = _live_nvidia(agent, state, trust_files=trust)
    if live and pid is not None:
        state = replace(state, ready_pid=pid)
    if not live and not agent.configure:
        state, live, pid = _from_template(agent, state)
        if live and pid is not None:
            state = replace(state, ready_pid=pid)
    binary_ok = True
    if agent.configure:
        handler = _handler(agent)
        binary_ok = handler.present
        if not binary_ok:
            agent.say(f"not ready: the nvidia runtime's binary {handler.why}")
    ready = live and spec_ok and binary_ok
    state = _mark_ready(agent, state, ready)
    state = _outlets(agent, state, ready=ready, driver=driver)
    if engine_ok and not changed and state.engine_restarts == restarts:
        agent.say(f"pass: nothing changed; {'ready' if ready else 'not ready'}")
    return PassResult(state, ok=engine_ok and spec_ok, ready=ready)


def uninstall(agent: Agent, state: State) -> State:
    """Revert exactly what the agent wrote, in the order that never leaves a dangling piece:
    the engine's config (restarted if that changed it), then the CDI spec, then the hook the
    spec names, then the agent's own files."""
    changed = _revert_configs(agent, state)
    if state.template is not None and agent.template:
        # k3s/RKE2: the engine was restarted for a template that is gone or changed since (the
        # chart's uninstall removes its own): restart once more so the engine drops it.
        current = host_agent.files_digest([agent.host.path(str(t)) for t in agent.template])
        changed = changed or current != state.template
    state = replace(
        state, configs={}, record=None, ready_pid=None, runtime_path=None, template=None
    )
    state = _restart(agent, state, changed=changed, live=False, removal=True)
    if state.spec is not None:
        _remove_own(agent, agent.host.path(state.spec), state.spec_digest, state.spec, "spec")
    state = replace(state, spec=None)
    if state.hook:
        from ctk.host import installation
        from ctk.install import DEFAULT_PREFIX

        outcome = installation.uninstall(agent.host.root, DEFAULT_PREFIX)
        for path in outcome.removed if outcome else ():
            agent.say(f"removed {path}")
        for path in outcome.kept if outcome else ():
            agent.say(f"kept {path}: changed since ctk installed it")
        for path in outcome.restored if outcome else ():
            agent.say(f"restored {path} (the file that was there before, from .bak)")
        state = replace(state, hook=False)
    for own, written in state.created.items():
        _remove_own(agent, _own_path(agent, own), written, own.path, "file")
    # Deepest first; one that is not empty stays, and so does one that holds none of this
    # agent's files (a state file edited by hand names no folder it may remove).
    names = [*managed_configs(agent), str(_spec_path(agent))]
    ours = {str(folder) for name in names for folder in PurePosixPath(name).parents}
    for folder in state.folders:
        if folder in ours:
            host_agent.remove_empty_folder(agent.host, folder)
    return replace(state, created={}, folders=())


def _remove_own(agent: Agent, path: Path, written: str | None, name: str, what: str) -> None:
    """Remove ``path`` (shown as ``name``) while it holds the bytes whose digest is ``written``;
    keep it, and say so, where it holds others (someone's since, or unknown: None)."""
    now = host_agent.file_digest(path)
    if now is not None and now != written:
        agent.say(f"kept {name}: not the {what} the agent wrote")
    elif files.remove(path):
        agent.say(f"removed {name}")


def _revert_configs(agent: Agent, state: State) -> bool:
    """Original bytes where the files are still what ctk left; else only ctk's own entries."""
    current = {name: host_agent.read_config(agent.host, name) for name in state.configs}
    untouched = all(digest(current[name]) == w.left for name, w in state.configs.items())
    if untouched:
        # Files that were there first are restored before ctk's own go: a main config never
        # imports a drop-in that is already gone.
        order = sorted(state.configs.items(), key=lambda item: item[1].original is None)
        for name, written in order:
            host_agent.restore(agent.host, name, written.original)
            agent.say(f"restored {name}" if written.original is not None else f"removed {name}")
        return bool(state.configs)
    from ctk.runtime_config.configure import unconfigure

    for name in state.configs:
        if digest(current[name]) != state.configs[name].left:
            agent.say(
                f"warning: {name} changed since ctk wrote it: removing only ctk's entries, "
                "keeping the rest"
            )
    inputs = host_agent.gather_runtime(
        agent.host,
        agent.runtime,
        agent.config,
        drop_in=agent.drop_in,
        record=state.record,
        say=agent.say,
    )
    plan = unconfigure(agent.runtime, inputs, "nvidia")
    for change in plan.changes:
        host_agent.write_change(agent.host, change)
        agent.say(f"{'removed' if change.after is None else 'updated'} {change.path}")
    return bool(plan.changes)
