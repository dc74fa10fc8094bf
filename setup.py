"""The one custom build step: compile the native `ctk-hook` (native/, Go) into ctk/_bin/.

Everything else is declared in pyproject.toml. A wheel carries the binary; an editable install
(`pip install -e .`) builds it into the source tree's ctk/_bin/ (ignored by git).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _build_hook(output: Path, version: str) -> None:
    spec = importlib.util.spec_from_file_location("ctk_build_hook", HERE / "native/build_hook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(output, version=version)


class BuildPyWithHook(build_py):
    """build_py, then the native hook into the package's _bin folder."""

    def run(self) -> None:
        super().run()
        base = HERE if self.editable_mode else Path(self.build_lib)
        output = base / "ctk" / "_bin" / "ctk-hook"
        _build_hook(output, self.distribution.get_version())
        output.chmod(0o755)


setup(cmdclass={"build_py": BuildPyWithHook})
