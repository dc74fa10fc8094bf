"""ctk.host.driver: finding the driver's libraries, also through the root's ld.so.cache."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.host.driver import SearchPaths, driver_version_from_files, read_driver
from ctk.host.ldcache import find_library, parse_ld_cache, read_ld_cache
from ctk.host.root import HostRoot
from tests.nodes import ld_cache_bytes

LDCONFIG = shutil.which("ldconfig") or "/sbin/ldconfig"


@pytest.mark.integration
@pytest.mark.skipif(not os.path.exists(LDCONFIG), reason="needs ldconfig")
def test_library_found_through_the_roots_ld_so_cache(
    tmp_path: Path, fake_nvml_library: Path
) -> None:
    root = tmp_path / "driver"
    libdir = root / "opt/nvidia/lib"
    libdir.mkdir(parents=True)
    shutil.copy(fake_nvml_library, libdir / "libnvidia-ml.so.550.54.15")
    (root / "etc").mkdir()
    (root / "etc/ld.so.conf").write_text("/opt/nvidia/lib\n")
    subprocess.run([LDCONFIG, "-r", str(root)], check=True, timeout=60)

    assert read_ld_cache(HostRoot(root)) == (
        ("libnvidia-ml.so.1", "/opt/nvidia/lib/libnvidia-ml.so.1"),
    )
    assert find_library(root, "libnvidia-ml.so.1") == libdir / "libnvidia-ml.so.550.54.15"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(["usr/lib64/libcuda.so.535.161.08"], "535.161.08", id="rhel-lib64"),
        pytest.param(
            [
                "usr/lib/x86_64-linux-gnu/libcuda.so.1",
                "usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
            ],
            "550.54.15",
            id="debian",
        ),
        pytest.param(["usr/lib/x86_64-linux-gnu/libcuda.so.1"], None, id="only-soname"),
        pytest.param([], None, id="no-driver"),
    ],
)
def test_driver_version_from_files(files: list[str], expected: str | None, tmp_path: Path) -> None:
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    assert driver_version_from_files(tmp_path) == expected


def test_library_link_out_of_the_root_is_not_followed(tmp_path: Path) -> None:
    libdir = tmp_path / "usr/lib64"
    libdir.mkdir(parents=True)
    outside = tmp_path.parent / "outside-libnvidia-ml.so.1"
    outside.write_bytes(b"")
    (libdir / "libnvidia-ml.so.1").symlink_to("../../../" + outside.name)
    assert find_library(tmp_path, "libnvidia-ml.so.1") is None


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")


V = "550.54.15"
UBUNTU = "usr/lib/x86_64-linux-gnu"


@pytest.mark.parametrize(
    ("files", "mounted", "links"),
    [
        pytest.param(
            [
                f"{UBUNTU}/nvidia/xorg/nvidia_drv.so",
                f"{UBUNTU}/nvidia/xorg/libglxserver_nvidia.so.{V}",
            ],
            [
                f"/{UBUNTU}/nvidia/xorg/nvidia_drv.so",
                f"/{UBUNTU}/nvidia/xorg/libglxserver_nvidia.so.{V}",
            ],
            [(f"libglxserver_nvidia.so.{V}", f"/{UBUNTU}/nvidia/xorg/libglxserver_nvidia.so")],
            id="ubuntu-packages",
        ),
        pytest.param(
            [
                "usr/lib/xorg/modules/drivers/nvidia_drv.so",
                f"usr/lib/xorg/modules/extensions/libglxserver_nvidia.so.{V}",
            ],
            [
                "/usr/lib/xorg/modules/drivers/nvidia_drv.so",
                f"/usr/lib/xorg/modules/extensions/libglxserver_nvidia.so.{V}",
            ],
            [
                (
                    f"libglxserver_nvidia.so.{V}",
                    "/usr/lib/xorg/modules/extensions/libglxserver_nvidia.so",
                )
            ],
            id="run-installer-split",
        ),
        pytest.param(
            [
                "usr/lib64/xorg/modules/drivers/nvidia_drv.so",
                "usr/X11R6/lib/modules/drivers/nvidia_drv.so",
                f"usr/lib/xorg/modules/updates/extensions/libglxserver_nvidia.so.{V}",
            ],
            [
                "/usr/lib64/xorg/modules/drivers/nvidia_drv.so",
                f"/usr/lib/xorg/modules/updates/extensions/libglxserver_nvidia.so.{V}",
            ],
            [
                (
                    f"libglxserver_nvidia.so.{V}",
                    "/usr/lib/xorg/modules/updates/extensions/libglxserver_nvidia.so",
                )
            ],
            id="first-hit-each",
        ),
        pytest.param(
            ["usr/lib/xorg/modules/extensions/libglxserver_nvidia.so.535.161.08"],
            [],
            [],
            id="other-version",
        ),
    ],
)
def test_xorg_modules_are_found_one_by_one(
    files: list[str], mounted: list[str], links: list[tuple[str, str]], tmp_path: Path
) -> None:
    _tree(tmp_path, [f"{UBUNTU}/libcuda.so.{V}", *files])
    facts = read_driver(tmp_path, tmp_path, version=V)
    assert ([f.container_path for f in facts.graphics], list(facts.graphics_links)) == (
        mounted,
        links,
    )


def test_vulkan_files_at_the_driver_root_are_mounted_under_etc(tmp_path: Path) -> None:
    """GKE keeps the Vulkan ICD in <driver root>/vulkan; /etc and /usr/share come first."""
    _tree(
        tmp_path,
        [
            "vulkan/icd.d/nvidia_icd.json",
            "usr/share/vulkan/icd.d/nvidia_icd.json",
            "vulkan/implicit_layer.d/nvidia_layers.json",
        ],
    )
    facts = read_driver(tmp_path, tmp_path, version=V)
    assert [(f.host_path, f.container_path) for f in facts.graphics] == [
        (f"{tmp_path}/usr/share/vulkan/icd.d/nvidia_icd.json", "/etc/vulkan/icd.d/nvidia_icd.json"),
        (
            f"{tmp_path}/vulkan/implicit_layer.d/nvidia_layers.json",
            "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
        ),
    ]


def test_firmware_from_the_custom_path_and_lib_firmware(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        [
            f"opt/fw/nvidia/{V}/gsp_ga10x.bin",
            f"lib/firmware/nvidia/{V}/gsp_tu10x.bin",
            f"lib/firmware/nvidia/{V}/README",
            "lib/firmware/nvidia/535.161.08/gsp_ga10x.bin",
        ],
    )
    (tmp_path / "sys/module/firmware_class/parameters").mkdir(parents=True)
    (tmp_path / "sys/module/firmware_class/parameters/path").write_text("/opt/fw\n")
    facts = read_driver(tmp_path, tmp_path, version=V)
    assert [f.container_path for f in facts.firmware] == [
        f"/opt/fw/nvidia/{V}/gsp_ga10x.bin",
        f"/lib/firmware/nvidia/{V}/gsp_tu10x.bin",
    ]


def test_library_search_path_comes_first(tmp_path: Path) -> None:
    _tree(tmp_path, [f"opt/driver/lib/libcuda.so.{V}", f"{UBUNTU}/libcuda.so.{V}"])
    search = SearchPaths(libraries=("/opt/driver/lib",))
    facts = read_driver(tmp_path, tmp_path, version=V, search=search)
    assert (facts.library_dirs, [f.container_path for f in facts.libraries]) == (
        ("/opt/driver/lib", f"/{UBUNTU}"),
        [f"/opt/driver/lib/libcuda.so.{V}", f"/{UBUNTU}/libcuda.so.{V}"],
    )
    assert driver_version_from_files(tmp_path / "opt", ("/driver/lib",)) == V


def test_config_search_path_replaces_the_config_dirs(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        [
            "usr/share/glvnd/egl_vendor.d/10_nvidia.json",
            "opt/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json",
            "opt/nvidia/share/vulkan/icd.d/nvidia_icd.json",
        ],
    )
    facts = read_driver(
        tmp_path, tmp_path, version=V, search=SearchPaths(configs=("/opt/nvidia/share",))
    )
    assert [(f.host_path, f.container_path) for f in facts.graphics] == [
        (
            f"{tmp_path}/opt/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json",
            "/opt/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json",
        ),
        (
            f"{tmp_path}/opt/nvidia/share/vulkan/icd.d/nvidia_icd.json",
            "/etc/vulkan/icd.d/nvidia_icd.json",
        ),
    ]


@pytest.mark.parametrize(
    ("link", "mounted"),
    [
        pytest.param(
            f"/opt/nvidia/lib/libcuda.so.{V}",
            [(f"opt/nvidia/lib/libcuda.so.{V}", f"/{UBUNTU}/libcuda.so.{V}")],
            id="absolute-link-inside-the-root",
        ),
        pytest.param(
            f"../../../opt/nvidia/lib/libcuda.so.{V}",
            [(f"opt/nvidia/lib/libcuda.so.{V}", f"/{UBUNTU}/libcuda.so.{V}")],
            id="relative-link",
        ),
        pytest.param(
            "/opt/nvidia/lib/current",  # a link to a link, both resolved inside the root
            [(f"opt/nvidia/lib/libcuda.so.{V}", f"/{UBUNTU}/libcuda.so.{V}")],
            id="link-to-a-link",
        ),
        pytest.param("/opt/nvidia/lib/missing.so", [], id="dangling"),
        pytest.param("/opt/nvidia/lib", [], id="link-to-a-directory"),
        pytest.param("../../../../outside/libcuda.so", [], id="leads-out-of-the-root"),
    ],
)
def test_library_links_resolve_inside_the_driver_root(
    link: str, mounted: list[tuple[str, str]], tmp_path: Path
) -> None:
    """QA 5: libcuda.so.<version> as a link was left out of the spec without a word."""
    root = tmp_path / "driver"
    _tree(root, [f"opt/nvidia/lib/libcuda.so.{V}", f"{UBUNTU}/libnvidia-ml.so.{V}"])
    (root / "opt/nvidia/lib/current").symlink_to(f"libcuda.so.{V}")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/libcuda.so").write_bytes(b"")
    (root / UBUNTU / f"libcuda.so.{V}").symlink_to(link)
    (root / UBUNTU / "libcuda.so.1").symlink_to(f"libcuda.so.{V}")
    facts = read_driver(root, root, version=V)
    expected = [(str(root / host), container) for host, container in mounted]
    expected.append((f"{root}/{UBUNTU}/libnvidia-ml.so.{V}", f"/{UBUNTU}/libnvidia-ml.so.{V}"))
    assert [(f.host_path, f.container_path) for f in facts.libraries] == expected
    soname = [(f"libcuda.so.{V}", f"/{UBUNTU}/libcuda.so.1")] if mounted else []
    assert list(facts.soname_links) == soname


def test_a_directory_with_only_dangling_library_links_is_no_library_dir(tmp_path: Path) -> None:
    _tree(tmp_path, [f"{UBUNTU}/libcuda.so.{V}"])
    (tmp_path / "usr/lib64").mkdir()
    (tmp_path / "usr/lib64" / f"libcuda.so.{V}").symlink_to(f"/opt/gone/libcuda.so.{V}")
    facts = read_driver(tmp_path, tmp_path, version=V)
    assert (facts.library_dirs, [f.container_path for f in facts.libraries]) == (
        (f"/{UBUNTU}",),
        [f"/{UBUNTU}/libcuda.so.{V}"],
    )


GOOD = [("libnvidia-ml.so.1", "/opt/nvidia/lib/libnvidia-ml.so.1"), ("libc.so.6", "/lib/libc.so.6")]


def _bad_offset(data: bytes) -> bytes:
    """The first entry's path offset points past the end of the file."""
    row = 48
    return data[: row + 8] + struct.pack("<I", len(data) + 100) + data[row + 12 :]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(ld_cache_bytes(GOOD), tuple(GOOD), id="good"),
        pytest.param(
            ld_cache_bytes(GOOD, b"ld.so-1.7.0" + bytes(5)), tuple(GOOD), id="after-old-part"
        ),
        pytest.param(_bad_offset(ld_cache_bytes(GOOD)), (), id="offset-past-the-end"),
        pytest.param(ld_cache_bytes(GOOD)[:-1], (), id="last-string-not-terminated"),
        pytest.param(ld_cache_bytes(GOOD)[:60], (), id="table-cut-short"),
        pytest.param(ld_cache_bytes(GOOD)[:30], (), id="header-cut-short"),
        pytest.param(
            ld_cache_bytes([("libx.so.1", "/x")]).replace(b"/x\0", b"/\xff\0"), (), id="not-utf8"
        ),
        pytest.param(ld_cache_bytes([("libx.so.1", "relative/libx.so.1")]), (), id="relative-path"),
        pytest.param(b"glibc-ld.so.cache1.1" + b"\xff" * 60, (), id="garbage-count"),
        pytest.param(b"", (), id="empty"),
    ],
)
def test_damaged_ld_so_cache_gives_no_entries(data: bytes, expected: tuple[object, ...]) -> None:
    """Review 6: a damaged cache raised ValueError (an internal error in generate and doctor)."""
    assert parse_ld_cache(data) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=400),
        st.binary(max_size=300).map(lambda b: b"glibc-ld.so.cache1.1" + b),
        st.tuples(st.integers(0, 400), st.binary(max_size=8), st.integers(0, 400)).map(
            lambda t: ld_cache_bytes(GOOD)[: t[0]] + t[1] + ld_cache_bytes(GOOD)[t[0] + t[2] :]
        ),
    )
)
def test_any_bytes_as_ld_so_cache_never_raise(data: bytes) -> None:
    entries = parse_ld_cache(data)
    assert all(isinstance(n, str) and p.startswith("/") for n, p in entries)


def test_damaged_ld_so_cache_in_the_root_means_not_found(tmp_path: Path) -> None:
    """The library is only reachable through the cache; a damaged cache: not found, no crash."""
    _tree(tmp_path, ["opt/nvidia/lib/libnvidia-ml.so.1"])
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/ld.so.cache").write_bytes(ld_cache_bytes(GOOD))
    assert find_library(tmp_path, "libnvidia-ml.so.1") == (
        tmp_path / "opt/nvidia/lib/libnvidia-ml.so.1"
    )
    (tmp_path / "etc/ld.so.cache").write_bytes(_bad_offset(ld_cache_bytes(GOOD)))
    assert find_library(tmp_path, "libnvidia-ml.so.1") is None


def _program(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


WRAPPER = '#!/bin/sh\nexec /usr/local/nvidia/bin/nvidia-smi "$@"\n'


@pytest.mark.parametrize(
    ("programs", "library_dir", "expected"),
    [
        pytest.param(
            {"usr/bin/nvidia-smi": WRAPPER, "usr/local/nvidia/bin/nvidia-smi": "\x7fELF"},
            "usr/local/nvidia/lib64",
            [("usr/local/nvidia/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="wrapper-stands-for-the-prefix-binary",
        ),
        pytest.param(
            {"usr/bin/nvidia-smi": WRAPPER, "usr/local/nvidia/bin/nvidia-smi": "\x7fELF"},
            "usr/local/nvidia/lib",
            [("usr/local/nvidia/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="prefix-lib-dir",
        ),
        pytest.param(
            {"usr/bin/nvidia-smi": WRAPPER, "opt/nv/bin/nvidia-smi": "\x7fELF"},
            "opt/nv/libs",
            [("usr/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="no-bin-beside-another-dir-name",
        ),
        pytest.param(
            {"usr/bin/nvidia-smi": WRAPPER},
            "usr/local/nvidia/lib64",
            [("usr/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="a-lone-script-is-mounted",
        ),
        pytest.param(
            {"usr/bin/nvidia-smi": WRAPPER, "usr/local/bin/nvidia-smi": WRAPPER},
            "usr/local/nvidia/lib64",
            [("usr/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="two-scripts-the-first",
        ),
        pytest.param(
            {"usr/bin/nvidia-smi": "\x7fELF", "usr/local/nvidia/bin/nvidia-smi": "\x7fELF"},
            "usr/local/nvidia/lib64",
            [("usr/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="a-program-first-is-kept",
        ),
        pytest.param(
            {"usr/local/nvidia/bin/nvidia-smi": "\x7fELF"},
            "usr/local/nvidia/lib64",
            [("usr/local/nvidia/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi")],
            id="only-under-the-prefix",
        ),
        pytest.param(
            {"usr/bin/nvidia-smi": "#", "usr/local/nvidia/bin/nvidia-smi": "\x7fELF"},
            "usr/local/nvidia/lib64",
            [("usr/bin/nvidia-smi", "/usr/bin/nvidia-smi")],
            id="one-hash-is-no-script",
        ),
    ],
)
def test_binaries_pass_over_wrapper_scripts(
    programs: dict[str, str], library_dir: str, expected: list[tuple[str, str]], tmp_path: Path
) -> None:
    """Seen on an H200 VM: /usr/bin/nvidia-smi a script that execs /usr/local/nvidia/bin's."""
    _tree(tmp_path, [f"{library_dir}/libcuda.so.{V}"])
    for name, text in programs.items():
        _program(tmp_path / name, text)
    cache = [("libcuda.so.1", f"/{library_dir}/libcuda.so.1")]
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/ld.so.cache").write_bytes(ld_cache_bytes(cache))
    facts = read_driver(tmp_path, tmp_path, version=V)
    assert facts.library_dirs == (f"/{library_dir}",)
    assert [(f.host_path, f.container_path) for f in facts.binaries] == [
        (f"{tmp_path}/{host}", container) for host, container in expected
    ]


EGL = "glvnd/egl_vendor.d/10_nvidia.json"
LAYER = "vulkan/implicit_layer.d/nvidia_layers.json"


@pytest.mark.parametrize(
    ("library_dir", "files", "links", "expected"),
    [
        pytest.param(
            "usr/local/nvidia/lib64",
            [f"usr/local/nvidia/share/{EGL}"],
            {f"usr/share/{EGL}": f"/usr/local/nvidia/share/{EGL}"},
            [(f"usr/local/nvidia/share/{EGL}", f"/usr/share/{EGL}")],
            id="a-link-is-mounted-at-its-own-path",
        ),
        pytest.param(
            "usr/local/nvidia/lib64",
            [f"usr/local/nvidia/share/{EGL}"],
            {},
            [(f"usr/local/nvidia/share/{EGL}", f"/usr/share/{EGL}")],
            id="only-under-the-prefix-mounted-under-usr-share",
        ),
        pytest.param(
            "usr/local/nvidia/lib64",
            [f"usr/local/nvidia/share/{LAYER}"],
            {},
            [(f"usr/local/nvidia/share/{LAYER}", f"/etc/{LAYER}")],
            id="vulkan-layer-under-the-prefix",
        ),
        pytest.param(
            "usr/local/nvidia/lib64",
            [f"usr/share/{EGL}", f"usr/local/nvidia/share/{EGL}"],
            {},
            [(f"usr/share/{EGL}", f"/usr/share/{EGL}")],
            id="the-config-dirs-come-first",
        ),
        pytest.param(
            "opt/nv/libs",
            [f"opt/nv/share/{EGL}"],
            {},
            [],
            id="no-share-beside-another-dir-name",
        ),
    ],
)
def test_graphics_configs_of_a_driver_prefix(
    library_dir: str,
    files: list[str],
    links: dict[str, str],
    expected: list[tuple[str, str]],
    tmp_path: Path,
) -> None:
    """Seen on an H200 VM: /usr/share/glvnd/... a link into /usr/local/nvidia/share, whose
    target was mounted at its own path, where no container's libglvnd looks."""
    _tree(tmp_path, [f"{library_dir}/libcuda.so.{V}", *files])
    for link, target in links.items():
        (tmp_path / link).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / link).symlink_to(target)
    (tmp_path / "etc").mkdir(exist_ok=True)
    cache = [("libcuda.so.1", f"/{library_dir}/libcuda.so.1")]
    (tmp_path / "etc/ld.so.cache").write_bytes(ld_cache_bytes(cache))
    facts = read_driver(tmp_path, tmp_path, version=V)
    assert [(f.host_path, f.container_path) for f in facts.graphics] == [
        (f"{tmp_path}/{host}", container) for host, container in expected
    ]
