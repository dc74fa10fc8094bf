"""containerd's editing rules, in-process: which runtime the nvidia one starts as a copy of, what
unconfigure in place takes back (with a record, without one, a user's own runtime and default
kept), what a drop-in holds (the copy of the CRI table for 1.x, only ctk's keys for 2.x, the
runtimes of earlier runs), which runtimes of ctk's drop-in count as carried, and the warnings
about imported files whose CRI table replaces an edit in place. Files that are not what
containerd reads are refused naming the file.

(survivors of the mutation run in `containerd.carried_runtimes`, `configure_drop_in`,
`unconfigure_in_place`, `_source_runtime` and `in_place_overridden`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import containerd, tomledit
from ctk.runtime_config.changes import Change, ChangeKind, new_table
from ctk.runtime_config.containerd import Carried
from ctk.runtime_config.engines import RuntimeRequest
from ctk.runtime_config.parse import JSONValue, load_toml

CONFIG = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
BEFORE = "/etc/containerd/conf.d/10-site.toml"
LATER = "/etc/containerd/conf.d/zz-site.toml"
NVIDIA = "/usr/bin/nvidia-container-runtime"
RUNC_V2 = "io.containerd.runc.v2"
V2 = "io.containerd.grpc.v1.cri"
V3 = "io.containerd.cri.v1.runtime"
CRI2 = f'plugins."{V2}"'
CRI3 = f'plugins."{V3}"'
CRI1 = "plugins.cri"
RUNTIMES2 = ("plugins", V2, "containerd", "runtimes")
DEFAULT2 = ("plugins", V2, "containerd", "default_runtime_name")
HEADER = "# Written by `ctk runtime configure`; `ctk runtime unconfigure` removes it.\n"
CARRIED_HEADER = HEADER + (
    "# containerd 1.x replaces a whole plugin table per imported file, so this file carries\n"
    "# the CRI plugin settings of the files imported before it as well: after editing them\n"
    "# there, run `ctk runtime configure` again.\n"
)
MERGED_HEADER = HEADER + (
    "# containerd 2.x merges this file into the ones before it key by key: it holds only\n"
    "# what ctk adds.\n"
)
NOT_A_TABLE = f'version = 2\n[plugins]\n"{V2}" = 1\n'


def runtime(name: str, *lines: str, cri: str = CRI2) -> str:
    return f"[{cri}.containerd.runtimes.{name}]\n" + "".join(f"  {line}\n" for line in lines)


def cri_message(name: str, cri: str = CRI2) -> str:
    return f"{name}: `{cri}` must be a table"


# --- _source_runtime: the default runtime, else runc, else crun, never the runtime itself -----


def source(text: str, wanted: str = "nvidia") -> JSONValue:
    doc = tomledit.parse_document(CONFIG, text)
    found = tomledit.find_table(CONFIG, doc, ("plugins", V2, "containerd"))
    assert found is not None
    runtimes = tomledit.find_table(CONFIG, doc, RUNTIMES2)
    assert runtimes is not None
    picked = containerd._source_runtime(CONFIG, found, runtimes, wanted)
    return None if picked is None else tomledit.plain(picked)


CRUN = runtime("crun", 'runtime_type = "crun-type"')
RUNC = runtime("runc", 'runtime_type = "runc-type"')
KATA = runtime("kata", 'runtime_type = "kata-type"')


def with_default(default: str) -> str:
    return f"[{CRI2}.containerd]\n  default_runtime_name = {default}\n"


@pytest.mark.parametrize(
    ("text", "wanted", "expected"),
    [
        pytest.param(with_default('"kata"') + CRUN + RUNC + KATA, "nvidia", "kata", id="default"),
        pytest.param(with_default('"gone"') + CRUN + RUNC, "nvidia", "runc", id="default-missing"),
        pytest.param(CRUN + RUNC + KATA, "nvidia", "runc", id="no-default-runc"),
        pytest.param(CRUN + KATA, "nvidia", "crun", id="no-runc-crun"),
        pytest.param(KATA, "nvidia", None, id="none"),
        pytest.param(with_default('"kata"') + RUNC + KATA, "kata", "runc", id="not-itself"),
        pytest.param(RUNC + CRUN, "runc", "crun", id="runc-wanted"),
        pytest.param(with_default("1") + CRUN + RUNC, "nvidia", "runc", id="default-not-a-string"),
        pytest.param(with_default('""') + CRUN + RUNC, "nvidia", "runc", id="default-empty"),
    ],
)
def test_the_runtime_copied(text: str, wanted: str, expected: str | None) -> None:
    picked = source(text, wanted)
    assert picked == (None if expected is None else {"runtime_type": f"{expected}-type"})


def test_a_runtime_named_by_the_empty_default_is_not_copied() -> None:
    """An empty `default_runtime_name` names no runtime, not even one whose name is empty."""
    empty = runtime('""', 'runtime_type = "empty-type"')
    assert source(with_default('""') + empty + CRUN) == {"runtime_type": "crun-type"}
    assert source(empty + CRUN) == {"runtime_type": "crun-type"}


def test_a_copied_runtime_that_is_not_a_table_is_refused() -> None:
    with pytest.raises(CtkError) as info:
        source(runtime("kata") + f"[{CRI2}.containerd.runtimes]\n  runc = 1\n")
    assert info.value.message == f"{CONFIG}: `runtimes.runc` must be a table, found a number"


def test_configure_in_place_copies_the_default_runtime() -> None:
    text = "version = 2\n" + with_default('"kata"') + RUNC + KATA
    edit = containerd.configure_in_place(CONFIG, text, RuntimeRequest())
    runtimes = load_toml(CONFIG, edit.text)["plugins"]
    assert runtimes == {
        V2: {
            "containerd": {
                "default_runtime_name": "kata",
                "runtimes": {
                    "runc": {"runtime_type": "runc-type"},
                    "kata": {"runtime_type": "kata-type"},
                    "nvidia": {"runtime_type": "kata-type", "options": {"BinaryName": NVIDIA}},
                },
            }
        }
    }


# --- unconfigure_in_place ----------------------------------------------------------------------

NV_RUNTIME = runtime("nvidia", f'runtime_type = "{RUNC_V2}"') + (
    f'[{CRI2}.containerd.runtimes.nvidia.options]\n  BinaryName = "{NVIDIA}"\n'
)
RUNC_V2_TABLE = runtime("runc", f'runtime_type = "{RUNC_V2}"')


def test_unconfigure_without_a_record_removes_the_runtime_and_its_default() -> None:
    text = "version = 2\n" + with_default('"nvidia"') + RUNC_V2_TABLE + NV_RUNTIME
    out = containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert out == "version = 2\n" + f"[{CRI2}.containerd]\n" + RUNC_V2_TABLE


def test_unconfigure_keeps_a_default_naming_another_runtime() -> None:
    text = "version = 2\n" + with_default('"runc"') + RUNC_V2_TABLE + NV_RUNTIME
    out = containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert out == "version = 2\n" + with_default('"runc"') + RUNC_V2_TABLE


def test_unconfigure_removes_a_default_when_there_are_no_runtimes() -> None:
    text = "version = 2\n" + with_default('"nvidia"') + "  snapshotter = 'overlayfs'\n"
    out = containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert out == f"version = 2\n[{CRI2}.containerd]\n  snapshotter = 'overlayfs'\n"


@pytest.mark.parametrize("text", ["version = 2\n", f"version = 2\n[{CRI2}]\n  enable_cdi = true\n"])
def test_unconfigure_without_the_tables_changes_nothing(text: str) -> None:
    assert containerd.unconfigure_in_place(CONFIG, text, "nvidia", ()) is text


def test_unconfigure_of_a_version_3_config() -> None:
    text = (
        "version = 3\n"
        + with_default('"nvidia"').replace(CRI2, CRI3)
        + runtime("nvidia", f'runtime_type = "{RUNC_V2}"', cri=CRI3)
    )
    out = containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert out == f"version = 3\n[{CRI3}.containerd]\n"


def test_with_a_record_that_does_not_show_ctk_creating_it_the_runtime_stays() -> None:
    text = "version = 2\n" + with_default('"nvidia"') + NV_RUNTIME
    assert containerd.unconfigure_in_place(CONFIG, text, "nvidia", (), recorded=True) is text
    # Without a record (the default), it goes.
    assert containerd.unconfigure_in_place(CONFIG, text, "nvidia", ()) == (
        f"version = 2\n[{CRI2}.containerd]\n"
    )


def test_edits_inside_the_users_runtime_are_undone_and_the_runtime_stays() -> None:
    text = "version = 2\n" + with_default('"nvidia"') + NV_RUNTIME
    binary = (*RUNTIMES2, "nvidia", "options", "BinaryName")
    record = (Change(binary, True, "/opt/mine", NVIDIA),)
    out = containerd.unconfigure_in_place(CONFIG, text, "nvidia", record)
    assert out == text.replace(NVIDIA, "/opt/mine")


@pytest.mark.parametrize(
    ("text", "request_"),
    [
        pytest.param("version = 2\n", RuntimeRequest(set_as_default=True), id="bare"),
        pytest.param(
            "# mine\nversion = 2\n" + with_default('"runc"') + RUNC_V2_TABLE,
            RuntimeRequest(set_as_default=True, enable_cdi=True),
            id="default-replaced",
        ),
        pytest.param(
            f"version = 2\n[{CRI2}.containerd]\n  snapshotter = 'x'\n" + RUNC_V2_TABLE,
            RuntimeRequest(name="nvidia-cdi", set_as_default=True),
            id="named",
        ),
    ],
)
def test_unconfigure_with_the_record_gives_the_original_back(
    text: str, request_: RuntimeRequest
) -> None:
    edit = containerd.configure_in_place(CONFIG, text, request_)
    assert edit.text != text
    back = containerd.unconfigure_in_place(
        CONFIG, edit.text, request_.name, edit.changes, recorded=True
    )
    assert back == text


def test_unconfigure_removes_the_tables_ctk_created_once_empty() -> None:
    """The record's tables go after the runtime, which empties them; the user's stay."""
    text = f"version = 2\n[{CRI2}.containerd.runtimes]\n" + NV_RUNTIME
    record = [new_table(RUNTIMES2[:n]) for n in range(1, 5)] + [new_table((*RUNTIMES2, "nvidia"))]
    assert containerd.unconfigure_in_place(CONFIG, text, "nvidia", record, recorded=True) == (
        "version = 2\n"
    )
    assert containerd.unconfigure_in_place(CONFIG, text, "nvidia", ()) == (
        f"version = 2\n[{CRI2}.containerd.runtimes]\n"
    )


def test_unconfigure_refuses_to_change_other_lines() -> None:
    """tomlkit would re-indent the table after an indented one it removes: nothing is written."""
    text = f"version = 2\n  [{CRI2}.containerd.runtimes.nvidia]\n" + RUNC_V2_TABLE
    with pytest.raises(CtkError) as info:
        containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert (info.value.message, info.value.hint) == (
        f"{CONFIG}: ctk cannot edit this file's layout without changing other lines; "
        "nothing was written",
        "edit the file by hand (remove the runtime and ctk's import)",
    )


def test_unconfigure_adds_no_final_newline_of_its_own() -> None:
    text = "version = 2\n" + with_default('"runc"') + RUNC_V2_TABLE + NV_RUNTIME.rstrip("\n")
    out = containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert out == "version = 2\n" + with_default('"runc"') + RUNC_V2_TABLE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            'version = "2"\n',
            f"{CONFIG}: `version` must be an integer (1, 2 or 3), found a string",
            id="version",
        ),
        pytest.param(
            f"version = 2\n[{CRI2}.containerd]\n  runtimes = 1\n",
            f"{CONFIG}: `{CRI2}.containerd.runtimes` must be a table, found a number",
            id="runtimes",
        ),
        pytest.param(
            "version = 2\n[x\n",
            f"{CONFIG}: not valid TOML: Expected ']' at the end of a table declaration "
            "(at line 2, column 3)",
            id="toml",
        ),
    ],
)
def test_unconfigure_refuses_what_containerd_refuses(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        containerd.unconfigure_in_place(CONFIG, text, "nvidia", ())
    assert info.value.message == message


# --- in_place_overridden -----------------------------------------------------------------------


def overridden_message(other: str, cri: str = CRI2) -> str:
    return (
        f"{other} is imported by {CONFIG} and also defines [{cri}]: containerd 1.x will use that "
        "table instead, without the nvidia runtime; configure with a drop-in "
        '(leave out --drop-in-config ""), which carries the merged table'
    )


def test_files_defining_the_cri_table_are_named() -> None:
    after = [
        (BEFORE, f"version = 2\n[{CRI2}]\n  enable_cdi = true\n"),
        ("/a.toml", "version = 2\n[plugins.other]\n  x = 1\n"),
        ("/b.toml", "version = 2\n"),
        (LATER, "version = 2\n" + RUNC_V2_TABLE),
    ]
    assert containerd.in_place_overridden(CONFIG, "version = 2\n", after) == [
        overridden_message(BEFORE),
        overridden_message(LATER),
    ]


def test_version_3_names_its_own_cri_table() -> None:
    after = [(BEFORE, f"version = 3\n[{CRI3}]\n  x = 1\n"), (LATER, f"[{CRI2}]\n  x = 1\n")]
    assert containerd.in_place_overridden(CONFIG, "version = 3\n", after) == [
        overridden_message(BEFORE, CRI3)
    ]


def test_a_version_1_config_has_no_imports_to_warn_about() -> None:
    after = [(LATER, f"[{CRI1}]\n  x = 1\n"), (BEFORE, f"[{CRI2}]\n  x = 1\n")]
    assert containerd.in_place_overridden(CONFIG, f"[{CRI1}]\n  y = 1\n", after) == []
    assert containerd.in_place_overridden(CONFIG, "", after) == [overridden_message(BEFORE)]


@pytest.mark.parametrize(
    ("text", "after", "message"),
    [
        pytest.param(
            "version = 4\n",
            [],
            f"{CONFIG}: unsupported containerd config version 4",
            id="version",
        ),
        pytest.param("version = 2\n", [(LATER, NOT_A_TABLE)], cri_message(LATER), id="table"),
    ],
)
def test_overridden_refuses_what_containerd_refuses(
    text: str, after: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(CtkError) as info:
        containerd.in_place_overridden(CONFIG, text, after)
    assert info.value.message == message


# --- carried_runtimes ----------------------------------------------------------------------------


def test_carried_runtimes_are_those_only_the_drop_in_has() -> None:
    drop_in = (
        "version = 2\n"
        + with_default('"mine"')
        + (
            runtime("nvidia", 'runtime_type = "a"')
            + runtime("mine", 'runtime_type = "b"')
            + runtime("site", 'runtime_type = "c"')
            + RUNC_V2_TABLE
            + runtime("other", 'runtime_type = "d"')
        )
    )
    others = [
        (CONFIG, "version = 2\n" + runtime("site", 'runtime_type = "z"')),
        (BEFORE, "version = 2\n"),
        ("/a.toml", f"version = 2\n[{CRI2}.containerd]\n  snapshotter = 'x'\n"),
        ("/b.toml", f"version = 2\n[{CRI2}]\n  containerd = 1\n"),
        ("/c.toml", f"version = 2\n[{CRI2}.containerd]\n  runtimes = 1\n"),
    ]
    assert containerd.carried_runtimes((DROP_IN, drop_in), others, "nvidia") == Carried(
        {
            "mine": {"runtime_type": "b"},
            "runc": {"runtime_type": RUNC_V2},
            "other": {"runtime_type": "d"},
        },
        "mine",
        ("mine", "other"),
    )


def test_a_runtime_another_file_defines_is_not_carried() -> None:
    drop_in = "version = 2\n" + runtime("mine", 'runtime_type = "b"')
    others = [(CONFIG, "version = 2\n" + runtime("mine", 'runtime_type = "b"'))]
    assert containerd.carried_runtimes((DROP_IN, drop_in), others, "nvidia") == Carried(
        {}, None, ()
    )
    assert containerd.carried_runtimes((DROP_IN, drop_in), [], "nvidia") == Carried(
        {"mine": {"runtime_type": "b"}}, None, ("mine",)
    )


@pytest.mark.parametrize(
    ("default", "expected"),
    [
        pytest.param('"runc"', None, id="built-in"),
        pytest.param('"nvidia"', None, id="skipped"),
        pytest.param('"gone"', None, id="missing"),
        pytest.param("1", None, id="not-a-string"),
        pytest.param('"mine"', "mine", id="carried"),
    ],
)
def test_the_carried_default_names_a_carried_runtime(default: str, expected: str | None) -> None:
    drop_in = (
        "version = 2\n"
        + with_default(default)
        + (RUNC_V2_TABLE + runtime("mine", 'runtime_type = "b"') + runtime("nvidia", "x = 1"))
    )
    carried = containerd.carried_runtimes((DROP_IN, drop_in), [], "nvidia")
    assert (carried.default, carried.added) == (expected, ("mine",))


def test_a_built_in_runtime_that_was_changed_counts_as_added() -> None:
    drop_in = "version = 2\n" + runtime("runc", f'runtime_type = "{RUNC_V2}"', "x = 1")
    assert containerd.carried_runtimes((DROP_IN, drop_in), [], "nvidia").added == ("runc",)


def test_version_3_has_its_own_built_in_runtime() -> None:
    runc3 = runtime("runc", f'runtime_type = "{RUNC_V2}"', 'sandboxer = "podsandbox"', cri=CRI3)
    drop_in = "version = 3\n" + runc3 + runtime("mine", "x = 1", cri=CRI3)
    others = [(CONFIG, "version = 3\n" + runtime("mine", "x = 2", cri=CRI2))]  # not v3's table
    assert containerd.carried_runtimes((DROP_IN, drop_in), others, "nvidia") == Carried(
        {"runc": {"runtime_type": RUNC_V2, "sandboxer": "podsandbox"}, "mine": {"x": 1}},
        None,
        ("mine",),
    )


@pytest.mark.parametrize(
    "drop_in",
    [
        pytest.param(f"[{CRI1}.containerd]\n  default_runtime_name = 'mine'\n", id="version-1"),
        pytest.param("version = 2\n", id="nothing"),
        pytest.param(f"version = 2\n[{CRI2}]\n  containerd = 1\n", id="containerd-not-a-table"),
        pytest.param(f"version = 2\n[{CRI2}.containerd]\n  runtimes = 1\n", id="runtimes-not"),
    ],
)
def test_nothing_is_carried(drop_in: str) -> None:
    mine = runtime("mine", "x = 1", cri=CRI1)
    carried = containerd.carried_runtimes((DROP_IN, drop_in + mine), [], "nvidia")
    assert carried == Carried({}, None, ())


@pytest.mark.parametrize(
    ("drop_in", "others", "message"),
    [
        pytest.param(NOT_A_TABLE, [], cri_message(DROP_IN), id="drop-in"),
        pytest.param("version = 2\n", [(CONFIG, NOT_A_TABLE)], cri_message(CONFIG), id="other"),
        pytest.param(
            "version = 0\n", [], f"{DROP_IN}: unsupported containerd config version 0", id="v"
        ),
    ],
)
def test_carried_runtimes_refuses_what_containerd_refuses(
    drop_in: str, others: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(CtkError) as info:
        containerd.carried_runtimes((DROP_IN, drop_in), others, "nvidia")
    assert info.value.message == message


# --- configure_drop_in ---------------------------------------------------------------------------

SITE_MAIN = (
    f'version = 2\nimports = ["/x.toml"]\n[{CRI2}]\n  enable_selinux = true\n' + RUNC_V2_TABLE
)
NV_DROP_IN = (
    f"[{CRI2}.containerd.runtimes.nvidia]\nruntime_type = {RUNC_V2!r}\n\n"
    f'[{CRI2}.containerd.runtimes.nvidia.options]\nBinaryName = "{NVIDIA}"\n'
).replace("'", '"')
SANDBOXER = 'sandboxer = "podsandbox"\n'
IMPORTED = f'version = 2\nimports = ["/x.toml", "{DROP_IN}"]\n'


def copy_note(*names: str) -> str:
    return (
        f"{DROP_IN} carries a copy of the [{CRI2}] settings of {', '.join(names)} "
        "(containerd 1.x replaces the whole table per imported file): after editing them, "
        "run `ctk runtime configure` again"
    )


def later_warning(name: str) -> str:
    return (
        f"{name} is imported after {DROP_IN} and also defines [{CRI2}]: containerd 1.x will use "
        "that table instead, without the nvidia runtime"
    )


def test_a_1x_drop_in_carries_the_cri_table_of_the_files_before_it() -> None:
    before = [
        (BEFORE, f'version = 2\n[{CRI2}.containerd]\n  default_runtime_name = "runc"\n'),
        ("/y.toml", "version = 2\n"),
    ]
    after = [
        (LATER, f"version = 2\n[{CRI2}]\n  enable_cdi = false\n"),
        ("/z.toml", "version = 2\n"),
        ("/w.toml", "version = 2\n" + RUNC_V2_TABLE),
    ]
    result = containerd.configure_drop_in(
        (CONFIG, SITE_MAIN), DROP_IN, before, after, RuntimeRequest(set_as_default=True)
    )
    assert result.main.text == SITE_MAIN.replace('imports = ["/x.toml"]\n', IMPORTED[12:])
    assert result.main.changes == (Change(("imports",), True, ["/x.toml"], ["/x.toml", DROP_IN]),)
    assert result.drop_in == CARRIED_HEADER + (
        f"version = 2\n\n[{CRI2}]\nenable_selinux = true\n\n"
        f'[{CRI2}.containerd]\ndefault_runtime_name = "nvidia"\n\n'
        f'[{CRI2}.containerd.runtimes.runc]\nruntime_type = "{RUNC_V2}"\n\n' + NV_DROP_IN
    )
    assert result.warnings == (later_warning(LATER), later_warning("/w.toml"))
    assert result.notes == (copy_note(CONFIG, BEFORE),)


def test_a_1x_drop_in_of_a_blank_config_writes_out_the_built_in_runtime() -> None:
    result = containerd.configure_drop_in(("/c.toml", " \n"), DROP_IN, [], [], RuntimeRequest())
    assert result.main.text == f'version = 2\nimports = ["{DROP_IN}"]\n'
    assert result.main.changes == (
        Change(("version",), False, None, 2),
        Change(("imports",), False, None, [DROP_IN]),
    )
    assert result.drop_in == CARRIED_HEADER + (
        f'version = 2\n\n[{CRI2}.containerd.runtimes.runc]\nruntime_type = "{RUNC_V2}"\n\n'
        + NV_DROP_IN
    )
    assert (result.warnings, result.notes) == ((), ())


def test_a_drop_in_already_imported_leaves_the_main_file() -> None:
    main = IMPORTED + f"[{CRI2}]\n  enable_cdi = true\n"
    result = containerd.configure_drop_in((CONFIG, main), DROP_IN, [], [], RuntimeRequest())
    assert (result.main.text, result.main.changes) == (main, ())
    assert result.notes == (copy_note(CONFIG),)
    assert "enable_cdi = true" in result.drop_in


def test_a_2x_drop_in_holds_only_what_ctk_adds() -> None:
    before = [(BEFORE, f'version = 2\n[{CRI2}.containerd]\n  default_runtime_name = "runc"\n')]
    after = [
        (LATER, f'version = 2\n[{CRI2}.containerd]\n  default_runtime_name = "crun"\n'),
        ("/z.toml", f'version = 2\n[{CRI2}]\n  enable_cdi = false\n  x = "y"\n'),
    ]
    request = RuntimeRequest(set_as_default=True, enable_cdi=True)
    result = containerd.configure_drop_in(
        (CONFIG, SITE_MAIN), DROP_IN, before, after, request, merges=True
    )
    assert result.main.text == SITE_MAIN.replace('imports = ["/x.toml"]\n', IMPORTED[12:])
    assert result.drop_in == MERGED_HEADER + (
        f"version = 2\n\n[{CRI2}]\nenable_cdi = true\n\n"
        f'[{CRI2}.containerd]\ndefault_runtime_name = "nvidia"\n\n' + NV_DROP_IN
    )
    sets = "containerd uses its value instead of ctk's"
    assert result.warnings == (
        f"{LATER} is imported after {DROP_IN} and also sets {CRI2}.containerd."
        f"default_runtime_name: {sets}",
        f"/z.toml is imported after {DROP_IN} and also sets {CRI2}.enable_cdi: {sets}",
    )
    assert result.notes == ()


CARRIED = Carried({"mine": {"runtime_type": "b"}}, "mine", ("mine",))


def test_a_2x_drop_in_keeps_the_runtimes_of_earlier_runs() -> None:
    result = containerd.configure_drop_in(
        (CONFIG, SITE_MAIN), DROP_IN, [], [], RuntimeRequest(), carried=CARRIED, merges=True
    )
    assert result.drop_in == MERGED_HEADER + (
        f'version = 2\n\n[{CRI2}.containerd]\ndefault_runtime_name = "mine"\n\n'
        f'[{CRI2}.containerd.runtimes.mine]\nruntime_type = "b"\n\n'
        + NV_DROP_IN.replace(RUNC_V2, "b")
    )
    without_default = Carried(CARRIED.runtimes, None, CARRIED.added)
    result = containerd.configure_drop_in(
        (CONFIG, SITE_MAIN), DROP_IN, [], [], RuntimeRequest(), carried=without_default, merges=True
    )
    assert result.drop_in == MERGED_HEADER + (
        f'version = 2\n\n[{CRI2}.containerd.runtimes.mine]\nruntime_type = "b"\n\n' + NV_DROP_IN
    )


def test_a_1x_drop_in_keeps_the_runtimes_of_earlier_runs() -> None:
    result = containerd.configure_drop_in(
        (CONFIG, "version = 2\n"), DROP_IN, [], [], RuntimeRequest(), carried=CARRIED
    )
    assert result.drop_in == CARRIED_HEADER + (
        f'version = 2\n\n[{CRI2}.containerd]\ndefault_runtime_name = "mine"\n\n'
        f'[{CRI2}.containerd.runtimes.mine]\nruntime_type = "b"\n\n'
        + NV_DROP_IN.replace(RUNC_V2, "b")
    )
    assert result.notes == ()  # what ctk carries is no copy of the user's settings


@pytest.mark.parametrize("merges", [False, True])
def test_nothing_carried_is_no_carried_runtime(merges: bool) -> None:
    main = (CONFIG, "version = 2\n")
    request = RuntimeRequest()
    empty = Carried({}, None, ())
    result = containerd.configure_drop_in(
        main, DROP_IN, [], [], request, carried=empty, merges=merges
    )
    assert result == containerd.configure_drop_in(main, DROP_IN, [], [], request, merges=merges)


def test_version_3_drop_in() -> None:
    """No file defines runtimes: 2.x's built-in runc, with its sandboxer, is written out."""
    main = f"version = 3\n[{CRI3}]\n  enable_selinux = true\n"
    after = [(LATER, f"version = 3\n[{CRI3}.containerd]\n  default_runtime_name = 'crun'\n")]
    request = RuntimeRequest(set_as_default=True)
    merged = containerd.configure_drop_in((CONFIG, main), DROP_IN, [], after, request, merges=True)
    assert merged.drop_in == MERGED_HEADER + (
        f'version = 3\n\n[{CRI3}.containerd]\ndefault_runtime_name = "nvidia"\n\n'
        f'[{CRI3}.containerd.runtimes.runc]\nruntime_type = "{RUNC_V2}"\n{SANDBOXER}\n'
        + NV_DROP_IN.replace(CRI2, CRI3).replace(f'{RUNC_V2}"\n', f'{RUNC_V2}"\n{SANDBOXER}')
    )
    assert merged.warnings == (
        f"{LATER} is imported after {DROP_IN} and also sets {CRI3}.containerd."
        "default_runtime_name: containerd uses its value instead of ctk's",
    )
    copied = containerd.configure_drop_in((CONFIG, main), DROP_IN, [], after, request)
    assert copied.drop_in.startswith(CARRIED_HEADER + f"version = 3\n\n[{CRI3}]\n")
    assert copied.warnings == (later_warning(LATER).replace(CRI2, CRI3),)
    assert copied.notes == (copy_note(CONFIG).replace(CRI2, CRI3),)


def test_a_version_1_config_takes_no_drop_in() -> None:
    with pytest.raises(ValueError) as info:
        containerd.configure_drop_in(
            (CONFIG, f"[{CRI1}]\n  x = 1\n"), DROP_IN, [], [], RuntimeRequest()
        )
    assert str(info.value) == "version 1 configs cannot import drop-ins; edit them in place"


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        pytest.param([(BEFORE, NOT_A_TABLE)], [], cri_message(BEFORE), id="before"),
        pytest.param([], [(LATER, NOT_A_TABLE)], cri_message(LATER), id="after"),
    ],
)
def test_configure_drop_in_refuses_what_containerd_refuses(
    before: list[tuple[str, str]], after: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(CtkError) as info:
        containerd.configure_drop_in(
            (CONFIG, "version = 2\n"), DROP_IN, before, after, RuntimeRequest()
        )
    assert info.value.message == message


@pytest.mark.parametrize(
    ("main", "message"),
    [
        pytest.param(
            "version = 2\nimports = 1\n",
            f"{CONFIG}: `imports` must be an array of strings",
            id="imports",
        ),
        pytest.param(
            "version = true\n",
            f"{CONFIG}: `version` must be an integer (1, 2 or 3), found a boolean",
            id="version",
        ),
    ],
)
def test_configure_drop_in_refuses_a_bad_main_file(main: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        containerd.configure_drop_in((CONFIG, main), DROP_IN, [], [], RuntimeRequest())
    assert info.value.message == message


def test_a_relative_import_of_the_drop_in_counts_but_a_relative_glob_does_not() -> None:
    """A relative path is joined to the main file's folder; containerd 1.6 and 1.7 read a
    relative glob from elsewhere, so the drop-in gets its own absolute entry then."""
    main = 'version = 2\nimports = ["conf.d/99-nvidia.toml"]\n'
    result = containerd.configure_drop_in((CONFIG, main), DROP_IN, [], [], RuntimeRequest())
    assert (result.main.text, result.main.changes) == (main, ())
    main = 'version = 2\nimports = ["conf.d/*.toml"]\n'
    result = containerd.configure_drop_in((CONFIG, main), DROP_IN, [], [], RuntimeRequest())
    assert result.main.text == f'version = 2\nimports = ["conf.d/*.toml", "{DROP_IN}"]\n'


def test_the_main_file_keeps_its_layout() -> None:
    main = 'version = 2  # two\nimports = ["/x.toml"]\n'
    result = containerd.configure_drop_in((CONFIG, main), DROP_IN, [], [], RuntimeRequest())
    assert result.main.text == f'version = 2  # two\nimports = ["/x.toml", "{DROP_IN}"]\n'
    assert result.main.changes[0].kind is ChangeKind.SET
