"""What dpkg says is installed: its status file parsed, and Debian versions made upstream ones.

Pure text in, values out; the callers read `/var/lib/dpkg/status` under the root they were given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from ctk.runtime_config.engines import Runtime

DPKG_STATUS = "/var/lib/dpkg/status"


def parse_dpkg_status(text: str, prefixes: Iterable[str] = ("",)) -> dict[str, str]:
    """Installed packages whose names start with ``prefixes``: name -> version."""
    wanted = tuple(prefixes)
    packages = {}
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(": ")
            if sep and not line.startswith(" "):
                fields[key] = value.strip()
        name = fields.get("Package", "")
        if name.startswith(wanted) and fields.get("Status", "").endswith(" installed"):
            packages[name] = fields.get("Version", "")
    return packages


def upstream_version(package_version: str) -> str:
    """A Debian version without its epoch and revision: "5:28.2.0-1~ubuntu.24.04" -> "28.2.0"."""
    version = package_version.partition(":")[2] or package_version
    return version.rpartition("-")[0] or version


ENGINE_PACKAGES: Final[Mapping[Runtime, tuple[str, ...]]] = {
    Runtime.DOCKER: ("docker-ce", "docker.io", "moby-engine"),
    Runtime.CONTAINERD: ("containerd.io", "containerd"),
}
"""The Debian packages that install each engine whose behaviour depends on its version,
preferred first."""


def engine_release(packages: Mapping[str, str], runtime: Runtime) -> str | None:
    """The upstream version of the package that installed ``runtime``, from ``packages`` (as
    `parse_dpkg_status` returns them); None where no package did (a static binary, an RPM node,
    a snap, k3s's own containerd)."""
    found = next((packages[n] for n in ENGINE_PACKAGES.get(runtime, ()) if n in packages), None)
    return None if found is None else upstream_version(found)
