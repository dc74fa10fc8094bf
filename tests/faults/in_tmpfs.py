"""Run ctk on a small tmpfs that is full (ENOSPC) or read-only (EROFS); print what happened.

Run inside a private mount namespace (`unshare -m --propagation private python3 -m
tests.faults.in_tmpfs REQUEST`): the tmpfs disappears with the namespace, so the snapshots are
taken here and the result comes back as one JSON line on stdout.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from tests.faults.harness import changes, run_ctk, snapshot


def _fill(directory: Path) -> None:
    fd = os.open(directory / ".filler", os.O_WRONLY | os.O_CREAT, 0o644)
    chunk = b"\0" * 4096
    try:
        while True:
            os.write(fd, chunk)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)


def main(request: dict[str, object]) -> None:
    case = Path(str(request["case"]))
    case.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-n", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(case)], check=True
    )
    env = {"CTK_STATE_DIR": str(case / "state")}
    for name, text in dict(request["files"]).items():  # type: ignore[call-overload]
        (case / name).parent.mkdir(parents=True, exist_ok=True)
        (case / name).write_text(text)
    for argv in list(request["before"]):  # type: ignore[call-overload]
        assert run_ctk(argv, cwd=case, env=env).code == 0
    if request["fault"] == "enospc":
        _fill(case)
    else:
        subprocess.run(["mount", "-n", "-o", "remount,ro", str(case)], check=True)
    first = snapshot(case)
    outcome = run_ctk(list(request["argv"]), cwd=case, env=env)  # type: ignore[call-overload]
    result = {**asdict(outcome), "changed": changes(first, snapshot(case))}
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    os.umask(0o022)
    main(json.loads(sys.argv[1]))
