"""`ctk-hook`: OCI hooks called from CDI specs. Imports only the standard library (issue 6)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook subcommand and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    sys.stderr.write(f"ctk-hook: not implemented yet: {' '.join(args)}\n")
    return 2
