"""`ctk cdi validate` and `ctk cdi list` end to end through `main()`: exit codes, exact output."""
# ruff: noqa: E501 (expected output lines read best unbroken)

from __future__ import annotations

import io
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctk.cli.app import main

FIXTURES = Path(__file__).parent.parent / "fixtures"
CASES = FIXTURES / "conformance" / "cdi-cases"
ETC, RUN = FIXTURES / "specs" / "etc" / "cdi", FIXTURES / "specs" / "run" / "cdi"
V013 = CASES / "valid" / "v013-version-with-v-prefix.json"
I100 = CASES / "invalid" / "i100-unquoted-yaml-bool-name.yaml"
V001 = CASES / "valid" / "v001-minimal-0.3.0.json"


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


def test_validate_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    before = I100.read_bytes()
    assert main(["cdi", "validate", str(V013), str(I100), str(V001), str(missing)]) == 1
    out, err = capsys.readouterr()
    assert out == (
        f"{V013}:2:17: warning: cdiVersion: write cdiVersion as '0.6.0', without the 'v' [version.v-prefix]\n"
        f"{V013}: valid (cdiVersion v0.6.0, needs 0.6.0, 1 device, 1 warning)\n"
        f"{I100}:4:9: error: devices[0].name: expected a string, found the boolean no; quote it to make it a string [parse.type]\n"
        f"{I100}: invalid (1 error)\n"
        f"{V001}: valid (cdiVersion 0.3.0, needs 0.3.0, 1 device)\n"
        f"{missing}: error: cannot read: No such file or directory [read.error]\n"
        f"{missing}: invalid (1 error)\n"
        "4 specs: 2 valid, 2 invalid\n"
    )
    assert err == ""
    assert I100.read_bytes() == before


def test_validate_a_directory_as_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", str(RUN)]) == 1
    assert capsys.readouterr().out == (
        f"{RUN}: error: is a directory; to check the specs in it, pass it with --spec-dir [read.error]\n"
        f"{RUN}: invalid (1 error)\n"
    )


def test_validate_valid_file_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", str(V001)]) == 0
    assert capsys.readouterr().out == f"{V001}: valid (cdiVersion 0.3.0, needs 0.3.0, 1 device)\n"


def test_validate_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", "--json", str(I100), str(V013)]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "valid": False,
        "specs": [
            {
                "path": str(I100),
                "valid": False,
                "cdiVersion": "0.3.0",
                "minimumVersion": "0.3.0",
                "kind": "example.com/gpu",
                "devices": [],
                "problems": [
                    {
                        "severity": "error",
                        "rule": "parse.type",
                        "message": "expected a string, found the boolean no; quote it to make it a string",
                        "path": "devices[0].name",
                        "line": 4,
                        "column": 9,
                    }
                ],
            },
            {
                "path": str(V013),
                "valid": True,
                "cdiVersion": "v0.6.0",
                "minimumVersion": "0.6.0",
                "kind": "example.com/gpu.x",
                "devices": ["example.com/gpu.x=gpu0"],
                "problems": [
                    {
                        "severity": "warning",
                        "rule": "version.v-prefix",
                        "message": "write cdiVersion as '0.6.0', without the 'v'",
                        "path": "cdiVersion",
                        "line": 2,
                        "column": 17,
                    }
                ],
            },
        ],
    }


def test_validate_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"cdiVersion: 0.3.0\nkind: [")))
    assert main(["cdi", "validate", "-"]) == 1
    assert capsys.readouterr().out == (
        "<stdin>:2:8: error: not valid YAML or JSON: did not find expected node content "
        "(while parsing a flow node) [parse.syntax]\n"
        "<stdin>: invalid (1 error)\n"
    )


def test_validate_spec_dirs_with_conflicts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", "--spec-dir", str(ETC), "--spec-dir", str(RUN)]) == 1
    conflict = "at the same priority; CDI runtimes drop it from both [registry.conflict]"
    assert capsys.readouterr().out == (
        f"{ETC}/broken.yaml:4:9: error: devices[0].name: expected a string, found the boolean no; quote it to make it a string [parse.type]\n"
        f"{ETC}/broken.yaml:6:11: error: devices[0].containerEdits.env[0]: env entry 'A' is not KEY=VALUE with a non-empty KEY [env.invalid]\n"
        f"{ETC}/broken.yaml: invalid (2 errors)\n"
        f"{ETC}/dup-a.yaml:4:9: error: devices[0].name: device example.com/x=dup is also defined by {ETC}/dup-b.yaml {conflict}\n"
        f"{ETC}/dup-a.yaml: invalid (1 error)\n"
        f"{ETC}/dup-b.yaml:4:9: error: devices[0].name: device example.com/x=dup is also defined by {ETC}/dup-a.yaml {conflict}\n"
        f"{ETC}/dup-b.yaml: invalid (1 error)\n"
        f"{ETC}/nic.json: valid (cdiVersion 1.1.0, needs 1.1.0, 1 device)\n"
        f"{ETC}/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 3 devices)\n"
        f"{RUN}/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 1 device)\n"
        "6 specs: 3 valid, 3 invalid\n"
    )


def test_validate_default_dirs_empty(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dirs = (tmp_path / "etc", tmp_path / "run")
    monkeypatch.setattr("ctk.host.cdi_specs.DEFAULT_SPEC_DIRS", dirs)
    assert main(["cdi", "validate"]) == 0
    assert capsys.readouterr().out == (
        f"no CDI spec files (*.json, *.yaml) in {dirs[0]}, {dirs[1]}\n"
    )


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        pytest.param(["cdi", "validate", "x.yaml", "--spec-dir", "/tmp"], "error: give spec files or --spec-dir, not both", None, id="files-and-dirs"),
        pytest.param(["cdi", "validate", "x.yaml", "--root", "/"], "error: give spec files or --root, not both", None, id="files-and-root"),
        pytest.param(["cdi", "list", "--root", "/", "--spec-dir", "etc/cdi"], "error: --spec-dir etc/cdi: give an absolute path as seen inside --root", "hint: e.g. --root /mnt/node --spec-dir /etc/cdi", id="list-relative-dir-in-root"),
    ],
)  # fmt: skip
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str, hint: str | None
) -> None:
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == message + "\n" + (hint + "\n" if hint else "")


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "list", "--spec-dir", str(ETC), "--spec-dir", str(RUN)]) == 1
    out, err = capsys.readouterr()
    assert out == (
        "example.com/x=only-a\n"
        "nvidia.com/gpu=0\n"
        "nvidia.com/gpu=1\n"
        "nvidia.com/gpu=all\n"
        "vendor.com/nic=nic0\n"
    )
    conflict = "at the same priority; CDI runtimes drop it from both [registry.conflict]"
    assert err == (
        f"{ETC}/broken.yaml:4:9: error: devices[0].name: expected a string, found the boolean no; quote it to make it a string [parse.type]\n"
        f"{ETC}/broken.yaml:6:11: error: devices[0].containerEdits.env[0]: env entry 'A' is not KEY=VALUE with a non-empty KEY [env.invalid]\n"
        f"{ETC}/dup-a.yaml:4:9: error: devices[0].name: device example.com/x=dup is also defined by {ETC}/dup-b.yaml {conflict}\n"
        f"{ETC}/dup-b.yaml:4:9: error: devices[0].name: device example.com/x=dup is also defined by {ETC}/dup-a.yaml {conflict}\n"
        "1 invalid spec skipped\n"
    )


def test_list_all_valid_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "list", "--spec-dir", str(RUN)]) == 0
    assert capsys.readouterr() == ("nvidia.com/gpu=1\n", "")


def test_list_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["cdi", "list", "--json", "--spec-dir", str(RUN), "--spec-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {
        "valid": True,
        "devices": [
            {
                "name": "nvidia.com/gpu=1",
                "kind": "nvidia.com/gpu",
                "device": "1",
                "source": f"{RUN}/nvidia.yaml",
                "priority": 0,
            }
        ],
        "errors": [],
        "warnings": [],
        "specs": [{"path": f"{RUN}/nvidia.yaml", "priority": 0, "valid": True}],
        "specDirs": [
            {"path": str(RUN), "priority": 0, "exists": True, "problem": None},
            {"path": str(tmp_path), "priority": 1, "exists": True, "problem": None},
        ],
    }


def test_list_json_reports_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "list", "--json", "--spec-dir", str(ETC)]) == 1
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert errors[0] == {
        "file": f"{ETC}/broken.yaml",
        "severity": "error",
        "rule": "parse.type",
        "message": "expected a string, found the boolean no; quote it to make it a string",
        "path": "devices[0].name",
        "line": 4,
        "column": 9,
    }
    assert [e["rule"] for e in errors] == [
        "parse.type",
        "env.invalid",
        "registry.conflict",
        "registry.conflict",
    ]


MISSING = "warning: spec directory does not exist; CDI runtimes skip it [spec-dir.missing]"


def test_list_skips_a_missing_spec_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    assert main(["cdi", "list", "--spec-dir", str(missing), "--spec-dir", str(RUN)]) == 0
    assert capsys.readouterr() == ("nvidia.com/gpu=1\n", f"{missing}: {MISSING}\n")


def test_list_without_any_spec_says_so_as_validate_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No spec at all once printed nothing and exited 0: a newcomer saw silence."""
    empty = tmp_path / "cdi"
    empty.mkdir()
    assert main(["cdi", "list", "--spec-dir", str(empty)]) == 0
    assert capsys.readouterr() == ("", f"no CDI spec files (*.json, *.yaml) in {empty}\n")
    assert main(["cdi", "validate", "--spec-dir", str(empty)]) == 0
    assert capsys.readouterr().out == f"no CDI spec files (*.json, *.yaml) in {empty}\n"
    (empty / "nvidia.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    assert main(["cdi", "list", "--spec-dir", str(empty)]) == 0
    assert capsys.readouterr() == ("nvidia.com/gpu=1\n", "")


def test_validate_skips_a_missing_spec_dir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo"
    assert main(["cdi", "validate", "--spec-dir", str(RUN), "--spec-dir", str(missing)]) == 0
    assert capsys.readouterr() == (
        f"{missing}: {MISSING}\n"
        f"{RUN}/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 1 device)\n",
        "",
    )


def test_missing_default_dirs_are_not_worth_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "etc" / "cdi").mkdir(parents=True)
    (tmp_path / "etc" / "cdi" / "nvidia.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    assert main(["cdi", "list", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr() == ("nvidia.com/gpu=1\n", "")


def test_list_json_with_a_missing_spec_dir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo"
    assert main(["cdi", "list", "--json", "--spec-dir", str(missing)]) == 0
    problem = {
        "severity": "warning",
        "rule": "spec-dir.missing",
        "message": "spec directory does not exist; CDI runtimes skip it",
        "path": None,
        "line": None,
        "column": None,
    }
    assert json.loads(capsys.readouterr().out) == {
        "valid": True,
        "devices": [],
        "errors": [],
        "warnings": [{"file": str(missing), **problem}],
        "specs": [],
        "specDirs": [{"path": str(missing), "priority": 0, "exists": False, "problem": problem}],
    }


@pytest.mark.parametrize("command", ["list", "validate"])
def test_spec_dirs_that_cannot_be_read_hide_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    (tmp_path / "file").write_text("x")
    args = ["--spec-dir", str(tmp_path / "file"), "--spec-dir", str(tmp_path / "file" / "cdi")]
    assert main(["cdi", command, *args, "--spec-dir", str(RUN)]) == 1
    out, err = capsys.readouterr()
    problems = (
        f"{tmp_path}/file: error: spec directory is a file, not a directory [spec-dir.unreadable]\n"
        f"{tmp_path}/file/cdi: error: spec directory cannot be listed: Not a directory (a part of the path is a file) [spec-dir.unreadable]\n"
    )
    if command == "list":
        assert (out, err) == ("nvidia.com/gpu=1\n", problems)
    else:
        assert (out, err) == (
            problems + f"{RUN}/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 1 device)\n",
            "",
        )


def test_unlistable_spec_dir(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Root reads every directory, so the permission error is raised where os.scandir is called."""
    real_scandir = os.scandir
    locked = tmp_path / "locked"
    locked.mkdir()

    def scandir(path: Path) -> object:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr("ctk.host.cdi_specs.os.scandir", scandir)
    assert main(["cdi", "list", "--spec-dir", str(locked), "--spec-dir", str(RUN)]) == 1
    assert capsys.readouterr() == (
        "nvidia.com/gpu=1\n",
        f"{locked}: error: spec directory cannot be listed: Permission denied [spec-dir.unreadable]\n",
    )


@pytest.fixture
def _fail_if_blocked() -> Iterator[None]:
    """Turn a read that blocks (a FIFO without writer) into a failure instead of a hung run."""

    def blocked(signum: int, frame: object) -> None:
        raise TimeoutError("blocked reading a special file")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _special_files(directory: Path) -> None:
    os.mkfifo(directory / "fifo.yaml")
    (directory / "null.json").symlink_to("/dev/null")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(directory / "sock.yaml"))


FIFO = "error: is a named pipe (FIFO), not a regular file; not read (reading it would block) [read.error]"
SOCKET = "error: is a socket, not a regular file; not read [read.error]"
CHAR = "error: is a character device, not a regular file; not read [read.error]"


@pytest.mark.usefixtures("_fail_if_blocked")
def test_list_never_opens_special_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _special_files(tmp_path)
    (tmp_path / "nvidia.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    assert main(["cdi", "list", "--spec-dir", str(tmp_path)]) == 1
    assert capsys.readouterr() == (
        "nvidia.com/gpu=1\n",
        f"{tmp_path}/fifo.yaml: {FIFO}\n"
        f"{tmp_path}/null.json: {CHAR}\n"
        f"{tmp_path}/sock.yaml: {SOCKET}\n"
        "3 invalid specs skipped\n",
    )


@pytest.mark.usefixtures("_fail_if_blocked")
def test_validate_files_that_cannot_be_specs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each gets one error line that says why, then its verdict; nothing blocks."""
    _special_files(tmp_path)
    (tmp_path / "file.yaml").write_text("x")
    locked = tmp_path / "locked.yaml"
    locked.write_text("x")
    real_open = os.open

    def fake_open(path: Path, flags: int, *args: int) -> int:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr("ctk.host.cdi_specs.os.open", fake_open)
    names = ["fifo.yaml", "sock.yaml", "null.json", ".", "file.yaml/x.yaml", "locked.yaml"]
    assert main(["cdi", "validate", *(str(tmp_path / n) for n in names)]) == 1
    lines = [
        FIFO,
        SOCKET,
        CHAR,
        "error: is a directory; to check the specs in it, pass it with --spec-dir [read.error]",
        "error: cannot read: Not a directory (a part of the path is a file) [read.error]",
        "error: cannot read: Permission denied [read.error]",
    ]
    expected = ""
    for name, line in zip(names, lines, strict=True):
        shown = tmp_path / name
        expected += f"{shown}: {line}\n{shown}: invalid (1 error)\n"
    assert capsys.readouterr() == (expected + "6 specs: 0 valid, 6 invalid\n", "")


def test_validate_root_never_leaves_the_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """/etc/cdi links out of the root: an error for it; /var/run/cdi is still read, inside."""
    root = tmp_path / "node"
    (root / "etc").mkdir(parents=True)
    (root / "var" / "run" / "cdi").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "evil.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    (root / "etc" / "cdi").symlink_to("../../outside")
    (root / "var" / "run" / "cdi" / "nvidia.yaml").write_bytes((RUN / "nvidia.yaml").read_bytes())
    assert main(["cdi", "validate", "--root", str(root)]) == 1
    assert capsys.readouterr() == (
        f"/etc/cdi: error: /etc/cdi: leads out of {root} [spec-dir.unreadable]\n"
        "/var/run/cdi/nvidia.yaml: valid (cdiVersion 0.5.0, needs 0.5.0, 1 device)\n",
        "",
    )


def test_validate_collects_garbage_rarely_and_restores_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from ctk.host import spec_files

    seen = []
    judge = spec_files.validate_file

    def spy(path: Path) -> object:
        seen.append(gc.get_threshold()[0])
        return judge(path)

    monkeypatch.setattr(spec_files, "validate_file", spy)
    before = gc.get_threshold()
    assert main(["cdi", "validate", str(V001), str(I100)]) == 1
    assert (seen, gc.get_threshold()) == ([20_000, 20_000], before)


def _tricky_specs(tmp_path: Path) -> list[Path]:
    """Specs whose reading leaves state behind (memoised tags) or takes the rare paths."""
    edits = "  containerEdits:\n    env: [A=1]\n"
    texts = {
        "aliases.yaml": "cdiVersion: 0.3.0\nkind: a.com/b\nx: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        + "".join(
            f"y{i}: &a{i} [*{'a' if i == 0 else f'a{i - 1}'}, *{'a' if i == 0 else f'a{i - 1}'}]\n"
            for i in range(17)
        ),
        "tagged-merge.yaml": "cdiVersion: 0.3.0\nkind: a.com/b\ndevices:\n- name: d\n  !!merge m: {containerEdits: {env: [A=1]}}\n",
        "long-name.yaml": f"cdiVersion: 0.3.0\nkind: a.com/b\ndevices:\n- name: {'n' * 300}\n{edits}",
        "long-name-bool.yaml": f"cdiVersion: 0.3.0\nkind: a.com/b\ndevices:\n- name: no\n{edits}- name: {'n' * 300}\n{edits}",
        "empty.yaml": "",
    }
    paths = []
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(path)
    not_utf8 = tmp_path / "latin1.yaml"
    not_utf8.write_bytes(b"cdiVersion: 0.3.0\nkind: a.com/b\n# \xe9\n")
    return [*paths, not_utf8]


def test_validating_many_files_says_what_each_alone_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What one spec leaves behind (memoised tags, the collector's threshold) changes no verdict
    or message of the next: one run over every case, twice, in order, equals each run alone."""
    files = [*sorted(CASES.glob("*/*.*")), *_tricky_specs(tmp_path)]
    alone = []
    for path in files:
        main(["cdi", "validate", str(path)])
        alone.append(capsys.readouterr().out)
    code = main(["cdi", "validate", *map(str, files + files)])
    invalid = sum("invalid (" in out.splitlines()[-1] for out in alone)
    total = 2 * len(files)
    summary = f"{total} specs: {total - 2 * invalid} valid, {2 * invalid} invalid\n"
    assert (code, capsys.readouterr().out) == (1, "".join(alone + alone) + summary)
