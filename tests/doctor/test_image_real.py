"""`ctk doctor --image` against images the real tools made and the real engines hold.

podman imports a busybox root filesystem with `--change ENV=...` into a private store; umoci
writes an OCI layout; skopeo turns layouts into oci-archives and copies podman's image out;
a private containerd imports the archive. Each tool skips cleanly when it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.host.image_env import read_image_env
from tests.engines import default_signals
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode
from tests.runners import PRIVATE_VAR_LIB_AND_RUN

pytestmark = pytest.mark.integration
REQUIRE = "cuda>=12.8 brand=tesla,driver>=470,driver<471"
ENV = {"NVIDIA_REQUIRE_CUDA": REQUIRE, "CUDA_VERSION": "12.8.1"}
IMAGE = "localhost/ctk-test:cu"


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def run(*argv: str, env: dict[str, str] | None = None) -> None:
    """``argv`` with /var/lib and /run of its own (podman and skopeo write a blob cache and an
    events log there)."""
    subprocess.run(
        [*PRIVATE_VAR_LIB_AND_RUN, *argv], check=True, capture_output=True, timeout=60, env=env
    )


def only_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *programs: str) -> None:
    """PATH holds these engines and nothing else (no docker or containerd of the machine)."""
    bin_dir = tmp_path / "engines"
    bin_dir.mkdir()
    for program in programs:
        (bin_dir / Path(program).name).symlink_to(program)
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.fixture
def podman_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``IMAGE`` imported into a private podman store (CONTAINERS_STORAGE_CONF points at it)."""
    podman = tool("podman")
    busybox = Path("/bin/busybox")
    if not busybox.exists():
        pytest.skip("busybox-static is not installed")
    rootfs = tmp_path / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    shutil.copy(busybox, rootfs / "bin/busybox")
    run("tar", "-C", str(rootfs), "-cf", str(tmp_path / "rootfs.tar"), ".")
    store = tmp_path / "storage.conf"
    store.write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{tmp_path}/graph"\nrunroot = "{tmp_path}/run"\n'
    )
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(store))
    # podman's own state (alive lock, events log, exit files: /run/libpod by default) and its
    # CNI folder's lock (/etc/cni/net.d/cni.lock) too
    conf = tmp_path / "containers.conf"
    conf.write_text(
        f'[engine]\ntmp_dir = "{tmp_path}/libpod"\n'
        f'[network]\nnetwork_config_dir = "{tmp_path}/cni"\n'
    )
    monkeypatch.setenv("CONTAINERS_CONF", str(conf))
    changes = [f'--change=ENV {key}="{value}"' for key, value in ENV.items()]
    run(podman, "import", *changes, str(tmp_path / "rootfs.tar"), IMAGE)
    return podman


@pytest.fixture
def node(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node("healthy")


def test_podman_image_through_doctor(
    podman_image: str,
    node: FakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    only_on_path(tmp_path, monkeypatch, podman_image)
    code = main(
        ["doctor", "--root", str(node.root), "--json", "--group", "cuda", "--image", "ctk-test:cu"]
    )
    document = json.loads(capsys.readouterr().out)
    driver_check = document["checks"][0]
    assert (code, document["context"]["cuda_requirement"], driver_check["status"]) == (
        1,
        "image ctk-test:cu (podman)",
        "fail",
    )
    assert driver_check["summary"].startswith("the workload needs CUDA 12.8 but driver")
    assert {"source": "image ctk-test:cu (podman)", "value": f"NVIDIA_REQUIRE: {REQUIRE}"} in (
        driver_check["evidence"]
    )


def test_skopeo_layout_of_the_podman_image(podman_image: str, tmp_path: Path) -> None:
    """skopeo copies podman's image (a real layer, podman's config) into a layout and archive."""
    skopeo = tool("skopeo")
    layout, packed = tmp_path / "layout", tmp_path / "image.tar"
    run(skopeo, "copy", f"containers-storage:{IMAGE}", f"oci:{layout}:cu", env=dict(os.environ))
    run(skopeo, "copy", f"oci:{layout}:cu", f"oci-archive:{packed}:cu")
    for ref in (f"oci:{layout}:cu", f"oci:{layout}", f"oci-archive:{packed}:cu"):
        found = read_image_env(ref)
        assert found.env is not None
        assert {k: found.env[k] for k in ENV} == ENV, ref


@pytest.fixture
def umoci_archive(tmp_path: Path) -> Path:
    """An OCI layout umoci wrote (two tags) and the oci-archive skopeo made of it."""
    umoci, skopeo = tool("umoci"), tool("skopeo")
    layout = tmp_path / "umoci"
    run(umoci, "init", "--layout", str(layout))
    for tag, require in (("cu", REQUIRE), ("old", "cuda>=11.0")):
        run(umoci, "new", "--image", f"{layout}:{tag}")
        run(
            umoci,
            "config",
            "--image",
            f"{layout}:{tag}",
            f"--config.env=NVIDIA_REQUIRE_CUDA={require}",
        )
    packed = tmp_path / "umoci.tar"
    run(skopeo, "copy", f"oci:{layout}:cu", f"oci-archive:{packed}:cu")
    return packed


def test_umoci_layout_and_skopeo_archive(umoci_archive: Path, tmp_path: Path) -> None:
    layout = tmp_path / "umoci"
    assert read_image_env(f"oci:{layout}:old").env == {"NVIDIA_REQUIRE_CUDA": "cuda>=11.0"}
    assert read_image_env(f"oci:{layout}:cu").env == {"NVIDIA_REQUIRE_CUDA": REQUIRE}
    assert read_image_env(f"oci-archive:{umoci_archive}").env == {"NVIDIA_REQUIRE_CUDA": REQUIRE}


def test_containerd_image(
    umoci_archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private containerd imports the archive; ctk reads it through `ctr content get`."""
    containerd, ctr = tool("containerd"), tool("ctr")
    state = tmp_path / "containerd"
    state.mkdir()
    sock = state / "c.sock"
    (state / "config.toml").write_text(
        f'version = 2\nroot = "{state}/root"\nstate = "{state}/state"\n'
        f'[grpc]\n  address = "{sock}"\n[ttrpc]\n  address = "{state}/t.sock"\n'
    )
    with (state / "log").open("wb") as log:
        daemon = subprocess.Popen(
            [containerd, "--config", str(state / "config.toml")],
            stdout=log,
            stderr=log,
            start_new_session=True,
            preexec_fn=default_signals,  # noqa: PLW1509
        )
    try:
        deadline = time.monotonic() + 20
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        monkeypatch.setenv("CONTAINERD_ADDRESS", str(sock))
        run(
            ctr,
            "-n",
            "k8s.io",
            "images",
            "import",
            "--base-name",
            "localhost/ctk-test",
            str(umoci_archive),
            env=dict(os.environ),
        )
        only_on_path(tmp_path, monkeypatch, ctr)
        found = read_image_env(IMAGE)
        assert (found.source, found.env) == (
            f"image {IMAGE} (containerd)",
            {"NVIDIA_REQUIRE_CUDA": REQUIRE},
        )
        missing = read_image_env("localhost/ctk-test:nope")
        assert missing.reasons[-1] == "ctr: no such image"
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=20)
