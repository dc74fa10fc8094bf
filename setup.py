"""The one custom build step: compile the native `ctk-hook` (native/, Go) into ctk/_bin/, and tag
the wheel with the platform of the binary it carries.

Everything else is declared in pyproject.toml. A wheel carries the binary; an editable install
(`pip install -e .`) builds it into the source tree's ctk/_bin/ (ignored by git).

The wheel is `py3-none-<platform>`: pure Python, plus one static executable for one machine.
bdist_wheel's own `--plat-name` picks the platform, and with it the architecture the hook is
built for (`manylinux_2_17_aarch64`: arm64); without it, `CTK_HOOK_ARCH` (amd64, arm64, x86_64,
aarch64) or this machine decides, and the tag is the local `linux_<machine>`. scripts/build-dist
builds the published set (manylinux and musllinux, x86_64 and aarch64).
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


@cache
def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ctk_build_hook", HERE / "native/build_hook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BdistWheelForHook(bdist_wheel):
    """bdist_wheel whose platform tag and hook architecture agree (see the module's doc)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        builder = _builder()
        if self.plat_name_supplied:
            plat = self.plat_name.lower().replace("-", "_")
            found = [g for g, m in builder.MACHINES.items() if plat.endswith(f"_{m}")]
            if not plat.startswith(("linux_", "manylinux", "musllinux")) or not found:
                raise SystemExit(
                    f"bdist_wheel --plat-name {self.plat_name}: not a Linux x86_64 or aarch64 "
                    "platform; hint: e.g. manylinux_2_17_x86_64, musllinux_1_1_aarch64"
                )
            arch, setting = found[0], os.environ.get(builder.ARCH_SETTING, "")
            if setting and builder.goarch(setting) != arch:
                raise SystemExit(
                    f"bdist_wheel --plat-name {self.plat_name} is for {builder.machine(arch)} but "
                    f"{builder.ARCH_SETTING}={setting} asks for another architecture; "
                    f"hint: unset {builder.ARCH_SETTING} or make the two agree"
                )
        else:
            arch = builder.goarch()
            self.plat_name, self.plat_name_supplied = f"linux_{builder.machine(arch)}", True
        self.distribution.ctk_hook_goarch = arch  # type: ignore[attr-defined]  # read by build_py


class BuildPyWithHook(build_py):
    """build_py, then the native hook into the package's _bin folder."""

    def run(self) -> None:
        super().run()
        base = HERE if self.editable_mode else Path(self.build_lib)
        output = base / "ctk" / "_bin" / "ctk-hook"
        builder = _builder()
        arch = getattr(self.distribution, "ctk_hook_goarch", None) or builder.goarch()
        builder.build(output, version=self.distribution.get_version(), goarch=arch)
        output.chmod(0o755)


setup(cmdclass={"build_py": BuildPyWithHook, "bdist_wheel": BdistWheelForHook})
