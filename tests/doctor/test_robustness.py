"""Whatever the node's files hold, the doctor finishes: findings, never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.doctor.model import REGISTRY
from ctk.doctor.run import diagnose
from ctk.host.facts import gather

FILES = (
    "proc/driver/nvidia/version",
    "proc/driver/nvidia/gpus/0000:01:00.0/information",
    "proc/driver/nvidia/params",
    "proc/driver/nvidia-caps/mig-minors",
    "proc/devices",
    "proc/modules",
    "proc/self/environ",
    "proc/self/mountinfo",
    "etc/docker/daemon.json",
    "etc/containerd/config.toml",
    "etc/crio/crio.conf",
    "etc/nvidia-container-runtime/config.toml",
    "var/lib/dpkg/status",
    "etc/cdi/nvidia.yaml",
    "etc/ld.so.conf",
    "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(st.sampled_from(FILES), st.binary(max_size=200), max_size=6))
def test_any_file_contents_give_findings(contents: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sys/firmware/efi").mkdir(parents=True)
        for path, data in contents.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        facts, _ = gather(root, nvml_timeout=5)
        findings = diagnose(facts)
    crashed = [f.check for f in findings if "crashed" in f.summary]
    assert (crashed, len(findings)) == ([], len(REGISTRY))
