"""What installed the node's container stack, and the remedies that fit it.

containerd comes as a package (its own `containerd` unit, config.toml that ctk edits) or inside
a Kubernetes distribution (`NodeFacts.distribution`): k3s and RKE2 run it in their own service
and render config.toml from a Go template at every start, which ctk does not edit; microk8s runs
it as `snap.microk8s.daemon-containerd` from containerd-template.toml, a TOML file ctk edits.
The GPU Operator installs the toolkit and writes the CDI specs from its DaemonSets; a node
without it gets the commands that do the same by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ctk.doctor.facts import Distribution, NodeFacts
from ctk.doctor.fixes import ConfigureRuntime, Suggestion
from ctk.doctor.model import Evidence
from ctk.runtime_config.engines import Runtime

OPERATOR_NAMESPACE: Final = "gpu-operator"
"""The namespace the GPU Operator's Helm chart is installed in by its documentation."""
OPERATOR_TOOLKIT: Final = "nvidia-container-toolkit-daemonset"
OPERATOR_LABEL: Final = "nvidia.com/gpu.deploy.container-toolkit"
"""The node label the GPU Operator sets where its toolkit DaemonSet runs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Remedy:
    """The parts of a result that say what to do: typed fixes, other commands, prose."""

    fixes: tuple[Suggestion, ...] = ()
    commands: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def containerd_distribution(facts: NodeFacts) -> Distribution | None:
    """The distribution whose containerd the doctor read (None: containerd as a package)."""
    distribution = facts.distribution
    if distribution is None or facts.engine(Runtime.CONTAINERD).managed_by != distribution.name:
        return None
    return distribution


def containerd_unit(facts: NodeFacts) -> str:
    """The systemd unit that runs containerd on this node."""
    distribution = containerd_distribution(facts)
    return "containerd" if distribution is None else distribution.unit


def restart_containerd(facts: NodeFacts) -> str:
    """The command that restarts containerd on this node (k3s-agent on a k3s agent, ...)."""
    return f"sudo systemctl restart {containerd_unit(facts)}"


def rendered_from(distribution: Distribution) -> str:
    """Why config.toml is not the file to edit on a k3s/RKE2 node, in words."""
    name, config = distribution.name, distribution.containerd_config
    return (
        f"{name} renders {config} from {distribution.template} at every start, so an edit of "
        "config.toml is lost (ctk does not edit Go templates)"
    )


def containerd_change(
    facts: NodeFacts, change: str, *, set_as_default: bool = False, enable_cdi: bool = False
) -> Remedy:
    """``change`` to containerd's nvidia runtime, and the restart, where this node keeps it.

    A package's containerd and microk8s's (its containerd-template.toml is TOML) get `runtime
    configure` on their config; on k3s/RKE2 the change goes into the template, in words."""
    distribution = containerd_distribution(facts)
    restart = (restart_containerd(facts),)
    if distribution is None:
        fix = ConfigureRuntime(
            runtime=Runtime.CONTAINERD, set_as_default=set_as_default, enable_cdi=enable_cdi
        )
        return Remedy(fixes=(fix,), commands=restart)
    if distribution.template is None:
        fix = ConfigureRuntime(
            runtime=Runtime.CONTAINERD,
            set_as_default=set_as_default,
            enable_cdi=enable_cdi,
            config=distribution.containerd_config,
        )
        return Remedy(fixes=(fix,), commands=restart)
    return Remedy(
        commands=restart,
        notes=(f"{change} in {distribution.template}: {rendered_from(distribution)}",),
    )


def gpu_operator(facts: NodeFacts, node: Mapping[str, object] | None = None) -> Evidence | None:
    """What shows the GPU Operator at work on this node (None: nothing does): its toolkit
    DaemonSet's pod on the node, the node label it sets, or what it leaves on the host."""
    if node is not None:
        toolkit = node.get("gpu_operator_toolkit")
        if isinstance(toolkit, Mapping):
            where = f"{toolkit.get('namespace')}/{toolkit.get('daemonset')}"
            return Evidence("pods on this node", f"GPU Operator DaemonSet {where}")
        labels = node.get("labels")
        if isinstance(labels, Mapping) and OPERATOR_LABEL in labels:
            return Evidence("node labels", f"{OPERATOR_LABEL}={labels[OPERATOR_LABEL]}")
    if facts.gpu_operator is not None:
        return Evidence(facts.gpu_operator, "left by the GPU Operator")
    return None


def restart_operator_toolkit(node: Mapping[str, object] | None) -> str:
    """`kubectl rollout restart` of the GPU Operator's toolkit DaemonSet (it rewrites the specs
    and the runtime config at start), in the namespace its pod runs in where the API said."""
    toolkit = node.get("gpu_operator_toolkit") if node is not None else None
    namespace, name = OPERATOR_NAMESPACE, OPERATOR_TOOLKIT
    if isinstance(toolkit, Mapping):
        namespace = str(toolkit.get("namespace") or namespace)
        name = str(toolkit.get("daemonset") or name)
    return f"kubectl -n {namespace} rollout restart daemonset/{name}"
