"""The OCI hook protocol: the container state on stdin leads to the container's root."""

from __future__ import annotations

import json
import os
import sys

from ctk.hook.rootfs import HookError


def _load_json(text: str, where: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
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
