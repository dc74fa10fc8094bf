"""The closed sets of `ctk cdi generate`'s command line: light enough to import at start-up.

The CLI builds its options from these before any of the generator's modules are imported, so
that `ctk --help` and the other commands do not pay for them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ctk.enums import StrEnum


class Mode(StrEnum):
    """How devices are found: NVML, device nodes alone, or one class of device (nvidia-ctk's)."""

    NVML = "nvml"
    MANAGEMENT = "management"
    CSV = "csv"  # Jetson/Tegra: what the CSV files list
    WSL = "wsl"  # WSL2: /dev/dxg and the Windows driver store
    IMEX = "imex"  # IMEX channels
    GDS = "gds"  # GPUDirect Storage
    GDRCOPY = "gdrcopy"
    MOFED = "mofed"  # InfiniBand verbs and RDMA CM
    NVSWITCH = "nvswitch"


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
    # accepted, no effect: ctk never uses nvsandboxutils, and its CSV mode has one device
    DISABLE_NVSANDBOXUTILS = "disable-nvsandboxutils"
    DISABLE_MULTIPLE_CSV_DEVICES = "disable-multiple-csv-devices"
    # refused: the coherent/noncoherent extra specs are not implemented
    ENABLE_COHERENT_ANNOTATIONS = "enable-coherent-annotations"


DEFAULT_KINDS: Mapping[Mode, str] = {
    Mode.NVML: "nvidia.com/gpu",
    # Each of the others its own kind (nvidia-ctk's library defaults; its CLI would make them all
    # nvidia.com/gpu), so that their `all` never collides with the main spec's `all`.
    Mode.MANAGEMENT: "management.nvidia.com/gpu",
    Mode.CSV: "nvidia.com/gpu",  # Jetson: the node's main spec
    Mode.WSL: "nvidia.com/gpu",  # WSL2: the node's main spec
    Mode.IMEX: "nvidia.com/imex-channel",
    Mode.GDS: "nvidia.com/gds",
    Mode.GDRCOPY: "nvidia.com/gdrcopy",
    Mode.MOFED: "nvidia.com/mofed",
    Mode.NVSWITCH: "nvidia.com/nvswitch",
}
# the modes that find one class of device nodes and nothing else (no driver files, no hooks)
NODE_CLASSES: Mapping[Mode, tuple[str, ...]] = {
    Mode.GDS: ("/dev/nvidia-fs*",),
    Mode.GDRCOPY: ("/dev/gdrdrv",),
    Mode.MOFED: ("/dev/infiniband/uverbs*", "/dev/infiniband/rdma_cm"),
    Mode.NVSWITCH: ("/dev/nvidia-nvswitchctl", "/dev/nvidia-nvswitch*"),
}
IMEX_CHANNELS = "/dev/nvidia-caps-imex-channels"
