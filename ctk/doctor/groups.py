"""The doctor's layers, in a module of their own: `ctk doctor --help` lists them as the choices
of `--group` without loading the doctor's model (its frozen dataclasses cost a few milliseconds
to define)."""

from __future__ import annotations

from ctk.enums import StrEnum


class Group(StrEnum):
    """Layers of the stack, bottom up; the order is the order of the report."""

    DRIVER = "driver"
    GPU = "gpu"
    DEV = "dev"
    LIB = "lib"
    CUDA = "cuda"
    MIG = "mig"
    TOOLKIT = "toolkit"
    HOST = "host"
    DOCKER = "docker"
    CONTAINERD = "containerd"
    CRIO = "crio"
    CDI = "cdi"
    K8S = "k8s"
    DRA = "dra"
    HAMI = "hami"
    CONTAINER = "container"
