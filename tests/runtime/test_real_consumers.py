"""The real consumers read what ctk wrote: `containerd config dump` and a running dockerd, this
machine's (containerd 1.6, dockerd 20.10) and today's (containerd 2.1 and 1.7, Docker 28 and 26,
where ``CTK_ENGINES`` names them: tests/engines.py).

containerd: the merged effective config (main file plus every import, as containerd itself
merges them) must hold the nvidia runtime with the options of the runtime it was copied from, the
expected default runtime, and every setting of the input files. dockerd: started on the written
daemon.json, `docker info` must list the nvidia runtime with its path and the default runtime.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ctk import toml_compat as tomllib
from ctk.cli.app import main
from ctk.runtime_config.inspect import deep_merge
from tests import engines
from tests.engines import Engine
from tests.runners import busybox_rootfs
from tests.runtime.corpus import Case, cases

pytestmark = pytest.mark.integration

CONTAINERD = shutil.which("containerd")
CONTAINERDS = engines.containerds()
OWN_CONTAINERD = next((e for e in CONTAINERDS if str(e.daemon) == CONTAINERD), None)
DOCKERS = engines.dockers()
IS_ROOT = os.geteuid() == 0
V1_PLUGINS = {"cri": "io.containerd.grpc.v1.cri"}
V3_RUNTIME = "io.containerd.cri.v1.runtime"

CONTAINERD_CASES = [
    pytest.param(c, e, id=f"{e.id}-{c.id}")
    for e in CONTAINERDS
    for c in cases()
    # 1.x ignores version 3 tables; 2.x reads version 1 no more
    if c.engine == "containerd" and ("v1" if e.version[0] >= 2 else "v3") not in c.id
]
DOCKER_CASES = [
    pytest.param(c, e, id=f"{e.id}-{c.id}")
    for e in DOCKERS
    for c in cases()
    if c.engine == "docker"
]


def containerd_dump(config: Path) -> dict[str, Any]:
    """What this machine's containerd makes of ``config``."""
    assert OWN_CONTAINERD is not None
    return engines.containerd_dump(config, OWN_CONTAINERD)


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


@pytest.mark.parametrize(("case", "engine"), CONTAINERD_CASES)
def test_containerd_config_dump(case: Case, engine: Engine, tmp_path: Path) -> None:
    root = tmp_path / "root"
    case.install(root)
    settings = _input_settings(root)
    cri = settings.get("plugins", {}).get("io.containerd.grpc.v1.cri", {})
    cri = settings.get("plugins", {}).get(V3_RUNTIME, cri)
    runtimes = cri.get("containerd", {}).get("runtimes", {})
    default_before = cri.get("containerd", {}).get("default_runtime_name", "runc")
    args = case.args(root)
    assert main(["runtime", "configure", *args]) == 0

    dump = engines.containerd_dump(root / "etc" / "containerd" / "config.toml", engine)
    v3 = engine.version[0] >= 2  # containerd 2.x dumps every config as version 3
    dumped_cri = dump["plugins"][V3_RUNTIME if v3 else "io.containerd.grpc.v1.cri"]
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
    if v3:  # 2.x moves version 2 settings around: the runtimes stay where they were
        for name, runtime in runtimes.items():  # (less keys it dropped, like runtime_engine)
            kept = {k: v for k, v in runtime.items() if k in ("runtime_type", "options")}
            _assert_contains(dumped_cri["containerd"]["runtimes"][name], kept, name)
        assert dumped_cri.get("enable_cdi", True) is True  # on by default in 2.x
        return
    cri.pop("enable_cdi", None)  # containerd 1.6 has no CDI and drops the key
    _assert_contains(dump, settings, "(config)")


@pytest.mark.skipif(OWN_CONTAINERD is None, reason="containerd is not installed")
def test_containerd_dump_of_v3_config_is_accepted(tmp_path: Path) -> None:
    case = next(c for c in cases() if c.id == "containerd/v3-containerd2")
    root = tmp_path / "root"
    case.install(root)
    assert main(["runtime", "configure", *case.args(root)]) == 0
    dump = containerd_dump(root / "etc" / "containerd" / "config.toml")
    # containerd 1.6 parses version 3 (and our import) but does not know its plugin names.
    assert str(root / "etc/containerd/conf.d/99-nvidia.toml") in dump["imports"]


@pytest.mark.skipif(not IS_ROOT, reason="dockerd needs root")
@pytest.mark.parametrize(("case", "engine"), DOCKER_CASES)
def test_dockerd_runs_with_written_daemon_json(case: Case, engine: Engine, tmp_path: Path) -> None:
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
        with engines.dockerd(config, work, engine) as sock:
            info = engines.docker_info(
                sock,
                engine,
                '{"runtimes": {{json .Runtimes}}, "default": {{json .DefaultRuntime}}}',
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert info["runtimes"]["nvidia"]["path"] == path
    assert info["runtimes"]["nvidia"].get("runtimeArgs", []) == []
    expected_default = (
        "nvidia" if "--set-as-default" in args else before.get("default-runtime", "runc")
    )
    assert info["default"] == expected_default
    for name, runtime in before["runtimes"].items():
        assert info["runtimes"][name]["path"] == runtime["path"]


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
            preexec_fn=engines.default_signals,  # noqa: PLW1509
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
                subprocess.run(["umount", "-n", "-l", str(work / mount)], check=False, timeout=10)
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.skipif(OWN_CONTAINERD is None, reason="containerd is not installed")
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
        '[plugins."io.containerd.grpc.v1.cri"]: containerd 1.x will use that table instead, '
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


@pytest.mark.skipif(OWN_CONTAINERD is None, reason="containerd is not installed")
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


@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "in-place"])
@pytest.mark.parametrize("engine", CONTAINERDS, ids=[e.id for e in CONTAINERDS])
def test_each_containerd_reads_ctk_on_its_own_default_config(
    engine: Engine, drop_in: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`containerd config default` of each version, configured and unconfigured: the engine reads
    the nvidia runtime as the default, with runc's options; unconfigure restores the bytes."""
    config = tmp_path / "config.toml"
    default = engines.engine_output(engine, "config", "default")
    default = default.replace("/etc/containerd/conf.d", str(tmp_path / "conf.d"))  # 2.x imports
    config.write_text(default)
    where = str(tmp_path / "conf.d/99-nvidia.toml") if drop_in else ""
    args = ["--runtime=containerd", "--config", str(config), "--drop-in-config", where]
    assert main(["runtime", "configure", *args, "--set-as-default", "--cdi.enabled"]) == 0
    plugins = engines.containerd_dump(config, engine)["plugins"]
    cri = plugins.get(V3_RUNTIME) or plugins["io.containerd.grpc.v1.cri"]
    runtimes = cri["containerd"]["runtimes"]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    runc_options = {k: v for k, v in runtimes["runc"]["options"].items() if k != "BinaryName"}
    assert {k: runtimes["nvidia"]["options"].get(k) for k in runc_options} == runc_options
    if engine.version >= (1, 7):  # 1.6 has no CDI and drops the key
        assert cri["enable_cdi"] is True
    assert main(["runtime", "unconfigure", *args]) == 0
    assert (config.read_text(), (tmp_path / "conf.d/99-nvidia.toml").exists()) == (default, False)
    plugins = engines.containerd_dump(config, engine)["plugins"]
    cri = plugins.get(V3_RUNTIME) or plugins["io.containerd.grpc.v1.cri"]
    assert (
        cri["containerd"]["default_runtime_name"],
        "nvidia" in cri["containerd"]["runtimes"],
    ) == (
        "runc",
        False,
    )
    capsys.readouterr()


CRIOS = engines.crios()


@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "in-place"])
@pytest.mark.parametrize("engine", CRIOS, ids=[e.id for e in CRIOS])
def test_crio_reads_ctk_on_its_own_default_config(
    engine: Engine, drop_in: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`crio config` (CRI-O's defaults), configured: `crio config` on the result shows the nvidia
    runtime as the default; unconfigure restores the bytes and crun."""
    config, drop_ins = tmp_path / "crio.conf", tmp_path / "crio.conf.d"
    default = engines.engine_output(engine, "--config", "", "--config-dir", "", "config")
    config.write_text(default)
    drop_ins.mkdir()
    where = str(drop_ins / "99-nvidia.toml") if drop_in else ""
    args = ["--runtime=crio", "--config", str(config), "--drop-in-config", where]
    assert main(["runtime", "configure", *args, "--set-as-default"]) == 0
    runtime = engines.crio_config(config, drop_ins, engine)["crio"]["runtime"]
    assert runtime["default_runtime"] == "nvidia"
    assert runtime["runtimes"]["nvidia"]["runtime_path"] == "/usr/bin/nvidia-container-runtime"
    assert main(["runtime", "unconfigure", *args]) == 0
    assert (config.read_text(), list(drop_ins.iterdir())) == (default, [])
    runtime = engines.crio_config(config, drop_ins, engine)["crio"]["runtime"]
    # crio config leaves a default value out (commented)
    assert (runtime.get("default_runtime", "crun"), "nvidia" in runtime.get("runtimes", {})) == (
        "crun",
        False,
    )
    capsys.readouterr()


CDI_DOCKERS = [e for e in DOCKERS if e.version >= (26,)]  # 20.10 has no CDI


@pytest.mark.skipif(not IS_ROOT, reason="dockerd needs root")
@pytest.mark.parametrize("cdi", [False, True], ids=["as-is", "cdi-enabled"])
@pytest.mark.parametrize("engine", CDI_DOCKERS, ids=[e.id for e in CDI_DOCKERS])
def test_docker_run_device_reaches_the_container(
    engine: Engine, cdi: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`docker run --device vendor.com/class=dev0` after `runtime configure`: Docker 28 resolves
    CDI devices by default (28.2 on), Docker 26 only with `features.cdi`, which --cdi.enabled
    writes; the spec directory is the user's own `cdi-spec-dirs`, kept."""
    specs = tmp_path / "cdi"
    specs.mkdir()
    (specs / "test.yaml").write_text(engines.CDI_TEST_SPEC)
    config = tmp_path / "daemon.json"
    config.write_text(json.dumps({"storage-driver": "vfs", "cdi-spec-dirs": [str(specs)]}))
    extra = ["--cdi.enabled"] if cdi else []
    assert main(["runtime", "configure", "--runtime=docker", "--config", str(config), *extra]) == 0
    capsys.readouterr()
    assert json.loads(config.read_text())["cdi-spec-dirs"] == [str(specs)]
    rootfs = busybox_rootfs(tmp_path)
    work = Path(tempfile.mkdtemp(prefix="ctk-dockerd-"))
    try:
        with engines.dockerd(config, work, engine) as sock:
            image = subprocess.run(
                ["tar", "-C", str(rootfs), "-c", "."], capture_output=True, check=True, timeout=60
            )
            run = engines.docker_run_cdi_device(sock, engine, image.stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if cdi or engine.version >= (28,):
        assert (run.returncode, run.stdout) == (0, "CTK_CDI=injected\n"), run.stderr
    else:
        assert run.returncode != 0
        assert 'could not select device driver "cdi"' in run.stderr


@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "in-place"])
@pytest.mark.parametrize("engine", CRIOS, ids=[e.id for e in CRIOS])
def test_crio_drop_in_read_later_that_overrides_ctk_is_warned_about(
    engine: Engine, drop_in: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A site drop-in that CRI-O reads after ctk's file (after every file in place: crio.conf.d
    overrides crio.conf) and names runc the default: `crio config` shows runc wins, and
    `configure --set-as-default` says which file overrides it; a site drop-in read before ctk's
    does not override it and is not named."""
    etc = tmp_path / "etc/crio"
    drop_ins = etc / "crio.conf.d"
    drop_ins.mkdir(parents=True)
    config = etc / "crio.conf"
    config.write_text(engines.engine_output(engine, "--config", "", "--config-dir", "", "config"))
    site = (
        '[crio.runtime]\ndefault_runtime = "runc"\n'
        '[crio.runtime.runtimes.runc]\nruntime_path = "/usr/sbin/runc"\n'
    )
    (drop_ins / "50-site.conf").write_text(site)
    (drop_ins / "10-early.conf").write_text(site)
    where = "/etc/crio/crio.conf.d/99-nvidia.toml" if drop_in else ""
    if drop_in:  # read after ctk's 99-nvidia.toml
        (drop_ins / "99-site.conf").write_text(site)
    args = [
        *("runtime", "configure", "--runtime=crio", "--root", str(tmp_path)),
        *("--drop-in-config", where, "--set-as-default"),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    late = "/etc/crio/crio.conf.d/99-site.conf" if drop_in else "/etc/crio/crio.conf.d/50-site.conf"
    written = where or "/etc/crio/crio.conf"
    assert f"warning: {late} is read after {written} and overrides its settings" in err
    assert "10-early.conf" in err if not drop_in else "10-early.conf" not in err
    runtime = engines.crio_config(config, drop_ins, engine)["crio"]["runtime"]
    assert runtime["default_runtime"] == "runc"
    assert "nvidia" in runtime["runtimes"]
