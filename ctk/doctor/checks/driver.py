"""Kernel driver checks (`driver.*`): the bottom of the stack."""

from __future__ import annotations

import re

from ctk.doctor.facts import LibFacts, NodeFacts, NvmlAnswer, TimedOut, Unavailable
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
from ctk.node.nvml import NvmlReturn

PROC_VERSION = "/proc/driver/nvidia/version"
OPERATOR_DOCS = (
    "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/troubleshooting.html"
)


def driver_version_evidence(facts: NodeFacts) -> Evidence:
    """`/proc/driver/nvidia/version: 550.54.15` (or `missing`)."""
    kernel = facts.kernel
    if kernel.driver_version is None and kernel.version_line is not None:
        return Evidence(PROC_VERSION, f"no version in {kernel.version_line!r}")
    return Evidence(PROC_VERSION, kernel.driver_version or "missing")


def nvml_error(facts: NodeFacts) -> int | None:
    """The NVML init error code, when NVML was asked and refused."""
    return facts.nvml.error_code if isinstance(facts.nvml, NvmlAnswer) else None


@check(
    "driver.nouveau-loaded",
    severity=Severity.ERROR,
    title="the nouveau driver does not hold the GPU",
    remedy="Blacklist nouveau, rebuild the initramfs and reboot.",
    sources=(OPERATOR_DOCS,),
    where=HOST_ONLY,
)
def nouveau_loaded(facts: NodeFacts) -> Result:
    """nouveau bound to a GPU (or loaded at all) keeps nvidia from binding."""
    kernel = facts.kernel
    bound = [gpu.bdf for gpu in kernel.pci_gpus if gpu.driver == "nouveau"]
    if "nouveau" not in kernel.modules and not bound:
        return ok("nouveau is not loaded")
    evidence = [Evidence("/proc/modules", "nouveau loaded")] if "nouveau" in kernel.modules else []
    evidence += [Evidence(f"/sys/bus/pci/devices/{bdf}/driver", "nouveau") for bdf in bound]
    return fail(
        "the open-source nouveau driver is loaded, so the nvidia module cannot bind the GPU",
        *evidence,
        commands=(
            "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | "
            "sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
            "sudo update-initramfs -u",
            "sudo reboot",
        ),
        notes=("RHEL/Fedora: sudo dracut --force instead of update-initramfs",),
    )


@check(
    "driver.secure-boot-blocked",
    severity=Severity.ERROR,
    title="Secure Boot does not block the nvidia module",
    remedy="Enrol the module signing key (MOK), use pre-signed modules, or disable Secure Boot.",
    sources=(OPERATOR_DOCS,),
    where=HOST_ONLY,
)
def secure_boot_blocked(facts: NodeFacts) -> Result:
    """Secure Boot on, module built for this kernel, yet not loaded: the key was rejected."""
    kernel = facts.kernel
    if kernel.driver_version is not None:
        return ok("the nvidia module is loaded")
    if not kernel.secure_boot:
        return ok("Secure Boot is off")
    if not kernel.module_built:
        return ok("no nvidia module is built for this kernel, so Secure Boot is not the cause")
    return fail(
        "Secure Boot is on and the nvidia module built for this kernel is not loaded: "
        "the firmware most likely rejects its signature",
        Evidence("/sys/firmware/efi/efivars/SecureBoot-8be4df61-...", "1 (enabled)"),
        Evidence(f"/lib/modules/{kernel.kernel_release}", "nvidia.ko present"),
        driver_version_evidence(facts),
        commands=(
            "sudo modprobe nvidia",
            "sudo mokutil --import /var/lib/shim-signed/mok/MOK.der",
        ),
        notes=(
            "'Key was rejected by service' from modprobe confirms it",
            "after mokutil, reboot and enrol the key",
        ),
    )


@check(
    "driver.not-loaded",
    severity=Severity.ERROR,
    title="the NVIDIA kernel module is loaded",
    remedy="Load the module and read why it fails; rebuild it for the running kernel if needed.",
    sources=(OPERATOR_DOCS,),
    depends_on=("driver.secure-boot-blocked",),
)
def not_loaded(facts: NodeFacts) -> Result:
    """No `/proc/driver/nvidia/version`: nothing above the driver can work."""
    kernel = facts.kernel
    if kernel.driver_version is not None and nvml_error(facts) != NvmlReturn.DRIVER_NOT_LOADED:
        flavour = "open" if kernel.open_module else "proprietary"
        count = "?" if isinstance(kernel.gpus, TimedOut) else len(kernel.gpus)
        return ok(
            f"NVIDIA driver {kernel.driver_version} ({flavour} kernel module), {count} GPU(s)",
            driver_version_evidence(facts),
        )
    evidence = [driver_version_evidence(facts)]
    if kernel.pci_gpus:
        gpus = ", ".join(f"{g.bdf} ({g.driver or 'no driver'})" for g in kernel.pci_gpus)
        evidence.append(Evidence("/sys/bus/pci/devices", f"NVIDIA GPUs: {gpus}"))
    else:
        evidence.append(Evidence("/sys/bus/pci/devices", "no NVIDIA GPU found"))
    if nvml_error(facts) == NvmlReturn.DRIVER_NOT_LOADED:
        evidence.append(Evidence("NVML", "nvmlInit: Driver Not Loaded (9)"))
    summary = "no NVIDIA kernel module is loaded"
    commands = ["sudo modprobe nvidia", "sudo dmesg | grep -iE 'nvrm|nvidia'"]
    if "nouveau" in kernel.modules or any(g.driver == "nouveau" for g in kernel.pci_gpus):
        summary += "; nouveau holds the GPU (see driver.nouveau-loaded)"
    elif kernel.module_built is False:
        summary += f"; no nvidia module is built for kernel {kernel.kernel_release}"
        commands = ["sudo dkms autoinstall", "sudo modprobe nvidia"]
    elif not kernel.pci_gpus:
        summary += " and no NVIDIA GPU is visible on the PCI bus"
        # modprobe finds no device to bind: the GPU itself is missing from this machine
        commands = ["lspci -nnk -d 10de:", "sudo dmesg | grep -iE 'nvrm|nvidia|pci'"]
        notes = (
            "loading the module cannot help without a GPU: attach one (a VM needs it passed "
            "through; a cloud instance, a GPU machine type) or reseat it and check the BIOS",
        )
        return fail(summary, *evidence, commands=tuple(commands), notes=notes)
    return fail(summary, *evidence, commands=tuple(commands))


def visible_devices(facts: NodeFacts) -> str | None:
    """`NVIDIA_VISIBLE_DEVICES` inside a container (None when unset)."""
    return facts.container.env.get("NVIDIA_VISIBLE_DEVICES")


def _library_versions(facts: NodeFacts) -> dict[str, str]:
    if not isinstance(facts.libs, LibFacts):
        return {}
    found = {}
    for soname in ("libnvidia-ml.so.1", "libcuda.so.1"):
        for library in facts.libs.libraries.get(soname, ())[:1]:
            match = re.search(r"\.so\.(\d+\.\d+(?:\.\d+)?)$", library.target)
            if match:
                found[library.target] = match.group(1)
    return found


@check(
    "driver.library-mismatch",
    severity=Severity.ERROR,
    title="the kernel module and the driver libraries are the same version",
    remedy="Reboot (or reload the module) so the kernel module matches the installed libraries.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/394",
        "https://github.com/oddmario/NVIDIA-Ubuntu-Driver-Guide/issues/4",
    ),
    depends_on=("driver.not-loaded", "container.no-gpu-attached"),
)
def library_mismatch(facts: NodeFacts) -> Result:
    """`Failed to initialize NVML: Driver/library version mismatch` after an upgrade."""
    module = facts.kernel.driver_version or ""
    libraries = _library_versions(facts)
    mismatched = {path: v for path, v in libraries.items() if v != module}
    if not mismatched and nvml_error(facts) != NvmlReturn.LIB_RM_VERSION_MISMATCH:
        if not libraries:
            return skip("no driver library found to compare (see lib.*)")
        return ok(f"kernel module and libraries are {module}", driver_version_evidence(facts))
    evidence = [driver_version_evidence(facts)]
    evidence += [Evidence(path, f"version {v}") for path, v in sorted(mismatched.items())]
    if nvml_error(facts) == NvmlReturn.LIB_RM_VERSION_MISMATCH:
        evidence.append(Evidence("NVML", "nvmlInit: RM has detected an NVML/RM version mismatch"))
    installed = ", ".join(sorted(set(mismatched.values()))) or "another version"
    return fail(
        f"kernel module {module} is loaded but the driver libraries are {installed}: "
        "the driver was upgraded without a reboot",
        *evidence,
        commands=("sudo reboot",),
        notes=(
            "or, once no process uses the GPU: stop nvidia-persistenced, rmmod nvidia_uvm "
            "nvidia_drm nvidia_modeset nvidia, then modprobe nvidia and nvidia_uvm",
        ),
    )


@check(
    "driver.uvm-missing",
    severity=Severity.ERROR,
    title="nvidia_uvm is loaded and /dev/nvidia-uvm exists",
    remedy="Load nvidia-uvm and create its device nodes; persist it in modules-load.d.",
    sources=("https://github.com/NVIDIA/nvidia-docker/issues/548",),
    depends_on=("driver.not-loaded",),
    where=HOST_ONLY,
)
def uvm_missing(facts: NodeFacts) -> Result:
    """Without nvidia_uvm, nvidia-smi works but CUDA finds no device."""
    major = facts.kernel.char_majors.get("nvidia-uvm")
    node = facts.dev.nodes.get("/dev/nvidia-uvm")
    if major is not None and node is not None and node.major == major:
        return ok(f"nvidia-uvm loaded (major {major})")
    evidence = [
        Evidence("/proc/devices", f"nvidia-uvm major {major}" if major else "no nvidia-uvm"),
        Evidence("/dev/nvidia-uvm", "missing" if node is None else f"major {node.major}"),
    ]
    return fail(
        "the nvidia_uvm module or its device node is missing: CUDA will report no device",
        *evidence,
        commands=("sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0",),
    )


@check(
    "driver.gpu-not-enumerated",
    severity=Severity.WARNING,
    title="every NVIDIA GPU on the PCI bus is enumerated by the driver",
    remedy="Find why the driver skipped it: vfio-pci binding, exclusion, or an init failure.",
    sources=(OPERATOR_DOCS, "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"),
    depends_on=("driver.not-loaded",),
    where=HOST_ONLY,
)
def gpu_not_enumerated(facts: NodeFacts) -> Result:
    """PCI GPUs missing from `/proc/driver/nvidia/gpus` (vfio-pci, excluded, RmInitAdapter)."""
    kernel = facts.kernel
    enumerated = {gpu.bdf.lower() for gpu in kernel.gpus if not gpu.excluded}
    missing = [gpu for gpu in kernel.pci_gpus if gpu.bdf.lower() not in enumerated]
    if not missing:
        return ok(f"{len(kernel.pci_gpus)} PCI GPU(s), all enumerated")
    summary = (
        f"{len(missing)} of {len(kernel.pci_gpus)} NVIDIA GPU(s) on the PCI bus are not "
        "enumerated by the driver"
    )
    evidence = tuple(
        Evidence(f"/sys/bus/pci/devices/{gpu.bdf}/driver", gpu.driver or "no driver bound")
        for gpu in missing
    )
    commands = ("sudo dmesg | grep -iE 'RmInitAdapter|NVRM'",)
    notes = ("vfio-pci is intended on VM passthrough hosts; otherwise drain and reboot",)
    if enumerated:
        return warn(summary, *evidence, commands=commands, notes=notes)
    return fail(summary, *evidence, commands=commands, notes=notes, severity=Severity.ERROR)


# Model-name patterns per GPU generation (the NVML architecture is not in the adapter's facts).
BLACKWELL_OR_LATER = re.compile(r"\b(G?B[123]\d\d|RTX (PRO )?\d+ Blackwell|RTX 50\d0)\b", re.I)
PRE_TURING = re.compile(
    r"\b(Tesla [KMPV]\d+|Quadro [GM]?[PV]\d+|Quadro GV100|TITAN (V|Xp|X)|GTX 9\d0|GTX 10\d0)\b",
    re.I,
)


@check(
    "driver.kernel-module-flavor",
    severity=Severity.ERROR,
    title="the kernel module flavour (open or proprietary) suits the GPUs",
    remedy="Install the same driver branch in the other flavour, then reboot.",
    sources=("https://github.com/NVIDIA/open-gpu-kernel-modules",),
    depends_on=("driver.not-loaded",),
    where=HOST_ONLY,
)
def kernel_module_flavor(facts: NodeFacts) -> Result:
    """Blackwell needs the open modules; Maxwell, Pascal and Volta need the proprietary ones."""
    kernel = facts.kernel
    if kernel.open_module is None:
        return skip("the module flavour is unknown")
    pattern, needed = (
        (PRE_TURING, "proprietary") if kernel.open_module else (BLACKWELL_OR_LATER, "open")
    )
    wrong = [gpu for gpu in kernel.gpus if pattern.search(gpu.model)]
    flavour = "open" if kernel.open_module else "proprietary"
    if not wrong:
        return ok(f"{flavour} kernel module suits the GPUs")
    branch = (kernel.driver_version or "").split(".")[0]
    package = (
        "nvidia-driver" + (f"-{branch}" if branch else "") + ("-open" if needed == "open" else "")
    )
    return fail(
        f"the {flavour} kernel module is loaded but {wrong[0].model} needs the {needed} "
        "modules: the driver cannot initialise it (RmInitAdapter failed)",
        Evidence(PROC_VERSION, kernel.version_line or flavour),
        *(Evidence(f"/proc/driver/nvidia/gpus/{gpu.bdf}/information", gpu.model) for gpu in wrong),
        commands=(f"sudo apt-get install {package}", "sudo reboot"),
    )


DATA_CENTER_BRANDS = frozenset({"tesla", "nvidia"})


@check(
    "driver.persistence-off",
    severity=Severity.WARNING,
    title="the GPUs stay initialised between jobs (persistence mode or nvidia-persistenced)",
    remedy="Enable the nvidia-persistenced service.",
    sources=("https://docs.nvidia.com/deploy/driver-persistence/index.html",),
    depends_on=(
        "driver.not-loaded",
        "driver.library-mismatch",
        "lib.nvml-not-found",
        "gpu.lost",
        "dev.permission-denied",
    ),
    where=HOST_ONLY,
)
def persistence_off(facts: NodeFacts) -> Result:
    """Persistence mode off and no daemon: each job pays the GPU's init, and state resets.

    A warning on data-center GPUs (servers), information on others.
    """
    nvml = facts.nvml
    if isinstance(nvml, Unavailable):
        return unknown(f"NVML facts unavailable: {nvml.reason}", needs_root=nvml.needs_root)
    if nvml.error_code is not None:
        return skip(f"NVML did not initialise ({nvml.error}): see the checks that name the cause")
    if facts.persistenced:
        return ok("nvidia-persistenced is running")
    off = [g for g in nvml.health_by_gpu if g.persistence is False]
    if not off:
        return ok("persistence mode is on" if nvml.gpus else "no GPU")
    server = any(g.brand in DATA_CENTER_BRANDS for g in off)
    return warn(
        f"persistence mode is off on GPU {', '.join(str(g.index) for g in off)} and "
        "nvidia-persistenced is not running: the driver tears the GPU down whenever no "
        "process uses it (slow job starts, lost settings)",
        *(
            Evidence(f"NVML GPU {g.index}", f"{g.brand or 'unknown brand'}: persistence off")
            for g in off
        ),
        Evidence("/run/nvidia-persistenced/socket", "missing"),
        commands=("sudo systemctl enable --now nvidia-persistenced",),
        severity=Severity.WARNING if server else Severity.INFO,
    )
