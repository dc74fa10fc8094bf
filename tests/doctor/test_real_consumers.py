"""The doctor reads engine configs as the engines do: containerd's own merged view agrees.

For each fixture node's containerd config, `containerd config dump` (the real containerd) is the
judge: the runtimes, their SystemdCgroup and the default runtime the doctor saw must be the ones
containerd itself reports. Imports are rewritten to point inside the fixture, as `--root` does.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ctk import toml_compat as tomllib
from ctk.host.facts.engine_configs import gather_containerd
from ctk.host.facts.gatherer import Gatherer
from ctk.host.facts.kernel import gather_libs
from ctk.host.root import HostRoot
from tests.fake_nvml import SkipNode
from tests.fake_nvml.fixtures import fake_nvml_library  # noqa: F401  (pytest fixture)
from tests.nodes import materialised

CRI = 'plugins."io.containerd.grpc.v1.cri"'


def containerd_view(config: Path) -> dict[str, object]:
    done = subprocess.run(
        ["containerd", "--config", str(config), "config", "dump"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    cri = tomllib.loads(done.stdout)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    return {
        "default": cri["default_runtime_name"],
        "runtimes": {
            name: runtime.get("options", {}).get("SystemdCgroup")
            for name, runtime in cri["runtimes"].items()
        },
    }


@pytest.mark.integration
@pytest.mark.parametrize(
    "node", ["healthy", "containerd-dropin-orphan", "containerd-cgroup-mismatch"]
)
def test_containerd_agrees(
    node: str,
    fake_nvml_library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    if shutil.which("containerd") is None:
        pytest.skip("containerd is not installed")
    try:
        with materialised(node, tmp_path, fake_nvml_library) as built:
            config = built.root / "etc/containerd/config.toml"
            seen = gather_containerd(Gatherer(HostRoot(built.root)), {"containerd": "/usr/bin"})
            expected = containerd_view_with(config, built.root)
    except SkipNode as exc:
        pytest.skip(str(exc))
    doctor = {
        "default": seen.default_runtime or "runc",
        "runtimes": {name: r.systemd_cgroup for name, r in seen.runtimes.items()},
    }
    assert doctor == expected


def containerd_view_with(config: Path, root: Path) -> dict[str, object]:
    """containerd's view of ``config`` with its imports pointed inside ``root``."""
    text = config.read_text()
    config.write_text(text.replace('"/etc/containerd/', f'"{root}/etc/containerd/'))
    try:
        return containerd_view(config)
    finally:
        config.write_text(text)


@pytest.mark.integration
def test_reads_the_cache_ldconfig_writes(
    fake_nvml_library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    if not Path(ldconfig).exists():
        pytest.skip("ldconfig is not installed")
    try:
        with materialised("healthy", tmp_path, fake_nvml_library) as built:
            (built.root / "etc/ld.so.conf").write_text("/usr/lib/x86_64-linux-gnu\n")
            subprocess.run([ldconfig, "-r", str(built.root)], check=True, timeout=30)
            libs = gather_libs(Gatherer(HostRoot(built.root)), {})
    except SkipNode as exc:
        pytest.skip(str(exc))
    nvml = libs.libraries["libnvidia-ml.so.1"][0]
    assert (libs.source, nvml.path, nvml.target) == (
        "/etc/ld.so.cache",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
    )
