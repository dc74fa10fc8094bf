"""CDI spec checks (`cdi.*`): present, fresh, complete, valid, not in conflict."""

from __future__ import annotations

import shlex

from ctk.doctor.checks.cdi_readers import cdi_readers, dra_plugin_spec, gpu_specs, spec_to_keep
from ctk.doctor.checks.engine_cdi import CDI_STRATEGIES, plugin_strategies
from ctk.doctor.checks.installers import gpu_operator, restart_operator_toolkit
from ctk.doctor.checks.mig import kube, regenerate
from ctk.doctor.checks.toolkit import runtime_mode, toolkit_version
from ctk.doctor.expected import expected_devices, missing_from, unknown_uuids
from ctk.doctor.facts import NodeFacts, NvmlAnswer, SpecFileFacts
from ctk.doctor.fixes import EnableRefresh, GenerateSpec, ValidateSpec
from ctk.doctor.model import (
    HOST_ONLY,
    Evidence,
    Result,
    Severity,
    check,
    fail,
    ok,
    skip,
    unknown,
    warn,
)

CDI_SUPPORT = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
)
CDI_SPEC = "https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md"
REFRESH_UNITS = ("ctk-cdi-refresh.path", "nvidia-cdi-refresh.path")
REFRESH_TOOLKIT = (1, 18)
MANAGEMENT_SPEC = "/var/run/cdi/management.yaml"
"""Where the management spec goes: the toolkit's spec directory for generated specs."""
MAX_EVIDENCE = 3


def unreadable(facts: NodeFacts) -> Result | None:
    """The `unknown` result when the spec directories could not be read."""
    problem = facts.cdi.unreadable
    if problem is None:
        return None
    return unknown(
        f"cannot read the CDI spec directories: {problem.reason}", needs_root=problem.needs_root
    )


def cdi_consumers(facts: NodeFacts) -> list[Evidence]:
    """What on this node is set up to request CDI devices: the toolkit in mode cdi, the
    programs that read specs because someone switched CDI on, and a device plugin that hands out
    GPUs as CDI devices (not a program that merely could: see `cdi_readers_only`)."""
    users = []
    if runtime_mode(facts) == "cdi":
        users.append(Evidence(facts.toolkit.config.path, 'nvidia-container-runtime.mode = "cdi"'))
    users += [reader.evidence for reader in cdi_readers(facts) if reader.switched_on]
    strategies = plugin_strategies(facts)
    if strategies & CDI_STRATEGIES:
        listed = ",".join(sorted(strategies))
        users.append(Evidence("device plugin", f"deviceListStrategy={listed}"))
    return users


def cdi_readers_only(facts: NodeFacts) -> list[Evidence]:
    """The programs that could take GPUs through CDI but nothing shows they are asked to
    (podman installed, CRI-O, an engine reading CDI by default)."""
    return [reader.evidence for reader in cdi_readers(facts) if not reader.switched_on]


@check(
    "cdi.spec-invalid",
    severity=Severity.ERROR,
    title="CDI spec files parse and pass validation",
    remedy="Run `ctk cdi validate` on the file; regenerate it or delete hand-edited files.",
    sources=(CDI_SPEC,),
    where=HOST_ONLY,
)
def spec_invalid(facts: NodeFacts) -> Result:
    """A broken spec makes every CDI request on the node fail."""
    blocked = unreadable(facts)
    if blocked is not None:
        return blocked
    # the DRA plugin's own specs (one per prepared claim) have a check of their own, which
    # names the claim's pod: dra.claim-spec-invalid
    specs = [spec for spec in facts.cdi.specs if dra_plugin_spec(spec.path) is None]
    broken = [spec for spec in specs if spec.problems]
    if not broken:
        plugin = len(facts.cdi.specs) - len(specs)
        also = f" (the DRA plugin's {plugin}: see dra.claim-spec-invalid)" if plugin else ""
        return ok(f"{len(specs)} spec file(s) valid{also}")
    return fail(
        f"{len(broken)} CDI spec file(s) are invalid: " + ", ".join(s.path for s in broken),
        *(Evidence(spec.path, spec.problems[0]) for spec in broken),
        fixes=tuple(ValidateSpec(path=spec.path) for spec in broken),
    )


@check(
    "cdi.spec-missing",
    severity=Severity.ERROR,
    title="an nvidia.com/gpu CDI spec exists",
    remedy="Generate the spec; enable the refresh unit so it stays current.",
    sources=(CDI_SUPPORT, "https://github.com/NVIDIA/nvidia-container-toolkit/issues/146"),
    depends_on=("driver.not-loaded",),
    where=HOST_ONLY,
)
def spec_missing(facts: NodeFacts) -> Result:
    """`unresolvable CDI devices nvidia.com/gpu=all`."""
    blocked = unreadable(facts)
    if blocked is not None:
        return blocked
    specs = gpu_specs(facts)
    if specs:
        devices = sorted({name for spec in specs for name in spec.devices})
        return ok(f"{len(devices)} nvidia.com/gpu device(s) in " + ", ".join(s.path for s in specs))
    users = cdi_consumers(facts)
    missing = [Evidence(d, "no nvidia.com/gpu spec") for d in facts.cdi.dirs]
    summary = (
        "no nvidia.com/gpu CDI spec in " + ", ".join(facts.cdi.dirs) + ": CDI requests fail "
        "with 'unresolvable CDI devices nvidia.com/gpu=all'"
    )
    if users:  # something here is set up to request CDI devices: they fail now
        return fail(summary, *users, *missing, fixes=(GenerateSpec(), EnableRefresh()))
    could = cdi_readers_only(facts)
    if could:  # presence is not use: a warning, for the day someone asks
        return warn(
            summary + " (nothing here is set up to request them yet)",
            *could,
            *missing,
            fixes=(GenerateSpec(), EnableRefresh()),
            severity=Severity.WARNING,
        )
    return skip("no CDI spec, and nothing on this node uses CDI")


def _stale_evidence(spec: SpecFileFacts, module: str | None) -> list[Evidence]:
    evidence = []
    other = sorted(v for v in spec.driver_versions if v != module)
    if other:
        evidence.append(Evidence(spec.path, f"generated for driver {', '.join(other)}"))
    evidence += [
        Evidence(spec.path, f"mounts {path} (missing)")
        for path in spec.missing_host_paths[:MAX_EVIDENCE]
    ]
    if len(spec.missing_host_paths) > MAX_EVIDENCE:
        extra = len(spec.missing_host_paths) - MAX_EVIDENCE
        evidence.append(Evidence(spec.path, f"... and {extra} more missing host paths"))
    evidence += [Evidence(spec.path, f"hook {path} (missing)") for path in spec.missing_hook_paths]
    return evidence


@check(
    "cdi.spec-stale",
    severity=Severity.ERROR,
    title="the CDI spec matches the running driver",
    remedy="Regenerate the spec; enable the refresh unit so driver upgrades regenerate it.",
    sources=(CDI_SUPPORT, "https://github.com/NVIDIA/nvidia-container-toolkit/issues/1828"),
    depends_on=(
        "driver.not-loaded",
        "driver.library-mismatch",
        "driver.uvm-missing",
        "dev.nodes-missing",
        "dev.mig-cap-nodes-missing",
        "lib.nvml-not-found",
        "cdi.spec-invalid",
        "cdi.spec-missing",
    ),
    where=HOST_ONLY,
)
def spec_stale(facts: NodeFacts) -> Result:
    """Versioned library paths, `--host-driver-version`, host paths and hooks vs the node."""
    specs = gpu_specs(facts)
    if not specs:
        return skip("no nvidia.com/gpu CDI spec")
    module = facts.kernel.driver_version
    evidence = [e for spec in specs for e in _stale_evidence(spec, module)]
    if not evidence:
        return ok(f"the spec matches driver {module}; all host paths exist")
    generated = sorted({v for spec in specs for v in spec.driver_versions if v != module})
    summary = (
        f"{', '.join(s.path for s in specs)} was generated for driver {', '.join(generated)} "
        f"but driver {module} is loaded"
        if generated
        else f"{', '.join(s.path for s in specs)} refers to host files that no longer exist"
    )
    return fail(
        summary + ": containers fail at creation or get mismatched libraries",
        Evidence("/proc/driver/nvidia/version", module or "unknown"),
        *evidence,
        fixes=(regenerate(facts), EnableRefresh()),
    )


def _wrong_nodes(facts: NodeFacts, specs: tuple[SpecFileFacts, ...]) -> list[Evidence]:
    """Spec devices named after a GPU whose device node is another GPU's (minors moved)."""
    if not isinstance(facts.nvml, NvmlAnswer) or facts.nvml.error_code is not None:
        return []
    nodes: dict[str, set[str]] = {}
    for spec in specs:
        for name, paths in spec.device_node_paths.items():
            nodes.setdefault(name, set()).update(p for p in paths if p.startswith("/dev/nvidia"))
    wrong = []
    for gpu in facts.nvml.gpus:
        want = f"/dev/nvidia{gpu.minor}"
        for alias in (str(gpu.index), gpu.uuid):
            found = {p for p in nodes.get(alias, set()) if p[len("/dev/nvidia") :].isdigit()}
            if found and want not in found:
                wrong.append(
                    Evidence(
                        "GPU",
                        f"device {alias} gives {', '.join(sorted(found))} but GPU {gpu.index} "
                        f"is {want}",
                    )
                )
    return wrong


@check(
    "cdi.spec-incomplete",
    severity=Severity.ERROR,
    title="the CDI spec names every GPU (right device node) and has `all`",
    remedy="Regenerate the spec.",
    sources=(CDI_SUPPORT,),
    depends_on=("cdi.spec-stale", "mig.not-in-cdi-spec"),
    where=HOST_ONLY,
)
def spec_incomplete(facts: NodeFacts) -> Result:
    """A GPU added or replaced since generation, or no `all` device.

    While `cdi.spec-conflict` fails, the specs are judged as its fix leaves them (the clashing
    copies removed): what the clash drops is that check's finding, not a second one here.
    """
    specs = gpu_specs(facts)
    if not specs:
        return skip("no nvidia.com/gpu CDI spec")
    clash = bool(facts.cdi.conflicts)
    if clash:
        removed = set(conflict_losers(facts.cdi.conflict_files))
        specs = tuple(spec for spec in specs if spec.path not in removed)
    problems = _incomplete(facts, specs)
    names = {name for spec in specs for name in spec.devices}
    if not problems:
        if clash:
            return skip(
                "skipped: the spec is complete once cdi.spec-conflict is fixed",
                blocked_by=("cdi.spec-conflict",),
            )
        return ok(f"every GPU has a CDI entry ({len(names)} names)")
    return fail(
        "the CDI spec does not match the node's GPUs: " + "; ".join(e.value for e in problems),
        *problems,
        fixes=(regenerate(facts),),
    )


def _incomplete(facts: NodeFacts, specs: tuple[SpecFileFacts, ...]) -> list[Evidence]:
    """What ``specs`` lack or name wrongly, against the devices `ctk cdi generate` writes here."""
    names = {name for spec in specs for name in spec.devices}
    where = ", ".join(s.path for s in specs)
    expected = expected_devices(facts)
    if expected is None:  # without NVML: the kernel's GPUs, by UUID or device node
        problems = _incomplete_without_nvml(facts, specs, names)
    else:
        problems = [
            Evidence("GPU", f"{device.label} has no CDI device")
            for device in missing_from(expected, names)
        ]
        problems += [
            Evidence(where, f"device {name} names no device of this node (replaced or removed)")
            for name in unknown_uuids(expected, names)
        ]
    problems += _wrong_nodes(facts, specs)
    if "all" not in names:
        problems.append(Evidence(where, "no device named all"))
    return problems


def _incomplete_without_nvml(
    facts: NodeFacts, specs: tuple[SpecFileFacts, ...], names: set[str]
) -> list[Evidence]:
    """Whole GPUs the kernel enumerated that no spec device names or mounts.

    Without NVML the MIG mode is unknown; a GPU in MIG mode counts as covered by its device node,
    which every MIG device of it mounts.
    """
    nodes = {path for spec in specs for paths in spec.device_node_paths.values() for path in paths}
    problems = [
        Evidence("GPU", f"{gpu.bdf} ({gpu.uuid}) has no CDI device")
        for gpu in facts.kernel.gpus
        if gpu.uuid not in names and f"/dev/nvidia{gpu.minor}" not in nodes
    ]
    current = {gpu.uuid for gpu in facts.kernel.gpus}
    problems += [
        Evidence(
            ", ".join(s.path for s in specs),
            f"device {name} names no GPU of this node (replaced or removed)",
        )
        for name in sorted(names)
        if name.startswith("GPU-") and current and name not in current
    ]
    return problems


def conflict_losers(files: tuple[str, ...]) -> dict[str, str]:
    """The clashing files to remove, each with the one its directory keeps (`spec_to_keep`: the
    generated file, which regenerating rewrites)."""
    by_dir: dict[str, list[str]] = {}
    for path in sorted(files):
        by_dir.setdefault(path.rsplit("/", 1)[0], []).append(path)
    losers: dict[str, str] = {}
    for paths in by_dir.values():
        keep = spec_to_keep(paths)
        losers.update((path, keep) for path in paths if path != keep)
    return losers


def conflict_removals(files: tuple[str, ...]) -> list[str]:
    """`rm` commands leaving one file per directory: the generated one if it clashes (the notes
    say which file each one duplicates)."""
    return [f"sudo rm {shlex.quote(path)}" for path in conflict_losers(files)]


@check(
    "cdi.spec-conflict",
    severity=Severity.ERROR,
    title="no CDI device is defined twice in one spec directory",
    remedy="Keep one spec file per kind and directory: the generated nvidia.yaml (or .json).",
    sources=("https://github.com/cncf-tags/container-device-interface/blob/main/pkg/cdi/doc.go",),
    depends_on=("cdi.spec-invalid",),
    where=HOST_ONLY,
)
def spec_conflict(facts: NodeFacts) -> Result:
    """One device defined twice at the same priority: runtimes drop it from both specs.

    The same device in `/etc/cdi` and `/var/run/cdi` is an override (the later directory wins),
    not a conflict; `facts.cdi.conflicts` holds the CDI registry's own verdict, as
    `ctk cdi list` shows it.
    """
    if not facts.cdi.conflicts:
        return ok("no conflicting device definitions")
    return fail(
        f"{len(facts.cdi.conflicts)} CDI device definition(s) clash within one spec directory; "
        "runtimes drop those devices (unresolvable CDI devices)",
        *(Evidence("CDI", conflict) for conflict in facts.cdi.conflicts[:MAX_EVIDENCE]),
        *(Evidence(path, "takes part in the clash") for path in facts.cdi.conflict_files),
        commands=tuple(conflict_removals(facts.cdi.conflict_files)),
        notes=tuple(
            f"{path} duplicates {keep}"
            for path, keep in conflict_losers(facts.cdi.conflict_files).items()
        ),
    )


@check(
    "cdi.refresh-disabled",
    severity=Severity.WARNING,
    title="the CDI spec is regenerated on boot and driver upgrades",
    remedy="Enable the CDI refresh unit (ctk-cdi-refresh.path, or nvidia-ctk's).",
    sources=(CDI_SUPPORT,),
    depends_on=("cdi.spec-missing",),
    where=HOST_ONLY,
)
def refresh_disabled(facts: NodeFacts) -> Result:
    """A spec in tmpfs `/var/run/cdi` vanishes at reboot; one in `/etc/cdi` goes stale."""
    if facts.cdi.refresh_enabled:
        return ok("a CDI refresh unit is enabled")
    specs = gpu_specs(facts)
    version = toolkit_version(facts)
    volatile = [s.path for s in specs if s.path.startswith(("/var/run/", "/run/"))]
    if volatile:
        reason = f"{volatile[0]} lives in a tmpfs and disappears at reboot"
    elif specs and version is not None and version >= REFRESH_TOOLKIT:
        reason = f"{specs[0].path} goes stale at the next driver upgrade"
    elif not specs:
        return ok("no refresh unit needed (no nvidia.com/gpu spec)")
    elif version is None:
        return ok(f"no refresh unit needed ({specs[0].path} is not in a tmpfs; no toolkit package)")
    else:
        return ok(
            f"no refresh unit needed ({specs[0].path} is not in a tmpfs; toolkit "
            f"{'.'.join(map(str, version))} < 1.18)"
        )
    return warn(
        f"no CDI refresh unit is enabled: {reason}",
        Evidence("/etc/systemd/system", "neither " + " nor ".join(REFRESH_UNITS) + " is enabled"),
        fixes=(EnableRefresh(),),
    )


@check(
    "cdi.management-spec-missing",
    severity=Severity.ERROR,
    title="the management.nvidia.com/gpu spec exists where Kubernetes uses CDI",
    remedy="Restart the toolkit daemonset (GPU Operator) or generate the management spec.",
    sources=("https://github.com/NVIDIA/nvidia-container-toolkit/issues/1239",),
    depends_on=("cdi.spec-missing",),
    where=HOST_ONLY,
)
def management_spec_missing(facts: NodeFacts) -> Result:
    """The device plugin in CDI mode requests `management.nvidia.com/gpu` devices.

    The GPU Operator's toolkit DaemonSet writes that spec when it starts; where no operator
    works on the node, the spec is generated on the node itself."""
    node = kube(facts)
    if isinstance(node, Result):
        return node
    if not plugin_strategies(facts) & CDI_STRATEGIES:
        return skip("no Kubernetes device plugin in CDI mode")
    if any(spec.kind == "management.nvidia.com/gpu" for spec in facts.cdi.specs):
        return ok("management.nvidia.com/gpu spec present")
    summary = "the device plugin uses CDI but no management.nvidia.com/gpu spec exists"
    missing = Evidence(", ".join(facts.cdi.dirs), "no management.nvidia.com/gpu spec")
    operator = gpu_operator(facts, node)
    if operator is not None:
        return fail(summary, missing, operator, commands=(restart_operator_toolkit(node),))
    return fail(
        summary,
        missing,
        Evidence("GPU Operator", "none on this node (no toolkit DaemonSet pod, label or files)"),
        fixes=(GenerateSpec(output=MANAGEMENT_SPEC, mode="management"),),
        notes=("no GPU Operator writes it here: it is generated on the node",),
    )
