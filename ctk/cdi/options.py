"""The closed sets of `ctk cdi generate`'s command line: light enough to import at start-up.

The CLI builds its options from these before any of the generator's modules are imported, so
that `ctk --help` and the other commands do not pay for them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ctk.enums import StrEnum


class Mode(StrEnum):
    """How devices are found: through NVML, or (management) from device nodes alone."""

    NVML = "nvml"
    MANAGEMENT = "management"


class NameStrategy(StrEnum):
    """How devices are named: `0` and `0:1`, the UUID, or `gpu0` and `mig0:1`."""

    INDEX = "index"
    UUID = "uuid"
    TYPE_INDEX = "type-index"


class SpecFormat(StrEnum):
    """Output formats of a spec."""

    YAML = "yaml"
    JSON = "json"


class HookName(StrEnum):
    """The hooks a spec can carry (nvidia-cdi-hook's subcommand names)."""

    CREATE_SYMLINKS = "create-symlinks"
    ENABLE_CUDA_COMPAT = "enable-cuda-compat"
    UPDATE_LDCACHE = "update-ldcache"
    DISABLE_DEVICE_NODE_MODIFICATION = "disable-device-node-modification"
    UPDATE_APPLICATION_PROFILE = "update-application-profile"
    CHMOD = "chmod"


DEFAULT_HOOKS = frozenset(
    {
        HookName.CREATE_SYMLINKS,
        HookName.ENABLE_CUDA_COMPAT,
        HookName.UPDATE_LDCACHE,
        HookName.DISABLE_DEVICE_NODE_MODIFICATION,
        HookName.UPDATE_APPLICATION_PROFILE,
    }
)


class FeatureFlag(StrEnum):
    """nvidia-ctk's `--feature-flag` values."""

    NO_ADDITIONAL_GIDS = "no-additional-gids-for-device-nodes"
    DISABLE_IPC_DISCOVERER = "disable-ipc-discoverer"
    ENABLE_EXPLICIT_DRIVER_LIBRARIES = "enable-explicit-driver-libraries"
    # accepted, no effect: ctk never uses nvsandboxutils and has no CSV mode
    DISABLE_NVSANDBOXUTILS = "disable-nvsandboxutils"
    DISABLE_MULTIPLE_CSV_DEVICES = "disable-multiple-csv-devices"
    # refused: the coherent/noncoherent extra specs are not implemented
    ENABLE_COHERENT_ANNOTATIONS = "enable-coherent-annotations"


DEFAULT_KINDS: Mapping[Mode, str] = {
    Mode.NVML: "nvidia.com/gpu",
    # its own vendor, so that its `all` never collides with the main spec's `all`
    Mode.MANAGEMENT: "management.nvidia.com/gpu",
}
