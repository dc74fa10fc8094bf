"""The primitives of gathering: paths inside the root, bounded steps, timings."""

from __future__ import annotations

import fnmatch
import glob
import os
import posixpath
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final, TypeVar, cast

from ctk.doctor.facts import Distribution, TimedOut
from ctk.errors import CtkError
from ctk.host import files
from ctk.host.engine_files import TEMPLATE_NAMES
from ctk.host.root import HostRoot, PathEscapeError, PathUnreadableError

T = TypeVar("T")

NVML_TIMEOUT_S = 5.0
DOCTOR_DEADLINE_S = 5.0
"""The whole gather, however many steps hang (issue 15: the doctor answers within 6 s)."""
DEADLINE_GRACE_S = 0.02
STEP_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 2.0  # one risky driver file read inside a step (below STEP_TIMEOUT_S)
LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib64",
    "/lib",
    "/usr/local/lib",
)
BINARY_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
BINARIES = (
    "ctk",
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
    "nvidia-container-toolkit",
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-cdi-hook",
    "nvidia-docker",
    "docker",
    "dockerd",
    "containerd",
    "crio",
    "podman",
)
SONAMES = ("libnvidia-ml.so.1", "libcuda.so.1", "libcuda.so")
PACKAGE_PREFIXES = ("nvidia-", "libnvidia-container", "cuda-compat")
OCI_HOOKS = (
    "/usr/share/containers/oci/hooks.d/oci-nvidia-hook.json",
    "/etc/containers/oci/hooks.d/oci-nvidia-hook.json",
)
REFRESH_UNITS = ("nvidia-cdi-refresh.path", "ctk-cdi-refresh.path")
UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
MODULE_DIRS = ("updates/dkms", "updates", "extra", "kernel/drivers/video", "misc", "video", "")
_K3S = "/var/lib/rancher/k3s/agent"
_RKE2 = "/var/lib/rancher/rke2/agent"
_MICROK8S = "/var/snap/microk8s/current"
DISTRIBUTIONS: Final[tuple[Distribution, ...]] = (
    Distribution(
        name="k3s",
        containerd_config=f"{_K3S}/etc/containerd/config.toml",
        kubeconfig=f"{_K3S}/kubelet.kubeconfig",
        units=("k3s", "k3s-agent"),
        templates=tuple(f"{_K3S}/etc/containerd/{name}" for name in TEMPLATE_NAMES),
        node_config="/etc/rancher/k3s/config.yaml",
    ),
    Distribution(
        name="rke2",
        containerd_config=f"{_RKE2}/etc/containerd/config.toml",
        kubeconfig=f"{_RKE2}/kubelet.kubeconfig",
        units=("rke2-server", "rke2-agent"),
        templates=tuple(f"{_RKE2}/etc/containerd/{name}" for name in TEMPLATE_NAMES),
        node_config="/etc/rancher/rke2/config.yaml",
    ),
    Distribution(
        name="microk8s",
        containerd_config=f"{_MICROK8S}/args/containerd-template.toml",
        kubeconfig=f"{_MICROK8S}/credentials/kubelet.config",
        units=("snap.microk8s.daemon-containerd",),
        kubelet_args=f"{_MICROK8S}/args/kubelet",
    ),
)
"""Kubernetes distributions that run their own containerd and kubelet: the layouts of the
agent's distribution presets (`deploy/helm/ctk/templates/_helpers.tpl`, docs/fleet.md; a test
holds the two to the same paths and units), plus the kubelet's kubeconfig and node settings."""
CONTAINERD_CONFIGS = tuple((d.containerd_config, d.name) for d in DISTRIBUTIONS)
DISTRIBUTION_UNIT_DIRS = (*UNIT_DIRS, "/usr/local/lib/systemd/system")
"""Where a distribution's units live: RKE2's tarball install puts them under /usr/local."""
GPU_OPERATOR_PATHS = (
    "/usr/local/nvidia/toolkit/nvidia-container-runtime",
    "/run/nvidia/validations",
)
"""What the GPU Operator leaves on a host: its toolkit DaemonSet's install directory, its
validator's markers."""
KUBELET_PATHS = (
    "/var/lib/kubelet/config.yaml",
    "/etc/kubernetes/kubelet.conf",
    "/var/lib/rancher/k3s",
    "/var/lib/rancher/rke2",
    "/usr/bin/kubelet",
    *(d.kubeconfig for d in DISTRIBUTIONS),
)
TORCH_GLOBS = (
    "/usr/lib/python3*/site-packages/torch",
    "/usr/lib/python3*/dist-packages/torch",
    "/usr/local/lib/python3*/site-packages/torch",
    "/usr/local/lib/python3*/dist-packages/torch",
    "/opt/conda/lib/python3*/site-packages/torch",
)
DRIVER_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")
LIB_VERSION = re.compile(r"/lib(?:cuda|nvidia-[a-z0-9-]+)\.so\.(\d+\.\d+(?:\.\d+)?)$")


@dataclass(frozen=True, slots=True)
class Timing:
    """How long one gather step took, and whether it finished in time."""

    step: str
    seconds: float
    timed_out: bool = False


@dataclass(slots=True)
class Gatherer:
    """Reads facts under one root; every read is one call, so each fact is read once."""

    root: HostRoot
    timings: list[Timing] = field(default_factory=list)
    deadline: float | None = None
    """`time.monotonic()` by which the whole gather ends: no step waits past it."""
    dpkg_packages: dict[str, str] | None = None
    """dpkg's installed packages (name -> version), parsed once for every step that asks."""

    # --- primitives -------------------------------------------------------------------------

    def host(self, path: str) -> Path | None:
        """The path on this machine, or None when it escapes the root or cannot be resolved."""
        try:
            return self.root.path(path)
        except (PathEscapeError, PathUnreadableError):
            return None

    def text(self, path: str) -> str | None:
        """A file's text; None when missing or unreadable."""
        host = self.host(path)
        if host is None:
            return None
        try:
            return files.read_text(host, lenient=True)
        except CtkError:
            return None

    def readable(self, path: str) -> bool | None:
        """True: readable; False: exists but permission denied; None: missing."""
        try:
            host = self.root.path(path)
        except PathUnreadableError:
            return False
        except PathEscapeError:
            return None
        if not host.exists():
            return None
        return os.access(host, os.R_OK)

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists inside the root."""
        host = self.host(path)
        return host is not None and (host.exists() or host.is_symlink())

    def glob(self, pattern: str) -> list[str]:
        """Paths (as seen inside the root) matching ``pattern``, sorted.

        Each directory is resolved inside the root before it is listed, so neither `..` nor a
        symlink leads the match out of the root.
        """
        current = ["/"]
        for part in (p for p in posixpath.normpath("/" + pattern).split("/") if p):
            if not glob.has_magic(part):
                current = [posixpath.join(base, part) for base in current]
                continue
            matched = []
            for base in current:
                host = self.host(base)
                try:
                    names = sorted(os.listdir(host)) if host is not None else []
                except OSError:
                    continue
                hidden = part.startswith(".")
                matched += [
                    posixpath.join(base, name)
                    for name in names
                    if fnmatch.fnmatchcase(name, part) and (hidden or not name.startswith("."))
                ]
            current = matched
        return sorted(path for path in current if self.exists(path))

    def link_target(self, directory: str, name: str) -> str | None:
        """The target of symlink ``directory/name`` (the directory resolved inside the root)."""
        host = self.host(directory)
        if host is None:
            return None
        try:
            return os.readlink(host / name)
        except OSError:
            return None

    def bounded(self, step: str, function: Callable[[], T], default: T, timeout: float) -> T:
        """Run ``function`` in a daemon thread; ``default`` when it does not finish in time."""
        box: list[T] = []
        errors: list[BaseException] = []

        def target() -> None:
            try:
                box.append(function())
            except BaseException as exc:  # re-raised below in the caller's thread
                errors.append(exc)

        start = time.monotonic()
        thread = threading.Thread(target=target, name=f"ctk-doctor-{step}", daemon=True)
        thread.start()
        thread.join(self.wait(timeout))
        elapsed = time.monotonic() - start
        if thread.is_alive():
            self.timings.append(Timing(step, elapsed, timed_out=True))
            return default
        self.timings.append(Timing(step, elapsed))
        if errors:
            raise errors[0]
        return box[0]

    def wait(self, timeout: float) -> float:
        """How long a step may take: its own bound, cut to what is left before the deadline
        (a short grace after it, so a step that answers at once still counts)."""
        if self.deadline is None:
            return timeout
        return min(timeout, max(DEADLINE_GRACE_S, self.deadline - time.monotonic()))

    def step(self, step: str, function: Callable[[], T], timeout: float = STEP_TIMEOUT_S) -> T:
        """``function``'s facts, or a `TimedOut` stand-in when it hangs or fails (its checks:
        unknown): one unreadable file never takes the whole report down."""

        def guarded() -> T:
            try:
                return function()
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}"
                return cast(T, TimedOut(step, text[:200]))

        return self.bounded(step, guarded, cast(T, TimedOut(step)), timeout)

    def timed(self, step: str, function: Callable[[], T]) -> T:
        """Run ``function`` and record how long it took."""
        start = time.monotonic()
        try:
            return function()
        finally:
            self.timings.append(Timing(step, time.monotonic() - start))


def posix_join(*parts: str) -> str:
    """Join paths as seen inside the root."""
    return str(PurePosixPath(*parts))
