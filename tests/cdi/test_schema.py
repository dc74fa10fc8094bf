"""The packaged JSON schema is the contract; the fast decoder agrees with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.cdi import schema as cdi_schema
from ctk.cdi.validate import validate_text
from ctk.cdi.version import KNOWN_VERSIONS, compare_versions

REPO = Path(__file__).parent.parent.parent
CASES = REPO / "tests" / "fixtures" / "conformance" / "cdi-cases"


def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(cdi_schema.schema())


def test_repo_schema_is_the_packaged_schema() -> None:
    packaged = REPO / "ctk" / "schemas" / "cdi.json"
    assert (REPO / "schemas" / "cdi.json").read_bytes() == packaged.read_bytes()
    assert cdi_schema.schema_text() == packaged.read_text(encoding="utf-8")


def test_schema_is_valid_draft7() -> None:
    jsonschema.Draft7Validator.check_schema(cdi_schema.schema())


def test_compiler_refuses_unknown_keywords() -> None:
    broken = {"type": "object", "additionalProperties": False, "oneOf": []}
    with pytest.raises(cdi_schema.SchemaError, match=r"unsupported schema keywords \['oneOf'\]"):
        cdi_schema._compile(broken, broken, "spec")


def _corpus() -> list[object]:
    files = sorted(CASES.rglob("*.json")) + sorted(CASES.rglob("*.yaml"))
    return [pytest.param(path, id=str(path.relative_to(CASES))) for path in files]


@pytest.mark.parametrize("path", _corpus())
def test_schema_errors_are_ours_too(path: Path) -> None:
    """Whatever the schema rejects, ctk rejects; whatever ctk accepts, the schema accepts."""
    text = path.read_text(encoding="utf-8")
    try:
        document = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        document = None  # the multi-document and broken files: ctk's own tests cover them
    if document is None:
        return
    ours = validate_text(text, path.name)
    if not _validator().is_valid(document):
        # The documented leniencies, read as CDI runtimes read them (with a warning): a field
        # spelled in other letter case, a YAML 1.2 octal number, an integer written as 1e3,
        # an unquoted 1:0 as a name.
        lenient = {"parse.key-case", "parse.octal", "parse.number-form", "parse.base60"}
        assert not ours.valid or lenient & {p.rule for p in ours.problems}
    if ours.valid:
        assert _validator().is_valid(ours.spec)


def _pick(good: list[object], bad: list[object]) -> st.SearchStrategy[object]:
    """Mostly good values, sometimes a bad one, so both verdicts are well exercised."""
    return st.sampled_from(good * 12 + bad)


_BAD = [None, True, 7, "", ["x"], {"a": "b"}]
_PATH = _pick(["/dev/x", "/usr/lib/a.so", "/x"], ["dev/x", *_BAD])
_ENV = st.lists(_pick(["A=1", "B=", "C=x=y"], ["A", "=1", 1]), max_size=2)
_UINT = _pick([0, 1, 44, 2**32 - 1], [-1, 2**32, "1", None, 1.5])
_NAME = _pick(["gpu0", "0", "a-b.c:d", "GPU-ab12"], ["-a", "a/b", "é", "no", False, 0, ""])


def _obj(
    required: dict[str, st.SearchStrategy[object]], optional: dict[str, st.SearchStrategy[object]]
) -> st.SearchStrategy[dict[str, object]]:
    return st.fixed_dictionaries(required, optional=optional)


_NODE = _obj(
    {"path": _PATH},
    {
        "type": _pick(["c", "b", "", "u", "p"], ["x", 1]),
        "permissions": _pick(["rw", "rwm", "", "mrw"], ["rwx", 4]),
        "major": _pick([195, 0, -1], ["195", None]),
        "uid": _UINT,
        "hostPath": _PATH,
        "fileMode": _UINT,
    },
)
_MOUNT = _obj(
    {"hostPath": _PATH, "containerPath": _PATH},
    {"options": st.lists(_pick(["ro", "bind"], [1]), max_size=2), "type": _pick(["bind"], [3])},
)
_HOOK = _obj(
    {"hookName": _pick(["prestart", "poststop", "createContainer"], ["bad", ""]), "path": _PATH},
    {
        "timeout": _pick([1, 30], [0, -1, "5"]),
        "env": _ENV,
        "args": st.lists(_pick(["a"], [2]), max_size=2),
    },
)
_NET = _obj(
    {
        "hostInterfaceName": _pick(["eth0", "eth1"], ["", 0]),
        "name": _pick(["n0", "n1"], ["", None]),
    },
    {},
)
_RDT = _obj(
    {},
    {
        "closID": _pick(["c1", "/"], [".", "a/b", 1]),
        "schemata": st.lists(_pick(["L3:0=f"], [1]), max_size=1),
        "enableMonitoring": _pick([True, False], ["yes"]),
    },
)
_ANNOTATIONS = st.dictionaries(
    _pick(["a", "example.com/x", "b.c"], ["", "/x", "a/b/c", "-x"]),
    _pick(["v"], [1, None]),
    max_size=2,
)
_EDITS = _obj(
    {},
    {
        "env": _ENV,
        "deviceNodes": st.lists(_NODE, max_size=2),
        "mounts": st.lists(_MOUNT, max_size=2),
        "hooks": st.lists(_HOOK, max_size=1),
        "netDevices": st.lists(_NET, max_size=2),
        "intelRdt": _RDT,
        "additionalGids": st.lists(_UINT, max_size=2),
    },
)
_DEVICE = _obj({"name": _NAME, "containerEdits": _EDITS}, {"annotations": _ANNOTATIONS})
_SPEC = _obj(
    {
        "cdiVersion": _pick(["1.1.0", "0.7.0", "0.5.0", "v1.1.0", "0.3.0"], ["0.2.0", "2.0", 1.1]),
        "kind": _pick(["example.com/gpu", "example.com/gpu.x"], ["bad", "a/3", "a/b/c"]),
        "devices": st.lists(_DEVICE, min_size=0, max_size=3),
    },
    {"containerEdits": _EDITS, "annotations": _ANNOTATIONS},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SPEC)
def test_generated_specs_agree_with_schema(document: dict[str, object]) -> None:
    ours = validate_text(json.dumps(document), "spec.json")
    if not _validator().is_valid(document):
        assert not ours.valid, document
    if ours.valid:
        assert _validator().is_valid(document)
        assert ours.spec == document


def _gated(feature: str) -> dict[str, object]:
    edits: dict[str, object] = {"env": ["A=1"]}
    device: dict[str, object] = {"name": "gpu0", "containerEdits": edits}
    spec: dict[str, object] = {"cdiVersion": "", "kind": "example.com/gpu", "devices": [device]}
    mount = {"hostPath": "/a", "containerPath": "/a"}
    changes: dict[str, Callable[[], None]] = {
        "mount-type": lambda: edits.update(mounts=[{**mount, "type": "bind"}]),
        "host-path": lambda: edits.update(deviceNodes=[{"path": "/dev/x", "hostPath": "/dev/y"}]),
        "digit-name": lambda: device.update(name="0"),
        "spec-annotations": lambda: spec.update(annotations={"a": "b"}),
        "device-annotations": lambda: device.update(annotations={"a": "b"}),
        "class-dot": lambda: spec.update(kind="example.com/gpu.x"),
        "spec-intel-rdt": lambda: spec.update(containerEdits={"intelRdt": {}}),
        "device-intel-rdt": lambda: edits.update(intelRdt={"closID": "c"}),
        "additional-gids": lambda: edits.update(additionalGids=[0]),
        "net-devices": lambda: edits.update(netDevices=[{"hostInterfaceName": "e", "name": "n"}]),
        "schemata": lambda: spec.update(containerEdits={"intelRdt": {"schemata": []}}),
        "monitoring": lambda: edits.update(intelRdt={"enableMonitoring": True}),
    }
    changes[feature]()
    return spec


@pytest.mark.parametrize(
    ("feature", "needs"),
    [
        pytest.param("mount-type", "0.4.0", id="mount-type"),
        pytest.param("host-path", "0.5.0", id="host-path"),
        pytest.param("digit-name", "0.5.0", id="digit-name"),
        pytest.param("spec-annotations", "0.6.0", id="spec-annotations"),
        pytest.param("device-annotations", "0.6.0", id="device-annotations"),
        pytest.param("class-dot", "0.6.0", id="class-dot"),
        pytest.param("spec-intel-rdt", "0.7.0", id="spec-intel-rdt"),
        pytest.param("device-intel-rdt", "0.7.0", id="device-intel-rdt"),
        pytest.param("additional-gids", "0.7.0", id="additional-gids"),
        pytest.param("net-devices", "1.1.0", id="net-devices"),
        pytest.param("schemata", "1.1.0", id="schemata"),
        pytest.param("monitoring", "1.1.0", id="monitoring"),
    ],
)
def test_version_gates_in_schema_and_code_agree(feature: str, needs: str) -> None:
    """For every released version, the schema's gates and ctk's minimum version give one verdict."""
    for declared in KNOWN_VERSIONS:
        for written in (declared, "v" + declared):
            document = _gated(feature)
            document["cdiVersion"] = written
            allowed = compare_versions(declared, needs) >= 0
            assert _validator().is_valid(document) is allowed, (written, feature)
            assert validate_text(json.dumps(document), "spec.json").valid is allowed, (
                written,
                feature,
            )
