"""The real consumers read what ctk wrote: containerd 1.6 `config dump` and dockerd 20.10.

containerd: the merged effective config (main file plus every import, as containerd itself
merges them) must hold the nvidia runtime with the options of the runtime it was copied from, the
expected default runtime, and every setting of the input files. dockerd: started on the written
daemon.json, `docker info` must list the nvidia runtime with its path and the default runtime.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ctk import toml_compat as tomllib
from ctk.cli.app import main
from ctk.runtime_config.inspect import deep_merge
from tests.runtime.corpus import Case, cases

pytestmark = pytest.mark.integration

CONTAINERD = shutil.which("containerd")
DOCKERD = shutil.which("dockerd")
DOCKER_CLIENT = "/usr/bin/docker"  # the 20.10 client; a newer one may come first on PATH
IS_ROOT = os.geteuid() == 0
V1_PLUGINS = {"cri": "io.containerd.grpc.v1.cri"}

CONTAINERD_CASES = [
    pytest.param(c, id=c.id)
    for c in cases()
    if c.engine == "containerd" and "v3" not in c.id  # 1.6 ignores version 3 tables
]
DOCKER_CASES = [pytest.param(c, id=c.id) for c in cases() if c.engine == "docker"]


def containerd_dump(config: Path) -> dict[str, Any]:
    assert CONTAINERD is not None
    result = subprocess.run(
        [CONTAINERD, "--config", str(config), "config", "dump"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return tomllib.loads(result.stdout)


def _input_settings(root: Path) -> dict[str, Any]:
    """Every setting of the input files, merged key by key, v1 plugin names made v2."""
    merged: dict[str, Any] = {}
    for path in sorted((root / "etc" / "containerd").rglob("*.toml")):
        data = tomllib.loads(path.read_text())
        for key in ("imports", "version"):
            data.pop(key, None)
        plugins = data.get("plugins", {})
        data["plugins"] = {V1_PLUGINS.get(k, k): v for k, v in plugins.items()}
        merged = deep_merge(merged, data)
    return merged


def _assert_contains(actual: Mapping[str, Any], wanted: Mapping[str, Any], where: str) -> None:
    for key, value in wanted.items():
        assert key in actual, f"{where}.{key} is missing from the dump"
        if isinstance(value, dict):
            _assert_contains(actual[key], value, f"{where}.{key}")
        else:
            assert actual[key] == value, f"{where}.{key}"


@pytest.mark.skipif(CONTAINERD is None, reason="containerd is not installed")
@pytest.mark.parametrize("case", CONTAINERD_CASES)
def test_containerd_config_dump(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "root"
    case.install(root)
    settings = _input_settings(root)
    cri = settings.get("plugins", {}).get("io.containerd.grpc.v1.cri", {})
    runtimes = cri.get("containerd", {}).get("runtimes", {})
    default_before = cri.get("containerd", {}).get("default_runtime_name", "runc")
    args = case.args(root)
    assert main(["runtime", "configure", *args]) == 0

    dump = containerd_dump(root / "etc" / "containerd" / "config.toml")
    dumped_cri = dump["plugins"]["io.containerd.grpc.v1.cri"]
    nvidia = dumped_cri["containerd"]["runtimes"]["nvidia"]
    source = runtimes.get(default_before) or runtimes.get("runc") or {}
    binary_key = "Runtime" if "v1" in nvidia["runtime_type"] else "BinaryName"
    assert nvidia["runtime_type"] == source.get("runtime_type", "io.containerd.runc.v2")
    assert nvidia["options"][binary_key] == "/usr/bin/nvidia-container-runtime"
    assert nvidia["options"].get("SystemdCgroup") == source.get("options", {}).get("SystemdCgroup")
    expected_default = "nvidia" if "--set-as-default" in args else default_before
    assert dumped_cri["containerd"]["default_runtime_name"] == expected_default
    if "--set-as-default" in args:
        cri.get("containerd", {}).pop("default_runtime_name", None)
    cri.pop("enable_cdi", None)  # containerd 1.6 has no CDI and drops the key
    _assert_contains(dump, settings, "(config)")


@pytest.mark.skipif(CONTAINERD is None, reason="containerd is not installed")
def test_containerd_dump_of_v3_config_is_accepted(tmp_path: Path) -> None:
    case = next(c for c in cases() if c.id == "containerd/v3-containerd2")
    root = tmp_path / "root"
    case.install(root)
    assert main(["runtime", "configure", *case.args(root)]) == 0
    dump = containerd_dump(root / "etc" / "containerd" / "config.toml")
    # containerd 1.6 parses version 3 (and our import) but does not know its plugin names.
    assert str(root / "etc/containerd/conf.d/99-nvidia.toml") in dump["imports"]


@contextlib.contextmanager
def dockerd(config: Path, work: Path) -> Iterator[str]:
    """Run dockerd on ``config`` with throwaway state under ``work``; yield its socket."""
    sock = work / "sock"
    data = json.loads(config.read_text())
    args = [
        str(DOCKERD),
        "--config-file",
        str(config),
        "--exec-root",
        str(work / "exec"),
        "--pidfile",
        str(work / "pid"),
        "-H",
        f"unix://{sock}",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        "--bridge=none",
    ]
    if "data-root" not in data:
        args += ["--data-root", str(work / "data")]
    log = (work / "log").open("w")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert process.poll() is None, (work / "log").read_text()
            assert time.monotonic() < deadline, "dockerd did not start"
            time.sleep(0.05)
        yield str(sock)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()
        for mount in (work / "data", work / "exec"):
            if os.path.ismount(mount):  # dockerd bind-mounts its roots; a killed one leaves them
                subprocess.run(["umount", "-l", str(mount)], check=False, timeout=10)


def docker_info(sock: str) -> tuple[dict[str, Any], str]:
    deadline = time.monotonic() + 10
    while True:
        result = subprocess.run(
            [
                DOCKER_CLIENT,
                "-H",
                f"unix://{sock}",
                "info",
                "--format",
                "{{json .Runtimes}}\t{{.DefaultRuntime}}",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode == 0:
            runtimes, default = result.stdout.strip().split("\t")
            return json.loads(runtimes), default
        assert time.monotonic() < deadline, result.stderr
        time.sleep(0.1)


@pytest.mark.skipif(
    DOCKERD is None or not Path(DOCKER_CLIENT).exists() or not IS_ROOT,
    reason="dockerd 20.10 and /usr/bin/docker (docker.io) and root are needed",
)
@pytest.mark.parametrize("case", DOCKER_CASES)
def test_dockerd_runs_with_written_daemon_json(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "root"
    case.install(root)
    config = root / "etc" / "docker" / "daemon.json"
    if config.exists() and "data-root" in json.loads(config.read_text()):
        pytest.fail("corpus daemon.json files must not point dockerd at a real data-root")
    args = case.args(root)
    assert main(["runtime", "configure", *args]) == 0
    path = (
        args[args.index("--nvidia-runtime-path") + 1]
        if "--nvidia-runtime-path" in args
        else ("/usr/bin/nvidia-container-runtime")
    )
    before = json.loads(config.read_text())
    # Unix socket paths are limited to 108 bytes: dockerd's state needs a short directory.
    work = Path(tempfile.mkdtemp(prefix="ctk-dockerd-"))
    try:
        with dockerd(config, work) as sock:
            runtimes, default = docker_info(sock)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert runtimes["nvidia"] == {"path": path}
    expected_default = (
        "nvidia" if "--set-as-default" in args else before.get("default-runtime", "runc")
    )
    assert default == expected_default
    for name, runtime in before["runtimes"].items():
        assert runtimes[name]["path"] == runtime["path"]


CTR = shutil.which("ctr")


def _cri_status(config: Path, work: Path) -> str:
    """Start containerd on ``config``, return the status `ctr plugins ls` gives the CRI plugin."""
    assert CONTAINERD is not None and CTR is not None
    sock = work / "c.sock"
    log_path = work / "containerd.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [CONTAINERD, "--config", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, log_path.read_text()
            result = subprocess.run(
                [CTR, "--address", str(sock), "plugins", "ls"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            rows = [line.split() for line in result.stdout.splitlines()]
            cri = [r for r in rows if r[:2] == ["io.containerd.grpc.v1", "cri"]]
            if cri:
                return cri[0][-1]
            assert time.monotonic() < deadline, result.stderr + log_path.read_text()
            time.sleep(0.1)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@pytest.mark.skipif(
    CONTAINERD is None or CTR is None or not IS_ROOT,
    reason="containerd, ctr and root are needed to start the daemon",
)
def test_containerd_cri_loads_after_configure_without_explicit_runc() -> None:
    """A config that leaves runc to containerd's built-in default keeps a working CRI plugin."""
    assert CONTAINERD is not None
    work = Path(tempfile.mkdtemp(prefix="ctk-ctrd-"))  # short: socket paths are limited
    try:
        config = work / "etc" / "config.toml"
        config.parent.mkdir()
        config.write_text(
            f'version = 2\nroot = "{work}/root"\nstate = "{work}/state"\n\n'
            f'[grpc]\n  address = "{work}/c.sock"\n\n[ttrpc]\n  address = "{work}/t.sock"\n'
        )
        assert _cri_status(config, work) == "ok"
        dump_before = containerd_dump(config)
        drop_in = work / "etc" / "conf.d" / "99-nvidia.toml"
        args = ["--runtime", "containerd", "--config", str(config)]
        assert main(["runtime", "configure", *args, "--drop-in-config", str(drop_in)]) == 0
        assert _cri_status(config, work) == "ok", (work / "containerd.log").read_text()
        builtin = subprocess.run(
            [CONTAINERD, "config", "default"], capture_output=True, text=True, check=True
        )
        default_cri = tomllib.loads(builtin.stdout)["plugins"]["io.containerd.grpc.v1.cri"]
        dumped = containerd_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
        runc = default_cri["containerd"]["runtimes"]["runc"]
        assert dumped["default_runtime_name"] == "runc"
        assert dumped["runtimes"]["runc"]["runtime_type"] == runc["runtime_type"]
        assert set(dumped["runtimes"]) == {"runc", "nvidia"}
        # Apart from the nvidia runtime and the import, the effective config is what it was.
        # runc's built-in options are all zero values (the same as unset to the runc shim):
        # ctk leaves them out rather than pin values that newer containerd versions may change.
        dump_after = containerd_dump(config)
        del dump_after["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"]
        assert sorted(dump_after.pop("imports")) == sorted([str(config), str(drop_in)])
        dump_before.pop("imports", None)
        runc_before = dump_before["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
        options = runc_before["runtimes"]["runc"].pop("options")
        assert not any(options.values()) and runc == {**runc, "options": options}
        runc_after = dump_after["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
        assert runc_after["runtimes"]["runc"].pop("options") == {}
        assert dump_after == dump_before
        in_place = work / "etc" / "in-place.toml"  # the same, edited in place: config dump only
        in_place.write_text(config.read_text().replace(f'imports = ["{drop_in}"]\n', ""))
        assert (
            main(
                [
                    *("runtime", "configure", *args[:2]),
                    "--config",
                    str(in_place),
                    "--drop-in-config=",
                ]
            )
            == 0
        )
        cri = containerd_dump(in_place)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
        assert set(cri["runtimes"]) == {"runc", "nvidia"}
        assert cri["runtimes"]["runc"]["runtime_type"] == runc["runtime_type"]
    finally:
        for mount in ("root", "state"):
            if os.path.ismount(work / mount):
                subprocess.run(["umount", "-l", str(work / mount)], check=False, timeout=10)
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.skipif(CONTAINERD is None, reason="containerd is not installed")
def test_in_place_edit_lost_to_an_imported_cri_table_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """containerd 1.6 lets an imported CRI table replace the one edited in place: ctk says so."""
    config = tmp_path / "config.toml"
    registry = tmp_path / "conf.d" / "50-registry.toml"
    registry.parent.mkdir()
    config.write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml"]\n')
    registry.write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\nconfig_path = "/x"\n'
    )
    args = ["runtime", "configure", "--runtime", "containerd", "--config", str(config)]
    assert main([*args, "--drop-in-config", "", "--set-as-default"]) == 0
    assert capsys.readouterr().err == (
        f"warning: {registry} is imported by {config} and also defines "
        '[plugins."io.containerd.grpc.v1.cri"]: containerd < 2.1 will use that table instead, '
        'without the nvidia runtime; configure with a drop-in (leave out --drop-in-config ""), '
        "which carries the merged table\n"
    )
    cri = containerd_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]
    assert (
        cri["containerd"]["default_runtime_name"],
        "nvidia" in cri["containerd"]["runtimes"],
    ) == (
        "runc",
        False,
    )  # what the warning says: the edit is lost on 1.6
    assert main([*args, "--drop-in-config", str(tmp_path / "conf.d" / "99-nvidia.toml")]) == 0
    cri = containerd_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["registry"]["config_path"] == "/x"


@pytest.mark.skipif(CONTAINERD is None, reason="containerd is not installed")
def test_runtime_names_accumulate_in_the_drop_in_and_go_one_by_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the GPU operator does: nvidia (default), nvidia-cdi, nvidia-legacy side by side."""
    config = tmp_path / "config.toml"
    config.write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml"]\n')
    drop_in = tmp_path / "conf.d" / "99-nvidia.toml"
    args = ["--runtime", "containerd", "--config", str(config), "--drop-in-config", str(drop_in)]
    assert main(["runtime", "configure", *args, "--set-as-default"]) == 0
    for name in ("nvidia-cdi", "nvidia-legacy"):
        assert main(["runtime", "configure", *args, "--nvidia-runtime-name", name]) == 0

    def effective() -> tuple[str, list[str]]:
        cri = containerd_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
        return cri["default_runtime_name"], sorted(cri["runtimes"])

    assert effective() == ("nvidia", ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"])
    assert main(["runtime", "unconfigure", *args, "--nvidia-runtime-name", "nvidia-cdi"]) == 0
    assert effective() == ("nvidia", ["nvidia", "nvidia-legacy", "runc"])
    assert main(["runtime", "unconfigure", *args]) == 0
    assert effective() == ("runc", ["nvidia-legacy", "runc"])
    assert main(["runtime", "unconfigure", *args, "--nvidia-runtime-name", "nvidia-legacy"]) == 0
    assert not drop_in.exists()
    assert effective() == ("runc", ["runc"])
    capsys.readouterr()
