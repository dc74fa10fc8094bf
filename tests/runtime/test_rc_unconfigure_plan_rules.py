"""The plans `configure.unconfigure` returns, in-process: a drop-in ctk did not write is refused
unless ``force`` (off by default), ctk's drop-in that keeps other runtimes is rewritten in place
(its own path named in errors), a missing config plans nothing, and a record split between two
runtimes keeps the other runtime's part.

(issue 26: survivors of the mutation run in `configure.unconfigure`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config import configure
from ctk.runtime_config.changes import Change, ChangeKind
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.engines import Runtime
from ctk.runtime_config.inspect import DROP_IN_HEADER
from ctk.runtime_config.plan import FileChange, Plan

DAEMON = "/etc/docker/daemon.json"
CRIO_CONF = "/etc/crio/crio.conf"
CRIO_DROP_IN = "/etc/crio/crio.conf.d/99-nvidia.toml"

NVIDIA_JSON = '{"path": "/usr/bin/nvidia-container-runtime", "args": []}'
OTHER_JSON = '{"path": "/usr/bin/other", "args": []}'
NEWLINE = Change((), False, None, None, ChangeKind.FINAL_NEWLINE)

USERS_DROP_IN = (
    '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n'
)
OWN_TWO = (
    DROP_IN_HEADER + "\n"
    "[crio.runtime.runtimes.nvidia]\n"
    'runtime_path = "/usr/bin/nvidia-container-runtime"\n'
    "\n"
    "[crio.runtime.runtimes.other]\n"
    'runtime_path = "/usr/bin/other"\n'
)
OWN_OTHER = DROP_IN_HEADER + '\n[crio.runtime.runtimes.other]\nruntime_path = "/usr/bin/other"\n'


def _crio(drop_in_text: str) -> Inputs:
    return Inputs(config=CRIO_CONF, config_text="", drop_in=CRIO_DROP_IN, drop_in_text=drop_in_text)


def test_a_users_drop_in_is_refused_without_force() -> None:
    """``force`` is off unless asked for: a drop-in without ctk's header is not deleted."""
    with pytest.raises(CtkError) as info:
        configure.unconfigure(Runtime.CRIO, _crio(USERS_DROP_IN), "nvidia")
    assert info.value.message == (
        f"{CRIO_DROP_IN}: exists and was not written by ctk (no '# Written by `ctk runtime "
        "configure`' header); unconfigure would delete it, so nothing was changed"
    )


def test_force_deletes_a_users_drop_in_and_keeps_a_backup() -> None:
    """The control of the refusal above: with ``force`` the user's file goes, backed up."""
    plan = configure.unconfigure(Runtime.CRIO, _crio(USERS_DROP_IN), "nvidia", force=True)
    assert plan == Plan((FileChange(CRIO_DROP_IN, USERS_DROP_IN, None, keep_before=True),))


def test_ctks_drop_in_keeping_another_runtime_loses_only_this_one() -> None:
    """The drop-in stays ctk's (own=True), rewritten from its old text without ``nvidia``."""
    plan = configure.unconfigure(Runtime.CRIO, _crio(OWN_TWO), "nvidia")
    assert plan == Plan((FileChange(CRIO_DROP_IN, OWN_TWO, OWN_OTHER, own=True),))
    assert plan.files[0].own is True


def test_ctks_drop_in_it_cannot_edit_is_named_by_its_path() -> None:
    """An inline `runtimes` table in ctk's drop-in is refused, naming the drop-in's path."""
    text = (
        DROP_IN_HEADER + "[crio.runtime]\n"
        'runtimes = { nvidia = { runtime_path = "/a" }, other = { runtime_path = "/b" } }\n'
    )
    with pytest.raises(CtkError) as info:
        configure.unconfigure(Runtime.CRIO, _crio(text), "nvidia")
    assert info.value.message == (
        f"{CRIO_DROP_IN}: `crio.runtime.runtimes` is an inline table; ctk edits only [tables]"
    )


def test_a_missing_config_plans_one_unchanged_missing_file() -> None:
    plan = configure.unconfigure(Runtime.DOCKER, Inputs(config=DAEMON, config_text=None), "nvidia")
    assert plan == Plan((FileChange(DAEMON, None, None),))
    assert plan.files[0].path == DAEMON
    assert plan.changes == ()


def test_a_split_record_keeps_the_other_runtimes_part() -> None:
    """Two runtimes ctk added: ``nvidia`` goes, ``other`` and its record stay (not dropped)."""
    before = f'{{"runtimes": {{"nvidia": {NVIDIA_JSON}, "other": {OTHER_JSON}}}}}\n'
    record = (
        Change(
            ("runtimes", "nvidia"),
            False,
            None,
            {"path": "/usr/bin/nvidia-container-runtime", "args": []},
        ),
        NEWLINE,
        Change(("runtimes", "other"), False, None, {"path": "/usr/bin/other", "args": []}),
    )
    inputs = Inputs(config=DAEMON, config_text=before, record=record, recorded=True)
    plan = configure.unconfigure(Runtime.DOCKER, inputs, "nvidia")
    after = f'{{"runtimes": {{"other": {OTHER_JSON}}}}}\n'
    assert plan == Plan(
        (FileChange(DAEMON, before, after, (NEWLINE, record[2]), drop_record=False),)
    )
    assert plan.files[0].drop_record is False
