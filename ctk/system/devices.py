"""/dev/char links for NVIDIA device nodes: nodes in, a plan of links out (no I/O here).

systemd's device cgroup rules find device nodes through `/dev/char/<major>:<minor>`; the driver
does not create those links for its nodes. Which nodes there should be at all is
`ctk.node.expected_nodes`, the rule `doctor` and `cdi generate` share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ctk.node.dev import DevNode


@dataclass(frozen=True, slots=True, order=True)
class CharLink:
    """`link` (`/dev/char/<major>:<minor>`) pointing at the device node `target`."""

    link: PurePosixPath
    target: PurePosixPath


def char_links(nodes: Iterable[DevNode], dev_char: PurePosixPath) -> list[CharLink]:
    """One `/dev/char/<major>:<minor>` link per node (the first node of a number wins)."""
    links: dict[PurePosixPath, CharLink] = {}
    for node in sorted(nodes):
        link = dev_char / f"{node.major}:{node.minor}"
        links.setdefault(link, CharLink(link, node.path))
    return sorted(links.values())
