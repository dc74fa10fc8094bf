"""`ctk doctor` end to end through `main()`: exact text, selection, flags, usage errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode


@pytest.fixture
def node(
    request: pytest.FixtureRequest,
    fake_node: Callable[[str], FakeNode],  # noqa: F811
) -> FakeNode:
    return fake_node(request.param)


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["doctor", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


CUDA_OLD_DRIVER = """\
ctk doctor: container, root {root}, root, ctk 0.1.0

cuda
  [FAIL] cuda.driver-too-old  the workload needs CUDA 12.8 but driver 535.104.05 \
supports 12.2: the runtime refuses the container (unsatisfied condition: cuda>=12.8); it would \
probably run under minor-version compatibility with NVIDIA_DISABLE_REQUIRE=1 (no PTX JIT, no newer \
APIs)
         evidence  /proc/driver/nvidia/version: 535.104.05
                   driver CUDA version: 12.2
                   process environment: NVIDIA_REQUIRE: cuda>=12.8 brand=tesla,driver>=470,\
driver<471
                   process environment: CUDA_VERSION=12.8.1
         remedy    Upgrade the driver, or use an image built for the host's CUDA version.
         note      upgrade the driver to >= 570.26: sudo apt-get install nvidia-driver-570 && \
sudo reboot
                   or use an image built for CUDA 12.2 or older
                   or add cuda-compat-12-8 to the image (forward compatibility; the driver \
branch must be one the compat package lists)
         docs      https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html

1 error(s), 0 warning(s), 2 ok, 1 skipped, 0 unknown. Fix first: cuda.driver-too-old.
"""


@pytest.mark.parametrize("node", ["container-old-driver"], indirect=True)
def test_group_report_is_exact(node: FakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = doctor(capsys, "--root", str(node.root), "--group", "cuda")
    assert (code, out, err) == (1, CUDA_OLD_DRIVER.format(root=node.root), "")


NO_DRIVER_CHECK = """\
ctk doctor: host, root {root}, root, ctk 0.1.0
The fixes below are for the node under {root}: ctk's name that root; run the others on that node \
(from a debug pod: `sudo chroot {root}` first).

driver
  [FAIL] driver.not-loaded  no NVIDIA kernel module is loaded
         evidence  /proc/driver/nvidia/version: missing
                   /sys/bus/pci/devices: NVIDIA GPUs: 0000:62:00.0 (no driver), 0000:63:00.0 \
(no driver)
                   NVML: nvmlInit: Driver Not Loaded (9)
         remedy    Load the module and read why it fails; rebuild it for the running kernel if \
needed.
         fix       sudo modprobe nvidia
                   sudo dmesg | grep -iE 'nvrm|nvidia'
         docs      https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/\
troubleshooting.html

1 error(s), 0 warning(s), 0 ok, 1 skipped, 0 unknown. Fix first: driver.not-loaded.
"""

NO_DRIVER_60_COLUMNS = """\
driver
  [FAIL] driver.not-loaded
           no NVIDIA kernel module is loaded
         evidence  /proc/driver/nvidia/version: missing
                   /sys/bus/pci/devices: NVIDIA GPUs:
                   0000:62:00.0 (no driver), 0000:63:00.0
                   (no driver)
                   NVML: nvmlInit: Driver Not Loaded (9)
         remedy    Load the module and read why it fails;
                   rebuild it for the running kernel if
                   needed.
         fix       sudo modprobe nvidia
                   sudo dmesg | grep -iE 'nvrm|nvidia'
         docs      https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/\
troubleshooting.html

1 error(s), 0 warning(s), 0 ok, 1 skipped, 0 unknown. Fix
first: driver.not-loaded.
"""


@pytest.mark.parametrize("node", ["no-driver"], indirect=True)
def test_selected_checks_still_skip_behind_the_root_cause(
    node: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = doctor(
        capsys,
        "--root",
        str(node.root),
        "--check",
        "driver.not-loaded",
        "--check",
        "cdi.spec-stale",
    )
    assert (code, out, err) == (1, NO_DRIVER_CHECK.format(root=node.root), "")


@pytest.mark.parametrize("node", ["no-driver"], indirect=True)
def test_a_60_column_terminal_reads_whole_words(
    node: FakeNode, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prose wraps at the width under its label; commands and links stay whole."""
    monkeypatch.setenv("COLUMNS", "60")
    args = ("--root", str(node.root), "--check", "driver.not-loaded")
    code, out, err = doctor(capsys, *args, "--check", "cdi.spec-stale")
    body = out.split("\n\n", 1)[1]  # after the header, which names the (long) temporary root
    assert (code, body, err) == (1, NO_DRIVER_60_COLUMNS, "")


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
def test_ok_lines_only_with_verbose_and_phrased_as_states(
    node: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--root", str(node.root), "--check", "driver.secure-boot-blocked")
    quiet = doctor(capsys, *args)[1].splitlines()
    loud = doctor(capsys, *args, "-v")[1].splitlines()
    assert (quiet[1:], loud[1:4]) == (
        ["", "0 error(s), 0 warning(s), 1 ok, 0 skipped, 0 unknown. -v lists every check."],
        [
            "",
            "driver",
            "  [ok]   Secure Boot does not block the nvidia module: the nvidia module is loaded",
        ],
    )


@pytest.mark.parametrize("node", ["systemd-legacy"], indirect=True)
def test_warnings_fail_only_with_strict(node: FakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    assert doctor(capsys, "--root", str(node.root), "--json")[0] == 0
    code, out, _ = doctor(capsys, "--root", str(node.root), "--json", "--strict")
    assert (code, json.loads(out)["summary"]["exit_code"]) == (1, 1)


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        pytest.param(["--cuda-version", "12.4"], "ok", id="cuda-12.4-ok-on-550"),
        pytest.param(["--cuda-version", "12.8"], "fail", id="cuda-12.8-too-new-for-550"),
        pytest.param(["--cuda-version", "13.9"], "unknown", id="beyond-the-table"),
        pytest.param(["--cuda-version", "12.4.1"], "ok", id="patch-level-compares-major-minor"),
    ],
)
def test_cuda_version_flag(
    node: FakeNode, flag: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = doctor(
        capsys, "--root", str(node.root), "--json", "--check", "cuda.driver-too-old", *flag
    )
    check = json.loads(out)["checks"][0]
    assert (code, check["id"], check["status"]) == (
        1 if expected == "fail" else 0,
        "cuda.driver-too-old",
        expected,
    )


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
def test_image_env_file(node: FakeNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / "image.env"
    env.write_text(
        "PATH=/usr/local/cuda/bin:/usr/bin\n"
        'export NVIDIA_REQUIRE_CUDA="cuda>=12.6 brand=tesla,driver>=470,driver<471"\n'
        "CUDA_VERSION=12.6.3\n"
    )
    code, out, _ = doctor(
        capsys, "--root", str(node.root), "--json", "--group", "cuda", "--image-env", str(env)
    )
    document = json.loads(out)
    statuses = {c["id"]: c["status"] for c in document["checks"]}
    assert (code, document["context"]["cuda_requirement"], statuses) == (
        1,
        str(env),
        {
            "cuda.driver-too-old": "fail",
            "cuda.minor-compat-only": "ok",
            "cuda.requirement-check-disabled": "ok",
            "cuda.forward-compat-unusable": "skip",
        },
    )


@pytest.mark.parametrize(
    ("args", "err"),
    [
        pytest.param(
            ["--check", "nope.none"],
            "error: unknown check id: nope.none\nhint: `ctk doctor --list` lists them\n",
            id="unknown-check",
        ),
        pytest.param(
            ["--cuda-version", "twelve"],
            "error: --cuda-version 'twelve' is not a version\nhint: e.g. --cuda-version 12.4\n",
            id="bad-cuda-version",
        ),
        pytest.param(
            ["--cuda-version", " 12.8"],
            "error: --cuda-version ' 12.8' is not a version\nhint: e.g. --cuda-version 12.4\n",
            id="cuda-version-with-a-space",
        ),
        pytest.param(
            ["--cuda-version", "12.8?"],
            "error: --cuda-version '12.8?' is not a version\nhint: e.g. --cuda-version 12.4\n",
            id="cuda-version-with-junk",
        ),
        pytest.param(
            ["--image-env", "/no/such/env"],
            "error: --image-env /no/such/env: no such file\n"
            "hint: KEY=VALUE lines, or `docker inspect IMAGE` output\n",
            id="missing-image-env",
        ),
    ],
)
def test_usage_errors(args: list[str], err: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert doctor(capsys, *args) == (2, "", err)


def test_image_env_without_cuda_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / "env"
    env.write_text("PATH=/bin\n")
    assert doctor(capsys, "--image-env", str(env)) == (
        1,
        "",
        f"error: {env}: no NVIDIA_REQUIRE_* or CUDA_VERSION line\n"
        "hint: e.g. `docker image inspect IMAGE --format '{{json .Config.Env}}' > env`\n",
    )


def test_image_env_bad_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / "env.json"
    env.write_text('["CUDA_VERSION=12.4"')
    assert doctor(capsys, "--image-env", str(env)) == (
        1,
        "",
        f"error: {env}: not valid JSON: Expecting ',' delimiter: "
        "line 1 column 21 (char 20)\nhint: KEY=VALUE lines, or `docker inspect IMAGE` output\n",
    )


@pytest.mark.parametrize("node", ["healthy"], indirect=True)
@pytest.mark.parametrize(
    ("env_text", "summary"),
    [
        pytest.param(
            "NVIDIA_REQUIRE_CUDA=cuda>=abc\n",
            "cannot judge the CUDA requirement of {env}: 'cuda>=abc' is not a valid condition "
            "(e.g. cuda>=12.4)",
            id="require-cuda-not-a-version",
        ),
        pytest.param(
            "CUDA_VERSION=twelve\n",
            "cannot judge the CUDA requirement of {env}: 'CUDA_VERSION=twelve' is not a valid "
            "condition (e.g. cuda>=12.4)",
            id="cuda-version-not-a-version",
        ),
    ],
)
def test_malformed_image_requirement_is_unknown(
    node: FakeNode, env_text: str, summary: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "image.env"
    env.write_text(env_text)
    code, out, _ = doctor(
        capsys,
        "--root",
        str(node.root),
        "--json",
        "--check",
        "cuda.driver-too-old",
        "--image-env",
        str(env),
    )
    check = json.loads(out)["checks"][0]
    assert (code, check["status"], check["summary"]) == (0, "unknown", summary.format(env=env))


def test_bad_group_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = doctor(capsys, "--group", "gpus")
    assert code == 2
    assert "error: invalid value for '--group'" in err


def test_list_names_every_check_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = doctor(capsys, "--list")
    ids = [line.split()[0] for line in out.splitlines()]
    assert (code, len(ids), len(set(ids))) == (0, 88, 88)
    assert out.splitlines()[0] == (
        "driver.nouveau-loaded                   error    the nouveau driver does not hold the GPU"
    )


@pytest.mark.parametrize("node", ["debug-pod"], indirect=True)
def test_debug_pod_points_to_the_host(node: FakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = doctor(capsys, "--root", str(node.root), "--group", "driver")
    assert out.splitlines()[:2] == [
        f"ctk doctor: pod, root {node.root}, root, ctk 0.1.0",
        "The node's file system is mounted at /host: run `ctk doctor --root /host` for the "
        "host's checks.",
    ]
    _, text, _ = doctor(capsys, "--root", str(node.root), "--json")
    assert json.loads(text)["context"]["host_mount"] == "/host"


GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "expected" / "doctor"


@pytest.mark.parametrize("node", ["container-old-driver"], indirect=True)
def test_json_document_is_exact(node: FakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = doctor(capsys, "--root", str(node.root), "--json", "--group", "cuda")
    document = json.loads(out)
    timings = document.pop("timings")
    expected = json.loads((GOLDEN / "container-old-driver.cuda.json").read_text())
    expected["context"]["root"] = str(node.root)
    assert (code, err, document) == (1, "", expected)
    assert [t["step"] for t in timings][:7] == [
        "environment",
        "mounts",
        "context",
        "/proc/driver/nvidia/gpus",
        "/proc/driver/nvidia/params",
        "kernel",
        "dev",
    ]


@pytest.mark.parametrize("node", ["ldconfig-usr-sbin"], indirect=True)
def test_ldconfig_fix_names_the_ldconfig_that_exists(
    node: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = doctor(
        capsys, "--root", str(node.root), "--json", "--check", "toolkit.ldconfig-path"
    )
    check = json.loads(out)["checks"][0]
    config = node.root / "etc/nvidia-container-runtime/config.toml"  # under --root: the node's
    assert (code, check["status"], check["remedy"]["commands"]) == (
        1,
        "fail",
        [
            "sudo ctk config --in-place --set nvidia-container-cli.ldconfig=@/usr/sbin/ldconfig "
            f"--config={config}"
        ],
    )


def test_list_json_is_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from ctk.doctor.model import REGISTRY, checks_in_order

    code, out, err = doctor(capsys, "--list", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == [
        {
            "id": c.id,
            "group": c.group.value,
            "severity": c.severity.value,
            "title": c.title,
            "remedy": c.remedy,
            "sources": list(c.sources),
            "depends_on": list(c.depends_on),
            "where": sorted(w.value for w in c.where),
        }
        for c in checks_in_order(REGISTRY)
    ]
