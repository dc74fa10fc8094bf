"""Properties over every fixture node: what ctk itself writes, the doctor finds complete.

`ctk cdi generate` then `ctk doctor` reports no `cdi.*` (or `mig.not-in-cdi-spec`) finding; the
doctor's idea of a complete spec is generate's own code, so it cannot drift from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctk.cdi.generate import device_names
from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import DOCTOR_NODES, FakeNode, load_spec, names

SPEC_DIRS = ("etc/cdi", "var/run/cdi")
HOOKS = ("/usr/bin/nvidia-cdi-hook", "/usr/bin/ctk-hook")
SPEC_CHECKS = ("cdi.", "mig.not-in-cdi-spec")
NOT_ABOUT_THE_SPEC = frozenset({"cdi.refresh-disabled"})
"""Whether a refresh unit is enabled is no property of the spec generate writes."""

MUST_GENERATE = frozenset(
    {"healthy", "a100-mig-mixed", "a100-mig-not-in-spec", "cdi-missing", "cdi-incomplete"}
)
"""Nodes the property must cover (MIG on and off): generate must succeed on them."""


def _host_nodes() -> list[str]:
    return [
        name
        for name in names(DOCTOR_NODES)
        if name != "base" and "environ" not in load_spec(name) and "container" not in name
    ]


def _spec_dir(root: Path) -> str:
    """Where the node keeps its nvidia.com/gpu spec (/var/run/cdi when it has none)."""
    for directory in SPEC_DIRS:
        if (root / directory / "nvidia.yaml").exists():
            return directory
    return SPEC_DIRS[1]


def _generate(root: Path, capsys: pytest.CaptureFixture[str]) -> Path | None:
    """`ctk cdi generate` for the node, the spec as it reads on the node itself; None: refused."""
    directory = _spec_dir(root)
    for spec_dir in SPEC_DIRS:
        for old in (root / spec_dir).glob("*"):
            old.unlink()
    output = root / directory / "nvidia.yaml"
    argv = ["cdi", "generate", "--driver-root", str(root), "--output", str(output)]
    hooks = [h for h in HOOKS if (root / h.lstrip("/")).exists()]
    if not hooks:
        return None  # a spec needs a hook program the node has
    code = main([*argv, "--hook-path", hooks[0]])
    capsys.readouterr()
    if code != 0:
        return None
    # generate under --driver-root names host paths as the machine running ctk sees them (under
    # the root); on the node itself they are the same paths without that prefix
    output.write_text(output.read_text().replace(f"{root}/", "/"))
    return output


def _doctor(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    main(["doctor", "--json", "--root", str(root)])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


@pytest.mark.parametrize("node", _host_nodes())
def test_generate_then_doctor_finds_the_spec_complete(
    node: str,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = fake_node(node)
    spec = _generate(built.root, capsys)
    if spec is None:
        assert node not in MUST_GENERATE
        pytest.skip("ctk cdi generate refuses this node (broken driver, or no hook program)")
    document = _doctor(built.root, capsys)
    names = {d["name"] for d in yaml.safe_load(spec.read_text())["devices"]}
    findings = {
        c["id"]: c["summary"]
        for c in document["checks"]
        if c["id"].startswith(SPEC_CHECKS)
        and c["id"] not in NOT_ABOUT_THE_SPEC
        and c["status"] in ("fail", "warn")
    }
    assert findings == {}, sorted(names)


def test_expected_devices_are_the_devices_generate_writes(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the 8-GPU DGX fixture (GPUs 2 and 5 in MIG mode): the doctor's expectation is exactly
    what `ctk cdi generate` writes, by index and UUID, and `all`."""
    from ctk.host.nvml import read_nvml_report

    node = fake_node("dgx-a100")
    argv = ["cdi", "generate", "--driver-root", str(node.root), "--format", "json"]
    code = main([*argv, "--hook-path", "/usr/bin/nvidia-cdi-hook"])
    written = [d["name"] for d in json.loads(capsys.readouterr().out)["devices"]]
    expected = device_names(read_nvml_report(node.root).facts)
    assert code == 0
    assert sorted(written) == sorted([*(n for names in expected for n in names[:2]), "all"])
    assert [names[0] for names in expected if names[1].startswith("MIG-")] == [
        "2:0",
        "2:1",
        "2:2",
        "5:0",
        "5:1",
    ]
