"""containerd checks (`containerd.*`): the nvidia runtime, drop-ins, cgroups, CDI."""

from __future__ import annotations

import posixpath
from dataclasses import replace

from ctk.doctor.checks.engine_cdi import cdi_only, cdi_unusable, plugin_strategies
from ctk.doctor.checks.engine_config import (
    cdi_default_on,
    cdi_setting,
    cdi_unsupported,
    containerd_unused,
    engine_not_installed,
    nvidia_runtime_entry,
    runtime_binary_missing,
)
from ctk.doctor.checks.installers import (
    containerd_change,
    containerd_distribution,
    restart_containerd,
)
from ctk.doctor.checks.mig import kube
from ctk.doctor.facts import NodeFacts, Unavailable, offers_through_dra
from ctk.doctor.fixes import Suggestion
from ctk.doctor.model import (
    HOST_ONLY,
    Evidence,
    Result,
    Severity,
    Status,
    check,
    fail,
    ok,
    skip,
    unknown,
    warn,
)
from ctk.errors import CtkError
from ctk.runtime_config import imports as containerd_imports
from ctk.runtime_config.engines import CDI_SPEC_DIRS, Runtime

KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"


def _toml_bool(value: bool | None) -> str:
    return "true" if value else "false"


def _imported(config: str, entries: tuple[str, ...], path: str) -> bool:
    """Whether containerd loads ``path`` through ``entries`` (Go's glob: `*` stops at `/`)."""
    try:
        return containerd_imports.imported(config, entries, path)
    except CtkError:  # a malformed pattern: containerd refuses to start, and loads nothing
        return False


@check(
    "containerd.drop-in-not-imported",
    severity=Severity.ERROR,
    title="containerd imports the NVIDIA drop-in",
    remedy="Add the conf.d glob to imports in config.toml (or rerun runtime configure).",
    sources=("https://github.com/NVIDIA/nvidia-container-toolkit/blob/main/CHANGELOG.md",),
    where=HOST_ONLY,
)
def drop_in_not_imported(facts: NodeFacts) -> Result:
    """A regenerated config.toml lost its `imports`, and the drop-in silently vanished.

    A finding on any node with containerd, also where it serves only Docker: someone wrote the
    drop-in for containerd, which never reads it (an error where a kubelet relies on containerd).
    """
    containerd = facts.engine(Runtime.CONTAINERD)
    if not containerd.installed:
        return skip("containerd is not installed")
    if containerd.needs_root:
        path = containerd.root_only or containerd.config_path
        return unknown(
            f"{path} is not readable without root: containerd's imports are unknown",
            needs_root=True,
        )
    if containerd.error is not None:
        # unparseable: its imports are unknown, and the parse error (reported by
        # containerd.runtime-not-configured) is the root cause, with no fix to offer here
        return skip(
            f"{containerd.config_path} does not parse (see containerd.runtime-not-configured)"
        )
    if not containerd.drop_ins:
        return skip("no containerd drop-in files")
    orphans = [
        path
        for path in containerd.drop_ins
        if not _imported(containerd.config_path, containerd.imports, path)
    ]
    if not orphans:
        return ok(f"{len(containerd.drop_ins)} drop-in(s) imported")
    imports = ", ".join(containerd.imports) or "none"
    summary = (
        f"containerd ignores {', '.join(orphans)}: {containerd.config_path} does not import it"
    )
    evidence = (
        Evidence(containerd.config_path, f"imports: {imports}"),
        *(Evidence(path, "exists, not imported") for path in orphans),
    )
    remedy = containerd_change(facts, "import the drop-in (imports)")
    found = fail(
        summary, *evidence, commands=remedy.commands, fixes=remedy.fixes, notes=remedy.notes
    )
    if facts.kubelet:  # the kubelet's pods need what the drop-in says
        return found
    return replace(found, status=Status.WARN, severity=Severity.WARNING)


@check(
    "containerd.drop-in-copy-stale",
    severity=Severity.WARNING,
    title="ctk's containerd drop-in matches the settings it copied",
    remedy="Run `ctk runtime configure --runtime=containerd` again to refresh the copy; restart.",
    sources=("https://github.com/containerd/containerd/blob/main/docs/cri/config.md",),
    where=HOST_ONLY,
)
def drop_in_copy_stale(facts: NodeFacts) -> Result:
    """ctk's drop-in carries a copy of config.toml's CRI plugin settings (containerd 1.x lets an
    imported file replace the whole table), and config.toml was edited since: containerd uses
    the copy's old values, so the edit silently has no effect."""
    containerd = facts.engine(Runtime.CONTAINERD)
    blocked = engine_not_installed(containerd)
    if blocked is not None:
        return blocked
    if containerd.drop_in_copy is None:
        return ok("no drop-in carries a copy of containerd's CRI settings")
    drop_in, differing = containerd.drop_in_copy
    if not differing:
        return ok(f"{drop_in} carries the CRI settings of the files before it as they are")
    shown = ", ".join(differing[:5]) + (f" and {len(differing) - 5} more" if differing[5:] else "")
    remedy = containerd_change(facts, "copy the current CRI settings into the drop-in")
    return warn(
        f"{drop_in} carries an old copy of containerd's CRI settings: containerd uses the copy's "
        f"{shown}, not what {containerd.config_path} and the files before the drop-in say now",
        Evidence(drop_in, f"copied settings that differ: {', '.join(differing)}"),
        Evidence(containerd.config_path, "edited after ctk copied its CRI settings"),
        commands=remedy.commands,
        fixes=remedy.fixes,
        notes=(
            *remedy.notes,
            "configure writes the copy afresh (on containerd 2.x, which merges imported files "
            "key by key, a drop-in with only ctk's additions instead)",
        ),
    )


@check(
    "containerd.runtime-not-configured",
    severity=Severity.ERROR,
    title="containerd has the nvidia runtime",
    remedy="Add the nvidia runtime to containerd's config and restart containerd.",
    sources=(
        "https://github.com/NVIDIA/gpu-operator/issues/413",
        "https://github.com/NVIDIA/k8s-device-plugin/issues/479",
    ),
    depends_on=("toolkit.not-installed",),
    where=HOST_ONLY,
)
def containerd_runtime(facts: NodeFacts) -> Result:
    """`no runtime for "nvidia" is configured`; none needed where containerd reads a usable
    nvidia.com/gpu spec (`cdi_only`)."""
    containerd = facts.engine(Runtime.CONTAINERD)
    blocked = containerd_unused(facts) or engine_not_installed(containerd)
    if blocked is not None and containerd.error is None:
        return blocked
    if containerd.error is not None:
        return fail(
            f"{containerd.config_path} does not parse: {containerd.error}",
            Evidence(containerd.config_path, containerd.error),
            commands=(f"containerd --config {containerd.config_path} config dump",),
        )
    runtime, evidence = nvidia_runtime_entry(containerd)
    if runtime is not None:
        default = containerd.default_runtime or "runc"
        return ok(f"nvidia runtime configured (default runtime {default})", *evidence)
    missing = runtime_binary_missing(containerd, restart_containerd(facts), facts=facts)
    if missing is not None:
        return missing
    cdi = cdi_only(facts, Runtime.CONTAINERD)
    if cdi is not None:
        return cdi
    remedy = containerd_change(facts, "add the nvidia runtime")
    distribution = containerd_distribution(facts)
    found_by_itself = (
        ()
        if distribution is None or distribution.template is None
        else (
            f"{distribution.name} adds the nvidia runtime itself when it finds "
            f"nvidia-container-runtime at start: install the NVIDIA Container Toolkit and "
            f"restart {distribution.unit}",
        )
    )
    return fail(
        "containerd has no usable nvidia runtime: pods fail with "
        "'no runtime for \"nvidia\" is configured'",
        *evidence,
        *cdi_unusable(facts, Runtime.CONTAINERD),
        commands=remedy.commands,
        fixes=remedy.fixes,
        notes=(*found_by_itself, *remedy.notes),
    )


@check(
    "containerd.systemd-cgroup-mismatch",
    severity=Severity.ERROR,
    title="the nvidia runtime uses the same cgroup driver as runc",
    remedy="Make nvidia's SystemdCgroup match runc's and kubelet's cgroup driver; restart.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/28",
        "https://github.com/k3s-io/k3s/issues/8470",
    ),
    depends_on=("containerd.runtime-not-configured",),
    where=HOST_ONLY,
)
def systemd_cgroup_mismatch(facts: NodeFacts) -> Result:
    """nvidia's SystemdCgroup differs from runc's, or from kubelet's cgroupDriver."""
    containerd = facts.engine(Runtime.CONTAINERD)
    unused = containerd_unused(facts)
    if unused is not None:
        return unused
    nvidia = containerd.runtimes.get("nvidia")
    if nvidia is None:
        return skip("no nvidia runtime configured")
    want: list[Evidence] = []
    runc = containerd.runtimes.get("runc")
    if runc is not None and bool(runc.systemd_cgroup) != bool(nvidia.systemd_cgroup):
        want.append(
            Evidence(
                containerd.config_path, f"runc SystemdCgroup = {_toml_bool(runc.systemd_cgroup)}"
            )
        )
    kubelet = facts.kubelet_cgroup_driver
    if isinstance(kubelet, str) and (kubelet == "systemd") != bool(nvidia.systemd_cgroup):
        want.append(Evidence(KUBELET_CONFIG, f"cgroupDriver: {kubelet}"))
    nvidia_says = Evidence(
        containerd.config_path, f"nvidia SystemdCgroup = {_toml_bool(nvidia.systemd_cgroup)}"
    )
    if not want:
        if isinstance(kubelet, Unavailable) and runc is None:
            return unknown(
                f"kubelet's cgroup driver: {kubelet.reason}", needs_root=kubelet.needs_root
            )
        return ok(
            f"nvidia agrees with runc/kubelet: SystemdCgroup = {_toml_bool(nvidia.systemd_cgroup)}"
        )
    target = "false" if nvidia.systemd_cgroup else "true"
    distribution = containerd_distribution(facts)
    commands: tuple[str, ...] = (restart_containerd(facts),)
    where = "" if distribution is None else f" in {distribution.template or containerd.config_path}"
    notes = (f"set SystemdCgroup = {target} under the nvidia runtime's options{where}",)
    if any(e.source == KUBELET_CONFIG for e in want):
        # a distribution runs its kubelet in the same unit as containerd
        commands = commands if distribution else ("sudo systemctl restart containerd kubelet",)
        notes = (
            "make kubelet and containerd agree: cgroupDriver: systemd in "
            f"{KUBELET_CONFIG} (recommended under systemd), or SystemdCgroup = false for runc "
            "and nvidia",
        )
    return fail(
        "the nvidia runtime's SystemdCgroup differs from "
        + " and ".join("runc's" if e.source != KUBELET_CONFIG else "kubelet's" for e in want)
        + ": pods fail with 'expected cgroupsPath to be of format \"slice:prefix:name\"' or "
        "land in the wrong hierarchy",
        nvidia_says,
        *want,
        commands=commands,
        notes=notes,
    )


@check(
    "containerd.not-default-no-runtimeclass",
    severity=Severity.ERROR,
    title="Kubernetes pods can reach the nvidia runtime",
    remedy="Make nvidia the default runtime, or create a RuntimeClass with handler nvidia.",
    sources=("https://github.com/NVIDIA/k8s-device-plugin",),
    depends_on=("containerd.runtime-not-configured",),
    where=HOST_ONLY,
)
def not_default_no_runtimeclass(facts: NodeFacts) -> Result:
    """Neither default runtime nor a RuntimeClass: GPU pods run under runc."""
    containerd = facts.engine(Runtime.CONTAINERD)
    if not containerd.installed:  # a CRI-O node: nothing of containerd's to judge
        return skip("containerd is not installed")
    node = kube(facts)
    if isinstance(node, Result):
        return node
    if "nvidia" not in containerd.runtimes:  # CDI alone gives GPUs to pods under runc
        return skip("containerd has no nvidia runtime (see containerd.runtime-not-configured)")
    if containerd.default_runtime == "nvidia":
        return ok("nvidia is containerd's default runtime")
    if offers_through_dra(facts, node):  # GPU pods get CDI devices from the DRA plugin, under runc
        return skip("the node hands out its GPUs through DRA (see dra.engine-cdi-unresolvable)")
    handlers = set(node.get("runtimeclass_handlers", ()))
    if "nvidia" in handlers:
        return ok("a RuntimeClass has handler nvidia")
    runtime_class = "create a RuntimeClass named nvidia with handler nvidia"
    distribution = containerd_distribution(facts)
    if distribution is not None and distribution.node_config is not None:
        # k3s/RKE2 make a runtime the default from their own option, not from config.toml
        commands: tuple[str, ...] = (restart_containerd(facts),)
        fixes: tuple[Suggestion, ...] = ()
        notes: tuple[str, ...] = (
            f"{runtime_class} (the way {distribution.name} documents) and give GPU pods "
            "runtimeClassName: nvidia",
            f"or make nvidia the default: default-runtime: nvidia in {distribution.node_config} "
            f"(the --default-runtime option), then restart {distribution.unit}",
        )
    else:
        change = 'set default_runtime_name = "nvidia"'
        remedy = containerd_change(facts, change, set_as_default=True)
        commands, fixes = remedy.commands, remedy.fixes
        notes = (*remedy.notes, f"or {runtime_class}")
    return fail(
        "nvidia is neither containerd's default runtime nor the handler of a RuntimeClass: "
        "GPU pods run under runc and see no GPU",
        Evidence(containerd.config_path, f"default_runtime_name = {containerd.default_runtime}"),
        Evidence("RuntimeClasses", ", ".join(sorted(handlers)) or "none"),
        *_managed_evidence(facts),
        commands=commands,
        fixes=fixes,
        notes=notes,
    )


def _managed_evidence(facts: NodeFacts) -> tuple[Evidence, ...]:
    """Which distribution runs containerd here, where one does."""
    distribution = containerd_distribution(facts)
    if distribution is None:
        return ()
    return (Evidence(distribution.containerd_config, f"{distribution.name}'s containerd"),)


@check(
    "containerd.cdi-disabled",
    severity=Severity.WARNING,
    title="containerd's CDI support is on where CDI is used",
    remedy="Enable CDI in containerd's CRI plugin (containerd 1.7+), restart containerd.",
    sources=("https://github.com/kubernetes-sigs/kind/pull/3530",),
    depends_on=("containerd.runtime-not-configured",),
    where=HOST_ONLY,
)
def containerd_cdi(facts: NodeFacts) -> Result:
    """`cdi_spec_dirs` changed from the default (or cdi-cri among the device plugin's list
    strategies) but `enable_cdi` off.

    `containerd config default` (1.7) writes the default directories with `enable_cdi = false`:
    those say nothing about CDI being wanted."""
    containerd = facts.engine(Runtime.CONTAINERD)
    unused = containerd_unused(facts)
    if unused is not None:
        return unused
    dirs = {posixpath.normpath(d) for d in containerd.cdi_spec_dirs or ()}
    own_dirs = bool(dirs and dirs != set(CDI_SPEC_DIRS))
    strategies = plugin_strategies(facts)
    if not own_dirs and "cdi-cri" not in strategies:
        return ok("native CDI is not requested")
    unsupported = cdi_unsupported(Runtime.CONTAINERD, containerd)
    if unsupported is not None:
        return warn(
            f"CDI is requested but {unsupported}: it ignores enable_cdi and cdi_spec_dirs, and "
            "pods that ask for CDI devices get none",
            Evidence(containerd.config_path, unsupported),
            notes=("upgrade containerd to 1.7 or later (2.x reads CDI specs by default)",),
        )
    if containerd.cdi_enabled:
        return ok("enable_cdi = true")
    default = cdi_default_on(Runtime.CONTAINERD, containerd)
    if containerd.cdi_enabled is None and default is not None:
        return ok(f"CDI enabled by default ({default}); the config does not turn it off")
    setting = Evidence(containerd.config_path, cdi_setting(Runtime.CONTAINERD, containerd))
    evidence: tuple[Evidence, ...] = (setting,)
    if own_dirs:
        summary = "containerd is set up for CDI (cdi_spec_dirs)"
    else:
        listed = "deviceListStrategy=" + ",".join(sorted(strategies))
        summary = "the device plugin hands out GPUs as CDI devices (cdi-cri)"
        evidence = (setting, Evidence("device plugin", listed))
    remedy = containerd_change(facts, "set enable_cdi = true in the CRI plugin", enable_cdi=True)
    return warn(
        f"{summary} but enable_cdi is not true",
        *evidence,
        commands=remedy.commands,
        fixes=remedy.fixes,
        notes=remedy.notes,
    )


@check(
    "containerd.managed-config",
    severity=Severity.INFO,
    title="containerd's config is not regenerated by a distribution",
    remedy="Edit config.toml.tmpl (k3s/RKE2) instead of config.toml; restart k3s/RKE2.",
    sources=("https://docs.k3s.io/advanced",),
    where=HOST_ONLY,
)
def managed_config(facts: NodeFacts) -> Result:
    """k3s/RKE2 rewrite config.toml at every start (microk8s renders its containerd.toml from
    containerd-template.toml, the TOML file the doctor reads and ctk edits)."""
    containerd = facts.engine(Runtime.CONTAINERD)
    managed = containerd.managed_by
    if managed is None:
        return ok("containerd's config is not managed by k3s/RKE2")
    distribution = containerd_distribution(facts)
    if distribution is None:  # the distribution step gave nothing: the path alone says which
        template = f"{posixpath.dirname(containerd.config_path)}/config.toml.tmpl"
        unit = managed
    elif distribution.template is None:
        return ok(
            f"containerd's config is {managed}'s {containerd.config_path}, the file to edit",
        )
    else:
        template, unit = distribution.template, distribution.unit
    return warn(
        f"containerd's config is generated by {managed} at every start: edits to config.toml "
        "are lost",
        Evidence(containerd.config_path, f"managed by {managed}"),
        commands=(f"sudo systemctl restart {unit}",),
        notes=(f"put custom settings in {template}",),
    )
