"""The device-class modes' rules (csv, wsl, imex, the node classes), in-process from plain facts:
what they refuse and with which words, groups, the ldcache hook (issue 26: the mutation run
found these unpinned)."""

from __future__ import annotations

from typing import Any

import pytest

from ctk.cdi.generate import GenerateOptions
from ctk.cdi.modes import build_class_spec, class_warnings
from ctk.cdi.options import FeatureFlag, Mode
from ctk.cdi.serialize import spec_data
from ctk.errors import CtkError, UsageError
from ctk.node import CharDevice, HostFile
from ctk.node.classes import ClassFacts

DEV_ROOT = "/run/nvidia/driver"
CHANNELS = f"{DEV_ROOT}/dev/nvidia-caps-imex-channels"
WSL_LIB = "/usr/lib/wsl/lib"


def _char(path: str, minor: int = 0, *, mode: int = 0o666, gid: int = 0) -> CharDevice:
    return CharDevice(
        container_path=path,
        host_path=DEV_ROOT + path,
        major=234,
        minor=minor,
        file_mode=mode,
        gid=gid,
    )


def _channel(number: int) -> CharDevice:
    return _char(f"/dev/nvidia-caps-imex-channels/channel{number}", number)


def _facts(*nodes: CharDevice, **more: Any) -> ClassFacts:
    return ClassFacts(driver_root=DEV_ROOT, dev_root=DEV_ROOT, nodes=nodes, **more)


def _options(mode: Mode, *ids: str, **more: Any) -> GenerateOptions:
    return GenerateOptions(mode=mode, device_ids=ids or ("all",), **more)


@pytest.mark.parametrize(
    ("facts", "options", "expected"),
    [
        pytest.param(
            _facts(),
            _options(Mode.NVML),
            (CtkError, "--mode nvml: not a device-class mode", None),
            id="not-a-class-mode",
        ),
        pytest.param(
            _facts(),
            _options(Mode.IMEX),
            (
                CtkError,
                f"no IMEX channels found under {CHANNELS}",
                "create them (module parameter NVreg_CreateImexChannel0=1, or "
                "`nvidia-modprobe -i <channel>`), or pass the right --dev-root",
            ),
            id="imex-no-channels",
        ),
        pytest.param(
            _facts(),
            _options(Mode.IMEX, "3"),
            (CtkError, f"IMEX channel 3 not found under {CHANNELS}", "found: none"),
            id="imex-channel-on-a-node-without-any",
        ),
        pytest.param(
            _facts(_channel(2), _channel(0)),
            _options(Mode.IMEX, "channel1048575"),
            (CtkError, f"IMEX channel 1048575 not found under {CHANNELS}", "found: 0, 2"),
            id="imex-highest-channel-is-a-channel",
        ),
        pytest.param(
            _facts(_channel(0)),
            _options(Mode.IMEX, "1048576"),
            (
                UsageError,
                "--device-id 1048576: not an IMEX channel",
                "a channel number 0-1048575 (or channel<N>), or all",
            ),
            id="imex-past-the-highest-channel",
        ),
        pytest.param(
            _facts(_char("/dev/nvhost-gpu")),
            _options(Mode.CSV, "1"),
            (
                UsageError,
                "--device-id 1: no such device",
                "in csv mode the node has one device: 0 (or all)",
            ),
            id="csv-other-device",
        ),
        pytest.param(
            _facts(),
            _options(Mode.CSV),
            (
                CtkError,
                f"none of the device nodes the CSV files list exist under {DEV_ROOT}",
                "is the GPU driver (nvgpu) loaded? Pass the right --dev-root or --csv.file",
            ),
            id="csv-no-nodes",
        ),
        pytest.param(
            _facts(),
            _options(Mode.MOFED),
            (
                CtkError,
                "no /dev/infiniband/uverbs*, /dev/infiniband/rdma_cm device nodes found under "
                f"{DEV_ROOT}",
                "load the mofed driver on this node, or pass the right --dev-root",
            ),
            id="mofed-no-nodes-every-pattern",
        ),
    ],
)
def test_refused(
    facts: ClassFacts, options: GenerateOptions, expected: tuple[type[CtkError], str, str | None]
) -> None:
    error, message, hint = expected
    with pytest.raises(CtkError) as raised:
        build_class_spec(facts, options)
    assert type(raised.value) is error
    assert (raised.value.message, raised.value.hint) == (message, hint)


@pytest.mark.parametrize(
    ("features", "gids"),
    [
        pytest.param(frozenset(), [44], id="group-added"),
        pytest.param(frozenset({FeatureFlag.NO_ADDITIONAL_GIDS}), None, id="no-additional-gids"),
    ],
)
def test_node_class_groups(features: frozenset[FeatureFlag], gids: list[int] | None) -> None:
    facts = _facts(_char("/dev/nvidia-fs0", mode=0o660, gid=44))
    data = spec_data(build_class_spec(facts, _options(Mode.GDS, features=features)))
    (device,) = data["devices"]
    assert device["containerEdits"].get("additionalGids") == gids
    assert [n["path"] for n in device["containerEdits"]["deviceNodes"]] == ["/dev/nvidia-fs0"]


@pytest.mark.parametrize(
    ("ldconfig", "args"),
    [
        pytest.param(None, [], id="default-ldconfig"),
        pytest.param(
            "/sbin/ldconfig.real", ["--ldconfig-path", "/sbin/ldconfig.real"], id="ldconfig-path"
        ),
    ],
)
def test_wsl_ldcache_hook(ldconfig: str | None, args: list[str]) -> None:
    library = HostFile(
        container_path=f"{WSL_LIB}/libdxcore.so", host_path=f"{WSL_LIB}/libdxcore.so"
    )
    facts = _facts(_char("/dev/dxg"), mounts=(library,))
    spec = build_class_spec(facts, _options(Mode.WSL, ldconfig_path=ldconfig))
    (hook,) = spec_data(spec)["containerEdits"]["hooks"]
    assert hook["args"] == ["nvidia-cdi-hook", "update-ldcache", *args, "--folder", WSL_LIB]


def test_single_device_modes_warn_of_every_ignored_id() -> None:
    assert class_warnings(_options(Mode.WSL, "0", "1")) == (
        "--device-id 0, 1: ignored; wsl mode has one device, all",
    )


def test_imex_errors_name_the_folder_under_the_default_dev_root() -> None:
    facts = ClassFacts(driver_root="/", dev_root="/", nodes=())
    with pytest.raises(CtkError) as raised:
        build_class_spec(facts, _options(Mode.IMEX))
    assert raised.value.message == "no IMEX channels found under /dev/nvidia-caps-imex-channels"


def test_a_node_not_named_channel_n_is_no_channel() -> None:
    """The folder may hold other nodes (a renamed one, channel-old): they are not channels, and
    `all` takes the numbered ones only."""
    stray = _char("/dev/nvidia-caps-imex-channels/channel-old", 9)
    spec = build_class_spec(_facts(_channel(2), stray, _channel(0)), _options(Mode.IMEX))
    assert [d.name for d in spec.devices] == ["0", "2", "all"]
    with pytest.raises(CtkError) as raised:
        build_class_spec(_facts(_channel(2), stray), _options(Mode.IMEX, "5"))
    assert raised.value.hint == "found: 2"
