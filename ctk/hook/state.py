"""The OCI hook protocol: the container state on stdin leads to the container's root."""

import os
import sys

from ctk.hook.rootfs import HookError

_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _ScanContext:
    """The settings CPython's C JSON scanner reads from a decoder: json.loads' defaults."""

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = _CONSTANTS.__getitem__
        self.memo: dict[str, str] = {}


def _skip_space(text: str, index: int) -> int:
    rest = text[index:]
    return index + len(rest) - len(rest.lstrip(" \t\n\r"))


def loads(text: str) -> object:
    """`json.loads` for the hook: the same C scanner, without importing the `json` package.

    `json` costs about 15% of the hook's start-up (its decoder compiles regular expressions at
    import); its C accelerator `_json` parses the same way. Errors are `ValueError`s with
    json's message and position; where `_json` is missing, `json.loads` is used.
    """
    try:
        import _json
    except ImportError:  # pragma: no cover - an interpreter without the C accelerator
        import json

        return json.loads(text)
    # typeshed types the context as a scanner; any object with the decoder's attributes works
    scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]
    start = _skip_space(text, 0)
    try:
        value, end = scan(text, start)
    except Exception:  # the scanner raises SystemError when json.decoder is not imported yet
        # Invalid input is rare and not time-critical: let json itself name the problem.
        return _loads_slow(text)
    end = _skip_space(text, end)
    if end != len(text):
        return _loads_slow(text)
    return value


def _loads_slow(text: str) -> object:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONError(exc.msg, text, exc.pos) from None


class JSONError(ValueError):
    """Invalid JSON, with json's message and the line and column."""

    def __init__(self, msg: str, text: str, pos: int) -> None:
        self.msg, self.pos = msg, pos
        self.lineno = text.count("\n", 0, pos) + 1
        self.colno = pos - text.rfind("\n", 0, pos)
        super().__init__(f"{msg}: line {self.lineno} column {self.colno} (char {pos})")


def _load_json(text: str, where: str) -> object:
    try:
        return loads(text)
    except JSONError as exc:
        raise HookError(
            f"{where}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc


def read_state(container_spec: str | None) -> dict[str, object]:
    """Read the OCI state JSON from ``container_spec`` (a file) or, when empty or '-', stdin."""
    if container_spec in (None, "", "-"):
        where = "container state on stdin"
        text = sys.stdin.read()
    else:
        where = container_spec
        try:
            with open(container_spec, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise HookError(
                f"{container_spec}: cannot read container state: {exc.strerror}"
            ) from exc
    if not text.strip():
        raise HookError(f"{where}: empty; an OCI runtime passes the container state here")
    state = _load_json(text, where)
    if not isinstance(state, dict):
        raise HookError(f"{where}: not an OCI container state (expected a JSON object)")
    return state


def container_root(state: dict[str, object]) -> str:
    """Return the host path of the container's root filesystem named by ``state``."""
    bundle = state.get("bundle")
    if not isinstance(bundle, str) or not bundle:
        raise HookError("container state has no 'bundle' path")
    bundle = os.path.abspath(bundle)
    config_path = os.path.join(bundle, "config.json")
    try:
        with open(config_path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise HookError(f"{config_path}: cannot read the bundle's config: {exc.strerror}") from exc
    config = _load_json(text, config_path)
    root = config.get("root") if isinstance(config, dict) else None
    root_path = root.get("path") if isinstance(root, dict) else None
    if not isinstance(root_path, str) or not root_path:
        raise HookError(f"{config_path}: has no root.path")
    rootfs = os.path.realpath(os.path.join(bundle, root_path))
    if rootfs == "/":
        raise HookError(f"{config_path}: root.path is the host's /; refusing to change it")
    if not os.path.isdir(rootfs):
        raise HookError(f"{rootfs}: the container root (root.path) is not a directory")
    return rootfs
