"""Write the package's systemd units and udev rule into debian/ as debhelper names them
(ctk.<name>.service, ctk.<name>.path, ctk.<name>.udev), with the content `ctk install` writes:
ctk.install.install_plan on the templates of ctk/data/units, `@CTK@` the packaged ctk.

    python3 debian/units.py /opt/venvs/ctk/bin/ctk debian

Runs from the top of the source tree with the build machine's python3 (ctk.install is pure, the
standard library only: no dependency of ctk is needed here).
"""

from __future__ import annotations

import sys
from pathlib import Path, PurePosixPath


def main(ctk_program: str, debian: Path) -> None:
    sys.path.insert(0, str(Path.cwd()))
    from ctk.install import UNIT_FOLDERS, install_plan

    units_dir = Path("ctk/data/units")
    units = {name: (units_dir / name).read_text() for name in UNIT_FOLDERS}
    plan = install_plan(
        prefix=PurePosixPath("/usr"), ctk_program=ctk_program, hook=b"", units=units
    )
    for item in plan:
        if item.path.suffix == ".rules":  # 71-ctk-dev-char.rules: dh_installudev --priority=71
            name = f"ctk.{item.path.stem.split('-', 1)[1]}.udev"
        elif item.path.suffix in (".service", ".path"):
            name = f"ctk.{item.path.name}"
        else:
            continue  # the hook: installed from the venv by debian/rules
        (debian / name).write_bytes(item.content)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
