"""The image, built once per session (or taken from CTK_TEST_IMAGE_DIR, a build.sh OUTDIR)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.deploy.chart import BUILD_SH
from tests.runners import PRIVATE_VAR_LIB

TOOLS = ("mmdebstrap", "umoci", "skopeo")
BUILD_TIMEOUT = 900  # seconds: a cold base root is most of it
HERE = Path(__file__).resolve().parent
HELM_ONLY = ("test_chart.py", "test_manifests.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what runs no code on the suite's own Python: the image (its own Debian python3, run
    under runc) and the chart (helm, kubernetes-validate). `.ci/run` runs these once, in the
    README's test command on the newest Python, and leaves them out of the run on the oldest."""
    for item in items:
        if HERE not in item.path.parents:
            continue
        if "image_dir" in getattr(item, "fixturenames", ()) or item.path.name in HELM_ONLY:
            item.add_marker(pytest.mark.same_on_every_python)


@pytest.fixture(scope="session")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("CTK_TEST_IMAGE_DIR")
    if given:
        out = Path(given)
        assert (out / "oci" / "index.json").is_file(), f"CTK_TEST_IMAGE_DIR={given}: no oci/ there"
        return out
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing or os.geteuid() != 0:
        pytest.skip(f"building the image needs root and {', '.join(TOOLS)} (.ci/run installs them)")
    out = tmp_path_factory.mktemp("image")
    start = time.monotonic()
    done = subprocess.run(
        [*PRIVATE_VAR_LIB, str(BUILD_SH), str(out)],  # skopeo's blob cache: not the machine's
        capture_output=True,
        text=True,
        check=False,
        timeout=BUILD_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (out / "build.log").write_text(f"{time.monotonic() - start:.0f} s\n{done.stderr}")
    return out
