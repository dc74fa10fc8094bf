"""`ctk cdi transform root`, `ctk cdi inject` and `ctk cdi diff`."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from ctk.cdi.inject import HostDevice, apply_edits, merge_edits
from ctk.cdi.options import SpecFormat
from ctk.cdi.serialize import render_data
from ctk.cdi.transform import RelativeTo, rebase, transform_root
from ctk.cli.app import main

SPEC = """\
---
cdiVersion: 0.5.0
kind: example.com/gpu
devices:
    - name: "0"
      containerEdits:
          deviceNodes:
              - path: /dev/nvidia0
                hostPath: /driver/dev/nvidia0
          mounts:
              - hostPath: /driver/usr/lib/libcuda.so.550.54.15
                containerPath: /usr/lib/libcuda.so.550.54.15
                options:
                    - ro
containerEdits:
    env:
        - NVIDIA_VISIBLE_DEVICES=void
    deviceNodes:
        - path: /dev/nvidiactl
    hooks:
        - hookName: createContainer
          path: /driver/usr/bin/nvidia-cdi-hook
          args:
              - nvidia-cdi-hook
              - enable-cuda-compat
              - --host-driver-version=550.54.15
    mounts:
        - hostPath: /driver/usr/bin/nvidia-smi
          containerPath: /usr/bin/nvidia-smi
          options:
              - ro
"""


@pytest.mark.parametrize(
    ("path", "old", "new", "expected"),
    [
        pytest.param("/driver/usr/lib", "/driver", "/", "/usr/lib", id="to-slash"),
        pytest.param(
            "/usr/lib", "/", "/run/nvidia/driver", "/run/nvidia/driver/usr/lib", id="from-slash"
        ),
        pytest.param("/driver", "/driver/", "/host", "/host", id="the-root-itself"),
        pytest.param(
            "/driverx/lib", "/driver", "/host", "/driverx/lib", id="prefix-is-not-a-parent"
        ),
        pytest.param("/other", "/driver", "/host", "/other", id="outside"),
    ],
)
def test_rebase(path: str, old: str, new: str, expected: str) -> None:
    assert rebase(path, old, new) == expected


def _yaml(text: str) -> dict[str, object]:
    from ctk.cdi.validate import validate_text

    report = validate_text(text, "spec.yaml")
    assert report.valid, report.problems
    assert report.spec is not None
    return dict(report.spec)


def test_transform_host_and_container_paths() -> None:
    spec = _yaml(SPEC)
    host = transform_root(spec, from_root="/driver", to_root="/", relative_to=RelativeTo.HOST)
    assert host == _yaml(
        SPEC.replace("/driver/", "/").replace(
            "        - path: /dev/nvidiactl\n", "        - path: /dev/nvidiactl\n"
        )
    )
    container = transform_root(
        spec, from_root="/usr/lib", to_root="/usr/lib64", relative_to=RelativeTo.CONTAINER
    )
    assert container == _yaml(
        SPEC.replace("containerPath: /usr/lib/", "containerPath: /usr/lib64/")
    )
    assert spec == _yaml(SPEC)  # the input is not changed


def test_transform_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(SPEC)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "moved.yaml"
    argv = ["cdi", "transform", "root", "--from", "/driver", "--to", "/", "--input", str(source)]
    moved = _yaml(SPEC.replace("/driver/", "/"))
    assert main([*argv, "--output", str(out)]) == 0
    assert out.read_text() == render_data(moved, SpecFormat.YAML)
    assert main(argv) == 0
    assert capsys.readouterr().out == render_data(moved, SpecFormat.YAML)
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == _yaml(SPEC.replace("/driver/", "/"))
    assert source.read_text() == SPEC


def test_transform_refuses_an_invalid_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.yaml"
    source.write_text("cdiVersion: 0.5.0\nkind: x\n")
    assert (
        main(["cdi", "transform", "root", "--from", "/a", "--to", "/b", "--input", str(source)])
        == 1
    )
    assert capsys.readouterr().err.startswith(f"error: {source}: not a valid CDI spec: ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(
            ["--format", "xml"],
            "error: --format xml: not a spec format\nhint: use yaml, json\n",
            id="format",
        ),
        pytest.param(
            ["--to", ""], "error: --to '': a root must be an absolute path\n", id="empty-to"
        ),
        pytest.param(
            ["--to", "../../etc"],
            "error: --to '../../etc': a root must be an absolute path\n",
            id="relative-to",
        ),
        pytest.param(
            ["--from", "driver"],
            "error: --from 'driver': a root must be an absolute path\n",
            id="relative-from",
        ),
    ],
)
def test_transform_usage_errors_exit_2(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(SPEC)
    argv = ["cdi", "transform", "root", "--input", str(source), "--to", "/x", *extra]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(message)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["cdi", "transform", "root", "--to", "/x", "--output"], id="transform"),
        pytest.param(["config", "--output"], id="config"),
    ],
)
def test_output_is_never_a_fifo_or_a_new_directory(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An --output that names a FIFO is refused and the FIFO kept; a transform's --output in a
    missing directory is refused and no directory made (a mistyped path is not created)."""
    source = tmp_path / "in.yaml"
    source.write_text(SPEC)
    extra = ["--input", str(source)] if command[0] == "cdi" else ["--config", str(tmp_path / "c")]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main([*command, str(fifo), *extra]) == 1
    assert capsys.readouterr().err == (
        f"error: {fifo}: is a named pipe (FIFO), not a regular file; not replaced\n"
        "hint: name a regular file (or a new one)\n"
    )
    assert fifo.is_fifo()
    if command[0] == "config":  # a missing directory is made, as by `nvidia-ctk config default`
        return
    missing = tmp_path / "missing" / "out.yaml"
    assert main([*command, str(missing), *extra]) == 2
    assert capsys.readouterr().err == (
        f"error: --output {missing}: {missing.parent} does not exist\n"
        "hint: create the directory first, or name a file in an existing one\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "in.yaml"]


# --- diff ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "lines"),
    [
        pytest.param(lambda s: s, ["same"], id="same"),
        pytest.param(
            lambda s: s.replace("550.54.15", "560.35.03"),
            [
                "driver version: 550.54.15 -> 560.35.03",
                "common edits:",
                "  hooks changed: enable-cuda-compat",
                "device 0:",
                "  mounts added: /usr/lib/libcuda.so.560.35.03",
                "  mounts removed: /usr/lib/libcuda.so.550.54.15",
            ],
            id="driver-upgrade",
        ),
        pytest.param(
            lambda s: s.replace('name: "0"', 'name: "1"').replace("nvidia0", "nvidia1"),
            ["devices added: 1", "devices removed: 0"],
            id="device-renamed",
        ),
        pytest.param(
            lambda s: s.replace("NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=all"),
            ["common edits:", "  env changed: NVIDIA_VISIBLE_DEVICES"],
            id="env",
        ),
        pytest.param(
            lambda s: s.replace("0.5.0", "0.6.0").replace("example.com", "nvidia.com"),
            ["kind: example.com/gpu -> nvidia.com/gpu", "cdiVersion: 0.5.0 -> 0.6.0"],
            id="kind-and-version",
        ),
        pytest.param(
            lambda s: s.replace("/driver/usr/bin/nvidia-cdi-hook", "/opt/ctk/ctk-hook"),
            ["hook program: /driver/usr/bin/nvidia-cdi-hook -> /opt/ctk/ctk-hook"],
            id="hook-program-alone",
        ),
        pytest.param(
            lambda s: s.replace(
                "    deviceNodes:\n        - path: /dev/nvidiactl\n",
                "    deviceNodes:\n        - path: /dev/nvidiactl\n    additionalGids:\n"
                "        - 44\n",
            ).replace("0.5.0", "0.7.0"),
            ["cdiVersion: 0.5.0 -> 0.7.0", "common edits:", "  additional GIDs: none -> 44"],
            id="additional-gids",
        ),
        pytest.param(
            lambda s: s.replace(
                "    env:\n        - NVIDIA_VISIBLE_DEVICES=void\n",
                "    env:\n        - A=1\n        - NVIDIA_VISIBLE_DEVICES=void\n        - A=2\n",
            ),
            ["common edits:", "  env added: A"],
            id="repeated-env-added",
        ),
        pytest.param(
            lambda s: s.replace(
                "    env:\n        - NVIDIA_VISIBLE_DEVICES=void\n",
                "    env:\n        - NVIDIA_VISIBLE_DEVICES=void\n"
                "        - NVIDIA_VISIBLE_DEVICES=0\n",
            ),
            ["common edits:", "  env changed: NVIDIA_VISIBLE_DEVICES (1 -> 2)"],
            id="repeated-env-counted",
        ),
        pytest.param(
            lambda s: s.replace(
                "        - path: /dev/nvidiactl\n",
                "        - path: /dev/nvidia-uvm\n        - path: /dev/nvidiactl\n",
            ),
            ["common edits:", "  device nodes added: /dev/nvidia-uvm"],
            id="added-first-is-no-reorder",
        ),
    ],
)
def test_diff(
    change: object, lines: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert callable(change)
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(SPEC)
    new.write_text(change(SPEC))
    assert main(["cdi", "diff", str(old), str(new)]) == (0 if lines == ["same"] else 1)
    assert capsys.readouterr() == ("".join(line + "\n" for line in lines), "")


def test_diff_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.json"
    old.write_text(SPEC)
    data = _yaml(SPEC.replace("550.54.15", "560.35.03"))
    new.write_text(json.dumps(data))
    assert main(["cdi", "diff", "--json", str(old), str(new)]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "same": False,
        "fields": {"driver version": {"old": "550.54.15", "new": "560.35.03"}},
        "devices": {
            "added": [],
            "removed": [],
            "changed": {
                "0": {
                    "mounts": {
                        "added": ["/usr/lib/libcuda.so.560.35.03"],
                        "removed": ["/usr/lib/libcuda.so.550.54.15"],
                        "changed": [],
                    }
                }
            },
        },
        "commonEdits": {"hooks": {"added": [], "removed": [], "changed": ["enable-cuda-compat"]}},
        "otherFields": False,
    }


# --- inject ----------------------------------------------------------------------------------

OCI: dict[str, object] = {
    "ociVersion": "1.0.2-dev",
    "process": {
        "user": {"uid": 1000, "gid": 1000},
        "args": ["sh"],
        "env": ["PATH=/usr/bin:/bin", "TERM=xterm", "NVIDIA_VISIBLE_DEVICES=all"],
    },
    "root": {"path": "rootfs"},
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm"},
        {"destination": "/usr/bin/nvidia-smi", "type": "bind", "source": "/old/nvidia-smi"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
    ],
    "linux": {
        "devices": [{"path": "/dev/nvidia0", "type": "c", "major": 1, "minor": 1}],
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
    },
}


def test_apply_edits_as_a_cdi_runtime_does() -> None:
    spec = _yaml(SPEC)
    common = spec["containerEdits"]
    device = spec["devices"][0]["containerEdits"]  # type: ignore[index]
    assert isinstance(common, dict)
    assert isinstance(device, dict)
    edits = merge_edits([common, device])
    hosts = {"/dev/nvidiactl": HostDevice("c", 195, 255)}
    hosts |= {"/driver/dev/nvidia0": HostDevice("c", 195, 0)}
    kept = apply_edits(OCI, edits, hosts)
    assert kept["process"]["env"] == [  # type: ignore[index]
        "PATH=/usr/bin:/bin",
        "TERM=xterm",
        "NVIDIA_VISIBLE_DEVICES=all",
        "NVIDIA_VISIBLE_DEVICES=void",
    ]
    result = apply_edits(OCI, edits, hosts, replace_existing_env=True)
    assert result == {
        "ociVersion": "1.0.2-dev",
        "process": {
            "user": {"uid": 1000, "gid": 1000},
            "args": ["sh"],
            "env": ["PATH=/usr/bin:/bin", "TERM=xterm", "NVIDIA_VISIBLE_DEVICES=void"],
        },
        "root": {"path": "rootfs"},
        "mounts": [  # by depth, then destination; the old nvidia-smi mount replaced
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm"},
            {
                "destination": "/usr/bin/nvidia-smi",
                "source": "/driver/usr/bin/nvidia-smi",
                "options": ["ro"],
            },
            {
                "destination": "/usr/lib/libcuda.so.550.54.15",
                "source": "/driver/usr/lib/libcuda.so.550.54.15",
                "options": ["ro"],
            },
        ],
        "linux": {
            "devices": [
                {
                    "path": "/dev/nvidiactl",
                    "type": "c",
                    "major": 195,
                    "minor": 255,
                    "uid": 1000,
                    "gid": 1000,
                },
                {
                    "path": "/dev/nvidia0",
                    "type": "c",
                    "major": 195,
                    "minor": 0,
                    "uid": 1000,
                    "gid": 1000,
                },
            ],
            "resources": {
                "devices": [
                    {"allow": False, "access": "rwm"},
                    {"allow": True, "type": "c", "major": 195, "minor": 255, "access": "rwm"},
                    {"allow": True, "type": "c", "major": 195, "minor": 0, "access": "rwm"},
                ]
            },
        },
        "hooks": {
            "createContainer": [
                {
                    "path": "/driver/usr/bin/nvidia-cdi-hook",
                    "args": [
                        "nvidia-cdi-hook",
                        "enable-cuda-compat",
                        "--host-driver-version=550.54.15",
                    ],
                }
            ]
        },
    }
    assert OCI["process"]["env"][-1] == "NVIDIA_VISIBLE_DEVICES=all"  # type: ignore[index]


def test_inject_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "spec.yaml").write_text(
        SPEC.replace("/dev/nvidiactl", "/dev/null").replace(
            "- path: /dev/nvidia0\n                hostPath: /driver/dev/nvidia0",
            "- path: /dev/ctk-zero\n                hostPath: /dev/zero\n"
            "                permissions: rw",
        )
    )
    config = {"ociVersion": "1.0.2", "process": {"env": ["A=1"]}}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(config).encode())))
    argv = ["cdi", "inject", "--spec-dir", str(tmp_path), "--device", "example.com/gpu=0"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    zero, null = os.stat("/dev/zero").st_rdev, os.stat("/dev/null").st_rdev
    assert result["linux"] == {
        "devices": [
            {"path": "/dev/null", "type": "c", "major": os.major(null), "minor": os.minor(null)},
            {
                "path": "/dev/ctk-zero",
                "type": "c",
                "major": os.major(zero),
                "minor": os.minor(zero),
            },
        ],
        "resources": {
            "devices": [
                {
                    "allow": True,
                    "type": "c",
                    "major": os.major(null),
                    "minor": os.minor(null),
                    "access": "rwm",
                },
                {
                    "allow": True,
                    "type": "c",
                    "major": os.major(zero),
                    "minor": os.minor(zero),
                    "access": "rw",
                },
            ]
        },
    }
    assert result["process"]["env"] == ["A=1", "NVIDIA_VISIBLE_DEVICES=void"]

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert main([*argv[:-1], "example.com/gpu=9"]) == 1
    assert capsys.readouterr().err == (
        "error: unresolvable CDI devices example.com/gpu=9: no spec defines example.com/gpu=9\n"
        "hint: ctk cdi list shows the devices of the spec directories\n"
    )


def test_inject_names_why_a_device_is_unresolvable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A conflict (what `cdi list` reports) or skipped invalid specs, not only "unresolvable"."""
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(SPEC)
    argv = ["cdi", "inject", "--spec-dir", str(tmp_path), "--device", "example.com/gpu=0"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "error: unresolvable CDI devices example.com/gpu=0: example.com/gpu=0 is defined by "
        f"{tmp_path}/a.yaml and {tmp_path}/b.yaml at the same priority (CDI runtimes drop it "
        "from both)\nhint: ctk cdi list shows the devices of the spec directories\n"
    )
    (tmp_path / "b.yaml").write_text(SPEC.replace("kind: example.com/gpu", "kind: bad"))
    (tmp_path / "a.yaml").unlink()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "error: unresolvable CDI devices example.com/gpu=0: no valid spec defines "
        "example.com/gpu=0 (1 invalid spec(s) skipped)\n"
        "hint: ctk cdi list shows the devices of the spec directories\n"
    )


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        pytest.param({"process": {"env": "A=1"}}, "process.env is a string, not an array",
                     id="env"),
        pytest.param({"process": {"env": [1, None]}}, "process.env[0] is a number, not a string",
                     id="env-entry"),
        pytest.param({"process": []}, "process is an array, not an object", id="process"),
        pytest.param({"linux": {"devices": "x"}}, "linux.devices is a string, not an array",
                     id="devices"),
        pytest.param({"linux": {"resources": {"devices": {}}}},
                     "linux.resources.devices is an object, not an array", id="cgroup-rules"),
        pytest.param({"mounts": {}}, "mounts is an object, not an array", id="mounts"),
        pytest.param({"hooks": []}, "hooks is an array, not an object", id="hooks"),
        pytest.param({"hooks": {"createContainer": {}}},
                     "hooks.createContainer is an object, not an array", id="hook-stage"),
    ],
)  # fmt: skip
def test_inject_refuses_a_malformed_field_it_would_edit(
    config: dict[str, object],
    problem: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The user's value is never replaced by an empty one: the field is named, nothing printed."""
    (tmp_path / "spec.yaml").write_text(
        "cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n  - name: '0'\n"
        "    containerEdits:\n      env: [B=2]\n      deviceNodes: [{path: /dev/null}]\n"
        "      mounts: [{hostPath: /x, containerPath: /x}]\n"
        "      hooks: [{hookName: createContainer, path: /bin/true}]\n"
    )
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(config).encode())))
    argv = ["cdi", "inject", "--spec-dir", str(tmp_path), "--device", "example.com/gpu=0"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        f"error: <stdin>: the OCI spec's {problem}\n"
        "hint: fix the OCI runtime spec (config.json): nothing was written\n",
    )


def test_diff_refuses_standard_input_twice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "diff", "-", "-"]) == 2
    assert capsys.readouterr().err == (
        "error: cdi diff - -: standard input cannot be both specs\nhint: name a file for one\n"
    )


def test_inject_reads_a_relative_spec_dir_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--spec-dir specs` is ./specs, as for `ctk cdi list` (it was looked up under / and the
    device was then "unresolvable")."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "spec.yaml").write_text(
        "cdiVersion: 0.5.0\nkind: example.com/gpu\n"
        "devices:\n- name: gpu0\n  containerEdits:\n    env: [GPU=0]\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"process": {"env": []}}')))
    assert main(["cdi", "inject", "--spec-dir", "specs", "--device", "example.com/gpu=gpu0"]) == 0
    assert json.loads(capsys.readouterr().out)["process"]["env"] == ["GPU=0"]


def test_refresh_names_the_driver_change() -> None:
    from ctk.cdi.diff import diff_specs
    from ctk.cdi.refresh import change_phrases

    old, new = _yaml(SPEC), _yaml(SPEC.replace("550.54.15", "560.35.03"))
    assert change_phrases(diff_specs(old, new)) == [
        "driver 550.54.15 -> 560.35.03",
        "common hooks changed enable-cuda-compat",
        "device edits changed: 0 (mounts)",
    ]
