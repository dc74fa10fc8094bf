"""All checks, one module per group (`Group`); importing this package fills the registry (the
runner orders by dependency). `engine_config` holds what the docker, containerd and crio checks
share; `cdi_readers` what the cdi, toolkit, mig and engine checks know about the GPU specs and
the programs that read them."""

from ctk.doctor.checks import (  # noqa: F401
    cdi,
    container,
    containerd,
    crio,
    cuda,
    dev,
    docker,
    dra,
    driver,
    gpu,
    hami,
    host,
    k8s,
    lib,
    mig,
    toolkit,
)
