"""`ctk doctor --image REF`: the workload's CUDA needs from an image's environment."""

from __future__ import annotations

from pathlib import Path

from ctk.doctor.facts import CudaNeed
from ctk.errors import CtkError, UsageError


def image_need(ref: str, *, cuda_version: str | None, image_env: Path | None) -> CudaNeed:
    """What the image ``ref`` asks of the driver; `unknown` (with the reasons) when no engine
    knows it. A malformed layout or archive is a `CtkError`."""
    from ctk.doctor.cuda import need_from_env
    from ctk.host.image_env import read_image_env

    if image_env is not None:
        raise UsageError("--image and --image-env cannot be combined", hint="give one of them")
    if cuda_version is not None:
        raise UsageError("--image and --cuda-version cannot be combined", hint="give one of them")
    found = read_image_env(ref)
    if found.env is None:
        reasons = "; ".join(found.reasons)
        return CudaNeed(
            source=found.source,
            unknown=f"cannot read the environment of image {ref}: no local engine knows it "
            f"({reasons})",
        )
    need = need_from_env(found.env, found.source)
    if need is None:
        raise CtkError(
            f"{found.source}: sets no NVIDIA_REQUIRE_* or CUDA_VERSION variable",
            hint="a CUDA image sets them (e.g. nvidia/cuda); --cuda-version checks a version",
        )
    return need
