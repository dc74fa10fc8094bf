"""The NVIDIA Container Toolkit's own config.toml (`/etc/nvidia-container-runtime/config.toml`).

Pure text -> text: `apply_sets` edits the document with tomlkit, so every comment, the order
of keys and the final newline survive, and setting a value twice gives what setting it once
gave. Keys are the toolkit's (`nvidia-container-runtime.mode`), each with its type, so
`--set` refuses a key the toolkit would not read, as nvidia-ctk does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from ctk.errors import CtkError, UsageError

DEFAULT_PATH: Final = "/etc/nvidia-container-runtime/config.toml"


class Kind(Enum):
    """The type of a key's value."""

    BOOL = "bool"
    STRING = "string"
    LIST = "list"  # of strings; given comma-separated on the command line


KEYS: Final[Mapping[str, Kind]] = {
    "accept-nvidia-visible-devices-as-volume-mounts": Kind.BOOL,
    "accept-nvidia-visible-devices-envvar-when-unprivileged": Kind.BOOL,
    "disable-require": Kind.BOOL,
    "supported-driver-capabilities": Kind.STRING,
    "swarm-resource": Kind.STRING,
    "nvidia-container-cli.debug": Kind.STRING,
    "nvidia-container-cli.environment": Kind.LIST,
    "nvidia-container-cli.ldcache": Kind.STRING,
    "nvidia-container-cli.ldconfig": Kind.STRING,
    "nvidia-container-cli.load-kmods": Kind.BOOL,
    "nvidia-container-cli.no-cgroups": Kind.BOOL,
    "nvidia-container-cli.path": Kind.STRING,
    "nvidia-container-cli.root": Kind.STRING,
    "nvidia-container-cli.user": Kind.STRING,
    "nvidia-container-runtime.debug": Kind.STRING,
    "nvidia-container-runtime.log-level": Kind.STRING,
    "nvidia-container-runtime.mode": Kind.STRING,
    "nvidia-container-runtime.runtimes": Kind.LIST,
    "nvidia-container-runtime.modes.cdi.annotation-prefixes": Kind.LIST,
    "nvidia-container-runtime.modes.cdi.default-kind": Kind.STRING,
    "nvidia-container-runtime.modes.cdi.spec-dirs": Kind.LIST,
    "nvidia-container-runtime.modes.csv.mount-spec-path": Kind.STRING,
    "nvidia-container-runtime.modes.legacy.cuda-compat-mode": Kind.STRING,
    "nvidia-container-runtime-hook.path": Kind.STRING,
    "nvidia-container-runtime-hook.skip-mode-detection": Kind.BOOL,
    "nvidia-ctk.path": Kind.STRING,
}
"""Every key the toolkit reads, and its type; any `features.<name>` is a boolean too."""

DEFAULT_CONFIG: Final = """\
#accept-nvidia-visible-devices-as-volume-mounts = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
disable-require = false
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"
#swarm-resource = "DOCKER_RESOURCE_GPU"

[nvidia-container-cli]
#debug = "/var/log/nvidia-container-toolkit.log"
environment = []
#ldcache = "/etc/ld.so.cache"
ldconfig = "@/sbin/ldconfig"
load-kmods = true
#no-cgroups = false
#path = "/usr/bin/nvidia-container-cli"
#root = "/run/nvidia/driver"
#user = "root:video"

[nvidia-container-runtime]
#debug = "/var/log/nvidia-container-runtime.log"
log-level = "info"
mode = "auto"
runtimes = ["runc", "crun"]

[nvidia-container-runtime.modes]

[nvidia-container-runtime.modes.cdi]
annotation-prefixes = ["cdi.k8s.io/"]
default-kind = "nvidia.com/gpu"
spec-dirs = ["/etc/cdi", "/var/run/cdi"]

[nvidia-container-runtime.modes.csv]
mount-spec-path = "/etc/nvidia-container-runtime/host-files-for-container.d"

[nvidia-container-runtime.modes.legacy]
cuda-compat-mode = "ldconfig"

[nvidia-container-runtime-hook]
path = "nvidia-container-runtime-hook"
skip-mode-detection = false

[nvidia-ctk]
path = "nvidia-ctk"
"""
"""The toolkit's default config: the values nvidia-ctk uses when a key is absent."""

_TRUE = frozenset({"1", "t", "true"})
_FALSE = frozenset({"0", "f", "false"})


@dataclass(frozen=True, slots=True)
class Setting:
    """One `--set key[=value]`, parsed and typed."""

    key: str
    value: bool | str | list[str]


def _kind(key: str) -> Kind:
    if key.startswith("features.") and key.count(".") == 1 and len(key) > len("features."):
        return Kind.BOOL
    kind = KEYS.get(key)
    if kind is None:
        raise UsageError(
            f"invalid --set option {key!r}: undefined field",
            hint="keys are the toolkit's, e.g. nvidia-container-runtime.mode=cdi "
            "(see ctk config default)",
        )
    return kind


def parse_setting(given: str) -> Setting:
    """``key=value``, or ``key`` alone for a boolean set to true."""
    key, has_value, raw = given.partition("=")
    key = key.strip()
    kind = _kind(key)
    if kind is Kind.BOOL:
        word = raw.strip().lower() if has_value else "true"
        if word not in _TRUE | _FALSE:
            raise UsageError(f"--set {given}: {key} takes true or false")
        return Setting(key, word in _TRUE)
    if not has_value:
        raise UsageError(f"--set {given}: give a value: {key}=VALUE")
    if kind is Kind.LIST:
        return Setting(key, [item.strip() for item in raw.split(",") if item.strip()])
    return Setting(key, raw)


def parse(text: str, source: str) -> tomlkit.TOMLDocument:
    """``text`` as a tomlkit document; `CtkError` naming ``source`` when it is not TOML."""
    try:
        return tomlkit.parse(text)
    except (TOMLKitError, RecursionError, ValueError) as exc:
        raise CtkError(
            f"{source}: not valid TOML: {exc}", hint="fix it or pass --config-file"
        ) from exc


def _table(
    doc: tomlkit.TOMLDocument, parts: Sequence[str], source: str
) -> Table | tomlkit.TOMLDocument:
    container: Table | tomlkit.TOMLDocument = doc
    for index, part in enumerate(parts):
        item = container.get(part)
        if item is None:
            item = tomlkit.table(is_super_table=index < len(parts) - 1)
            container[part] = item
        if not isinstance(item, Table):
            where = ".".join(parts[: index + 1])
            raise CtkError(f"{source}: {where} is not a table; cannot set keys in it")
        container = item
    return container


def apply_sets(text: str, settings: Sequence[Setting], source: str = DEFAULT_PATH) -> str:
    """``text`` with each setting applied; everything else, comments included, kept."""
    if not settings:
        return text
    doc = parse(text, source)
    for setting in settings:
        *parents, name = setting.key.split(".")
        table = _table(doc, parents, source)
        old = table.get(name)
        if old is not None and _plain(old) == setting.value:
            continue  # unchanged: the value's formatting is kept too
        table[name] = setting.value
    return doc.as_string()


def _plain(item: object) -> object:
    unwrap = getattr(item, "unwrap", None)
    return unwrap() if callable(unwrap) else item


def driver_root(text: str, source: str) -> str | None:
    """`nvidia-container-cli.root` of a config text (the driver root of cdi generate)."""
    doc = parse(text, source)
    cli = doc.get("nvidia-container-cli")
    root = cli.get("root") if isinstance(cli, Table) else None
    value = _plain(root)
    return value if isinstance(value, str) and value else None
