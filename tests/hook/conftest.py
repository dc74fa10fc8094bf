"""Fixtures for the hook tests: the fake driver (tests/fake_nvml), for specs made by generate."""

import shutil

import pytest

from tests.fake_nvml.fixtures import fake_node, fake_nvml_library
from tests.hook.native import RESOLVER_ENV

__all__ = ["fake_node", "fake_nvml_library", "resolver"]


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test twice: with openat2(RESOLVE_IN_ROOT), and with openat2 refused by the kernel
    (strace injects ENOSYS), where the hook falls back to its O_PATH|O_NOFOLLOW walk."""
    if request.param == "walk":
        if shutil.which("strace") is None:
            pytest.skip("strace is not installed (apt-get install strace)")
        monkeypatch.setenv(RESOLVER_ENV, "walk")
    return str(request.param)
