"""The image, built once per session (or taken from CTK_TEST_IMAGE_DIR, a build.sh OUTDIR)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.deploy.chart import BUILD_SH

TOOLS = ("mmdebstrap", "umoci", "skopeo")
BUILD_TIMEOUT = 900  # seconds: a cold base root is most of it


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
        [str(BUILD_SH), str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=BUILD_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (out / "build.log").write_text(f"{time.monotonic() - start:.0f} s\n{done.stderr}")
    return out
