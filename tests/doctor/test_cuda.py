"""CUDA/driver compatibility: the shipped table, the requirement grammar, the verdict."""

from __future__ import annotations

from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctk.cli.doctor import parse_env_file
from ctk.doctor.cuda import (
    HostCuda,
    expression_holds,
    host_cuda_from_driver,
    judge,
    need_from_env,
    parse_table,
    parse_version,
    required_cuda,
)
from ctk.doctor.facts import CudaNeed, CudaRow

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


@given(st.text())
def test_parse_version_never_raises(text: str) -> None:
    parsed = parse_version(text)
    assert parsed is None or all(isinstance(part, int) for part in parsed)
