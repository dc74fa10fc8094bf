"""Read an image's environment for `ctk doctor --image REF`.

``REF`` is one of:
- ``oci:DIR[:TAG]``: an OCI image layout directory (``index.json``, ``blobs/``);
- ``oci-archive:FILE[:TAG]``: the same layout in a tar file, read in place (never extracted);
- anything else: an image the local engines know, asked in order: ``docker image inspect``,
  ``podman image inspect``, then containerd (``ctr -n k8s.io``: the image's target digest from
  ``images ls``, then the index, manifest and config blobs with ``content get``). The first engine
  that knows the reference wins; when none does, the reasons are returned, not raised.

Engines run without a shell, from argv lists, with a timeout. Layouts and archives are read with
size caps; an archive member that is not a regular file (a link) is never followed.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ctk.doctor import oci_image as oci
from ctk.errors import UsageError
from ctk.host import files

ENGINE_TIMEOUT_S: Final = 10.0
OUTPUT_LIMIT: Final = 4 << 20
CONTAINERD_NAMESPACE: Final = "k8s.io"
HINT: Final = "--image takes oci:DIR[:TAG], oci-archive:FILE[:TAG] or a local image name"
_ARCHES: Final = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "armv7l": "arm",
    "riscv64": "riscv64",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageEnv:
    """An image's environment and where it came from; ``env`` None: no engine knew the image."""

    source: str
    env: Mapping[str, str] | None = None
    reasons: tuple[str, ...] = field(default=())


def host_platform() -> str:
    """`linux/amd64` on x86_64 (the OCI platform names)."""
    machine = platform.machine()
    return f"linux/{_ARCHES.get(machine, machine.lower())}"


def read_image_env(
    ref: str, *, platform_name: str | None = None, timeout: float = ENGINE_TIMEOUT_S
) -> ImageEnv:
    """The environment of the image ``ref`` (see the module docstring).

    A missing or malformed layout or archive is a `CtkError` (exit 2 when the path is missing).
    """
    wanted = platform_name or host_platform()
    if not ref.strip():
        raise UsageError("--image is empty", hint=HINT)
    if ref.startswith("oci:"):
        path, tag = _split(ref.removeprefix("oci:"), want_dir=True)
        lines = _layout_env(path, tag, wanted)
    elif ref.startswith("oci-archive:"):
        path, tag = _split(ref.removeprefix("oci-archive:"), want_dir=False)
        lines = _archive_env(path, tag, wanted)
    elif "://" in ref:
        raise UsageError(
            f"--image {ref}: ctk reads local images only", hint="pull it first, or " + HINT
        )
    else:
        return _engine_env(ref, wanted, timeout)
    return ImageEnv(source=f"image {ref}", env=oci.env_map(lines))


def _split(text: str, *, want_dir: bool) -> tuple[Path, str | None]:
    """`DIR[:TAG]`: the whole text when that path exists, else the part before the last ':'."""
    whole = Path(text)
    if text and whole.exists():
        return _checked(whole, want_dir=want_dir), None
    head, sep, tag = text.rpartition(":")
    if sep and head and tag and "/" not in tag and Path(head).exists():
        return _checked(Path(head), want_dir=want_dir), tag
    kind = "directory" if want_dir else "file"
    raise UsageError(f"--image: no such {kind}: {text}", hint=HINT)


def _checked(path: Path, *, want_dir: bool) -> Path:
    if want_dir and not path.is_dir():
        raise UsageError(
            f"--image oci:{path}: not a directory", hint="an OCI layout is a directory"
        )
    if not want_dir and not path.is_file():
        raise UsageError(f"--image oci-archive:{path}: not a regular file", hint=HINT)
    return path


def _layout_env(path: Path, tag: str | None, wanted: str) -> tuple[str, ...]:
    what = f"OCI layout {path}"
    index = _index(files.read_bytes(path / "index.json", limit=oci.JSON_LIMIT), what)

    def read_blob(desc: oci.Descriptor) -> bytes:
        blob = path / oci.blob_path(desc.digest)
        if blob.is_symlink():
            raise oci.MalformedImage(f"{what}: blob {desc.digest} is a symbolic link")
        data = files.read_bytes(blob, missing_ok=True, limit=oci.JSON_LIMIT)
        if data is None:
            raise oci.MalformedImage(f"{what}: blob {desc.digest} is missing")
        return data

    return oci.resolve_env(index, read_blob, tag=tag, platform=wanted, what=what)


def _index(data: bytes, what: str) -> tuple[oci.Descriptor, ...]:
    body = oci.parse_json(data, f"{what}: index.json")
    return oci.manifests(body, f"{what}: index.json")


def _archive_env(path: Path, tag: str | None, wanted: str) -> tuple[str, ...]:
    what = f"OCI archive {path}"
    with files.open_regular(path) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r:") as archive:
                members = {m.name.removeprefix("./"): m for m in archive.getmembers()}

                def member(name: str) -> bytes:
                    info = members.get(name)
                    if info is None:
                        raise oci.MalformedImage(f"{what}: no {name} in the archive")
                    if not info.isreg():  # a link could lead outside the archive: not followed
                        raise oci.MalformedImage(f"{what}: {name} is not a regular file")
                    if info.size > oci.JSON_LIMIT:
                        raise oci.MalformedImage(f"{what}: {name} is larger than expected")
                    extracted = archive.extractfile(info)
                    if extracted is None:
                        raise oci.MalformedImage(f"{what}: {name} cannot be read")
                    return extracted.read(oci.JSON_LIMIT + 1)

                index = _index(member("index.json"), what)
                return oci.resolve_env(
                    index,
                    lambda d: member(oci.blob_path(d.digest)),
                    tag=tag,
                    platform=wanted,
                    what=what,
                )
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise oci.MalformedImage(f"{what}: not a readable tar archive ({exc})") from exc


# --- the local engines ---------------------------------------------------------------------


class _NotKnown(Exception):
    """This engine does not know the image (or is not usable): the reason."""


def _run(argv: list[str], timeout: float) -> bytes:
    try:
        done = subprocess.run(  # an argv list, no shell
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired as exc:
        raise _NotKnown(f"no answer within {timeout:g} s") from exc
    except OSError as exc:
        raise _NotKnown(exc.strerror or str(exc)) from exc
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or [
            f"exit status {done.returncode}"
        ]
        raise _NotKnown(lines[-1].strip()[:160])
    if len(done.stdout) > OUTPUT_LIMIT:
        raise _NotKnown(f"more than {OUTPUT_LIMIT >> 20} MiB of output")
    return done.stdout


def _inspect(program: str) -> Callable[[str, str, float], tuple[str, ...]]:
    def inspect(ref: str, wanted: str, timeout: float) -> tuple[str, ...]:
        del wanted  # the engine picked the platform when it pulled the image
        data = _run([program, "image", "inspect", ref], timeout)
        return oci.inspect_env(data, f"{os.path.basename(program)} image inspect {ref}")

    return inspect


def _containerd(ctr: str) -> Callable[[str, str, float], tuple[str, ...]]:
    base = [ctr, "--connect-timeout", "2s", "-n", CONTAINERD_NAMESPACE]

    def env(ref: str, wanted: str, timeout: float) -> tuple[str, ...]:
        address = os.environ.get("CONTAINERD_ADDRESS") or "/run/containerd/containerd.sock"
        if not os.path.exists(address.removeprefix("unix://")):
            raise _NotKnown(f"not running (no socket {address})")
        for name in oci.qualified_names(ref):
            listing = _run([*base, "images", "ls", f"name=={name}"], timeout)
            rows = [line.split() for line in listing.decode("utf-8", "replace").splitlines()[1:]]
            rows = [row for row in rows if len(row) >= 3 and row[0] == name]
            if rows:
                top = oci.Descriptor(media_type=rows[0][1], digest=rows[0][2], ref_name=name)
                return oci.resolve_env(
                    (top,),
                    lambda d: _run([*base, "content", "get", d.digest], timeout),
                    tag=name,
                    platform=wanted,
                    what=f"containerd image {name}",
                )
        raise _NotKnown("no such image")

    return env


ENGINES: Final = (
    ("docker", _inspect),
    ("podman", _inspect),
    ("ctr", _containerd),
)


def _engine_env(ref: str, wanted: str, timeout: float) -> ImageEnv:
    reasons = []
    for program, make in ENGINES:
        found = shutil.which(program)
        if found is None:
            reasons.append(f"{program}: not installed")
            continue
        try:
            lines = make(found)(ref, wanted, timeout)
        except _NotKnown as exc:
            reasons.append(f"{program}: {exc}")
            continue
        engine = "containerd" if program == "ctr" else program
        return ImageEnv(source=f"image {ref} ({engine})", env=oci.env_map(lines))
    return ImageEnv(source=f"image {ref}", reasons=tuple(reasons))
