"""Properties of the rewriters, on generated configs (hypothesis).

- configure twice changes nothing the second time;
- unconfigure after configure gives back the input, byte for byte;
- any TOML/JSON input, even nonsense, gives success or exit 1 with the file untouched.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.cli.app import main
from ctk.errors import CtkError
from ctk.runtime_config.configure import Inputs, configure, unconfigure
from ctk.runtime_config.engines import Runtime, RuntimeRequest

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
NAMES = st.sampled_from(["runc", "crun", "kata", "gvisor", "youki"])
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-5, 10**6),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
)
KEYS = st.text("abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=10)
CRI = {1: "cri", 2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}
REQUESTS = st.builds(
    RuntimeRequest,
    name=st.just("nvidia"),
    path=st.sampled_from(["/usr/bin/nvidia-container-runtime", "/opt/nv/bin/runtime"]),
    set_as_default=st.booleans(),
    enable_cdi=st.booleans(),
)


def _emit_table(
    lines: list[str], path: list[str], table: dict[str, Any], style: dict[str, Any]
) -> None:
    simple = {k: v for k, v in table.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    indent = style["indent"] * max(len(path) - 1, 0)
    if path and (simple or not tables):
        if style["blank"]:
            lines.append("")
        header = ".".join(tomlkit.key(p).as_string().strip() for p in path)
        lines.append(f"{indent}[{header}]" + ("  # section" if style["comments"] else ""))
    for key, value in simple.items():
        item = _value_text(value, literal=style["literal"])
        comment = " # note" if style["comments"] and isinstance(value, bool) else ""
        key_text = tomlkit.key(key).as_string().strip()
        lines.append(f"{indent}{style['indent'] if path else ''}{key_text} = {item}{comment}")
    for key, value in tables.items():
        _emit_table(lines, [*path, key], value, style)


def _value_text(value: object, *, literal: bool) -> str:
    """TOML for ``value``; ``literal``: strings in 'single quotes' where they can be, as
    containerd 2.x writes them."""
    if literal and isinstance(value, str) and "'" not in value and value.isprintable():
        return f"'{value}'"
    return tomlkit.item(value).as_string()


def render_toml(data: dict[str, Any], style: dict[str, Any]) -> str:
    lines: list[str] = []
    if style["comments"]:
        lines.append("# generated config")
    _emit_table(lines, [], data, style)
    return "\n".join(lines) + ("\n" if style["final_newline"] else "")


STYLES = st.fixed_dictionaries(
    {
        "indent": st.sampled_from(["", "  ", "    "]),
        "blank": st.booleans(),
        "comments": st.booleans(),
        "final_newline": st.booleans(),
        "literal": st.booleans(),
    }
)


@st.composite
def containerd_configs(draw: st.DrawFn) -> str:
    version = draw(st.sampled_from([1, 2, 3]))
    runtimes = {
        name: {
            "runtime_type": draw(st.sampled_from(["io.containerd.runc.v2", ""])),
            "options": draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "SystemdCgroup": st.booleans(),
                        "BinaryName": st.sampled_from(["/usr/bin/runc", "/usr/bin/crun", ""]),
                        "Root": SCALARS,
                    },
                )
            ),
        }
        for name in draw(st.lists(NAMES, max_size=3, unique=True))
    }
    containerd: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from(["snapshotter", "no_pivot"]), SCALARS, max_size=2)
    )
    if draw(st.booleans()):
        containerd["default_runtime_name"] = draw(NAMES)
    if runtimes:
        containerd["runtimes"] = runtimes
    cri: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "sandbox_image": SCALARS,
                "enable_cdi": st.booleans(),
                "stats_collect_period": SCALARS,
            },
        )
    )
    if bool(containerd) or draw(st.booleans()):
        cri["containerd"] = containerd
    data: dict[str, Any] = {}
    if version != 1:
        data["version"] = version
    data.update(
        draw(st.dictionaries(st.sampled_from(["root", "state", "oom_score"]), SCALARS, max_size=2))
    )
    plugins: dict[str, Any] = {}
    if draw(st.booleans()):
        plugins["io.containerd.internal.v1.opt"] = {"path": "/opt/containerd"}
    if bool(cri) or draw(st.booleans()):
        plugins[CRI[version]] = cri
    if plugins:
        data["plugins"] = plugins
    if draw(st.booleans()):
        data["grpc"] = {"address": "/run/containerd/containerd.sock"}
    return render_toml(data, draw(STYLES))


@st.composite
def crio_configs(draw: st.DrawFn) -> str:
    runtime: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "cgroup_manager": st.sampled_from(["systemd", "cgroupfs"]),
                "conmon": SCALARS,
            },
        )
    )
    if draw(st.booleans()):
        runtime["default_runtime"] = draw(NAMES)
    runtimes = {
        name: draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "runtime_path": st.sampled_from([f"/usr/bin/{name}", ""]),
                    "runtime_type": st.sampled_from(["oci", "vm"]),
                    "runtime_root": SCALARS,
                },
            )
        )
        for name in draw(st.lists(NAMES, max_size=3, unique=True))
    }
    if runtimes:
        runtime["runtimes"] = runtimes
    data: dict[str, Any] = {"crio": {"runtime": runtime}} if runtime else {}
    if draw(st.booleans()):
        data.setdefault("crio", {})["image"] = {"pause_image": "registry.k8s.io/pause:3.9"}
    return render_toml(data, draw(STYLES))


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def daemon_jsons(draw: st.DrawFn) -> str:
    known = {"exec-opts", "runtimes", "features", "default-runtime", "cdi-spec-dirs"}
    other_keys = KEYS.filter(lambda k: k not in known)  # keys dockerd types are tested elsewhere
    data: dict[str, Any] = draw(st.dictionaries(other_keys, JSON_VALUES, max_size=4))
    if draw(st.booleans()):
        data["runtimes"] = {
            name: {"path": f"/usr/bin/{name}"}
            for name in draw(st.lists(NAMES, max_size=2, unique=True))
        }
    if draw(st.booleans()):
        data["features"] = draw(
            st.dictionaries(
                st.sampled_from(["buildkit", "cdi", "containerd-snapshotter"]),
                st.booleans(),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        data["default-runtime"] = draw(NAMES)
    indent = draw(st.sampled_from([None, 2, 4, "\t"]))
    separators = (
        draw(st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
        if indent is None
        else None
    )
    text = json.dumps(data, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        spaced = text.replace("{}", draw(st.sampled_from(["{ }", "{\n}", "{  \n  }"])))
        with contextlib.suppress(ValueError):  # a "{}" inside a string must stay as it is
            text = spaced if json.loads(spaced) == data else text
    return text + ("\n" if draw(st.booleans()) else "")


REFUSED = "ctk cannot edit this file's layout without changing other lines; nothing was written"


def _round_trip(runtime: Runtime, text: str, request: RuntimeRequest) -> None:
    inputs = Inputs(config="/etc/config", config_text=text)
    try:
        plan = configure(runtime, inputs, request)
    except CtkError as exc:
        # tomlkit re-indents some layouts (an empty table before an indented header): ctk
        # refuses those rather than touching lines it does not own.
        assert exc.message == f"/etc/config: {REFUSED}"
        return
    (first,) = plan.files
    assert first.after is not None
    again = configure(
        runtime,
        Inputs(config="/etc/config", config_text=first.after, record=first.record or ()),
        request,
    )
    assert again.changes == ()
    undone = unconfigure(
        runtime,
        Inputs(
            config="/etc/config",
            config_text=first.after,
            record=first.record or (),
            recorded=first.record is not None,
        ),
        request.name,
    )
    assert undone.files[0].after == text


@SETTINGS
@given(text=containerd_configs(), request=REQUESTS)
def test_containerd_in_place_round_trip(text: str, request: RuntimeRequest) -> None:
    _round_trip(Runtime.CONTAINERD, text, request)


@SETTINGS
@given(text=crio_configs(), request=REQUESTS)
def test_crio_in_place_round_trip(text: str, request: RuntimeRequest) -> None:
    _round_trip(Runtime.CRIO, text, request)


@SETTINGS
@given(text=daemon_jsons(), request=REQUESTS)
def test_docker_round_trip(text: str, request: RuntimeRequest) -> None:
    _round_trip(Runtime.DOCKER, text, request)


@SETTINGS
@given(text=containerd_configs(), request=REQUESTS)
def test_containerd_drop_in_round_trip(text: str, request: RuntimeRequest) -> None:
    inputs = Inputs(
        config="/etc/c/config.toml", config_text=text, drop_in="/etc/c/conf.d/99-nvidia.toml"
    )
    try:
        plan = configure(Runtime.CONTAINERD, inputs, request)
    except CtkError as exc:
        assert exc.message == f"/etc/c/config.toml: {REFUSED}"
        return
    main_change = plan.files[0]
    assert main_change.after is not None
    written = Inputs(
        config="/etc/c/config.toml",
        config_text=main_change.after,
        record=main_change.record or (),
        drop_in="/etc/c/conf.d/99-nvidia.toml",
        drop_in_text=plan.files[-1].after,
    )
    assert configure(Runtime.CONTAINERD, written, request).changes == ()
    undone = unconfigure(Runtime.CONTAINERD, written, request.name)
    assert (undone.files[0].path, undone.files[0].after) == ("/etc/c/config.toml", text)


ANY_TOML = st.one_of(
    st.text(max_size=60),
    st.recursive(
        st.one_of(st.booleans(), st.integers(), st.text(max_size=6)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=2),
            st.dictionaries(
                st.sampled_from(
                    [
                        "plugins",
                        "io.containerd.grpc.v1.cri",
                        "containerd",
                        "runtimes",
                        "runc",
                        "options",
                        "default_runtime_name",
                        "version",
                        "imports",
                        "crio",
                        "runtime",
                        "default_runtime",
                        "enable_cdi",
                        "x",
                    ]
                ),
                inner,
                max_size=3,
            ),
        ),
        max_leaves=10,
    ).map(lambda v: tomlkit.dumps(v) if isinstance(v, dict) else str(v)),
)
ANY_JSON = st.one_of(
    st.text(max_size=40),
    JSON_VALUES.map(json.dumps),
    st.dictionaries(
        st.sampled_from(["runtimes", "features", "default-runtime", "exec-opts", "x"]),
        JSON_VALUES,
        max_size=3,
    ).map(json.dumps),
)


@pytest.mark.parametrize(
    ("runtime", "name", "extra"),
    [
        pytest.param("containerd", "config.toml", ["--drop-in-config="], id="containerd-in-place"),
        pytest.param("containerd", "config.toml", [], id="containerd-drop-in"),
        pytest.param("crio", "crio.conf", [], id="crio-drop-in"),
        pytest.param("docker", "daemon.json", [], id="docker"),
    ],
)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_input_succeeds_or_fails_cleanly(
    runtime: str,
    name: str,
    extra: list[str],
    *,
    data: st.DataObject,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = data.draw(ANY_JSON if runtime == "docker" else ANY_TOML)
    root = tmp_path_factory.mktemp("node")
    config = root / name
    config.write_bytes(text.encode())
    drop_in = extra or [f"--drop-in-config={root / 'conf.d' / '99-nvidia.toml'}"]
    if runtime == "docker":
        drop_in = []
    args = ["runtime", "configure", "--runtime", runtime, "--config", str(config), *drop_in]
    code = main(args)
    err = capsys.readouterr().err
    assert code in (0, 1), err
    if code == 1:
        assert err.startswith(f"error: {config}: "), err
        assert config.read_bytes() == text.encode()
        assert sorted(p.name for p in root.iterdir()) == [name]
    else:
        files = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        assert main(args) == 0
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == files
    capsys.readouterr()
