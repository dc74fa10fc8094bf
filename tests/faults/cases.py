"""The table of hostile inputs: which file of which command gets which content.

A *slot* is one file a command reads (the Docker config of `runtime configure`, the spec of
`cdi validate`, `proc/driver/nvidia/version` under `doctor --root` ...); a *content* is one
hostile thing to put there (a FIFO, `/dev/zero`, a 3 GB sparse file, 100,000 levels of nesting
...). The suite runs every content in every slot. Known failures that belong to another area are
listed in `KNOWN` with the issue item that fixes them, so they flip to a failure (strict xfail)
the day they are fixed.
"""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

MiB: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Slot:
    """One file that one command reads, and how to run that command on a case directory."""

    name: str
    file: str  # relative to the case directory
    kind: str  # json, toml, yaml, text: what well-formed content looks like there
    argv: Callable[[Path], list[str]]
    named: tuple[str, ...] = ()  # what a successful run may change (relative paths)
    setup: Callable[[Path], None] | None = None  # other files the command needs
    node: bool = False  # the case directory holds a materialised fixture node under root/
    contents: tuple[str, ...] | None = None  # None: every content
    json_out: bool = False  # stdout must be one JSON document whatever the input


def _big_string(kind: str, size: int) -> bytes:
    body = "x" * size
    return {
        "json": f'{{"key": "{body}"}}\n',
        "toml": f'key = "{body}"\n',
        "yaml": f"key: {body}\n",
    }.get(kind, body + "\n").encode()


def _deep(kind: str) -> bytes:
    return {
        "json": b"[" * 100_000 + b"]" * 100_000,
        "toml": b".".join(b"a%d" % i for i in range(3000)) + b" = 1\n",
        "yaml": b"[" * 100_000 + b"]" * 100_000,
    }.get(kind, b"(" * 100_000)


def _bigint(kind: str) -> bytes:
    digits = b"9" * 5000
    return {
        "json": b'{"key": ' + digits + b"}\n",
        "toml": b"key = " + digits + b"\n",
        "yaml": b"key: " + digits + b"\n",
    }.get(kind, digits + b"\n")


def _write(data: Callable[[str], bytes]) -> Callable[[Path, str], None]:
    def put(path: Path, kind: str) -> None:
        path.write_bytes(data(kind))

    return put


def _fifo(path: Path, kind: str) -> None:
    os.mkfifo(path)


def _char_device(path: Path, kind: str) -> None:
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero's numbers


def _link_dev_zero(path: Path, kind: str) -> None:
    os.symlink("/dev/zero", path)


def _sparse(path: Path, kind: str) -> None:
    with path.open("wb") as handle:
        handle.truncate(3 << 30)


def _loop(path: Path, kind: str) -> None:
    os.symlink(path.name, path)


def _dangling(path: Path, kind: str) -> None:
    os.symlink("missing/dir/" + path.name, path)


def _directory(path: Path, kind: str) -> None:
    path.mkdir()


def _binary(path: Path, kind: str) -> None:
    path.write_bytes(random.Random(15).randbytes(4096))


def _unreadable(path: Path, kind: str) -> None:
    path.write_bytes(_big_string(kind, 10))
    path.chmod(0)


CONTENTS: Final[dict[str, Callable[[Path, str], None]]] = {
    "fifo": _fifo,
    "char-device": _char_device,
    "link-to-dev-zero": _link_dev_zero,
    "sparse-3gb": _sparse,
    "over-cap-20mb": _write(lambda kind: _big_string(kind, 20 * MiB)),
    "valid-10mb": _write(lambda kind: _big_string(kind, 10 * MiB)),
    "deep": _write(_deep),
    "binary": _binary,
    "invalid-utf8": _write(lambda kind: b"\xff\xfe" + _big_string(kind, 3)),
    "int-5000-digits": _write(_bigint),
    "unicode-key": _write(
        lambda kind: '{"é": 1}\n'.encode() if kind == "json" else "é = 1\n".encode()
    ),
    "nul-bytes": _write(lambda kind: b"\0" * 64),
    "symlink-loop": _loop,
    "dangling-symlink": _dangling,
    "directory": _directory,
    "eacces": _unreadable,
}
"""Each puts one hostile thing at a path; ``kind`` says which format the slot expects."""

UNPRIVILEGED: Final = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")
"""Root without the capabilities that ignore file modes: `eacces` needs them gone."""


def _docker_setup(case: Path) -> None:
    (case / "crio.conf").write_text("")


def _node_argv(*tail: str) -> Callable[[Path], list[str]]:
    def argv(case: Path) -> list[str]:
        root = str(case / "root")
        return [a.replace("{root}", root).replace("{case}", str(case)) for a in tail]

    return argv


def _case_argv(*tail: str) -> Callable[[Path], list[str]]:
    def argv(case: Path) -> list[str]:
        return [a.replace("{case}", str(case)) for a in tail]

    return argv


_WRITE_CONTENTS: Final = (
    "fifo",
    "link-to-dev-zero",
    "sparse-3gb",
    "symlink-loop",
    "dangling-symlink",
    "directory",
    "eacces",
)
"""Contents that matter where ctk writes (an output it replaces, not a file it parses)."""

_PROC_CONTENTS: Final = (
    "fifo",
    "char-device",
    "link-to-dev-zero",
    "sparse-3gb",
    "over-cap-20mb",
    "deep",
    "binary",
    "int-5000-digits",
    "nul-bytes",
    "symlink-loop",
    "directory",
)

SLOTS: Final = (
    Slot(
        "docker-configure",
        "daemon.json",
        "json",
        _case_argv("runtime", "configure", "--runtime", "docker", "--config", "{case}/daemon.json"),
        named=("daemon.json", "state"),
    ),
    Slot(
        "docker-unconfigure",
        "daemon.json",
        "json",
        _case_argv(
            "runtime", "unconfigure", "--runtime", "docker", "--config", "{case}/daemon.json"
        ),
        named=("daemon.json", "state"),
    ),
    Slot(
        "containerd-configure",
        "config.toml",
        "toml",
        _case_argv(
            "runtime",
            "configure",
            "--runtime",
            "containerd",
            "--config",
            "{case}/config.toml",
            "--drop-in-config",
            "{case}/conf.d/99-nvidia.toml",
        ),
        named=("config.toml", "conf.d", "state"),
    ),
    Slot(
        "crio-drop-in",
        "crio.conf.d/99-nvidia.toml",
        "toml",
        _case_argv(
            "runtime",
            "configure",
            "--runtime",
            "crio",
            "--config",
            "{case}/crio.conf",
            "--drop-in-config",
            "{case}/crio.conf.d/99-nvidia.toml",
        ),
        named=("crio.conf.d", "state"),
        setup=_docker_setup,
    ),
    Slot(
        "cdi-validate", "nvidia.yaml", "yaml", _case_argv("cdi", "validate", "{case}/nvidia.yaml")
    ),
    Slot(
        "cdi-validate-json",
        "nvidia.json",
        "json",
        _case_argv("cdi", "validate", "{case}/nvidia.json"),
        contents=("deep", "binary", "invalid-utf8", "int-5000-digits", "unicode-key", "nul-bytes"),
    ),
    Slot(
        "cdi-list", "cdi/nvidia.yaml", "yaml", _case_argv("cdi", "list", "--spec-dir", "{case}/cdi")
    ),
    Slot(
        "cdi-refresh-output",
        "nvidia.yaml",
        "yaml",
        _node_argv(
            "cdi",
            "refresh",
            "--driver-root",
            "{root}",
            "--dev-root",
            "{root}",
            "--output",
            "{case}/nvidia.yaml",
        ),
        named=("nvidia.yaml",),
        node=True,
        contents=(*_WRITE_CONTENTS, "binary", "over-cap-20mb", "deep"),
    ),
    Slot(
        "cdi-generate-mig-minors",
        "root/proc/driver/nvidia-caps/mig-minors",
        "text",
        _node_argv(
            "cdi",
            "generate",
            "--driver-root",
            "{root}",
            "--dev-root",
            "{root}",
            "--output",
            "{case}/out.yaml",
        ),
        named=("out.yaml",),
        node=True,
        contents=_PROC_CONTENTS,
    ),
    Slot(
        "doctor-driver-version",
        "root/proc/driver/nvidia/version",
        "text",
        _node_argv("doctor", "--json", "--root", "{root}"),
        node=True,
        json_out=True,
        contents=_PROC_CONTENTS,
    ),
    Slot(
        "doctor-ld-cache",
        "root/etc/ld.so.cache",
        "text",
        _node_argv("doctor", "--json", "--root", "{root}"),
        node=True,
        json_out=True,
        contents=_PROC_CONTENTS,
    ),
    Slot(
        "doctor-image-env",
        "env",
        "text",
        _case_argv("doctor", "--json", "--image-env", "{case}/env"),  # refused: an error, no JSON
    ),
    Slot(
        "system-proc-devices",
        "root/proc/devices",
        "text",
        _node_argv(
            "system",
            "create-dev-char-symlinks",
            "--driver-root",
            "{root}",
            "--dev-char-path",
            "{case}/char",
            "--dry-run",
        ),
        node=True,
        contents=_PROC_CONTENTS,
    ),
)


@dataclass(frozen=True, slots=True)
class Known:
    """A case that still fails, the issue item that fixes it and the area that owns it."""

    item: str
    owner: str
    cases: frozenset[str] = field(default_factory=frozenset)


KNOWN: Final[tuple[Known, ...]] = ()
"""Cases that still fail, by issue 15 item and owning area: each is a strict xfail, so the fix
that makes one pass must also delete it here."""


def known(case_id: str) -> Known | None:
    """The known failure ``case_id`` belongs to, if any."""
    return next((k for k in KNOWN if case_id in k.cases), None)


def case_ids() -> list[tuple[Slot, str]]:
    """Every (slot, content) pair the suite runs."""
    return [(s, c) for s in SLOTS for c in (s.contents or tuple(CONTENTS))]
