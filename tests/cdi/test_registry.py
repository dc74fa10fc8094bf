"""Resolving devices across spec directories, as CDI runtimes do."""
# ruff: noqa: E501 (one table row per line reads best)

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.cdi.names import QualifiedName
from ctk.cdi.problems import Problem, ProblemSeverity
from ctk.cdi.registry import ResolvedDevice, SpecSource, build_registry
from ctk.errors import CtkError
from ctk.host.cdi_specs import SpecDir, load_spec_dirs, read_spec_dirs

SPECS = Path(__file__).parent.parent / "fixtures" / "specs"
ETC, RUN = SPECS / "etc" / "cdi", SPECS / "run" / "cdi"


def _spec(kind: str, *names: str) -> bytes:
    devices = "".join(f"- name: {n}\n  containerEdits:\n    env: [A=1]\n" for n in names)
    return f"cdiVersion: 0.3.0\nkind: {kind}\ndevices:\n{devices}".encode()


def _device(text: str, source: str, priority: int) -> ResolvedDevice:
    kind, name = text.split("=")
    vendor, class_ = kind.split("/")
    return ResolvedDevice(QualifiedName(vendor, class_, name), source, priority)


def test_fixture_dirs_resolve_like_a_runtime() -> None:
    registry = load_spec_dirs([ETC, RUN])
    assert registry.devices == (
        _device("example.com/x=only-a", f"{ETC}/dup-a.yaml", 0),
        _device("nvidia.com/gpu=0", f"{ETC}/nvidia.yaml", 0),
        _device("nvidia.com/gpu=1", f"{RUN}/nvidia.yaml", 1),
        _device("nvidia.com/gpu=all", f"{ETC}/nvidia.yaml", 0),
        _device("vendor.com/nic=nic0", f"{ETC}/nic.json", 0),
    )
    assert [(f.path, f.priority, f.valid) for f in registry.files] == [
        (f"{ETC}/broken.yaml", 0, False),
        (f"{ETC}/dup-a.yaml", 0, False),
        (f"{ETC}/dup-b.yaml", 0, False),
        (f"{ETC}/nic.json", 0, True),
        (f"{ETC}/nvidia.yaml", 0, True),
        (f"{RUN}/nvidia.yaml", 1, True),
    ]
    assert registry.files[1].conflicts == (
        Problem(
            "registry.conflict",
            f"device example.com/x=dup is also defined by {ETC}/dup-b.yaml at the same priority; "
            "CDI runtimes drop it from both",
            ("devices", 0, "name"),
            4,
            9,
        ),
    )
    assert not registry.valid
    assert registry.device("nvidia.com/gpu=1") == _device(
        "nvidia.com/gpu=1", f"{RUN}/nvidia.yaml", 1
    )
    assert registry.device("nvidia.com/gpu=7") is None


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        pytest.param(
            [SpecSource("/a/x.yaml", 0, _spec("v.com/c", "d")), SpecSource("/b/x.yaml", 1, _spec("v.com/c", "d"))],
            [("v.com/c=d", "/b/x.yaml", 1)],
            id="higher-priority-replaces",
        ),
        pytest.param(
            [SpecSource("/b/x.yaml", 1, _spec("v.com/c", "d")), SpecSource("/a/x.yaml", 0, _spec("v.com/c", "d"))],
            [("v.com/c=d", "/b/x.yaml", 1)],
            id="lower-priority-never-replaces",
        ),
        pytest.param(
            [SpecSource("/a/x.yaml", 0, _spec("v.com/c", "d", "e")), SpecSource("/a/y.yaml", 0, _spec("v.com/c", "d")), SpecSource("/b/z.yaml", 1, _spec("v.com/c", "d"))],
            [("v.com/c=e", "/a/x.yaml", 0)],
            id="conflict-drops-the-device-even-when-a-higher-priority-defines-it",
        ),
        pytest.param(
            [SpecSource("/a/x.yaml", 0, _spec("v.com/c", "d")), SpecSource("/a/y.yaml", 0, _spec("v.com/other", "d"))],
            [("v.com/c=d", "/a/x.yaml", 0), ("v.com/other=d", "/a/y.yaml", 0)],
            id="same-name-other-kind-is-no-conflict",
        ),
        pytest.param(
            [SpecSource("/a/x.yaml", 0, b"{"), SpecSource("/a/y.yaml", 0, _spec("v.com/c", "d"))],
            [("v.com/c=d", "/a/y.yaml", 0)],
            id="invalid-file-skipped-others-kept",
        ),
        pytest.param(
            [SpecSource("/a/x.yaml", 0, None, "cannot read: Permission denied")],
            [],
            id="unreadable-file",
        ),
    ],
)  # fmt: skip
def test_build_registry(sources: list[SpecSource], expected: list[tuple[str, str, int]]) -> None:
    registry = build_registry(sources)
    assert [(str(d.name), d.source, d.priority) for d in registry.devices] == expected


def test_unreadable_file_is_a_problem_not_a_crash() -> None:
    registry = build_registry([SpecSource("/a/x.yaml", 0, None, "cannot read: Permission denied")])
    assert registry.files[0].problems == (Problem("read.error", "cannot read: Permission denied"),)


def test_dangling_link_and_missing_dir(tmp_path: Path) -> None:
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "nowhere")
    (tmp_path / "ok.json").write_bytes(_spec("v.com/c", "d"))
    registry = load_spec_dirs([tmp_path, tmp_path / "missing"])
    assert [str(d.name) for d in registry.devices] == ["v.com/c=d"]
    assert registry.files[0].problems == (
        Problem("read.error", "cannot read: No such file or directory"),
    )


def test_spec_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(CtkError) as info:
        load_spec_dirs([tmp_path / "file"])
    assert info.value.message == f"{tmp_path}/file: spec directory is a file, not a directory"


def test_root_keeps_links_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc" / "cdi").mkdir(parents=True)
    (tmp_path / "outside.yaml").write_bytes(_spec("v.com/c", "evil"))
    os.symlink("../../../outside.yaml", root / "etc" / "cdi" / "escape.yaml")
    (root / "etc" / "cdi" / "ok.yaml").write_bytes(_spec("v.com/c", "d"))
    registry = load_spec_dirs(["/etc/cdi"], root=root)
    assert [str(d.name) for d in registry.devices] == ["v.com/c=d"]
    assert registry.files[0].path == "/etc/cdi/escape.yaml"
    assert registry.files[0].problems == (
        Problem("read.error", f"/etc/cdi/escape.yaml: leads out of {root}"),
    )


_SOURCES = st.lists(
    st.tuples(
        st.sampled_from(["v.com/c", "v.com/d"]),
        st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
        st.integers(0, 2),
        st.booleans(),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(_SOURCES)
def test_registry_invariants(drawn: list[tuple[str, list[str], int, bool]]) -> None:
    drawn = sorted(drawn, key=lambda d: d[2])  # sources come in directory order
    sources = [
        SpecSource(f"/d{prio}/s{i}.yaml", prio, _spec(kind, *names) if ok else b"{")
        for i, (kind, names, prio, ok) in enumerate(drawn)
    ]
    registry = build_registry(sources)
    defined: dict[str, list[tuple[int, str]]] = {}
    for (kind, names, prio, ok), source in zip(drawn, sources, strict=True):
        for name in names if ok else []:
            defined.setdefault(f"{kind}={name}", []).append((prio, source.path))
    listed = [str(d.name) for d in registry.devices]
    assert listed == sorted(set(listed))
    for device in registry.devices:
        places = defined[str(device.name)]
        top = max(prio for prio, _ in places)
        assert (device.priority, device.source) in places
        assert device.priority == top
        assert [path for prio, path in places if prio == top] == [device.source]
    for name, places in defined.items():
        if len(places) == 1:
            assert name in listed
    clashing = {
        path
        for places in defined.values()
        for prio, path in places
        if sum(p == prio for p, _ in places) > 1
    }
    assert {f.path for f in registry.files if f.conflicts} == clashing


def test_conflicts_at_two_priorities_mark_all_four_files() -> None:
    spec = _spec("v.com/c", "a")
    sources = [SpecSource(f"/d{p}/s{i}.yaml", p, spec) for i, p in enumerate([0, 0, 1, 1])]
    registry = build_registry(sources)
    assert registry.devices == ()
    assert [[p.message for p in f.conflicts] for f in registry.files] == [
        [
            f"device v.com/c=a is also defined by {other} at the same priority; CDI runtimes drop it from both"
        ]
        for other in ("/d0/s1.yaml", "/d0/s0.yaml", "/d1/s3.yaml", "/d1/s2.yaml")
    ]


def test_read_spec_dirs_notes_each_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    found = read_spec_dirs([tmp_path / "missing", RUN])
    assert found.dirs == (
        SpecDir(
            f"{tmp_path}/missing",
            0,
            False,
            Problem(
                "spec-dir.missing",
                "spec directory does not exist; CDI runtimes skip it",
                severity=ProblemSeverity.WARNING,
            ),
        ),
        SpecDir(str(RUN), 1, True),
    )
    assert found.valid
    assert [str(d.name) for d in found.registry.devices] == ["nvidia.com/gpu=1"]
    broken = read_spec_dirs([tmp_path / "file", RUN])
    assert broken.dirs[0] == SpecDir(
        f"{tmp_path}/file",
        0,
        True,
        Problem("spec-dir.unreadable", "spec directory is a file, not a directory"),
    )
    assert not broken.valid
    assert [str(d.name) for d in broken.registry.devices] == ["nvidia.com/gpu=1"]


def test_subdirectories_are_skipped_links_to_directories_are_not(tmp_path: Path) -> None:
    """A runtime walks the directory with lstat: it skips a subdirectory named x.yaml but reads
    a link named y.yaml, and fails when that leads to a directory."""
    (tmp_path / "x.yaml").mkdir()
    (tmp_path / "y.yaml").symlink_to("x.yaml")
    (tmp_path / "z.yaml").write_bytes(_spec("v.com/c", "d"))
    registry = load_spec_dirs([tmp_path])
    assert [(f.path, f.problems) for f in registry.files] == [
        (
            f"{tmp_path}/y.yaml",
            (Problem("read.error", "is a link to a directory, not a spec file"),),
        ),
        (f"{tmp_path}/z.yaml", ()),
    ]
