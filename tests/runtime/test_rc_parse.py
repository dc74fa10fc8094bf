"""Where the config parsers say a malformed file goes wrong: the line of a key path nested too
deep by dotted keys (or none where no line is to blame), line and column in a file that starts
with a blank line, the type names in "must be ... found ..." errors, and the unified diff of a
deleted file.

(issue 26: survivors of the mutation run in `parse._too_deep`, `_position`, `type_name` and
`plan.unified_diff`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.inspect import inspect_crio, inspect_docker
from ctk.runtime_config.parse import load_json_object, load_toml
from ctk.runtime_config.plan import FileChange, unified_diff


def _keys(count: int) -> str:
    return ".".join(f"k{i}" for i in range(count))


DEEP = "f.toml: not valid TOML: tables nested more than 64 deep"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(f"[{_keys(32)}]\n{_keys(32)} = 1\n", DEEP, id="no-line-has-half-the-dots"),
        pytest.param(
            f"[{_keys(33)}]\n{_keys(32)} = 1\n", DEEP + " (line 1)", id="a-line-with-32-dots"
        ),
        pytest.param(f"a = 1\n{_keys(70)} = 1\n", DEEP + " (line 2)", id="one-long-key"),
    ],
)
def test_dotted_keys_nested_too_deep(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        load_toml("f.toml", text)
    assert info.value.message == message


def test_sixty_four_levels_are_fine() -> None:
    data = load_toml("f.toml", f"[{_keys(32)}]\n{_keys(31)} = 1\n")
    assert list(data) == ["k0"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '\n{"a": NaN}',
            "d.json: not valid JSON: NaN is not a JSON number (line 2, column 7)",
            id="after-a-leading-newline",
        ),
        pytest.param(
            '\n{"a":\n  -Infinity}',
            "d.json: not valid JSON: -Infinity is not a JSON number (line 3, column 3)",
            id="two-lines-down",
        ),
        pytest.param(
            "\n" + "[" * 65 + "]" * 65,
            "d.json: not valid JSON: arrays or objects nested more than 64 deep"
            " (line 2, column 65)",
            id="nesting",
        ),
    ],
)
def test_json_positions(text: str, message: str) -> None:
    with pytest.raises(CtkError) as info:
        load_json_object("d.json", text)
    assert info.value.message == message


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param(
            '{"default-runtime": {}}',
            "`default-runtime` must be a string, found an object",
            id="object",
        ),
        pytest.param(
            '{"runtimes": {"nvidia": null}}',
            "`runtimes.nvidia` must be an object, found null",
            id="null",
        ),
    ],
)
def test_docker_type_names(text: str, found: str) -> None:
    with pytest.raises(CtkError) as info:
        inspect_docker(text, name="d.json")
    assert info.value.message == f"d.json: {found}"


def test_a_toml_date_is_named_by_its_type() -> None:
    with pytest.raises(CtkError) as info:
        inspect_crio([("c.conf", "[crio.runtime]\ndefault_runtime = 1979-05-27\n")])
    assert (
        info.value.message == "c.conf: `crio.runtime.default_runtime` must be a string, found date"
    )


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param("a\n", None, "--- /etc/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", id="deleted"),
        pytest.param(None, "a\n", "--- /dev/null\n+++ /etc/x\n@@ -0,0 +1 @@\n+a\n", id="created"),
        pytest.param(
            "a",
            "b\n",
            "--- /etc/x\n+++ /etc/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n",
            id="changed",
        ),
    ],
)
def test_unified_diff(before: str | None, after: str | None, expected: str) -> None:
    assert unified_diff(FileChange("/etc/x", before, after)) == expected
