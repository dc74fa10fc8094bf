"""Rules of `inspect_docker` and `PluginMerge.of`: the file a view names by default, the message
and hint of each value dockerd would refuse, the cgroup driver read from `exec-opts` (first `=`
splits), and which containerd release merges imports key by key.

(survivors of the mutation run in `inspect.inspect_docker` and `PluginMerge.of`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.inspect import PluginMerge, inspect_docker
from ctk.runtime_config.parse import TYPE_HINT

NAME = "/srv/daemon.json"


def refusal(text: str) -> CtkError:
    with pytest.raises(CtkError) as info:
        inspect_docker(text, name=NAME)
    return info.value


def test_default_name_is_the_daemon_json() -> None:
    view = inspect_docker("{}")
    assert view.files == ("/etc/docker/daemon.json",)
    assert view.cgroup_driver is None
    assert view.default_runtime is None
    assert view.cdi_spec_dirs is None


def test_runtimes_not_an_object() -> None:
    error = refusal('{"runtimes": []}')
    assert str(error) == f"{NAME}: `runtimes` must be an object, found an array"
    assert error.hint == 'dockerd refuses this file too; make it {"name": {"path": ...}}'


def test_runtime_path_not_a_string_names_file_and_key() -> None:
    error = refusal('{"runtimes": {"nvidia": {"path": 1}}}')
    assert str(error).startswith(f"{NAME}: `runtimes.nvidia.path` must be a string, found ")
    assert error.hint == TYPE_HINT


def test_features_not_an_object() -> None:
    error = refusal('{"features": true}')
    assert str(error).startswith(f"{NAME}: `features` must be an object, found ")
    assert error.hint == TYPE_HINT


def test_exec_opts_not_strings() -> None:
    error = refusal('{"exec-opts": [1]}')
    assert str(error) == f"{NAME}: `exec-opts` must be an array of strings"


def test_cdi_spec_dirs_not_strings() -> None:
    error = refusal('{"cdi-spec-dirs": [1]}')
    assert str(error) == f"{NAME}: `cdi-spec-dirs` must be an array of strings"
    assert error.hint == TYPE_HINT


def test_cgroup_driver_value_splits_at_the_first_equals() -> None:
    view = inspect_docker('{"exec-opts": [" native.cgroupdriver = sys=temd "]}', name=NAME)
    assert view.cgroup_driver == "sys=temd"


def test_cgroup_driver_last_one_wins_and_others_ignored() -> None:
    text = '{"exec-opts": ["native.cgroupdriver=cgroupfs", "x=y", "native.cgroupdriver=systemd"]}'
    assert inspect_docker(text, name=NAME).cgroup_driver == "systemd"
    assert inspect_docker('{"exec-opts": ["x=y"]}', name=NAME).cgroup_driver is None


@pytest.mark.parametrize(
    ("version", "release", "merge"),
    [
        (2, None, PluginMerge.REPLACE),
        (2, "1.7.27", PluginMerge.REPLACE),
        (2, "2.1.9", PluginMerge.DEEP),
        (3, None, PluginMerge.DEEP),
        (2, "100000.1", PluginMerge.DEEP),  # six digits still read
        (2, "1000000.1", PluginMerge.REPLACE),  # seven: not a release number
        (2, "v2.0", PluginMerge.REPLACE),
    ],
)
def test_plugin_merge_of(version: int, release: str | None, merge: PluginMerge) -> None:
    assert PluginMerge.of(version, release) is merge
