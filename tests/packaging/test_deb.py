"""The Debian package (scripts/build-deb, packaging/debian): built here, installed with apt into
a clean Debian 12 root made with mmdebstrap (apt takes its dependencies from Debian's archive),
run there (`ctk --version`, the hook, `ctk cdi generate --mode management` on a fixture node,
`ctk doctor --root`), then purged: the root is as it was, file for file.

The root is a plain directory under the test's temporary folder, entered with chroot; nothing is
mounted (apt, dpkg and ctk need no /proc here), so nothing can leak onto the machine."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
import yaml

from ctk import __version__
from ctk.install import UNIT_FOLDERS, install_plan
from tests.nodes import SkipNode, materialised
from tests.packaging.conftest import REPO, run

pytestmark = [pytest.mark.integration, pytest.mark.same_on_every_python]

VENV = "/opt/venvs/ctk"
HOOK = "/usr/libexec/ctk/ctk-hook"
MIRROR = os.environ.get("CTK_DEB_TEST_MIRROR", "http://deb.debian.org/debian")
#: what apt and dpkg keep of their own (database, logs, caches): not ctk's to leave as it was
CHURN = ("var/lib/dpkg", "var/lib/apt", "var/log", "var/cache", "tmp", "srv")
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/root"}


def _needs() -> None:
    if os.geteuid() != 0:
        pytest.skip("building and installing the .deb into a root needs root (chroot, dpkg)")
    for tool in ("dpkg-buildpackage", "dh", "dh_virtualenv", "mmdebstrap"):
        if shutil.which(tool) is None:
            pytest.skip(
                f"{tool} is not installed (apt-get install debhelper dh-virtualenv mmdebstrap)"
            )


@pytest.fixture(scope="module")
def deb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _needs()
    out = tmp_path_factory.mktemp("deb")
    started = time.monotonic()
    run([str(REPO / "scripts/build-deb"), str(out)], timeout=900)
    print(f"build-deb: {time.monotonic() - started:.0f} s")
    (package,) = out.glob("ctk_*.deb")
    return package


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A clean Debian 12 root with apt (its package lists kept, for the dependencies)."""
    _needs()
    target = tmp_path / "root"
    started = time.monotonic()
    run(
        [
            "mmdebstrap", "--quiet", "--variant=apt", "--skip=cleanup/apt/lists",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr", "bookworm", str(target), MIRROR,
        ],
        timeout=600,
    )  # fmt: skip
    print(f"mmdebstrap: {time.monotonic() - started:.0f} s")
    return target


def _chroot(
    root: Path, *argv: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["chroot", str(root), *argv],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**ENV, **(env or {})},
    )
    if check:
        assert result.returncode == 0, (
            f"{argv}: {result.returncode}\n{result.stdout}{result.stderr}"
        )
    return result


def _tree(root: Path) -> dict[str, tuple[str, ...]]:
    """Every path of ``root`` but apt's and dpkg's own: its type and mode, a file's sha256, a
    link's target."""
    found: dict[str, tuple[str, ...]] = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel, d)) not in CHURN]
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            key = os.path.normpath(os.path.join(rel, name))
            if stat.S_ISLNK(info.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                found[key] = ("file", oct(info.st_mode), digest)
            else:
                found[key] = ("other", oct(info.st_mode))
    return found


@pytest.fixture
def node(root: Path, fake_nvml_library: Path) -> Iterator[PurePosixPath]:
    """Fixture node dgx-a100 (8 A100, MIG) under /srv/node of the root; its path as seen there."""
    try:
        with materialised("dgx-a100", root / "srv/node", fake_nvml_library):
            yield PurePosixPath("/srv/node")
    except SkipNode as exc:
        pytest.skip(str(exc))


def test_the_package_depends_on_the_interpreter_its_venv_runs(deb: Path) -> None:
    fields = run(["dpkg-deb", "--field", str(deb), "Depends", "Architecture", "Version"]).stdout
    listing = run(["dpkg-deb", "--contents", str(deb)]).stdout
    python = next(
        line.rsplit("/", 1)[1]
        for line in listing.splitlines()
        if f".{VENV}/bin/python3." in line and " -> " in line
    )  # opt/venvs/ctk/bin/python3.11 -> /usr/bin/python3.11
    depends = [d.strip() for d in fields.split("\n")[0].split(":", 1)[1].split(",")]
    assert python.startswith("python3.") and python in depends
    assert f"Version: {__version__}" in fields
    for path in (f".{VENV}/bin/ctk", f".{HOOK}", "./usr/bin/ctk -> /opt/venvs/ctk/bin/ctk"):
        assert path in listing
    assert f".{VENV}/bin/pip" not in listing


def test_install_run_and_purge_in_a_clean_debian_12_root(
    deb: Path, root: Path, node: PurePosixPath
) -> None:
    # Someone's spec that does not name ctk's hook, and state of ctk's (as `ctk runtime
    # configure` leaves records): the first must survive the purge byte for byte.
    (root / "etc/cdi").mkdir(parents=True)
    (root / "etc/cdi/other.yaml").write_text("cdiVersion: 0.5.0\nkind: example.com/x\n")
    shutil.copy(deb, root / "tmp/ctk.deb")
    before = _tree(root)

    started = time.monotonic()
    _chroot(root, "apt-get", "install", "-y", "-q", "-o", "Dpkg::Use-Pty=0",
            "--no-install-recommends", "/tmp/ctk.deb")  # fmt: skip
    print(f"apt-get install: {time.monotonic() - started:.0f} s")
    owned = _chroot(root, "dpkg", "-L", "ctk").stdout.splitlines()

    assert _chroot(root, "ctk", "--version").stdout == f"ctk {__version__}\n"
    hook = _chroot(root, "ctk", "hook", "--version")  # the venv's copy links to /usr/libexec
    assert hook.stdout == f"ctk-hook version {__version__}\n"
    assert os.readlink(root / VENV.lstrip("/") / "bin/python3").startswith("python3.")
    _check_units(root)

    fake = {"CTK_FAKE_NVML_TOPOLOGY": str(node / "nvml-topology.txt")}
    roots = ["--driver-root", f"{node}/root", "--dev-root", f"{node}/root"]
    _chroot(root, "ctk", "cdi", "generate", "--mode", "management", *roots,
            "-o", "/etc/cdi/nvidia.yaml", env=fake)  # fmt: skip
    spec = yaml.safe_load((root / "etc/cdi/nvidia.yaml").read_text())
    hooks = [h["path"] for d in [spec, *spec["devices"]] for h in _edits(d).get("hooks", [])]
    assert hooks and set(hooks) == {HOOK}  # the hook the package installed
    _chroot(root, "ctk", "cdi", "validate", "/etc/cdi/nvidia.yaml")
    doctor = _chroot(root, "ctk", "doctor", "--root", f"{node}/root", env=fake, check=False)
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr
    assert doctor.stdout.startswith(f"ctk doctor: host, root {node}/root")
    (root / "var/lib/ctk").mkdir()
    (root / "var/lib/ctk/record.json").write_text("{}\n")

    purge = _chroot(
        root, "apt-get", "purge", "--autoremove", "-y", "-q", "-o", "Dpkg::Use-Pty=0", "ctk"
    )  # with the dependencies apt installed for it
    assert "/etc/cdi/nvidia.yaml names /usr/libexec/ctk/ctk-hook" in purge.stderr
    left = [p for p in owned if p != "/." and os.path.lexists(root / p.lstrip("/"))]
    assert [p for p in left if not (root / p.lstrip("/")).is_dir()] == []
    after = _tree(root)
    differ = (before.keys() ^ after.keys()) | _changed(before, after)
    assert {k: (before.get(k), after.get(k)) for k in sorted(differ)} == {}
    assert sorted(os.listdir(root / "etc/cdi")) == ["other.yaml"]


def _edits(entry: dict[str, object]) -> dict[str, list[dict[str, str]]]:
    edits = entry.get("containerEdits", {})
    assert isinstance(edits, dict)
    return edits


def _changed(before: dict[str, tuple[str, ...]], after: dict[str, tuple[str, ...]]) -> set[str]:
    return {k for k in before.keys() & after.keys() if before[k] != after[k]}


def _check_units(root: Path) -> None:
    """The units and the rule are what `ctk install` writes for the packaged ctk, in the
    release's own folders, and enabled."""
    templates = {n: (REPO / "ctk/data/units" / n).read_text() for n in UNIT_FOLDERS}
    plan = install_plan(
        prefix=PurePosixPath("/usr"), ctk_program=f"{VENV}/bin/ctk", hook=b"", units=templates
    )
    for item in plan[1:]:
        folder = "lib/udev/rules.d" if item.path.suffix == ".rules" else "lib/systemd/system"
        assert (root / folder / item.path.name).read_bytes() == item.content, item.path.name
    wants = root / "etc/systemd/system/multi-user.target.wants"
    assert sorted(os.listdir(wants)) == [
        "ctk-cdi-refresh.path",
        "ctk-cdi-refresh.service",
        "ctk-dev-char-symlinks.service",
    ]
    assert stat.S_IMODE((root / HOOK.lstrip("/")).stat().st_mode) == 0o755
