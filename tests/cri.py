"""A small client of the Container Runtime Interface for tests: what the kubelet says to containerd
and CRI-O (k8s.io/cri-api, package runtime.v1), over grpcio with hand-encoded messages.

The messages are protobuf, written and read here with the wire format's two shapes the CRI calls
below need (varints and length-delimited fields); the field numbers are those of
pkg/apis/runtime/v1/api.proto in kubernetes/cri-api. Unknown fields of a reply are skipped, as
protobuf readers do, so newer engines' replies still read.

Also here: `image_archive`, an OCI archive of a busybox root file system that `ctr images import`
and `podman load` take, and `pod_log_lines`, what a container printed, read from its CRI log.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from tests.doctor.oci_builder import Layout, archive
from tests.runners import busybox_rootfs

Fields = dict[int, list[int | bytes]]
"""A decoded message: each field number with its values, in order (varints or raw bytes)."""

RUNTIME = "/runtime.v1.RuntimeService/"
IMAGES = "/runtime.v1.ImageService/"

# NamespaceMode (api.proto)
POD, CONTAINER, NODE = 0, 1, 2
# ContainerState (api.proto)
CREATED, RUNNING, EXITED, UNKNOWN = 0, 1, 2, 3


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode(message: Mapping[int, Any]) -> bytes:
    """``message`` (field number -> value, a list for a repeated field; a nested message as a
    mapping) in protobuf's wire format. Ints and bools are varints, str and bytes and messages
    length-delimited; None is left out."""
    out = bytearray()
    for number, value in message.items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            if isinstance(item, bool | int):
                out += _varint(number << 3) + _varint(int(item))
                continue
            if isinstance(item, str):
                raw = item.encode()
            elif isinstance(item, bytes):
                raw = item
            else:
                raw = encode(item)
            out += _varint(number << 3 | 2) + _varint(len(raw)) + raw
    return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def decode(data: bytes) -> Fields:
    """A message's fields; nested messages stay bytes for the caller to decode."""
    fields: Fields = {}
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _read_varint(data, at)
        elif wire == 2:
            size, at = _read_varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):  # fixed64, fixed32: none of the fields read here
            width = 8 if wire == 1 else 4
            value, at = data[at : at + width], at + width
        else:
            raise ValueError(f"protobuf wire type {wire} (field {number}) is not read here")
        fields.setdefault(number, []).append(value)
    return fields


def _bytes(fields: Fields, number: int) -> list[bytes]:
    return [v for v in fields.get(number, []) if isinstance(v, bytes)]


def text(fields: Fields, number: int) -> str:
    """A string field (proto3: absent reads as "")."""
    found = _bytes(fields, number)
    return found[-1].decode() if found else ""


def number(fields: Fields, number: int) -> int:
    found = [v for v in fields.get(number, []) if isinstance(v, int)]
    return found[-1] if found else 0


def messages(fields: Fields, number: int) -> list[Fields]:
    return [decode(raw) for raw in _bytes(fields, number)]


def string_map(fields: Fields, number: int) -> dict[str, str]:
    """A map<string, string> field: repeated entries with key 1 and value 2."""
    return {text(entry, 1): text(entry, 2) for entry in messages(fields, number)}


@dataclass(frozen=True, slots=True)
class Status:
    """The engine's answer to RuntimeService/Status with verbose set."""

    conditions: dict[str, bool]  # RuntimeReady, NetworkReady
    handlers: tuple[str, ...]  # the runtime handlers it offers ("" is the default)
    info: dict[str, Any]  # each verbose entry, its JSON read ("config" is what crictl info shows)


class Cri:
    """A connection to an engine's CRI socket."""

    def __init__(self, socket: Path, *, timeout: float = 60) -> None:
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        self.timeout = timeout

    def close(self) -> None:
        self.channel.close()

    def call(self, method: str, request: Mapping[int, Any]) -> Fields:
        """One unary call, e.g. ``call(RUNTIME + "Version", {})``."""
        stub: grpc.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(method)
        reply = stub(encode(request), timeout=self.timeout)
        assert isinstance(reply, bytes)
        return decode(reply)

    def wait_ready(self, timeout: float = 30) -> None:
        """Wait until the socket answers Version."""
        grpc.channel_ready_future(self.channel).result(timeout=timeout)

    def version(self) -> tuple[str, str, str]:
        """The runtime's name, version and CRI API version."""
        reply = self.call(RUNTIME + "Version", {1: "v1"})
        return text(reply, 2), text(reply, 3), text(reply, 4)

    def status(self) -> Status:
        reply = self.call(RUNTIME + "Status", {1: True})
        (status,) = messages(reply, 1) or [{}]
        conditions = {text(c, 1): bool(number(c, 2)) for c in messages(status, 1)}
        handlers = tuple(text(h, 1) for h in messages(reply, 3))
        info = {}
        for key, value in string_map(reply, 2).items():
            try:
                info[key] = json.loads(value)
            except ValueError:
                info[key] = value
        return Status(conditions, handlers, info)

    def run_pod(self, config: Mapping[int, Any], handler: str) -> str:
        return text(self.call(RUNTIME + "RunPodSandbox", {1: config, 2: handler}), 1)

    def create_container(
        self, pod: str, config: Mapping[int, Any], pod_config: Mapping[int, Any]
    ) -> str:
        request = {1: pod, 2: config, 3: pod_config}
        return text(self.call(RUNTIME + "CreateContainer", request), 1)

    def start_container(self, container: str) -> None:
        self.call(RUNTIME + "StartContainer", {1: container})

    def container_state(self, container: str) -> tuple[int, int, str]:
        """The container's state, exit code and reason."""
        (status,) = messages(self.call(RUNTIME + "ContainerStatus", {1: container}), 1)
        return number(status, 3), number(status, 7), text(status, 10)

    def remove_pod(self, pod: str) -> None:
        self.call(RUNTIME + "StopPodSandbox", {1: pod})
        self.call(RUNTIME + "RemovePodSandbox", {1: pod})

    def images(self) -> list[tuple[str, ...]]:
        """Each image's tags."""
        reply = self.call(IMAGES + "ListImages", {})
        return [tuple(e.decode() for e in _bytes(i, 2)) for i in messages(reply, 1)]


def pod_config(name: str, log_directory: Path, *, pid: int = POD) -> dict[int, Any]:
    """A PodSandboxConfig: host network (no CNI here, so no hostname of its own), the PID
    namespace mode ``pid``."""
    metadata = {1: name, 2: f"uid-{name}", 3: "default"}
    return {1: metadata, 3: str(log_directory), 8: {2: {1: _namespaces(pid)}}}


def _namespaces(pid: int) -> dict[int, int]:
    return {1: NODE, 2: pid}


def container_config(
    name: str,
    image: str,
    command: Sequence[str],
    *,
    cdi_devices: Sequence[str] = (),
    pid: int = POD,
) -> dict[int, Any]:
    """A ContainerConfig whose log goes to ``<name>.log`` in the pod's log directory, asking
    for ``cdi_devices`` by their fully qualified names (the CDI_devices field); its namespaces
    are the pod's (`pod_config`), as the kubelet repeats them."""
    return {
        1: {1: name},
        2: {1: image, 18: image},  # the kubelet names it twice: resolved, and as asked for
        3: list(command),
        11: f"{name}.log",
        15: {2: {3: _namespaces(pid)}},
        17: [{1: device} for device in cdi_devices],
    }


def run_to_exit(
    cri: Cri,
    pod_dir: Path,
    image: str,
    command: Sequence[str],
    *,
    handler: str,
    cdi_devices: Sequence[str] = (),
    pid: int = POD,
    timeout: float = 60,
) -> tuple[int, list[str]]:
    """Run ``command`` in a container of a new pod (through runtime ``handler``) until it exits;
    remove the pod. Returns the exit code and the lines it wrote to stdout."""
    config = pod_config("ctk-test", pod_dir, pid=pid)
    pod = cri.run_pod(config, handler)
    try:
        spec = container_config("c", image, command, cdi_devices=cdi_devices, pid=pid)
        container = cri.create_container(pod, spec, config)
        cri.start_container(container)
        deadline = time.monotonic() + timeout
        while (state := cri.container_state(container))[0] != EXITED:
            assert time.monotonic() < deadline, f"container still in state {state}"
            time.sleep(0.05)
        return state[1], list(pod_log_lines(pod_dir / "c.log", "stdout"))
    finally:
        cri.remove_pod(pod)


def pod_log_lines(log: Path, stream: str) -> Iterator[str]:
    """The lines of ``stream`` in a CRI log file ("<time> <stream> <F|P> <text>" per line)."""
    for line in log.read_text().splitlines():
        _, found, _, content = line.split(" ", 3)
        if found == stream:
            yield content


def _layer(rootfs: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(rootfs.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(rootfs)), recursive=False)
    return buffer.getvalue()


GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def image_archive(rootfs: Path, work: Path, name: str, command: Sequence[str]) -> Path:
    """An OCI archive (``work/image.tar``) of one image: ``rootfs`` as its one layer, ``command``
    as its Cmd, named ``name`` (a full reference, for `ctr images import` and `podman load`)."""
    layout = Layout(work / "layout")
    layer = _layer(rootfs)
    arch = GOARCH.get(platform.machine(), platform.machine())
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {"Cmd": list(command), "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": layout.blob(config, "application/vnd.oci.image.config.v1+json"),
        "layers": [layout.blob(layer, "application/vnd.oci.image.layer.v1.tar")],
    }
    described = layout.blob(manifest, "application/vnd.oci.image.manifest.v1+json")
    described["platform"] = {"os": "linux", "architecture": arch}
    described["annotations"] = {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": name,
    }
    layout.index([described])
    return archive(layout.root, work / "image.tar")


IMAGE = "localhost/ctk-busybox:1"
"""The name `busybox_image` gives its image."""


def busybox_image(work: Path) -> Path:
    """A busybox image (`IMAGE`) as an OCI archive under ``work``; its command (sleep) keeps a
    pod sandbox running, so it serves as the sandbox (pause) image too."""
    (work / "image").mkdir()
    rootfs = busybox_rootfs(work / "image")
    (rootfs / "bin/sleep").symlink_to("busybox")
    return image_archive(rootfs, work / "image", IMAGE, ["sleep", "600"])
