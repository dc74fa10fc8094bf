"""All checks; importing this package fills the registry (the runner orders by dependency)."""

from ctk.doctor.checks import (  # noqa: F401
    cdi,
    container,
    cuda,
    dev,
    driver,
    engines,
    gpu,
    lib,
    mig,
    toolkit,
)
