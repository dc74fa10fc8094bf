"""CUDA/driver compatibility: the shipped table, the requirement grammar, the verdict."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctk.cli.doctor import parse_env_file
from ctk.doctor.checks.cuda import driver_too_old
from ctk.doctor.cuda import (
    Alternative,
    ForwardCompat,
    HostCuda,
    branch_cuda,
    expression_holds,
    host_cuda_from_driver,
    judge,
    need_from_env,
    parse_expression,
    parse_table,
    parse_version,
    required_cuda,
)
from ctk.doctor.facts import (
    CompatLibrary,
    ContainerFacts,
    CudaNeed,
    CudaRow,
    KernelFacts,
    NodeFacts,
    NvmlAnswer,
)
from ctk.doctor.model import Evidence, Result, Severity, Status, Where
from ctk.node.nvml import Gpu, GpuHealth, NvmlFacts

TABLE = parse_table(
    resources.files("ctk.data").joinpath("cuda-driver-compat.csv").read_text("utf-8")
)


def host(driver: str, cuda: tuple[int, ...] | None, *brands: str) -> HostCuda:
    version = parse_version(driver)
    assert version is not None
    return HostCuda(driver=version, driver_text=driver, cuda=cuda, brands=frozenset(brands))


def test_table_rows_are_parsed_with_their_text() -> None:
    row = next(r for r in TABLE if r.cuda == (12, 8, 0))
    assert row == CudaRow(
        cuda=(12, 8, 0),
        min_driver=(570, 26),
        min_driver_mvc=(525, 60, 13),
        min_driver_text="570.26",
        verified=True,
    )
    unverified = next(r for r in TABLE if r.cuda == (13, 3, 0))
    assert (unverified.verified, unverified.min_driver_mvc) == (False, (580,))


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        pytest.param("535.104.05", (12, 2), id="535.104.05-is-12.2"),
        pytest.param("550.54.15", (12, 4), id="550.54.15-is-12.4"),
        pytest.param("570.26", (12, 8), id="two-component-driver"),
        pytest.param("610.50.01", (13, 2), id="unverified-13.3-row-not-used"),
        pytest.param("390.12", None, id="older-than-the-table"),
    ],
)
def test_host_cuda_from_driver(driver: str, cuda: tuple[int, int] | None) -> None:
    assert host_cuda_from_driver(TABLE, parse_version(driver) or ()) == cuda


@pytest.mark.parametrize(
    ("expression", "driver", "cuda", "brands", "holds"),
    [
        pytest.param("cuda>=12.2", "535.104.05", (12, 2), (), True, id="equal-cuda"),
        pytest.param("cuda>=12.8", "535.104.05", (12, 2), (), False, id="newer-cuda"),
        pytest.param(
            "cuda>=12.8 brand=tesla,driver>=535,driver<536",
            "535.104.05",
            (12, 2),
            ("tesla",),
            True,
            id="forward-compat-alternative-for-tesla",
        ),
        pytest.param(
            "cuda>=12.8 brand=tesla,driver>=535,driver<536",
            "535.104.05",
            (12, 2),
            ("geforce",),
            False,
            id="no-alternative-for-geforce",
        ),
        pytest.param("", "535.104.05", (12, 2), (), True, id="empty-always-holds"),
        pytest.param("foo>=3 cuda>=13.0", "535.104.05", (12, 2), (), True, id="unknown-ignored"),
        pytest.param("driver<536", "535.104.05", (12, 2), (), True, id="driver-upper-bound"),
        pytest.param("cuda>=12.2", "535.104.05", None, (), False, id="unknown-host-cuda"),
        pytest.param("cuda>=12.4.1", "550.54.15", (12, 4), (), True, id="patch-is-major-minor"),
        pytest.param("cuda>=12.5.0", "550.54.15", (12, 4), (), False, id="patch-newer-minor"),
        pytest.param("cuda>=12.8 ,", "535.104.05", (12, 2), (), False, id="comma-term-is-no-term"),
        pytest.param(",", "535.104.05", (12, 2), (), True, id="only-commas-asks-nothing"),
    ],
)
def test_expression_holds(
    expression: str,
    driver: str,
    cuda: tuple[int, int] | None,
    brands: tuple[str, ...],
    holds: bool,
) -> None:
    assert expression_holds(expression, host(driver, cuda, *brands)) is holds


def test_required_cuda_takes_the_highest() -> None:
    assert required_cuda(["cuda>=11.8 brand=tesla,driver>=470", "cuda>12.1,arch>=7.5"]) == (12, 1)


@pytest.mark.parametrize(
    ("env", "need"),
    [
        pytest.param({"PATH": "/bin"}, None, id="nothing-asked"),
        pytest.param(
            {"NVIDIA_REQUIRE_CUDA": "cuda>=12.8", "NVIDIA_REQUIRE_JETPACK": "jetpack>=5"},
            CudaNeed(source="env", requirements=("cuda>=12.8",)),
            id="jetpack-excluded",
        ),
        pytest.param(
            {"CUDA_VERSION": "12.6.3", "NVIDIA_DISABLE_REQUIRE": "True"},
            CudaNeed(source="env", cuda_version="12.6.3", disable_require=True),
            id="legacy-image-check-disabled",
        ),
    ],
)
def test_need_from_env(env: dict[str, str], need: CudaNeed | None) -> None:
    assert need_from_env(env, "env") == need


@pytest.mark.parametrize(
    ("need", "driver", "cuda", "satisfied", "mvc"),
    [
        pytest.param(
            CudaNeed(source="s", cuda_version="12.6.3"),
            "535.104.05",
            (12, 2),
            False,
            True,
            id="legacy-12.6-on-535-mvc",
        ),
        pytest.param(
            CudaNeed(source="s", requirements=("cuda>=13.0",)),
            "535.104.05",
            (12, 2),
            False,
            False,
            id="new-major-no-mvc",
        ),
        pytest.param(
            CudaNeed(source="s", requirements=("cuda>=12.0",)),
            "520.61.05",
            (11, 8),
            False,
            False,
            id="12.0-on-11.8-driver-below-mvc-floor",
        ),
        pytest.param(
            CudaNeed(source="s", requirements=("cuda>=11.4",)),
            "550.54.15",
            (12, 4),
            True,
            False,
            id="backward-compatible",
        ),
    ],
)
def test_judge(
    need: CudaNeed, driver: str, cuda: tuple[int, int], satisfied: bool, mvc: bool
) -> None:
    verdict = judge(need, host(driver, cuda), TABLE)
    assert (verdict.satisfied, verdict.mvc_applies) == (satisfied, mvc)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "# image env\nexport A=1\nB='two words'\nC=\"x=y\"\n\nnot a line\n", id="lines"
        ),
        pytest.param('["A=1", "B=two words", "C=x=y"]\n', id="config-env-json-list"),
        pytest.param(
            '[{"Id": "sha256:1", "Config": {"Env": ["A=1", "B=two words", "C=x=y"]}}]\n',
            id="docker-inspect-output",
        ),
        pytest.param(
            '{"Config": {"Env": ["A=1", "B=two words", "C=x=y"]}}', id="one-inspect-object"
        ),
    ],
)
def test_parse_env_file(text: str) -> None:
    assert parse_env_file(text) == {"A": "1", "B": "two words", "C": "x=y"}


@given(st.text())
def test_any_requirement_text_evaluates(text: str) -> None:
    assert expression_holds(text, host("550.54.15", (12, 4))) in (True, False)
    assert required_cuda([text]) is None or len(required_cuda([text]) or ()) == 2
    verdict = judge(CudaNeed(source="s", requirements=(text,)), host("418.87.01", (10, 1)), TABLE)
    assert verdict.forward_compat is None or verdict.forward_compat.clause in text


@given(st.text())
def test_parse_version_never_raises(text: str) -> None:
    parsed = parse_version(text)
    assert parsed is None or all(isinstance(part, int) for part in parsed)


# --- forward compatibility: `brand=` clauses ---------------------------------------------------

CUDA_10_2 = (
    "cuda>=10.2 brand=tesla,driver>=396,driver<397 brand=tesla,driver>=410,driver<411 "
    "brand=tesla,driver>=418,driver<419 brand=tesla,driver>=440,driver<441"
)
"""`NVIDIA_REQUIRE_CUDA` of nvidia/cuda:10.2 images: the branches cuda-compat-10-2 supports."""


def test_parse_expression_splits_terms_and_conditions() -> None:
    assert parse_expression("cuda>=10.2  brand=tesla,driver>=418,driver<419,") == (
        Alternative(("cuda>=10.2",)),
        Alternative(("brand=tesla", "driver>=418", "driver<419")),
    )
    assert Alternative(("brand=tesla", "driver>=418", "driver<419")).values("driver") == (
        (">=", "418"),
        ("<", "419"),
    )


@pytest.mark.parametrize(
    ("term", "cuda"),
    [
        pytest.param("brand=tesla,driver>=418,driver<419", (10, 1), id="branch-418-runs-10.1"),
        pytest.param("brand=tesla,driver>=440,driver<441", (10, 2), id="branch-440-runs-10.2"),
        pytest.param("driver<=440.33", (10, 2), id="inclusive-bound-at-the-minimum"),
        pytest.param("driver<440.33", (10, 1), id="exclusive-bound-at-the-minimum"),
        pytest.param("driver<440.34", (10, 2), id="one-above-the-minimum"),
        pytest.param("brand=tesla,driver>=535,driver<536", (12, 2), id="branch-535-runs-12.2"),
        pytest.param("brand=tesla,driver>=418", None, id="no-upper-bound"),
        pytest.param("driver<411", (10, 0), id="only-the-oldest-row"),
        pytest.param("driver<410", None, id="older-than-the-table"),
    ],
)
def test_branch_cuda(term: str, cuda: tuple[int, int] | None) -> None:
    (alternative,) = parse_expression(term)
    assert branch_cuda(alternative, TABLE) == cuda


def bridge(clause: str, cuda: tuple[int, int], *, assumed: bool = False) -> ForwardCompat:
    return ForwardCompat(clause=clause, brands=("tesla",), branch_cuda=cuda, brand_assumed=assumed)


@pytest.mark.parametrize(
    ("driver", "cuda", "brands", "satisfied", "expected"),
    [
        pytest.param(
            "418.87.01",
            (10, 1),
            ("tesla",),
            True,
            bridge("brand=tesla,driver>=418,driver<419", (10, 1)),
            id="issue-418.87-tesla",
        ),
        pytest.param(
            "418",
            (10, 1),
            ("tesla",),
            True,
            bridge("brand=tesla,driver>=418,driver<419", (10, 1)),
            id="equal-to-the-lower-bound",
        ),
        pytest.param("417.99", (10, 1), ("tesla",), False, None, id="one-below-the-lower-bound"),
        pytest.param(
            "418.99",
            (10, 1),
            ("tesla",),
            True,
            bridge("brand=tesla,driver>=418,driver<419", (10, 1)),
            id="one-below-the-upper-bound",
        ),
        pytest.param("419", (10, 1), ("tesla",), False, None, id="equal-to-the-upper-bound"),
        pytest.param("419.01", (10, 1), ("tesla",), False, None, id="one-above-the-upper-bound"),
        pytest.param(
            "440.0",
            (10, 1),
            ("tesla",),
            True,
            bridge("brand=tesla,driver>=440,driver<441", (10, 2)),
            id="440-branch-below-its-cuda-10.2-minimum",
        ),
        pytest.param("440.33", (10, 2), ("tesla",), True, None, id="native-10.2-no-bridge"),
        pytest.param("418.87.01", (10, 1), ("geforce",), False, None, id="geforce-no-clause"),
        pytest.param(
            "418.87.01",
            (10, 1),
            (),
            False,
            bridge("brand=tesla,driver>=418,driver<419", (10, 1), assumed=True),
            id="brand-unknown-clause-assumed",
        ),
    ],
)
def test_forward_compat_clause_at_the_bounds(
    driver: str,
    cuda: tuple[int, int],
    brands: tuple[str, ...],
    satisfied: bool,
    expected: ForwardCompat | None,
) -> None:
    verdict = judge(
        CudaNeed(source="s", requirements=(CUDA_10_2,)), host(driver, cuda, *brands), TABLE
    )
    assert (verdict.satisfied, verdict.forward_compat) == (satisfied, expected)


def test_an_assumed_brand_does_not_lift_another_failing_requirement() -> None:
    need = CudaNeed(source="s", requirements=(CUDA_10_2, "arch>=9.0"))
    on = HostCuda(driver=(418, 87, 1), driver_text="418.87.01", cuda=(10, 1), archs=((7, 0),))
    assert judge(need, on, TABLE).forward_compat is None


V100 = Gpu(index=0, minor=0, uuid="GPU-0", name="Tesla V100-SXM2-16GB", pci_bus_id="")
COMPAT_10_2 = CompatLibrary(
    path="/usr/local/cuda/compat/libcuda.so.440.33.01",
    version="440.33.01",
    cuda_version="10.2",
    driver_branches=(396, 410, 418, 440),
)
IMAGE_10_2 = CudaNeed(source="image", requirements=(CUDA_10_2,), cuda_version="10.2.89")
SEEN = (
    Evidence("/proc/driver/nvidia/version", "418.87.01"),
    Evidence("driver CUDA version", "10.1"),
    Evidence("image", f"NVIDIA_REQUIRE: {CUDA_10_2}"),
    Evidence("image", "CUDA_VERSION=10.2.89"),
    Evidence(
        "clause", "brand=tesla,driver>=418,driver<419 (that driver branch runs CUDA 10.1 natively)"
    ),
)
FC_NOTES = (
    "forward compatibility needs all of: a data-center GPU (NVML brand tesla or nvidia), the "
    "image's cuda-compat-10-2 libraries (/usr/local/cuda/compat/libcuda.so.*) listing driver "
    "branch 418, and a runtime that puts them before the driver's libcuda (nvidia-container-cli "
    "mounts them; in CDI mode the spec's enable-cuda-compat hook adds them to ld.so.conf; or "
    "LD_LIBRARY_PATH=/usr/local/cuda/compat)",
    "upgrade the driver to >= 440.33: sudo apt-get install nvidia-driver-440 && sudo reboot",
    "or use an image built for CUDA 10.1 or older",
)
HEAD = (
    "the workload needs CUDA 10.2 but driver 418.87.01 supports 10.1; the requirement holds only "
    "through brand=tesla,driver>=418,driver<419, which counts on forward compatibility: "
)
UNPROVEN = (
    HEAD + "nothing shows it applies here, and without it CUDA fails with 'CUDA driver version is "
    "insufficient for CUDA runtime version'"
)
NOT_CHECKED = Evidence(
    "/usr/local/cuda/compat/libcuda.so.*", "not checked: only the image's environment is known here"
)
UNUSED = Evidence(
    COMPAT_10_2.path,
    "not used: neither LD_LIBRARY_PATH nor ld.so.conf names its directory, and the runtime did "
    "not mount it over the driver's libcuda",
)


def tesla_418(
    where: Where = Where.CONTAINER,
    *,
    brand: str | None = "tesla",
    lib: CompatLibrary | None = None,
    need: CudaNeed = IMAGE_10_2,
) -> NodeFacts:
    found = NvmlFacts(driver_version="418.87.01", cuda_driver_version=10010, gpus=(V100,))
    return NodeFacts(
        where=where,
        kernel=KernelFacts(driver_version="418.87.01"),
        nvml=NvmlAnswer(found=found, health=(GpuHealth(0, brand=brand),)),
        cuda_table=TABLE,
        cuda_need=need,
        container=ContainerFacts(compat=lib),
    )


def warning(*gaps: Evidence) -> Result:
    return Result(
        status=Status.WARN,
        summary=UNPROVEN,
        evidence=(*SEEN, *gaps),
        notes=FC_NOTES,
        severity=Severity.WARNING,
    )


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param(
            tesla_418(Where.HOST),
            warning(NOT_CHECKED),
            id="host-image-env-compat-unknown",
        ),
        pytest.param(
            tesla_418(Where.HOST, brand=None),
            warning(
                Evidence("NVML brand", "unknown: forward compatibility needs a data-center GPU"),
                NOT_CHECKED,
            ),
            id="host-brand-unknown",
        ),
        pytest.param(
            tesla_418(),
            Result(
                status=Status.FAIL,
                summary=HEAD + "the image has no cuda-compat libraries, so CUDA fails with 'CUDA "
                "driver version is insufficient for CUDA runtime version'",
                evidence=(
                    *SEEN,
                    Evidence(
                        "/usr/local/cuda/compat/libcuda.so.*", "absent: no cuda-compat in the image"
                    ),
                ),
                notes=FC_NOTES,
            ),
            id="inside-no-compat-libraries",
        ),
        pytest.param(
            tesla_418(lib=COMPAT_10_2),
            warning(UNUSED),
            id="inside-compat-not-used",
        ),
        pytest.param(
            tesla_418(
                lib=replace(
                    COMPAT_10_2, mounted_at="/usr/lib/x86_64-linux-gnu/libcuda.so.440.33.01"
                )
            ),
            Result(
                status=Status.OK,
                summary="CUDA 10.2 runs on driver 418.87.01 through forward compatibility: compat "
                "libcuda 440.33.01 (mounted at /usr/lib/x86_64-linux-gnu/libcuda.so.440.33.01) on "
                "a data-center GPU",
                evidence=SEEN,
            ),
            id="inside-compat-mounted-by-the-runtime",
        ),
        pytest.param(
            tesla_418(lib=replace(COMPAT_10_2, on_path="LD_LIBRARY_PATH")),
            Result(
                status=Status.OK,
                summary="CUDA 10.2 runs on driver 418.87.01 through forward compatibility: compat "
                "libcuda 440.33.01 (first on LD_LIBRARY_PATH) on a data-center GPU",
                evidence=SEEN,
            ),
            id="inside-compat-on-the-library-path",
        ),
        pytest.param(
            tesla_418(lib=replace(COMPAT_10_2, on_path="LD_LIBRARY_PATH", driver_branches=(440,))),
            warning(
                Evidence(COMPAT_10_2.path, "supports driver branches 440, not 418"),
            ),
            id="inside-compat-branch-not-listed",
        ),
        pytest.param(
            tesla_418(
                lib=replace(
                    COMPAT_10_2,
                    path="/usr/local/cuda/compat/libcuda.so.418.40.04",
                    version="418.40.04",
                    on_path="LD_LIBRARY_PATH",
                )
            ),
            warning(
                Evidence(
                    "/usr/local/cuda/compat/libcuda.so.418.40.04",
                    "not newer than driver 418.87.01: unused",
                ),
            ),
            id="inside-compat-not-newer-than-the-driver",
        ),
        pytest.param(
            tesla_418(
                brand="quadrortx",
                lib=replace(COMPAT_10_2, on_path="LD_LIBRARY_PATH"),
                need=replace(
                    IMAGE_10_2, requirements=("cuda>=10.2 brand=quadrortx,driver>=418,driver<419",)
                ),
            ),
            Result(
                status=Status.WARN,
                summary=UNPROVEN.replace("brand=tesla", "brand=quadrortx"),
                evidence=(
                    *SEEN[:2],
                    Evidence(
                        "image", "NVIDIA_REQUIRE: cuda>=10.2 brand=quadrortx,driver>=418,driver<419"
                    ),
                    SEEN[3],
                    Evidence(
                        "clause",
                        "brand=quadrortx,driver>=418,driver<419 (that driver branch runs CUDA 10.1 "
                        "natively)",
                    ),
                    Evidence("NVML brand", "quadrortx: not a data-center brand (tesla, nvidia)"),
                ),
                notes=FC_NOTES,
                severity=Severity.WARNING,
            ),
            id="inside-compat-used-on-an-rtx-brand",
        ),
    ],
)
def test_driver_too_old_with_a_forward_compat_clause(facts: NodeFacts, expected: Result) -> None:
    assert driver_too_old(facts) == expected


def test_mvc_softens_missing_compat_libraries_to_a_warning() -> None:
    requirement = "cuda>=12.8 brand=nvidia,driver>=550,driver<551"
    found = NvmlFacts(driver_version="550.54.15", cuda_driver_version=12040, gpus=(V100,))
    facts = NodeFacts(
        where=Where.CONTAINER,
        kernel=KernelFacts(driver_version="550.54.15"),
        nvml=NvmlAnswer(found=found, health=(GpuHealth(0, brand="nvidia"),)),
        cuda_table=TABLE,
        cuda_need=CudaNeed(source="image", requirements=(requirement,)),
    )
    result = driver_too_old(facts)
    assert (result.status, result.severity, result.summary) == (
        Status.WARN,
        Severity.WARNING,
        "the workload needs CUDA 12.8 but driver 550.54.15 supports 12.4; the requirement holds "
        "only through brand=nvidia,driver>=550,driver<551, which counts on forward "
        "compatibility: without it CUDA falls back to minor-version compatibility (no PTX JIT, "
        "no newer APIs)",
    )
