"""`ctk agent`: the node agent a DaemonSet runs (configure, CDI, drift repair, outlets)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Annotated, Any

import typer
from typer import Option

from ctk.agent.model import RestartMode, RuntimeChoice
from ctk.cli.options import new_app
from ctk.errors import UsageError

ENV = "CTK_AGENT_"
MAX_INTERVAL = 86400.0
"""The longest --interval: a day (past threading's TIMEOUT_MAX, a wait would overflow)."""


def _opt(flag: str, help_text: str) -> Any:
    """An option that also reads CTK_AGENT_<NAME> (DaemonSets pass settings as environment)."""
    env = ENV + flag.lstrip("-").replace("-", "_").upper()
    return Option(flag, envvar=env, help=help_text)


HostRootOption = Annotated[
    str, _opt("--host-root", "Where the host's / is mounted (a pod: /host).")
]
RuntimeOption = Annotated[
    RuntimeChoice, _opt("--runtime", "The engine to configure; auto: the one running on the host.")
]
OnceOption = Annotated[
    bool, _opt("--once", "Run one pass and exit: 0 when the host's files are right, else 1.")
]
IntervalOption = Annotated[
    float, _opt("--interval", "Seconds between passes (drift repair, spec refresh).")
]
UninstallOption = Annotated[bool, _opt("--uninstall", "Revert what the agent wrote, then exit.")]
RestartOption = Annotated[
    RestartMode,
    _opt(
        "--restart-mode",
        "How a changed config takes effect: systemd (systemctl restart in the host's root), "
        "signal (dockerd only), none (report it).",
    ),
]
ReadyOption = Annotated[
    Path | None,
    _opt("--ready-file", "A file that exists only while the node can run GPU containers."),
]
PromOption = Annotated[
    Path | None, _opt("--prometheus-textfile", "Directory for ctk.prom (node-exporter's textfile).")
]
NfdOption = Annotated[
    Path | None, _opt("--nfd-features-dir", "node-feature-discovery's features.d directory.")
]
CdiDirOption = Annotated[str, _opt("--cdi-dir", "Where the CDI spec goes on the host.")]
DriverRootOption = Annotated[
    str, _opt("--driver-root", "The driver's root on the host (/run/nvidia/driver).")
]
ConfigOption = Annotated[
    str | None,
    _opt(
        "--config",
        "The engine's main config on the host [default: the engine's own, e.g. "
        "/etc/containerd/config.toml].",
    ),
]
SocketOption = Annotated[
    str | None,
    _opt(
        "--socket",
        "The engine's socket on the host [default: the engine's own, e.g. "
        "/run/containerd/containerd.sock].",
    ),
]
DropInOption = Annotated[
    str | None,
    _opt(
        "--drop-in",
        "ctk's drop-in on the host (containerd, CRI-O) [default: the engine's own, e.g. "
        "/etc/containerd/conf.d/99-nvidia.toml].",
    ),
]
RestartUnitOption = Annotated[
    str | None,
    _opt(
        "--restart-unit",
        "The systemd unit to restart; a comma-separated list picks the first the host has "
        "(e.g. k3s,k3s-agent) [default: the engine's, e.g. containerd].",
    ),
]
ConfigureOption = Annotated[
    bool,
    Option(
        "--configure/--no-configure",
        envvar=ENV + "CONFIGURE",
        help="Edit the engine's config. Off where the distribution renders it from a template "
        "(k3s, RKE2): the agent then only checks that the live engine has the nvidia runtime.",
    ),
]
TemplateOption = Annotated[
    str | None,
    _opt(
        "--template",
        "With --no-configure: the templates the distribution renders its config from, a comma "
        "list (k3s/RKE2 config-v3.toml.tmpl,config.toml.tmpl, on the host); the engine is "
        "restarted once when they are new or changed and the live engine lacks the nvidia runtime.",
    ),
]
RuntimePathOption = Annotated[
    str | None,
    _opt(
        "--runtime-path",
        "The binary the engine's nvidia handler runs [default: nvidia-container-runtime where the "
        "host has it; else, with --enable-cdi, plain runc].",
    ),
]
EnableCdiOption = Annotated[
    bool, _opt("--enable-cdi", "Also enable CDI in the engine (containerd, CRI-O, Docker).")
]
HostExecOption = Annotated[
    str | None,
    _opt(
        "--host-exec",
        "Command line that runs a command in the host's root [default: chroot HOST_ROOT].",
    ),
]


def _host_path(flag: str, value: str) -> PurePosixPath:
    if not value.startswith("/"):
        raise UsageError(f"{flag} {value!r}: must be an absolute path on the host")
    return PurePosixPath(value)


def agent(
    *,
    host_root: HostRootOption = "/",
    runtime: RuntimeOption = RuntimeChoice.AUTO,
    once: OnceOption = False,
    interval: IntervalOption = 60.0,
    uninstall: UninstallOption = False,
    restart_mode: RestartOption = RestartMode.SYSTEMD,
    ready_file: ReadyOption = None,
    prometheus_textfile: PromOption = None,
    nfd_features_dir: NfdOption = None,
    cdi_dir: CdiDirOption = "/var/run/cdi",
    driver_root: DriverRootOption = "/",
    config: ConfigOption = None,
    socket: SocketOption = None,
    drop_in: DropInOption = None,
    restart_unit: RestartUnitOption = None,
    configure: ConfigureOption = True,
    template: TemplateOption = None,
    enable_cdi: EnableCdiOption = False,
    runtime_path: RuntimePathOption = None,
    host_exec: HostExecOption = None,
) -> None:
    """Keep this node's engine, CDI spec and readiness right (the DaemonSet's agent)."""
    from ctk.agent.model import SOCKETS, check_restart_mode, detect_runtime
    from ctk.cli.agent_pass import Agent, check_state, reconcile
    from ctk.cli.agent_pass import uninstall as revert
    from ctk.host import agent as host_agent
    from ctk.host.root import HostRoot, existing_root
    from ctk.runtime_config.engines import Runtime

    if not (0 < interval <= MAX_INTERVAL):  # also refuses nan, which compares false
        raise UsageError(
            f"--interval {interval:g}: must be more than 0 and at most {MAX_INTERVAL:g} seconds"
        )
    if host_root and not host_root.startswith("/"):
        raise UsageError(f"--host-root {host_root!r}: must be an absolute path")
    host = HostRoot(Path(os.path.realpath(existing_root("--host-root", host_root).root)))
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        sys.stderr.write(f"{signal.Signals(signum).name}: stopping without reverting anything\n")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    with host_agent.agent_lock(host):
        state = host_agent.read_state(host)
        if runtime is not RuntimeChoice.AUTO:
            chosen = Runtime(runtime.value)
        elif uninstall and state.runtime is not None:
            chosen = state.runtime
        else:
            chosen = detect_runtime(host_agent.presence(host))
        check_restart_mode(chosen, restart_mode)
        settings = Agent(
            host=host,
            runtime=chosen,
            restart_mode=restart_mode,
            cdi_dir=_host_path("--cdi-dir", cdi_dir),
            socket=_host_path("--socket", socket) if socket else SOCKETS[chosen],
            config=str(_host_path("--config", config)) if config else None,
            drop_in=str(_host_path("--drop-in", drop_in)) if drop_in else None,
            unit=host_agent.pick_unit(host, restart_unit, chosen),
            configure=configure,
            template=tuple(
                _host_path("--template", t.strip())
                for t in (template or "").split(",")
                if t.strip()
            ),
            runtime_path=runtime_path,
            driver_root=_host_path("--driver-root", driver_root),
            run=host_agent.host_runner(host.root, host_exec),
            ready_file=ready_file,
            prometheus_dir=prometheus_textfile,
            nfd_dir=nfd_features_dir,
            enable_cdi=enable_cdi,
        )
        check_state(settings, state, str(host_agent.state_path(host)))
        if uninstall:
            revert(settings, state)  # a restart still to be done was said, as its last word
            host_agent.forget_state(host)
            host_agent.remove_lock(host)  # last, while held: nothing of the agent is left
            raise typer.Exit(0)
        while True:
            outcome = reconcile(settings, state)
            if host_agent.read_state(host) != outcome.state:
                host_agent.write_state(host, outcome.state)
            state = outcome.state
            if once:
                raise typer.Exit(0 if outcome.ok else 1)
            if stop.wait(interval):
                raise typer.Exit(0)


app = new_app()
app.command("agent")(agent)
