"""Small edges of the runtime config editors, in-process: `configure.check` refuses what the
engine would, a malformed file imported after containerd's drop-in is named, removing a JSON
member that is not there changes nothing, and unconfigure leaves a CRI-O file whose emptied
tables tomlkit writes no header for.

(issue 26: survivors of the mutation run in `configure.check`, `containerd._overriding`,
`jsonedit.delete_member` and `tomledit._pruned`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import configure, containerd, crio, jsonedit
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.engines import Runtime, RuntimeRequest

DAEMON = "/etc/docker/daemon.json"
CONFIG = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
LATER = "/etc/containerd/conf.d/zz.toml"


@pytest.mark.parametrize(
    ("runtime", "inputs", "message"),
    [
        pytest.param(
            Runtime.DOCKER,
            Inputs(config=DAEMON, config_text='{"runtimes": []}'),
            f"{DAEMON}: `runtimes` must be an object, found an array",
            id="docker",
        ),
        pytest.param(
            Runtime.CRIO,
            Inputs(config="/etc/crio/crio.conf", config_text="[crio]\nruntime = 1\n"),
            "/etc/crio/crio.conf: `crio.runtime` must be a table, found a number",
            id="crio",
        ),
    ],
)
def test_check_refuses_what_the_engine_refuses(
    runtime: Runtime, inputs: Inputs, message: str
) -> None:
    with pytest.raises(CtkError) as info:
        configure.check(runtime, inputs)
    assert info.value.message == message


def test_check_passes_a_good_file() -> None:
    """The same check passes a file the engine takes, which configure then edits."""
    good = Inputs(config=DAEMON, config_text='{"runtimes": {}}')
    configure.check(Runtime.DOCKER, good)  # the control of the table above: a CtkError fails
    plan = configure.configure(Runtime.DOCKER, good, RuntimeRequest())
    assert [(f.path, '"nvidia"' in (f.after or "")) for f in plan.changes] == [(DAEMON, True)]


def test_a_malformed_file_after_containerds_drop_in_is_named() -> None:
    with pytest.raises(CtkError) as info:
        containerd.configure_drop_in(
            (CONFIG, "version = 2\n"),
            DROP_IN,
            (),
            ((LATER, "[x\n"),),
            RuntimeRequest(),
            merges=True,
        )
    assert info.value.message.startswith(f"{LATER}: not valid TOML")


@pytest.mark.parametrize(
    ("keys", "text"),
    [
        pytest.param(("a", "c"), '{"a": {"b": 1}}', id="no-such-member"),
        pytest.param(("z", "c"), '{"a": {"b": 1}}', id="no-such-object"),
        pytest.param(("a",), "{}", id="empty"),
    ],
)
def test_deleting_a_member_that_is_not_there(keys: tuple[str, ...], text: str) -> None:
    assert jsonedit.delete_member(text, keys) == text


def test_unconfigure_without_a_record_leaves_the_emptied_table_header() -> None:
    text = (
        'x = 1\n[crio.runtime]\ndefault_runtime = "nvidia"\n'
        '[crio.runtime.runtimes.nvidia]\nruntime_path = "/a"\n'
    )
    assert crio.unconfigure_in_place("/etc/crio/crio.conf", text, "nvidia", ()) == (
        "x = 1\n[crio.runtime]\n"
    )
