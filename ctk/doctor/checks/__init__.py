"""All checks, one module per group (`Group`); importing this package fills the registry (the
runner orders by dependency). `engine_config` holds what the docker, containerd and crio checks
share."""

from ctk.doctor.checks import (  # noqa: F401
    cdi,
    container,
    containerd,
    crio,
    cuda,
    dev,
    docker,
    driver,
    gpu,
    hami,
    host,
    k8s,
    lib,
    mig,
    toolkit,
)
