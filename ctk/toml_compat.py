"""The strict TOML reader: `tomllib` from Python 3.11 on, its backport `tomli` before."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover - exercised by CI's Python 3.10 run
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
