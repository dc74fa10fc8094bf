"""`build_spec`'s rules, in-process from plain node facts: groups, DRM and MIG capability nodes,
hook arguments and the errors it refuses a node with (issue 26: the mutation run found these
unpinned)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ctk.cdi.discover import HookProgram
from ctk.cdi.generate import GenerateOptions, build_spec, simplify
from ctk.cdi.model import ContainerEdits, Mount
from ctk.cdi.options import FeatureFlag, Mode, NameStrategy
from ctk.cdi.serialize import spec_data
from ctk.errors import CtkError, UsageError
from ctk.node import CharDevice, DriverFacts, HostFile
from ctk.node.nvml import Gpu, MigDevice, MigMode, NvmlFacts

VERSION = "550.54.15"
LIB64 = "/usr/lib64"
BUS = "00000000:07:00.0"  # NVML's form; sysfs: 0000:07:00.0
GPU_UUID = "GPU-6a6b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d"
MIG_UUID = "MIG-2a1c0001-5b6e-5f1a-8c33-00000000000{}"
NO_GIDS = frozenset({FeatureFlag.NO_ADDITIONAL_GIDS})


def _char(path: str, minor: int, *, mode: int = 0o666, gid: int = 0, root: str = "") -> CharDevice:
    return CharDevice(
        container_path=path, host_path=root + path, major=195, minor=minor, file_mode=mode, gid=gid
    )


def _lib(name: str, directory: str = LIB64) -> HostFile:
    return HostFile(container_path=f"{directory}/{name}", host_path=f"{directory}/{name}")


def _driver(**changes: Any) -> DriverFacts:
    """A one-GPU node's driver: libcuda and NVML, /dev/nvidiactl and /dev/nvidia0."""
    facts = DriverFacts(
        driver_root="/",
        dev_root="/",
        libraries=(_lib(f"libcuda.so.{VERSION}"), _lib(f"libnvidia-ml.so.{VERSION}")),
        library_dirs=(LIB64,),
        control_nodes=(_char("/dev/nvidiactl", 255),),
        gpu_nodes=(_char("/dev/nvidia0", 0), _char("/dev/nvidia1", 1)),
    )
    return replace(facts, **changes)


def _gpu(index: int = 0, *migs: MigDevice) -> Gpu:
    return Gpu(
        index=index,
        minor=index,
        uuid=GPU_UUID if index == 0 else f"GPU-{index}",
        name="NVIDIA A100-SXM4-80GB",
        pci_bus_id=BUS if index == 0 else f"00000000:0{index + 7}:00.0",
        mig_mode=MigMode.ENABLED if migs else MigMode.DISABLED,
        migs=migs,
    )


def _mig(index: int, profile: str = "1g.10gb", *, gi: int = 1, ci: int = 0) -> MigDevice:
    return MigDevice(
        parent_index=0,
        index=index,
        gpu_instance=gi,
        compute_instance=ci,
        uuid=MIG_UUID.format(index),
        profile=profile,
    )


def _nvml(*gpus: Gpu) -> NvmlFacts:
    return NvmlFacts(driver_version=VERSION, cuda_driver_version=12040, gpus=gpus)


MIG_MINORS = (("gpu0/gi1/access", 12), ("gpu0/gi1/ci0/access", 13))
CAPS = (_char("/dev/nvidia-caps/nvidia-cap12", 12), _char("/dev/nvidia-caps/nvidia-cap13", 13))
MIG_NODE = {"mig_minors": MIG_MINORS, "cap_nodes": CAPS}


def _data(nvml: NvmlFacts | None, driver: DriverFacts, **options: Any) -> dict[str, Any]:
    options.setdefault("strategies", (NameStrategy.INDEX,))
    return spec_data(build_spec(nvml, driver, GenerateOptions(**options), version=VERSION))


def _edits(data: dict[str, Any], device: str) -> dict[str, Any]:
    edits: dict[str, Any] = next(d for d in data["devices"] if d["name"] == device)[
        "containerEdits"
    ]
    return edits


def _paths(data: dict[str, Any], device: str) -> list[str]:
    return [n["path"] for n in _edits(data, device).get("deviceNodes", [])]


# a group that is not world read+write: containers need it (as nvidia-ctk: additionalGids)
VIDEO_MODE, VIDEO_GID = 0o660, 44


@pytest.mark.parametrize(
    ("mode", "features", "common", "device"),
    [
        pytest.param(Mode.NVML, frozenset(), [44], [], id="nvml-common-group-not-repeated"),
        pytest.param(Mode.NVML, NO_GIDS, [], [], id="nvml-no-additional-gids"),
        pytest.param(Mode.MANAGEMENT, frozenset(), [], [44], id="management-group-on-its-device"),
        pytest.param(Mode.MANAGEMENT, NO_GIDS, [], [], id="management-no-additional-gids"),
    ],
)
def test_additional_gids(
    mode: Mode, features: frozenset[FeatureFlag], common: list[int], device: list[int]
) -> None:
    driver = _driver(
        control_nodes=(_char("/dev/nvidiactl", 255, mode=VIDEO_MODE, gid=VIDEO_GID),),
        gpu_nodes=(_char("/dev/nvidia0", 0, mode=VIDEO_MODE, gid=VIDEO_GID),),
    )
    data = _data(_nvml(_gpu()), driver, mode=mode, features=features)
    name = "0" if mode is Mode.NVML else "all"
    assert data["containerEdits"].get("additionalGids", []) == common
    assert _edits(data, name).get("additionalGids", []) == device
    assert "/dev/nvidia0" in _paths(data, name)


def test_drm_nodes_and_links_of_full_gpus() -> None:
    card = _char("/dev/dri/card1", 1)
    render = _char("/dev/dri/renderD128", 128)
    link = ("../card1", "/dev/dri/by-path/pci-0000:07:00.0-card")
    driver = _driver(
        drm=(("0000:07:00.0", (card, render)),), drm_links=(("0000:07:00.0", (link,)),)
    )
    data = _data(_nvml(_gpu(0), _gpu(1)), driver)
    assert _paths(data, "0") == ["/dev/nvidia0", "/dev/dri/card1", "/dev/dri/renderD128"]
    assert [h["args"] for h in _edits(data, "0")["hooks"]] == [
        ["nvidia-cdi-hook", "create-symlinks", "--link", "../card1::" + link[1]]
    ]
    assert _paths(data, "1") == ["/dev/nvidia1"]  # no DRM nodes: no links either
    assert "hooks" not in _edits(data, "1")


def test_only_gfx_mig_devices_get_the_drm_nodes() -> None:
    card = _char("/dev/dri/card1", 1)
    driver = _driver(drm=(("0000:07:00.0", (card,)),), **MIG_NODE)
    gpu = _gpu(0, _mig(0), _mig(1, "1g.10gb+gfx"))
    data = _data(_nvml(gpu), driver)
    caps = ["/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"]
    assert _paths(data, "0:0") == ["/dev/nvidia0", *caps]
    assert _paths(data, "0:1") == ["/dev/nvidia0", "/dev/dri/card1", *caps]


def test_malformed_lines_are_ignored_when_the_capabilities_parse() -> None:
    driver = _driver(**MIG_NODE, mig_minors_malformed=("line 3: 'gpu9/gi1/access x'",))
    data = _data(_nvml(_gpu(0, _mig(0))), driver)
    assert _paths(data, "0:0")[1:] == [c.container_path for c in CAPS]


MIG_NAME = f"MIG device 0:0 ({MIG_UUID.format(0)})"
MINORS_FILE = "/proc/driver/nvidia-caps/mig-minors"


@pytest.mark.parametrize(
    ("nvml", "driver", "error", "message", "hint"),
    [
        pytest.param(
            _nvml(),
            _driver(),
            CtkError,
            "NVML reports no GPUs on this node",
            "check `nvidia-smi`; to list device nodes without NVML use --mode management",
            id="no-gpus",
        ),
        pytest.param(
            None,
            _driver(),
            CtkError,
            "NVML facts are needed in nvml mode",
            None,
            id="nvml-mode-without-nvml-facts",
        ),
        pytest.param(
            _nvml(_gpu(0, _mig(0))),
            _driver(),
            CtkError,
            f"{MIG_NAME}: {MINORS_FILE} is missing or empty",
            None,
            id="mig-minors-missing",
        ),
        pytest.param(
            _nvml(_gpu(0, _mig(0))),
            _driver(dev_root="/srv/nodeX/"),
            CtkError,
            f"{MIG_NAME}: /srv/nodeX{MINORS_FILE} is missing or empty",
            None,
            id="mig-minors-missing-under-a-dev-root",
        ),
        pytest.param(
            _nvml(_gpu(0, _mig(0))),
            _driver(mig_minors_malformed=("line 1: 'a'", "line 2: 'b'", "line 3: 'c'")),
            CtkError,
            f"{MIG_NAME}: {MINORS_FILE} is malformed (line 1: 'a', line 2: 'b'; expected "
            "'<capability> <minor>' lines)",
            None,
            id="mig-minors-malformed-first-two-lines",
        ),
        pytest.param(
            _nvml(_gpu(0, _mig(0))),
            _driver(mig_minors=MIG_MINORS[:1], cap_nodes=CAPS),
            CtkError,
            f"{MIG_NAME}: capability device gpu0/gi1/ci0/access not found under /",
            None,
            id="mig-capability-not-listed",
        ),
        pytest.param(
            _nvml(_gpu(0, _mig(0))),
            _driver(mig_minors=MIG_MINORS, cap_nodes=CAPS[:1]),
            CtkError,
            f"{MIG_NAME}: capability device /dev/nvidia-caps/nvidia-cap13 not found under /",
            None,
            id="mig-capability-node-missing",
        ),
    ],
)
def test_refused(
    nvml: NvmlFacts | None,
    driver: DriverFacts,
    error: type[CtkError],
    message: str,
    hint: str | None,
) -> None:
    with pytest.raises(error) as raised:
        _data(nvml, driver)
    assert type(raised.value) is error
    assert raised.value.message == message
    if hint is not None:
        assert raised.value.hint == hint


def test_unknown_device_id_on_a_node_without_gpus() -> None:
    with pytest.raises(UsageError) as raised:
        _data(_nvml(), _driver(), device_ids=("0",))
    assert raised.value.message == "--device-id 0: no such GPU or MIG device"
    assert raised.value.hint == "devices on this node: none, or a GPU/MIG UUID, all, none"


@pytest.mark.parametrize(
    ("path", "prefix"),
    [
        pytest.param("/usr/bin/nvidia-cdi-hook", ["nvidia-cdi-hook"], id="nvidia-cdi-hook"),
        pytest.param("/usr/bin/nvidia-ctk", ["nvidia-ctk", "hook"], id="nvidia-ctk"),
        pytest.param("/opt/ctk/bin/ctk", ["ctk", "hook"], id="ctk"),
    ],
)
def test_hook_arguments_name_the_program(path: str, prefix: list[str]) -> None:
    data = _data(_nvml(_gpu()), _driver(), hooks=HookProgram(path))
    compat = [*prefix, "enable-cuda-compat", f"--host-driver-version={VERSION}"]
    assert compat in [h["args"] for h in data["containerEdits"]["hooks"]]
    assert {h["path"] for h in data["containerEdits"]["hooks"]} == {path}


@pytest.mark.parametrize(
    ("root", "host_path"),
    [
        pytest.param("", None, id="same-path-no-host-path"),
        pytest.param("/host", "/host/dev/nvidia0", id="other-host-path"),
    ],
)
def test_host_path_only_where_it_differs(root: str, host_path: str | None) -> None:
    driver = _driver(gpu_nodes=(_char("/dev/nvidia0", 0, root=root),))
    node = _edits(_data(_nvml(_gpu()), driver), "0")["deviceNodes"][0]
    assert node.get("hostPath") == host_path


def test_libcuda_dir_lists_every_library_dir() -> None:
    i386 = "/usr/lib/i386-linux-gnu"
    driver = _driver(library_dirs=(LIB64, i386))
    env = _data(_nvml(_gpu()), driver)["containerEdits"]["env"]
    assert env == [f"NVIDIA_CTK_LIBCUDA_DIR={LIB64}:{i386}", "NVIDIA_VISIBLE_DEVICES=void"]


def test_simplify_drops_the_common_edits_unless_nothing_is_left() -> None:
    mount = Mount(host_path="/a", container_path="/a")
    common = ContainerEdits(env=("A=1",), mounts=(mount,))
    device = ContainerEdits(env=("A=1", "B=2"), mounts=(mount,))
    assert simplify(device, common) == ContainerEdits(env=("B=2",))
    covered = ContainerEdits(env=("A=1",))
    assert simplify(covered, common) == covered
