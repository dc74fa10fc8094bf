"""`ctk doctor --image REF`: OCI layouts and archives built here, fake engines on PATH, the CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.doctor import oci_image as oci
from ctk.errors import CtkError, UsageError
from ctk.host.image_env import read_image_env
from tests.doctor.oci_builder import Layout, archive, tagged
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

AMD = ["PATH=/usr/bin", "NVIDIA_REQUIRE_CUDA=cuda>=12.8", "CUDA_VERSION=12.8.1"]
ARM = ["NVIDIA_REQUIRE_CUDA=cuda>=12.4", "CUDA_VERSION=12.4.0"]
OTHER = ["CUDA_VERSION=11.8.0", "NVIDIA_VISIBLE_DEVICES=all"]


def env(lines: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines)


def one_tagged(lay: Layout) -> None:
    lay.index([tagged(lay.image(AMD), "v1")])


def two_tags(lay: Layout) -> None:
    lay.index([tagged(lay.image(AMD), "a"), tagged(lay.image(OTHER), "b")])


def nested_multi_arch(lay: Layout) -> None:
    inner = lay.index([lay.image(AMD), lay.image(ARM, arch="arm64")], top=False)
    lay.index([tagged(inner, "latest")])


def flat_multi_arch(lay: Layout) -> None:
    lay.index([lay.image(AMD), lay.image(ARM, arch="arm64")])


def no_env(lay: Layout) -> None:
    lay.index([lay.image(None)])


def bad_index_json(lay: Layout) -> None:
    one_tagged(lay)
    (lay.root / "index.json").write_text('{"manifests": [')


def no_manifests(lay: Layout) -> None:
    lay.index([])
    (lay.root / "index.json").write_text('{"schemaVersion": 2}')


def missing_blob(lay: Layout) -> None:
    described = lay.image(AMD)
    lay.index([described])
    (lay.root / "blobs/sha256" / described["digest"].split(":")[1]).unlink()


def tampered_blob(lay: Layout) -> None:
    described = lay.image(AMD)
    lay.index([described])
    path = lay.root / "blobs/sha256" / described["digest"].split(":")[1]
    path.write_bytes(path.read_bytes().replace(b'"schemaVersion": 2', b'"schemaVersion": 3'))


def wrong_size(lay: Layout) -> None:
    lay.index([{**lay.image(AMD), "size": 3}])


def traversal_digest(lay: Layout) -> None:
    lay.index([{**lay.image(AMD), "digest": "sha256:../../../../etc/passwd"}])


def unknown_media_type(lay: Layout) -> None:
    lay.index([{**lay.image(AMD), "mediaType": "application/x-tar"}])


def env_not_strings(lay: Layout) -> None:
    config = lay.blob({"config": {"Env": [1, 2]}}, "application/vnd.oci.image.config.v1+json")
    manifest = lay.blob(
        {"schemaVersion": 2, "config": config, "layers": []},
        "application/vnd.oci.image.manifest.v1+json",
    )
    lay.index([manifest])


def deep_nesting(lay: Layout) -> None:
    described = lay.image(AMD)
    for _ in range(oci.MAX_DEPTH + 1):
        described = lay.index([described], top=False)
    lay.index([described])


Build = Callable[[Layout], None]
CASES: list[tuple[str, Build, str, str, dict[str, str] | str]] = [
    ("untagged-ref-one-image", one_tagged, "", "linux/amd64", env(AMD)),
    ("tag", one_tagged, ":v1", "linux/amd64", env(AMD)),
    ("missing-tag", one_tagged, ":v2", "linux/amd64", r"no image tagged 'v2' \(it has: v1\)"),
    ("second-tag", two_tags, ":b", "linux/amd64", env(OTHER)),
    ("two-tags-none-named", two_tags, "", "linux/amd64", r"holds 2 images .*name one with :TAG"),
    ("nested-index-amd64", nested_multi_arch, ":latest", "linux/amd64", env(AMD)),
    ("nested-index-arm64", nested_multi_arch, "", "linux/arm64", env(ARM)),
    ("nested-index-no-s390x", nested_multi_arch, "", "linux/s390x", r"no linux/s390x image"),
    ("flat-index-arm64", flat_multi_arch, "", "linux/arm64", env(ARM)),
    ("config-without-env", no_env, "", "linux/amd64", {}),
    ("index-not-json", bad_index_json, "", "linux/amd64", r"index.json is not valid JSON"),
    ("index-no-manifests", no_manifests, "", "linux/amd64", r"has no manifests list"),
    ("missing-blob", missing_blob, "", "linux/amd64", r"is missing|no blobs/sha256/\w+ in the"),
    ("tampered-blob", tampered_blob, "", "linux/amd64", r"does not match its digest"),
    ("wrong-size", wrong_size, "", "linux/amd64", r"its descriptor says 3"),
    ("traversal-digest", traversal_digest, "", "linux/amd64", r"is not a sha256 or sha512 digest"),
    ("unknown-media-type", unknown_media_type, "", "linux/amd64", r"unsupported media type"),
    ("env-not-strings", env_not_strings, "", "linux/amd64", r"config.Env is not a list"),
    ("indexes-too-deep", deep_nesting, "", "linux/amd64", r"nested more than 4 deep"),
]


@pytest.mark.parametrize("form", ["oci", "oci-archive"])
@pytest.mark.parametrize("case", [pytest.param(case, id=case[0]) for case in CASES])
def test_layouts_and_archives(
    form: str, case: tuple[str, Build, str, str, dict[str, str] | str], tmp_path: Path
) -> None:
    _, build, suffix, platform, expected = case
    lay = Layout(tmp_path / "layout")
    lay.root.mkdir()
    build(lay)
    location = lay.root if form == "oci" else archive(lay.root, tmp_path / "image.tar")
    ref = f"{form}:{location}{suffix}"
    if isinstance(expected, dict):
        found = read_image_env(ref, platform_name=platform)
        assert (found.source, found.env) == (f"image {ref}", expected)
    else:
        with pytest.raises(CtkError) as caught:
            read_image_env(ref, platform_name=platform)
        assert caught.value.exit_code == 1
        assert re.search(expected, caught.value.message), caught.value.message
        assert "\n" not in caught.value.message


def test_a_blob_link_is_not_followed(tmp_path: Path) -> None:
    lay = Layout(tmp_path / "layout")
    lay.root.mkdir()
    described = lay.image(AMD)
    lay.index([described])
    blob = lay.root / "blobs/sha256" / described["digest"].split(":")[1]
    target = tmp_path / "outside"
    blob.rename(target)
    blob.symlink_to(target)
    with pytest.raises(CtkError, match="is a symbolic link"):
        read_image_env(f"oci:{lay.root}", platform_name="linux/amd64")


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        pytest.param("symlink", "is not a regular file", id="symlink-member"),
        pytest.param("hardlink", "is not a regular file", id="hardlink-member"),
        pytest.param("huge", "is larger than expected", id="oversized-member"),
    ],
)
def test_archive_members_are_bounded(member: str, expected: str, tmp_path: Path) -> None:
    """The index.json member is a link (to a file outside) or claims to be huge."""
    lay = Layout(tmp_path / "layout")
    lay.root.mkdir()
    one_tagged(lay)
    (lay.root / "index.json").unlink()
    info = tarfile.TarInfo("index.json")
    if member == "symlink":
        info.type, info.linkname = tarfile.SYMTYPE, "../../../../etc/passwd"
    elif member == "hardlink":
        info.type, info.linkname = tarfile.LNKTYPE, "/etc/passwd"
    else:
        info.size = oci.JSON_LIMIT + 1
    path = archive(lay.root, tmp_path / "image.tar", extra=[info])
    with pytest.raises(CtkError, match=expected):
        read_image_env(f"oci-archive:{path}", platform_name="linux/amd64")


@pytest.mark.parametrize(
    ("ref", "expected", "code"),
    [
        pytest.param("oci:{tmp}/none", "--image: no such directory: {tmp}/none", 2, id="no-dir"),
        pytest.param("oci:{tmp}/file", "--image oci:{tmp}/file: not a directory", 2, id="file"),
        pytest.param(
            "oci-archive:{tmp}", "--image oci-archive:{tmp}: not a regular file", 2, id="dir"
        ),
        pytest.param(
            "oci-archive:{tmp}/file",
            "OCI archive {tmp}/file: not a readable tar archive",
            1,
            id="not-tar",
        ),
        pytest.param("oci:{tmp}", "{tmp}/index.json: ", 1, id="no-index"),
        pytest.param(
            "docker://nvidia/cuda", "--image docker://nvidia/cuda: ctk reads", 2, id="url"
        ),
        pytest.param("  ", "--image is empty", 2, id="empty"),
    ],
)
def test_bad_references(ref: str, expected: str, code: int, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a tar archive, not a directory\n" * 40)
    with pytest.raises(CtkError) as caught:
        read_image_env(ref.format(tmp=tmp_path), platform_name="linux/amd64")
    assert caught.value.message.startswith(expected.format(tmp=tmp_path)), caught.value.message
    assert (caught.value.exit_code, isinstance(caught.value, UsageError)) == (code, code == 2)


def test_path_with_a_colon_is_the_whole_path(tmp_path: Path) -> None:
    lay = Layout(tmp_path / "a:b")
    lay.root.mkdir()
    one_tagged(lay)
    assert read_image_env(f"oci:{lay.root}", platform_name="linux/amd64").env == env(AMD)
    assert read_image_env(f"oci:{lay.root}:v1", platform_name="linux/amd64").env == env(AMD)


@pytest.mark.parametrize(
    ("ref", "names"),
    [
        ("busybox", ("busybox", "docker.io/library/busybox:latest")),
        (
            "nvidia/cuda:12.8.1-base",
            ("nvidia/cuda:12.8.1-base", "docker.io/nvidia/cuda:12.8.1-base"),
        ),
        ("nvcr.io/nvidia/cuda", ("nvcr.io/nvidia/cuda", "nvcr.io/nvidia/cuda:latest")),
        ("localhost:5000/x", ("localhost:5000/x", "localhost:5000/x:latest")),
        ("docker.io/library/busybox:1", ("docker.io/library/busybox:1",)),
        (
            "x@sha256:" + "a" * 64,
            ("x@sha256:" + "a" * 64, "docker.io/library/x@sha256:" + "a" * 64),
        ),
    ],
)
def test_qualified_names(ref: str, names: tuple[str, ...]) -> None:
    assert oci.qualified_names(ref) == names


# --- engines on PATH ------------------------------------------------------------------------

DOCKER_INSPECT = [
    {
        "Id": "sha256:" + "1" * 64,
        "RepoTags": ["nvidia/cuda:12.8.1-base-ubuntu24.04"],
        "Config": {
            "Env": [
                "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/sbin:/usr/bin",
                "NVARCH=x86_64",
                "NVIDIA_REQUIRE_CUDA=cuda>=12.8 brand=tesla,driver>=470,driver<471",
                "NV_CUDA_CUDART_VERSION=12.8.90-1",
                "CUDA_VERSION=12.8.1",
                "NVIDIA_VISIBLE_DEVICES=all",
                "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
            ],
            "Cmd": ["/bin/bash"],
        },
        "Architecture": "amd64",
        "Os": "linux",
    }
]


CAT = shutil.which("cat")
SLEEP = shutil.which("sleep")


def fake_engine(bin_dir: Path, name: str, *, known: str, output: Path, missing: str) -> None:
    """An engine that answers `NAME image inspect KNOWN` with ``output`` and fails otherwise."""
    script = bin_dir / name
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {bin_dir}/{name}.calls\n'
        f'if [ "$1 $2 $3" = "image inspect {known}" ]; then {CAT} {output}; exit 0; fi\n'
        f'echo "[]"; echo "{missing}" >&2; exit 1\n'
    )
    script.chmod(0o755)


@pytest.fixture
def engines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only the engines a test writes there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    (tmp_path / "inspect.json").write_text(json.dumps(DOCKER_INSPECT))
    return bin_dir


@pytest.mark.parametrize(
    ("installed", "source", "reasons"),
    [
        pytest.param(
            ["docker", "podman"],
            "image nvidia/cuda:12.8.1 (docker)",
            (),
            id="docker-first",
        ),
        pytest.param(["podman"], "image nvidia/cuda:12.8.1 (podman)", (), id="podman"),
        pytest.param(
            [],
            "image nvidia/cuda:12.8.1",
            ("docker: not installed", "podman: not installed", "ctr: not installed"),
            id="none",
        ),
    ],
)
def test_first_engine_that_knows_wins(
    engines: Path, installed: list[str], source: str, reasons: tuple[str, ...]
) -> None:
    for name in installed:
        fake_engine(
            engines,
            name,
            known="nvidia/cuda:12.8.1",
            output=engines.parent / "inspect.json",
            missing="Error: No such image",
        )
    found = read_image_env("nvidia/cuda:12.8.1")
    expected = env(DOCKER_INSPECT[0]["Config"]["Env"]) if installed else None  # type: ignore[index]
    assert (found.source, found.env, found.reasons) == (source, expected, reasons)


def test_an_engine_that_does_not_know_passes_on(engines: Path) -> None:
    inspect = engines.parent / "inspect.json"
    fake_engine(engines, "docker", known="other", output=inspect, missing="Error: No such image: x")
    fake_engine(engines, "podman", known="x", output=inspect, missing="unused")
    found = read_image_env("x")
    assert (found.source, found.env is not None) == ("image x (podman)", True)
    assert (engines / "docker.calls").read_text() == "image inspect x\n"


def test_no_engine_knows_it_gives_the_reasons(engines: Path) -> None:
    inspect = engines.parent / "inspect.json"
    fake_engine(engines, "docker", known="o", output=inspect, missing="Error: No such image: x")
    fake_engine(engines, "podman", known="o", output=inspect, missing="Error: x: image not known")
    found = read_image_env("x")
    assert found.reasons == (
        "docker: Error: No such image: x",
        "podman: Error: x: image not known",
        "ctr: not installed",
    )


def test_a_hung_engine_times_out(engines: Path) -> None:
    script = engines / "docker"
    script.write_text(f"#!/bin/sh\nexec {SLEEP} 30\n")
    script.chmod(0o755)
    found = read_image_env("x", timeout=0.3)
    assert found.reasons[0] == "docker: no answer within 0.3 s"


def test_containerd_without_a_socket_is_skipped(
    engines: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = engines / "ctr"
    script.write_text("#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("CONTAINERD_ADDRESS", str(tmp_path / "no.sock"))
    found = read_image_env("x")
    assert found.reasons[-1] == f"ctr: not running (no socket {tmp_path / 'no.sock'})"


# --- the command ----------------------------------------------------------------------------


@pytest.fixture
def node(
    request: pytest.FixtureRequest,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node(request.param)


def cuda_finding(
    capsys: pytest.CaptureFixture[str], node: FakeNode, image: str
) -> tuple[int, str, str, str]:
    code = main(
        [
            *("doctor", "--root", str(node.root), "--json"),
            *("--check", "cuda.driver-too-old", "--image", image),
        ]
    )
    document = json.loads(capsys.readouterr().out)
    check = document["checks"][0]
    return code, document["context"]["cuda_requirement"], check["status"], check["summary"]


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
@pytest.mark.parametrize(
    ("require", "status"),
    [("cuda>=12.8", "fail"), ("cuda>=11.0", "ok")],
)
def test_doctor_judges_an_oci_layout(
    node: FakeNode, require: str, status: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lay = Layout(tmp_path / "layout")
    lay.root.mkdir()
    machine = os.uname().machine
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    inner = lay.index(
        [
            lay.image([f"NVIDIA_REQUIRE_CUDA={require}"], arch=arch),
            lay.image(["NVIDIA_REQUIRE_CUDA=cuda>=99.9"], arch="not-this-one"),
        ],
        top=False,
    )
    lay.index([tagged(inner, "cu")])
    ref = f"oci:{lay.root}:cu"
    assert cuda_finding(capsys, node, ref)[:3] == (
        1 if status == "fail" else 0,
        f"image {ref}",
        status,
    )


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
def test_no_engine_knows_the_image_is_unknown(
    node: FakeNode, engines: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cuda_finding(capsys, node, "nvidia/cuda:12.8.1") == (
        0,
        "image nvidia/cuda:12.8.1",
        "unknown",
        "cannot read the environment of image nvidia/cuda:12.8.1: no local engine knows it "
        "(docker: not installed; podman: not installed; ctr: not installed)",
    )


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
def test_doctor_judges_a_docker_image(
    node: FakeNode, engines: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inspect = engines.parent / "inspect.json"
    fake_engine(engines, "docker", known="cu", output=inspect, missing="Error: No such image")
    code, source, status, summary = cuda_finding(capsys, node, "cu")
    assert (code, source, status) == (1, "image cu (docker)", "fail")
    assert summary.startswith("the workload needs CUDA 12.8 but driver")


@pytest.mark.parametrize(
    ("args", "err"),
    [
        pytest.param(
            ["--image", "x", "--image-env", "/etc/hostname"],
            "error: --image and --image-env cannot be combined\nhint: give one of them\n",
            id="with-image-env",
        ),
        pytest.param(
            ["--image", "x", "--cuda-version", "12.4"],
            "error: --image and --cuda-version cannot be combined\nhint: give one of them\n",
            id="with-cuda-version",
        ),
    ],
)
def test_usage_errors(args: list[str], err: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", *args])
    assert (code, capsys.readouterr().err) == (2, err)


def test_malformed_layout_is_one_line_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lay = Layout(tmp_path)
    tampered_blob(lay)
    code = main(["doctor", "--image", f"oci:{tmp_path}"])
    err = capsys.readouterr().err
    assert (
        code,
        err.count("\n"),
        err.startswith(f"error: OCI layout {tmp_path}: blob sha256:"),
    ) == (
        1,
        1,
        True,
    )


def test_image_without_cuda_variables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lay = Layout(tmp_path)
    lay.index([lay.image(["PATH=/bin"])])
    code = main(["doctor", "--image", f"oci:{tmp_path}"])
    assert (code, capsys.readouterr().err.splitlines()[0]) == (
        1,
        f"error: image oci:{tmp_path}: sets no NVIDIA_REQUIRE_* or CUDA_VERSION variable",
    )
