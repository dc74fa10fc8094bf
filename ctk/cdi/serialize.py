"""A `Spec` as plain data, YAML or JSON, laid out like nvidia-ctk's specs.

Keys follow the CDI Go structs' order (`cdiVersion`, `kind`, `devices`, `containerEdits`; in
edits `env`, `deviceNodes`, `hooks`, `mounts`, `additionalGids`), empty values are left out. YAML
starts with `---` and indents by four the way go-yaml v3 does (what is under a key of a
sequence item is indented from the item's dash); JSON is one compact line.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ctk.cdi.model import ContainerEdits, DeviceNode, Hook, Mount, Spec
from ctk.cdi.options import SpecFormat
from ctk.cdi.version import minimum_version

JSONValue = Any  # plain data: dict, list, str, int


def _node(node: DeviceNode) -> dict[str, JSONValue]:
    return _compact(
        {
            "path": node.path,
            "hostPath": node.host_path,
            "major": node.major,
            "minor": node.minor,
            "fileMode": node.file_mode,
            "permissions": node.permissions,
            "gid": node.gid,
        }
    )


def _hook(hook: Hook) -> dict[str, JSONValue]:
    return _compact(
        {
            "hookName": hook.hook_name,
            "path": hook.path,
            "args": list(hook.args),
            "env": list(hook.env),
        }
    )


def _mount(mount: Mount) -> dict[str, JSONValue]:
    return _compact(
        {
            "hostPath": mount.host_path,
            "containerPath": mount.container_path,
            "type": mount.type,
            "options": list(mount.options),
        }
    )


def edits_data(edits: ContainerEdits) -> dict[str, JSONValue]:
    """`containerEdits` as plain data."""
    return _compact(
        {
            "env": list(edits.env),
            "deviceNodes": [_node(n) for n in edits.device_nodes],
            "hooks": [_hook(h) for h in edits.hooks],
            "mounts": [_mount(m) for m in edits.mounts],
            "additionalGids": list(edits.additional_gids),
        }
    )


def spec_data(spec: Spec) -> dict[str, JSONValue]:
    """The whole spec as plain data, in the order it is written."""
    devices = []
    for device in spec.devices:
        entry: dict[str, JSONValue] = {"name": device.name}
        if device.annotations:
            entry["annotations"] = dict(device.annotations)
        entry["containerEdits"] = edits_data(device.edits)
        devices.append(entry)
    data: dict[str, JSONValue] = {"cdiVersion": spec.cdi_version, "kind": spec.kind}
    data["devices"] = devices
    common = edits_data(spec.edits)
    if common:
        data["containerEdits"] = common
    return data


def cdi_version(spec: Spec) -> str:
    """The lowest CDI version that can express ``spec`` (0.5.0 for ordinary nodes)."""
    return minimum_version(spec_data(spec))


def _compact(values: dict[str, JSONValue]) -> dict[str, JSONValue]:
    return {k: v for k, v in values.items() if v is not None and v not in ([], {})}


def render(spec: Spec, spec_format: SpecFormat) -> str:
    """The spec as text in ``spec_format``."""
    return render_data(spec_data(spec), spec_format)


def render_data(data: dict[str, JSONValue], spec_format: SpecFormat) -> str:
    """Plain spec data (keys in the order given) as text in ``spec_format``."""
    if spec_format is SpecFormat.JSON:
        return json.dumps(data, separators=(",", ":")) + "\n"
    return "---\n" + "".join(_yaml(data, 0)) + ""


# --- a small YAML emitter for plain data: exact layout, nothing else to configure ------------

# The characters ctk ever writes unquoted (everything else is double-quoted, like nvidia-ctk's
# output of the same text): a narrower alphabet than YAML allows, so that every CDI reader, not
# only a YAML 1.1 one, takes the text as it is. Within it, PyYAML decides (`_is_plain`).
_PLAIN = re.compile(r"[A-Za-z0-9_./+=@%,:-][A-Za-z0-9_./+=@%,: -]*")  # fullmatch


@functools.lru_cache(maxsize=4096)
def _scalar(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if _PLAIN.fullmatch(value) and _is_plain(value):
        return value
    return '"' + "".join(map(_escape, value)) + '"'


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    """One character inside a YAML double-quoted scalar."""
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    printable = 0x20 <= code < 0x7F or (
        code >= 0xA0 and not 0xD800 <= code < 0xE000 and code not in (0x2028, 0x2029, 0xFEFF)
    )
    if printable and code not in (0xFFFE, 0xFFFF):
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@functools.cache
def _dumper() -> Any:
    """PyYAML's safe dumper: its emitter and its YAML 1.1 resolver, asked about one scalar."""
    import io

    import yaml

    return yaml.SafeDumper(io.StringIO())


_STR = "tag:yaml.org,2002:str"


def _is_plain(text: str) -> bool:
    """Whether PyYAML would write ``text`` as a plain scalar in a block mapping's value.

    Its emitter says whether the text may stand plain there (not ``a: b``, ``a #b``, ``- x``,
    ``---``, a trailing space or colon...); its resolver, whether a reader would take it back
    as a string and not as a bool, number, null, date or merge key (``no``, ``0x1f``, ``1:30``,
    ``2001-12-14``, ``~``, ``<<``).
    """
    import yaml

    dumper = _dumper()
    analysis = dumper.analyze_scalar(text)
    if not analysis.allow_block_plain:  # (the alphabet keeps out empty and multi-line text)
        return False
    return bool(dumper.resolve(yaml.ScalarNode, text, (True, False)) == _STR)


def _yaml(value: JSONValue, indent: int, nested: int | None = None) -> list[str]:
    """A mapping with keys at ``indent``; what is under a key goes to ``nested`` (+4 default).

    In a sequence item the keys follow `- ` (dash column + 2) while what is under them is
    indented from the dash column, as go-yaml v3 with indent 4 (nvidia-ctk) lays it out.
    """
    pad = " " * indent
    inner = indent + 4 if nested is None else nested
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, dict):
            lines.append(f"{pad}{key}:\n")
            lines += _yaml(item, inner)
        elif isinstance(item, list):
            lines.append(f"{pad}{key}:\n")
            lines += _sequence(item, inner)
        else:
            lines.append(f"{pad}{key}: {_scalar(item)}\n")
    return lines


def _sequence(items: list[JSONValue], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for item in items:
        if isinstance(item, dict):
            body = _yaml(item, indent + 2, indent + 4)
            lines.append(f"{pad}- {body[0].lstrip()}")
            lines += body[1:]
        else:
            lines.append(f"{pad}- {_scalar(item)}\n")
    return lines
