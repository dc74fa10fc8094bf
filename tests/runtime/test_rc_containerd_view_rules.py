"""containerd's view of a config and its imports, in-process: which files take part in the CRI
plugin table as containerd 1.x (a later file's table replaces the whole table) and 2.x (tables
merge key by key) read them; and the editor's view, check and note.

(issue 26: survivors of the mutation run in `inspect.inspect_containerd` and
`containerd.ContainerdEditor`.)"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctk import toml_compat
from ctk.errors import CtkError
from ctk.runtime_config.containerd import EDITOR
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.inspect import PluginMerge, dotted, inspect_containerd

CRI = 'plugins."io.containerd.grpc.v1.cri"'
MAIN = (
    "/etc/containerd/config.toml",
    f'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
    f'[{CRI}.containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n',
)
NO_CRI = ("/etc/containerd/conf.d/10-other.toml", '[plugins."io.containerd.other"]\nx = 1\n')
EMPTY_CRI = ("/etc/containerd/conf.d/20-empty.toml", f"[{CRI}]\n")
NVIDIA = (
    "/etc/containerd/conf.d/99-nvidia.toml",
    f'[{CRI}.containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n',
)


def _runtimes(files: list[tuple[str, str]], merge: PluginMerge) -> list[tuple[str, str]]:
    view = inspect_containerd(files, merge=merge)
    return [(r.name, r.source) for r in view.runtimes]


@pytest.mark.parametrize("merge", list(PluginMerge))
def test_a_file_without_the_cri_table_takes_no_part(merge: PluginMerge) -> None:
    """Neither 1.x nor 2.x lets a file that does not name the CRI plugin change its table."""
    assert _runtimes([MAIN, NO_CRI], merge) == [("runc", MAIN[0])]


@pytest.mark.parametrize("merge", list(PluginMerge))
def test_the_files_after_one_without_the_cri_table_still_count(merge: PluginMerge) -> None:
    runtimes = _runtimes([MAIN, NO_CRI, NVIDIA], merge)
    if merge is PluginMerge.REPLACE:
        assert runtimes == [("nvidia", NVIDIA[0])]
    else:
        assert runtimes == [("nvidia", NVIDIA[0]), ("runc", MAIN[0])]


def test_an_empty_cri_table_replaces_the_whole_table_on_1x_only() -> None:
    """containerd 1.x replaces a plugin's table with a later file's, even an empty one."""
    assert _runtimes([MAIN, EMPTY_CRI], PluginMerge.REPLACE) == []
    assert _runtimes([MAIN, EMPTY_CRI], PluginMerge.DEEP) == [("runc", MAIN[0])]


def test_no_files_is_a_programming_error() -> None:
    with pytest.raises(ValueError) as info:
        inspect_containerd([])
    assert str(info.value) == "inspect_containerd needs at least the main file"


def test_the_editors_view_merges_as_containerd_2x() -> None:
    view = EDITOR.view([MAIN, EMPTY_CRI, NVIDIA])
    assert [(r.name, r.source) for r in view.runtimes] == [
        ("nvidia", NVIDIA[0]),
        ("runc", MAIN[0]),
    ]


def test_a_version_1_config_is_edited_in_place_and_says_so() -> None:
    inputs = Inputs(
        config="/etc/containerd/config.toml",
        config_text='[plugins.cri.containerd]\nsnapshotter = "overlayfs"\n',
        drop_in="/etc/containerd/conf.d/99-nvidia.toml",
    )
    assert EDITOR.notes(inputs) == (
        "/etc/containerd/config.toml is a version 1 config, which cannot import drop-ins: "
        "editing it in place",
    )
    assert EDITOR.notes(Inputs(config=MAIN[0], config_text=MAIN[1], drop_in=NVIDIA[0])) == ()
    in_place = Inputs(config=MAIN[0], config_text=MAIN[1].replace("2", "1"))
    assert EDITOR.notes(in_place) == ()


@pytest.mark.parametrize("version", [1, 2])
def test_the_check_refuses_imports_that_are_no_list_of_strings(version: int) -> None:
    inputs = Inputs(config=MAIN[0], config_text=f"version = {version}\nimports = 1\n")
    with pytest.raises(CtkError) as info:
        EDITOR.check(inputs)
    assert info.value.message == (
        "/etc/containerd/config.toml: `imports` must be an array of strings"
    )


IMPORT = "/etc/containerd/conf.d/10-x.toml"
AT = 'plugins."io.containerd.grpc.v1.cri"'


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param(
            [(MAIN[0], f"version = 2\n[{CRI}.containerd.runtimes]\nnvidia = 1\n")],
            f"{MAIN[0]}: `{AT}.containerd.runtimes.nvidia` must be a table, found a number",
            id="runtime",
        ),
        pytest.param(
            [MAIN, (IMPORT, f'[{CRI}.containerd.runtimes]\nnvidia = "x"\n')],
            f"{IMPORT}: `{AT}.containerd.runtimes.nvidia` must be a table, found a string",
            id="runtime-in-an-import",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}.containerd.runtimes.nvidia]\noptions = 1\n")],
            f"{IMPORT}: `{AT}.containerd.runtimes.nvidia.options` must be a table, found a number",
            id="options",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}.containerd.runtimes.nvidia.options]\nBinaryName = 1\n")],
            f"{IMPORT}: `{AT}.containerd.runtimes.nvidia.options.BinaryName` must be a string, "
            "found a number",
            id="binary-name",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}.containerd.runtimes.nvidia]\nruntime_type = 1\n")],
            f"{IMPORT}: `{AT}.containerd.runtimes.nvidia.runtime_type` must be a string, "
            "found a number",
            id="runtime-type",
        ),
        pytest.param(
            [MAIN, (IMPORT, f'[{CRI}.containerd.runtimes.nvidia.options]\nSystemdCgroup = "y"\n')],
            f"{IMPORT}: `{AT}.containerd.runtimes.nvidia.options.SystemdCgroup` must be a boolean, "
            "found a string",
            id="systemd-cgroup",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}]\ncontainerd = 1\n")],
            f"{IMPORT}: `{AT}.containerd` must be a table, found a number",
            id="containerd-in-an-import",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}.containerd]\nruntimes = 1\n")],
            f"{IMPORT}: `{AT}.containerd.runtimes` must be a table, found a number",
            id="runtimes-in-an-import",
        ),
        pytest.param(
            [MAIN, (IMPORT, '[plugins]\n"io.containerd.grpc.v1.cri" = 1\n')],
            f"{IMPORT}: `{AT}` must be a table, found a number",
            id="cri-in-an-import",
        ),
        pytest.param(
            [MAIN, (IMPORT, "plugins = 1\n")],
            f"{IMPORT}: `plugins` must be a table, found a number",
            id="plugins-in-an-import",
        ),
        # the setting's whole path (`.containerd` was left out) and the file that set it (an
        # import's value was blamed on config.toml)
        pytest.param(
            [(MAIN[0], f"version = 2\n[{CRI}.containerd]\ndefault_runtime_name = 1\n")],
            f"{MAIN[0]}: `{AT}.containerd.default_runtime_name` must be a string, found a number",
            id="default-runtime-name",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}.containerd]\ndefault_runtime_name = 1\n")],
            f"{IMPORT}: `{AT}.containerd.default_runtime_name` must be a string, found a number",
            id="default-runtime-name-in-an-import",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}]\nenable_cdi = 1\n")],
            f"{IMPORT}: `{AT}.enable_cdi` must be a boolean, found a number",
            id="enable-cdi-in-an-import",
        ),
        pytest.param(
            [MAIN, (IMPORT, f"[{CRI}]\ncdi_spec_dirs = [1]\n")],
            f"{IMPORT}: `{AT}.cdi_spec_dirs` must be an array of strings",
            id="cdi-spec-dirs-in-an-import",
        ),
    ],
)
@pytest.mark.parametrize("merge", list(PluginMerge))
def test_a_malformed_value_names_its_file_and_whole_path(
    files: list[tuple[str, str]], message: str, merge: PluginMerge
) -> None:
    with pytest.raises(CtkError) as info:
        inspect_containerd(files, merge=merge)
    assert info.value.message == message
    assert info.value.hint == "the engine cannot use this value either; fix that key and run again"


def test_a_setting_of_an_import_that_1x_replaced_is_blamed_on_the_replacing_file() -> None:
    """containerd 1.x: the last file's table is the one read, and so the one named."""
    files = [
        (MAIN[0], f"version = 2\n[{CRI}]\nenable_cdi = 1\n"),
        (IMPORT, f"[{CRI}]\nenable_cdi = 2\n"),
    ]
    with pytest.raises(CtkError) as info:
        inspect_containerd(files, merge=PluginMerge.REPLACE)
    assert info.value.message.startswith(f"{IMPORT}: ")
    files[1] = (IMPORT, f'[{CRI}]\nsandbox_image = "x"\n')
    assert inspect_containerd(files, merge=PluginMerge.REPLACE).cdi_enabled is None
    with pytest.raises(CtkError) as info:
        inspect_containerd(files, merge=PluginMerge.DEEP)
    assert info.value.message.startswith(f"{MAIN[0]}: ")


@pytest.mark.parametrize(
    ("keys", "written"),
    [
        pytest.param(
            ["plugins", "io.containerd.grpc.v1.cri"], 'plugins."io.containerd.grpc.v1.cri"'
        ),
        pytest.param(["a-b", "c_d", "-", "_", "0"], "a-b.c_d.-._.0", id="bare"),
        pytest.param(["", "é", 'a"b', "x y"], '""."é"."a\\"b"."x y"', id="quoted"),
    ],
)
def test_dotted_writes_a_key_path_as_toml_does(keys: list[str], written: str) -> None:
    assert dotted(keys) == written


@given(st.lists(st.text(st.characters(exclude_categories=["Cs"])), min_size=1, max_size=4))
def test_dotted_is_a_key_path_toml_reads_back(keys: list[str]) -> None:
    value: object = toml_compat.loads(f"{dotted(keys)} = 1")
    for key in keys:
        assert isinstance(value, dict)
        assert list(value) == [key]
        value = value[key]
    assert value == 1
