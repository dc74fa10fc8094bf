"""Driver library checks (`lib.*`): what the dynamic loader finds."""

from __future__ import annotations

from ctk.doctor.facts import LibFacts, NodeFacts, NvmlAnswer, Unavailable
from ctk.doctor.model import Evidence, Result, Severity, check, fail, ok, unknown
from ctk.node.nvml import NvmlReturn


def _lookup(facts: NodeFacts, soname: str) -> Result | None:
    """None when ``soname`` resolves to an existing file; else the failing result."""
    libs = facts.libs
    if isinstance(libs, Unavailable):
        return unknown(f"cannot read the loader configuration: {libs.reason}")
    found = [lib for lib in libs.libraries.get(soname, ()) if lib.exists]
    if found:
        return None
    evidence = [Evidence(libs.source, f"no {soname}")]
    dangling = [lib for lib in libs.libraries.get(soname, ()) if not lib.exists]
    evidence += [Evidence(lib.path, f"-> {lib.target} (missing)") for lib in dangling]
    if (
        soname == "libnvidia-ml.so.1"
        and isinstance(facts.nvml, NvmlAnswer)
        and facts.nvml.error_code == NvmlReturn.LIBRARY_NOT_FOUND
    ):
        evidence.append(Evidence("NVML", "nvmlInit: NVML Shared Library Not Found (12)"))
    version = facts.kernel.driver_version
    install = (
        (f"sudo apt-get install libnvidia-compute-{version.split('.')[0]}",) if version else ()
    )
    return fail(
        f"the dynamic loader cannot find {soname}: the driver's user-space libraries are "
        "missing or ldconfig was not run",
        *evidence,
        commands=(*install, "sudo ldconfig"),
        notes=() if version else ("install the driver's user-space libraries",),
    )


def _found(facts: NodeFacts, soname: str) -> Result:
    assert isinstance(facts.libs, LibFacts)
    library = facts.libs.libraries[soname][0]
    return ok(f"{soname} -> {library.target}", Evidence(library.path, library.target))


@check(
    "lib.nvml-not-found",
    severity=Severity.ERROR,
    title="libnvidia-ml.so.1 is in the loader's path",
    remedy="Install the driver's user-space libraries and run ldconfig.",
    sources=(
        "https://github.com/NVIDIA/libnvidia-container/issues/231",
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/154",
    ),
    depends_on=("driver.not-loaded", "container.no-gpu-attached"),
)
def nvml_not_found(facts: NodeFacts) -> Result:
    """`load library failed: libnvidia-ml.so.1: cannot open shared object file`."""
    return _lookup(facts, "libnvidia-ml.so.1") or _found(facts, "libnvidia-ml.so.1")


@check(
    "lib.libcuda-not-found",
    severity=Severity.ERROR,
    title="libcuda.so.1 is in the loader's path",
    remedy="Install the driver's user-space libraries and run ldconfig.",
    sources=("https://github.com/NVIDIA/nvidia-container-toolkit/issues/735",),
    depends_on=("driver.not-loaded", "container.no-gpu-attached"),
)
def libcuda_not_found(facts: NodeFacts) -> Result:
    """CUDA applications fail with 'CUDA driver not found'."""
    return _lookup(facts, "libcuda.so.1") or _found(facts, "libcuda.so.1")


@check(
    "lib.libcuda-stub",
    severity=Severity.ERROR,
    title="libcuda.so.1 is the real driver library, not the CUDA toolkit stub",
    remedy="Remove the stubs directory from LD_LIBRARY_PATH and ld.so.conf.d, then run ldconfig.",
    sources=(
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/668",
        "https://github.com/numba/numba/issues/8985",
    ),
    depends_on=("lib.libcuda-not-found",),
)
def libcuda_stub(facts: NodeFacts) -> Result:
    """A `stubs/libcuda.so` at run time gives CUDA error 34."""
    libs = facts.libs
    if isinstance(libs, Unavailable):
        return unknown(f"cannot read the loader configuration: {libs.reason}")
    stubs = [
        lib
        for name in ("libcuda.so.1", "libcuda.so")
        for lib in libs.libraries.get(name, ())[:1]
        if "/stubs/" in lib.target or "/stubs/" in lib.path
    ]
    if not stubs and not libs.stub_dirs_on_path:
        return ok("libcuda.so.1 is not a stub")
    evidence = [Evidence(lib.path, f"-> {lib.target}") for lib in stubs]
    evidence += [Evidence("LD_LIBRARY_PATH", d) for d in libs.stub_dirs_on_path]
    return fail(
        "libcuda resolves to the CUDA toolkit's link-time stub: CUDA will fail with error 34 "
        "(CUDA driver is a stub library)",
        *evidence,
        commands=("sudo ldconfig",),
        notes=("first remove the stubs directory from LD_LIBRARY_PATH and /etc/ld.so.conf.d/*",),
    )
