"""containerd's configure in place, in-process: the exact text, `Change`s and notes of
`configure_in_place` for version 1, 2 and 3 configs, with and without a default and CDI: the old
v1 shim's `Runtime` key where runc v2's shim has `BinaryName`, a runtime without `runtime_type`
(runc v2's is written), the user's own nvidia runtime (its edits recorded, its tables kept), a
config already configured, an edit of inline `options = { ... }` and its undo, and refusals
that name the file (a runtime, the copied one or `options` that is not a table).

(issue 26: survivors of the mutation run in `containerd.configure_in_place`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import containerd, tomledit
from ctk.runtime_config.changes import Change, Edit, header, new_table
from ctk.runtime_config.engines import RuntimeRequest
from ctk.runtime_config.parse import TYPE_HINT

CONFIG = "/etc/containerd/config.toml"
NVIDIA = "/usr/bin/nvidia-container-runtime"
RUNC_V2 = "io.containerd.runc.v2"
V1_LINUX = "io.containerd.runtime.v1.linux"
V2 = "io.containerd.grpc.v1.cri"
V3 = "io.containerd.cri.v1.runtime"
CRI1 = "plugins.cri"
CRI2 = f'plugins."{V2}"'
CRI3 = f'plugins."{V3}"'
RUNTIMES1 = ("plugins", "cri", "containerd", "runtimes")
RUNTIMES2 = ("plugins", V2, "containerd", "runtimes")
RUNTIMES3 = ("plugins", V3, "containerd", "runtimes")
DEFAULT_AND_CDI = RuntimeRequest(set_as_default=True, enable_cdi=True)


def default_and_cdi(cri: tuple[str, str]) -> list[Change]:
    """What set-as-default and CDI record where neither [cri] nor [cri.containerd] had a key."""
    return [
        header((*cri, "containerd")),
        Change((*cri, "containerd", "default_runtime_name"), False, None, "nvidia"),
        header(cri),
        Change((*cri, "enable_cdi"), False, None, True),
    ]


# --- the old v1 shim: `Runtime` names the binary -----------------------------------------------

V1_LEGACY = (
    "# site\n"
    f"[{CRI1}.containerd]\n"
    '  default_runtime_name = "runc"  # keep\n'
    f"  [{CRI1}.containerd.runtimes.runc]\n"
    f'    runtime_type = "{V1_LINUX}"\n'
    f"    [{CRI1}.containerd.runtimes.runc.options]\n"
    '      Runtime = "runc"\n'
)
V1_NVIDIA = (
    f"  [{CRI1}.containerd.runtimes.nvidia]\n"
    f'    runtime_type = "{V1_LINUX}"\n'
    f"    [{CRI1}.containerd.runtimes.nvidia.options]\n"
    f'      Runtime = "{NVIDIA}"\n'
)


def test_a_copy_of_a_v1_shim_runtime_gets_the_binary_as_runtime() -> None:
    edit = containerd.configure_in_place(CONFIG, V1_LEGACY, RuntimeRequest())
    assert edit == Edit(V1_LEGACY + V1_NVIDIA, (new_table((*RUNTIMES1, "nvidia")),))


def test_a_copy_of_a_v1_shim_runtime_set_as_default_with_cdi() -> None:
    edit = containerd.configure_in_place(CONFIG, V1_LEGACY, DEFAULT_AND_CDI)
    assert edit.text == (
        "# site\n"
        f"[{CRI1}]\n"
        "enable_cdi = true\n"
        + V1_LEGACY[len("# site\n") :].replace('"runc"  # keep', '"nvidia"  # keep')
        + V1_NVIDIA
    )
    assert edit.changes == (
        new_table((*RUNTIMES1, "nvidia")),
        Change((*RUNTIMES1[:-1], "default_runtime_name"), True, "runc", "nvidia"),
        header(("plugins", "cri")),
        Change(("plugins", "cri", "enable_cdi"), False, None, True),
    )
    assert edit.notes == ()


def test_the_users_v1_shim_nvidia_runtime_gets_runtime_in_new_options() -> None:
    text = f'[{CRI1}.containerd.runtimes.nvidia]\n  runtime_type = "{V1_LINUX}"\n'
    options = (*RUNTIMES1, "nvidia", "options")
    edit = containerd.configure_in_place(CONFIG, text, RuntimeRequest())
    assert edit == Edit(
        text + f'[{CRI1}.containerd.runtimes.nvidia.options]\nRuntime = "{NVIDIA}"\n',
        (
            new_table(options),
            header(options),
            Change((*options, "Runtime"), False, None, NVIDIA),
        ),
    )


def test_the_users_v1_shim_nvidia_runtime_set_as_default_with_cdi() -> None:
    text = f'[{CRI1}.containerd.runtimes.nvidia]\n  runtime_type = "{V1_LINUX}"\n'
    options = (*RUNTIMES1, "nvidia", "options")
    edit = containerd.configure_in_place(CONFIG, text, DEFAULT_AND_CDI)
    assert edit == Edit(
        f"[{CRI1}]\nenable_cdi = true\n"
        f'[{CRI1}.containerd]\ndefault_runtime_name = "nvidia"\n'
        + text
        + f'[{CRI1}.containerd.runtimes.nvidia.options]\nRuntime = "{NVIDIA}"\n',
        (
            new_table(options),
            header(options),
            Change((*options, "Runtime"), False, None, NVIDIA),
            *default_and_cdi(("plugins", "cri")),
        ),
    )


# --- no `runtime_type`: runc v2's is written, and its shim's `BinaryName` -----------------------


def test_the_users_nvidia_runtime_without_a_type_gets_runc_v2s() -> None:
    text = f"version = 2\n[{CRI2}.containerd.runtimes.nvidia]\n  privileged = true  # mine\n"
    rt = (*RUNTIMES2, "nvidia")
    edit = containerd.configure_in_place(CONFIG, text, RuntimeRequest())
    assert edit == Edit(
        text
        + f'  runtime_type = "{RUNC_V2}"\n'
        + f'[{CRI2}.containerd.runtimes.nvidia.options]\nBinaryName = "{NVIDIA}"\n',
        (
            Change((*rt, "runtime_type"), False, None, RUNC_V2),
            new_table((*rt, "options")),
            header((*rt, "options")),
            Change((*rt, "options", "BinaryName"), False, None, NVIDIA),
        ),
    )


def test_a_runtime_that_is_not_copied_leaves_an_empty_one_with_runc_v2s_type() -> None:
    """kata is neither the default nor runc or crun: the new runtime starts empty."""
    text = f"version = 2\n[{CRI2}.containerd.runtimes.kata]\n  # kata\n  privileged = true\n"
    edit = containerd.configure_in_place(CONFIG, text, DEFAULT_AND_CDI)
    assert edit == Edit(
        f"version = 2\n[{CRI2}]\nenable_cdi = true\n"
        f'[{CRI2}.containerd]\ndefault_runtime_name = "nvidia"\n'
        + text[len("version = 2\n") :]
        + f'[{CRI2}.containerd.runtimes.nvidia]\nruntime_type = "{RUNC_V2}"\n'
        + f'[{CRI2}.containerd.runtimes.nvidia.options]\nBinaryName = "{NVIDIA}"\n',
        (new_table((*RUNTIMES2, "nvidia")), *default_and_cdi(("plugins", V2))),
    )


def test_a_copied_runc_without_a_type_gets_runc_v2s_after_its_keys() -> None:
    text = (
        f"version = 2\n[{CRI2}.containerd.runtimes.runc]\n"
        "  privileged_without_host_devices = false  # why\n"
        f"  [{CRI2}.containerd.runtimes.runc.options]\n"
        "    SystemdCgroup = true\n"
    )
    request = RuntimeRequest(name="nvidia-cdi", path="/opt/nv")
    edit = containerd.configure_in_place(CONFIG, text, request)
    assert edit == Edit(
        text
        + f"[{CRI2}.containerd.runtimes.nvidia-cdi]\n"
        + "  privileged_without_host_devices = false\n"
        + f'  runtime_type = "{RUNC_V2}"\n'
        + f"  [{CRI2}.containerd.runtimes.nvidia-cdi.options]\n"
        + "    SystemdCgroup = true\n"
        + '    BinaryName = "/opt/nv"\n',
        (new_table((*RUNTIMES2, "nvidia-cdi")),),
    )


# --- the user's own nvidia runtime, and a config already configured ----------------------------

NV_OTHER_PATH = (
    "version = 2\n"
    f"[{CRI2}.containerd.runtimes.nvidia]\n"
    f'  runtime_type = "{RUNC_V2}"\n'
    f"[{CRI2}.containerd.runtimes.nvidia.options]\n"
    '  BinaryName = "/opt/nv"  # old\n'
)


def test_the_users_nvidia_runtime_gets_the_path_and_keeps_its_comment() -> None:
    binary = (*RUNTIMES2, "nvidia", "options", "BinaryName")
    edit = containerd.configure_in_place(CONFIG, NV_OTHER_PATH, RuntimeRequest())
    assert edit == Edit(
        NV_OTHER_PATH.replace('"/opt/nv"', f'"{NVIDIA}"'),
        (Change(binary, True, "/opt/nv", NVIDIA),),
    )
    edit = containerd.configure_in_place(CONFIG, NV_OTHER_PATH, DEFAULT_AND_CDI)
    assert edit == Edit(
        f"version = 2\n[{CRI2}]\nenable_cdi = true\n"
        f'[{CRI2}.containerd]\ndefault_runtime_name = "nvidia"\n'
        + NV_OTHER_PATH[len("version = 2\n") :].replace('"/opt/nv"', f'"{NVIDIA}"'),
        (Change(binary, True, "/opt/nv", NVIDIA), *default_and_cdi(("plugins", V2))),
    )


CONFIGURED = (
    "version = 2\n"
    f"[{CRI2}]\n"
    "  enable_cdi = true\n"
    f"[{CRI2}.containerd]\n"
    '  default_runtime_name = "nvidia"\n'
    f"[{CRI2}.containerd.runtimes.nvidia]\n"
    f'  runtime_type = "{RUNC_V2}"\n'
    f"[{CRI2}.containerd.runtimes.nvidia.options]\n"
    f'  BinaryName = "{NVIDIA}"\n'
)


@pytest.mark.parametrize(
    "request_",
    [pytest.param(RuntimeRequest(), id="plain"), pytest.param(DEFAULT_AND_CDI, id="default-cdi")],
)
def test_a_configured_config_is_given_back_unchanged(request_: RuntimeRequest) -> None:
    edit = containerd.configure_in_place(CONFIG, CONFIGURED, request_)
    assert edit.text is CONFIGURED
    assert (edit.changes, edit.notes) == ((), ())


# --- versions: a blank file, version 3's built-in runc, version 1 without runtimes -------------

RUNC_TABLE2 = f'[{CRI2}.containerd.runtimes.runc]\nruntime_type = "{RUNC_V2}"\n'
RUNC_TABLE3 = (
    f'[{CRI3}.containerd.runtimes.runc]\nruntime_type = "{RUNC_V2}"\nsandboxer = "podsandbox"\n'
)
NEW_NVIDIA3 = (
    f'[{CRI3}.containerd.runtimes.nvidia]\nruntime_type = "{RUNC_V2}"\nsandboxer = "podsandbox"\n'
    f'[{CRI3}.containerd.runtimes.nvidia.options]\nBinaryName = "{NVIDIA}"\n'
)


def created(keys: tuple[str, ...], start: int) -> list[Change]:
    return [new_table(keys[:n]) for n in range(start, len(keys) + 1)]


def test_a_blank_file_becomes_version_2_with_the_built_in_runc() -> None:
    edit = containerd.configure_in_place(CONFIG, "\n", DEFAULT_AND_CDI)
    assert edit.text == (
        f"version = 2\n\n[{CRI2}]\nenable_cdi = true\n\n"
        f'[{CRI2}.containerd]\ndefault_runtime_name = "nvidia"\n\n' + RUNC_TABLE2 + "\n"
        f'[{CRI2}.containerd.runtimes.nvidia]\nruntime_type = "{RUNC_V2}"\n\n'
        f'[{CRI2}.containerd.runtimes.nvidia.options]\nBinaryName = "{NVIDIA}"\n'
    )
    assert edit.changes == (
        Change(("version",), False, None, 2),
        *created(RUNTIMES2, 1),
        Change((*RUNTIMES2, "runc"), False, None, {"runtime_type": RUNC_V2}),
        new_table((*RUNTIMES2, "nvidia")),
        *default_and_cdi(("plugins", V2)),
    )
    assert edit.notes == ()


def test_version_3_writes_out_runc_with_its_sandboxer() -> None:
    text = "version = 3  # three\n"
    runc = {"runtime_type": RUNC_V2, "sandboxer": "podsandbox"}
    edit = containerd.configure_in_place(CONFIG, text, RuntimeRequest())
    assert edit == Edit(
        text + RUNC_TABLE3 + NEW_NVIDIA3,
        (
            *created(RUNTIMES3, 1),
            Change((*RUNTIMES3, "runc"), False, None, runc),
            new_table((*RUNTIMES3, "nvidia")),
        ),
    )


def test_version_3_replaces_enable_cdi_false() -> None:
    text = f"version = 3\n[{CRI3}]\n  enable_cdi = false  # off\n"
    runc = {"runtime_type": RUNC_V2, "sandboxer": "podsandbox"}
    edit = containerd.configure_in_place(CONFIG, text, DEFAULT_AND_CDI)
    assert edit == Edit(
        f"version = 3\n[{CRI3}]\n  enable_cdi = true  # off\n"
        f'[{CRI3}.containerd]\ndefault_runtime_name = "nvidia"\n' + RUNC_TABLE3 + NEW_NVIDIA3,
        (
            *created(RUNTIMES3, 3),
            Change((*RUNTIMES3, "runc"), False, None, runc),
            new_table((*RUNTIMES3, "nvidia")),
            header(("plugins", V3, "containerd")),
            Change(("plugins", V3, "containerd", "default_runtime_name"), False, None, "nvidia"),
            Change(("plugins", V3, "enable_cdi"), True, False, True),
        ),
    )


def test_version_1_without_runtimes_writes_out_runc_under_plugins_cri() -> None:
    text = f"# v1\n[{CRI1}]\n  x = 1\n"
    edit = containerd.configure_in_place(CONFIG, text, DEFAULT_AND_CDI)
    assert edit == Edit(
        text
        + "  enable_cdi = true\n"
        + f'[{CRI1}.containerd]\ndefault_runtime_name = "nvidia"\n'
        + f'[{CRI1}.containerd.runtimes.runc]\nruntime_type = "{RUNC_V2}"\n'
        + f'[{CRI1}.containerd.runtimes.nvidia]\nruntime_type = "{RUNC_V2}"\n'
        + f'[{CRI1}.containerd.runtimes.nvidia.options]\nBinaryName = "{NVIDIA}"\n',
        (
            *created(RUNTIMES1, 3),
            Change((*RUNTIMES1, "runc"), False, None, {"runtime_type": RUNC_V2}),
            new_table((*RUNTIMES1, "nvidia")),
            header(("plugins", "cri", "containerd")),
            Change((*RUNTIMES1[:-1], "default_runtime_name"), False, None, "nvidia"),
            Change(("plugins", "cri", "enable_cdi"), False, None, True),
        ),
    )


# --- refusals name the file -------------------------------------------------------------------

NV_PATH2 = f"{CRI2}.containerd.runtimes.nvidia"


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        pytest.param(
            f"version = 2\n[{CRI2}.containerd.runtimes]\n  nvidia = 1\n",
            f"{CONFIG}: `{NV_PATH2}` must be a table, found a number",
            TYPE_HINT,
            id="nvidia-number",
        ),
        pytest.param(
            f'version = 2\n[{CRI2}.containerd.runtimes]\n  nvidia = {{ runtime_type = "x" }}\n',
            f"{CONFIG}: `{NV_PATH2}` is an inline table; ctk edits only [tables]",
            f"write it as a [{NV_PATH2}] section and run again",
            id="nvidia-inline",
        ),
        pytest.param(
            f"version = 2\n[{CRI2}.containerd.runtimes]\n  runc = 1\n",
            f"{CONFIG}: `runtimes.runc` must be a table, found a number",
            TYPE_HINT,
            id="copied-runc",
        ),
        pytest.param(
            f"version = 2\n[{CRI2}.containerd]\n  default_runtime_name = 'kata'\n"
            f"[{CRI2}.containerd.runtimes]\n  kata = 'x'\n",
            f"{CONFIG}: `runtimes.kata` must be a table, found a string",
            TYPE_HINT,
            id="copied-default",
        ),
        pytest.param(
            f"version = 2\n[{NV_PATH2}]\n  options = 1\n",
            f"{CONFIG}: `{NV_PATH2}.options` must be a table, found a number",
            TYPE_HINT,
            id="options",
        ),
        pytest.param(
            f"version = 2\n[{CRI2}.containerd.runtimes.runc]\n  options = 1\n",
            f"{CONFIG}: `{NV_PATH2}.options` must be a table, found a number",
            TYPE_HINT,
            id="copied-options",
        ),
    ],
)
def test_configure_in_place_refuses_naming_the_file(text: str, message: str, hint: str) -> None:
    with pytest.raises(CtkError) as info:
        containerd.configure_in_place(CONFIG, text, RuntimeRequest())
    assert (info.value.message, info.value.hint) == (message, hint)


# --- inline `options = { ... }` of the user's runtime: the change recorded ------------------------


@pytest.mark.parametrize(
    ("runtime_type", "options", "expected", "change", "undone"),
    [
        # a value replaced in place: the rest of the line stays, and undo gives its bytes back
        pytest.param(
            RUNC_V2,
            '{ BinaryName = "/opt/old", SystemdCgroup = true }  # mine',
            f'{{ BinaryName = "{NVIDIA}", SystemdCgroup = true }}  # mine',
            Change((*RUNTIMES2, "nvidia", "options", "BinaryName"), True, "/opt/old", NVIDIA),
            '{ BinaryName = "/opt/old", SystemdCgroup = true }  # mine',
            id="replaced",
        ),
        # a key added: the table is written anew, and undo gives the same data back
        pytest.param(
            V1_LINUX,
            "{ NoPivotRoot = true }",
            f'{{NoPivotRoot = true, Runtime = "{NVIDIA}"}}',
            Change((*RUNTIMES2, "nvidia", "options", "Runtime"), False, None, NVIDIA),
            "{NoPivotRoot = true }",
            id="added",
        ),
    ],
)
def test_the_users_inline_options_are_edited_and_undone(
    runtime_type: str, options: str, expected: str, change: Change, undone: str
) -> None:
    """The user's own nvidia runtime with `options = { ... }` (ctk refused to edit that line:
    "cannot edit this file's layout"); unconfigure puts the old value back and keeps the
    runtime, which was the user's."""
    text = f'version = 2\n[{NV_PATH2}]\n  runtime_type = "{runtime_type}"\n  options = %s\n'
    edit = containerd.configure_in_place(CONFIG, text % options, RuntimeRequest())
    assert edit == Edit(text % expected, (change,))
    back = containerd.unconfigure_in_place(CONFIG, edit.text, "nvidia", edit.changes, recorded=True)
    assert back == text % undone
    assert tomledit.plain(tomledit.parse_document(CONFIG, back)) == tomledit.plain(
        tomledit.parse_document(CONFIG, text % options)
    )


def test_inline_options_the_user_changed_since_stay() -> None:
    text = f'version = 2\n[{NV_PATH2}]\n  runtime_type = "{RUNC_V2}"\n  options = %s\n'
    edit = containerd.configure_in_place(
        CONFIG, text % '{ BinaryName = "/opt/old" }', RuntimeRequest()
    )
    changed = edit.text.replace(NVIDIA, "/opt/mine")
    back = containerd.unconfigure_in_place(CONFIG, changed, "nvidia", edit.changes, recorded=True)
    assert back == changed


def test_inline_options_holding_the_path_are_left_alone() -> None:
    text = f'version = 2\n[{NV_PATH2}]\n  runtime_type = "{V1_LINUX}"\n'
    text += f'  options = {{ Runtime = "{NVIDIA}" }}\n'
    edit = containerd.configure_in_place(CONFIG, text, RuntimeRequest())
    assert edit.text is text
    assert edit.changes == ()
