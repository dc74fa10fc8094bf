"""An image's environment from OCI JSON: index -> manifest -> config, and engine inspect output.

Pure: the caller reads the blobs (`read_blob`) from a layout directory, an archive or an engine's
content store; this module decides which descriptor to follow (the tag, then this host's
platform), checks each blob against its digest and size, and pulls ``config.Env`` out of the
image config. Anything that does not follow the OCI image spec is a one-line `MalformedImage`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ctk.errors import CtkError

JSON_LIMIT: Final = 4 << 20
"""The largest index, manifest or config read (real ones are a few KiB)."""
MAX_DEPTH: Final = 4
"""How many nested indexes are followed before the image is called malformed."""

REF_NAME: Final = "org.opencontainers.image.ref.name"
CONTAINERD_NAME: Final = "io.containerd.image.name"
INDEX_TYPES: Final = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    }
)
MANIFEST_TYPES: Final = frozenset(
    {
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    }
)
_DIGEST: Final = re.compile(r"^(sha256):([a-f0-9]{64})$|^(sha512):([a-f0-9]{128})$")


class MalformedImage(CtkError):
    """An index, manifest or config that does not follow the OCI image spec."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Descriptor:
    """One OCI descriptor: what a blob is, its digest and size, its platform and name."""

    media_type: str
    digest: str
    size: int | None = None
    platform: str | None = None
    ref_name: str | None = None


def blob_path(digest: str) -> str:
    """`sha256:ab..` -> `blobs/sha256/ab..`; anything but a well-formed digest is refused."""
    match = _DIGEST.fullmatch(digest)
    if match is None:
        raise MalformedImage(f"{digest[:80]!r} is not a sha256 or sha512 digest")
    algorithm, _, encoded = digest.partition(":")
    return f"blobs/{algorithm}/{encoded}"


def verify(descriptor: Descriptor, data: bytes, what: str) -> None:
    """Refuse a blob whose size or digest differs from its descriptor."""
    if descriptor.size is not None and len(data) != descriptor.size:
        raise MalformedImage(
            f"{what}: blob {descriptor.digest} has {len(data)} bytes, "
            f"its descriptor says {descriptor.size}"
        )
    algorithm, _, encoded = descriptor.digest.partition(":")
    if hashlib.new(algorithm, data).hexdigest() != encoded:
        raise MalformedImage(f"{what}: blob {descriptor.digest} does not match its digest")


def parse_json(data: bytes, what: str) -> dict[str, Any]:
    """A JSON object, or `MalformedImage` naming ``what`` it was meant to be."""
    if len(data) > JSON_LIMIT:
        raise MalformedImage(f"{what} is larger than {JSON_LIMIT >> 20} MiB")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "nested too deeply"
        raise MalformedImage(f"{what} is not valid JSON: {reason}") from exc
    if not isinstance(value, dict):
        raise MalformedImage(f"{what} is not a JSON object")
    return value


def _platform(raw: object) -> str | None:
    if not isinstance(raw, dict):
        return None
    parts = [raw.get("os"), raw.get("architecture"), raw.get("variant")]
    return "/".join(p for p in parts if isinstance(p, str) and p) or None


def descriptor(raw: object, what: str) -> Descriptor:
    """One descriptor object, checked (media type, digest, size)."""
    if not isinstance(raw, dict):
        raise MalformedImage(f"{what}: a descriptor is not a JSON object")
    media_type, digest, size = raw.get("mediaType"), raw.get("digest"), raw.get("size")
    if not isinstance(media_type, str) or not isinstance(digest, str):
        raise MalformedImage(f"{what}: a descriptor lacks mediaType or digest")
    blob_path(digest)
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise MalformedImage(f"{what}: descriptor {digest} has a bad size")
    annotations = raw.get("annotations")
    names = annotations if isinstance(annotations, dict) else {}
    name = names.get(REF_NAME) or names.get(CONTAINERD_NAME)
    return Descriptor(
        media_type=media_type,
        digest=digest,
        size=size,
        platform=_platform(raw.get("platform")),
        ref_name=name if isinstance(name, str) else None,
    )


def manifests(index: Mapping[str, Any], what: str) -> tuple[Descriptor, ...]:
    """The ``manifests`` of an image index."""
    raw = index.get("manifests")
    if not isinstance(raw, list):
        raise MalformedImage(f"{what} has no manifests list")
    return tuple(descriptor(item, what) for item in raw)


def _matches(platform: str | None, wanted: str) -> bool:
    """`linux/arm64/v8` matches `linux/arm64`; no platform matches anything."""
    if platform is None:
        return True
    return platform == wanted or platform.startswith(wanted + "/")


def pick(
    candidates: Sequence[Descriptor], *, tag: str | None, platform: str, what: str
) -> Descriptor:
    """The descriptor named ``tag`` (any when None) for ``platform``, or why there is none."""
    named = [d for d in candidates if tag is None or d.ref_name == tag]
    if not named:
        tags = sorted({d.ref_name for d in candidates if d.ref_name})
        known = f" (it has: {', '.join(tags)})" if tags else " (it names no tags)"
        raise MalformedImage(f"{what}: no image tagged {tag!r}{known}")
    fitting = [d for d in named if _matches(d.platform, platform)]
    if not fitting:
        found = ", ".join(sorted({d.platform or "?" for d in named}))
        raise MalformedImage(f"{what}: no {platform} image (it has {found})")
    if len({d.digest for d in fitting}) > 1:
        tags = sorted({d.ref_name or d.digest[:19] for d in fitting})
        raise MalformedImage(
            f"{what} holds {len(fitting)} images for {platform}: name one with :TAG "
            f"({', '.join(tags)})"
        )
    return fitting[0]


def config_env(config: Mapping[str, Any], what: str) -> tuple[str, ...]:
    """``config.Env`` of an image config (an image without one has an empty environment)."""
    inner = config.get("config")
    if inner is None:
        return ()
    if not isinstance(inner, dict):
        raise MalformedImage(f"{what}: config is not an object")
    env = inner.get("Env")
    if env is None:
        return ()
    if not isinstance(env, list) or not all(isinstance(item, str) for item in env):
        raise MalformedImage(f"{what}: config.Env is not a list of strings")
    return tuple(env)


def resolve_env(
    candidates: Sequence[Descriptor],
    read_blob: Callable[[Descriptor], bytes],
    *,
    tag: str | None,
    platform: str,
    what: str,
) -> tuple[str, ...]:
    """Follow index -> (index ->) manifest -> config and return the image's ``Env``.

    ``read_blob`` returns a descriptor's bytes (at most `JSON_LIMIT` + 1); each is verified.
    """
    chosen = pick(candidates, tag=tag, platform=platform, what=what)
    for _ in range(MAX_DEPTH):
        data = read_blob(chosen)
        verify(chosen, data, what)
        body = parse_json(data, f"{what}: {chosen.digest}")
        if chosen.media_type in INDEX_TYPES:
            nested = manifests(body, f"{what}: index {chosen.digest}")
            chosen = pick(nested, tag=None, platform=platform, what=f"{what}: {chosen.digest}")
            continue
        if chosen.media_type not in MANIFEST_TYPES:
            raise MalformedImage(f"{what}: unsupported media type {chosen.media_type!r}")
        config = descriptor(body.get("config"), f"{what}: manifest {chosen.digest}")
        data = read_blob(config)
        verify(config, data, what)
        return config_env(parse_json(data, f"{what}: config {config.digest}"), what)
    raise MalformedImage(f"{what}: indexes nested more than {MAX_DEPTH} deep")


def inspect_env(data: bytes, what: str) -> tuple[str, ...]:
    """``Config.Env`` of `docker image inspect` / `podman image inspect` output (a JSON list)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise MalformedImage(f"{what}: not valid JSON") from exc
    if isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, dict):
        raise MalformedImage(f"{what}: not image inspect output")
    config = value.get("Config") or value.get("config") or {}
    if not isinstance(config, dict):
        raise MalformedImage(f"{what}: Config is not an object")
    env = config.get("Env") or []
    if not isinstance(env, list) or not all(isinstance(item, str) for item in env):
        raise MalformedImage(f"{what}: Config.Env is not a list of strings")
    return tuple(env)


def env_map(lines: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` strings as a mapping (a later duplicate wins, as in a container)."""
    env = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key:
            env[key] = value
    return env


def qualified_names(ref: str) -> tuple[str, ...]:
    """The names an engine may store ``ref`` under: as given, then Docker-normalised.

    `busybox` -> `docker.io/library/busybox:latest`; `ghcr.io/x/y` -> `ghcr.io/x/y:latest`.
    """
    name = ref
    first, slash, _ = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if slash else f"docker.io/library/{name}"
    last = name.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        name += ":latest"
    return (ref,) if name == ref else (ref, name)
