# ruff: noqa: E501  (the summaries are data, compared whole)
"""The `dra` checks on fixture nodes with the API server's view served by the tests' stand-in
API server (`tests/doctor/test_kubernetes.py`'s HTTPS server on 127.0.0.1).

The node side is a fixture node (`tests/fixtures/doctor/dra-*`: the kubelet plugin's
registration socket, its CDI specs, containerd's config, NVML); the API side is real
`resource.k8s.io` and core objects (`tests/fixtures/dra/*.yaml`), each broken link one edit of
the healthy set, and every object served validates against the Kubernetes schemas
(kubernetes-validate, strict). On each node the doctor names the broken link with its fix and
says nothing else; on the healthy nodes it says nothing at all.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctk.cli.app import main
from tests.doctor.test_kubernetes import NODE, Api, _kubelet_conf, api  # noqa: F401  (fixture)
from tests.doctor.test_remedies import problems as command_problems
from tests.fake_nvml.fixtures import fake_node, fake_nvml_library  # noqa: F401  (pytest fixtures)
from tests.nodes import FakeNode

OBJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "dra"
RESOURCE = "resource.k8s.io"
DOMAIN = "3f2e1d0c-b9a8-4776-8554-433221100ffe"
Objects = list[dict[str, Any]]
Edit = Callable[[Objects], None]


def load(name: str) -> Objects:
    """The objects of tests/fixtures/dra/``name``.yaml."""
    return [d for d in yaml.safe_load_all((OBJECTS / f"{name}.yaml").read_text()) if d]


def find(objects: Objects, kind: str, name: str | None = None) -> dict[str, Any]:
    return next(
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    )


def _beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as resource.k8s.io/v1beta1 has it (1.32): a device's attributes and capacity
    under `basic`, a request's class and selectors on the request itself."""
    obj = copy.deepcopy(obj)
    if not obj["apiVersion"].startswith(RESOURCE):
        return obj
    obj["apiVersion"] = f"{RESOURCE}/v1beta1"
    if obj["kind"] == "ResourceSlice":
        obj["spec"]["devices"] = [
            {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
            for d in obj["spec"]["devices"]
        ]
    if obj["kind"] == "ResourceClaim":
        for request in obj["spec"]["devices"]["requests"]:
            request.update(request.pop("exactly", {}))
    if obj["kind"] == "DeviceClass":
        obj["spec"].pop("extendedResourceName", None)
    return obj


@dataclass
class Cluster:
    """What the API server holds; `serve` puts it behind the paths the doctor GETs."""

    objects: Objects
    versions: tuple[str, ...] = ("v1",)
    claims_listed: bool = True
    """False: ResourceClaims are not listed cluster-wide (a kubelet's credentials), only got."""

    def served(self) -> Objects:
        """The objects as the served version has them."""
        if self.versions and self.versions[0] == "v1beta1":
            return [_beta1(o) for o in self.objects]
        return self.objects

    def serve(self, server: Api) -> None:
        objects = self.served()
        node = find(objects, "Node")
        pods = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName") == NODE]
        routes: dict[str, Any] = {
            f"/api/v1/nodes/{NODE}": node,
            f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}": {
                "kind": "PodList",
                "items": pods,
            },
        }
        for pod in (o for o in objects if o["kind"] == "Pod"):
            meta = pod["metadata"]
            routes[f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"] = pod
        if self.versions:
            group = [{"groupVersion": f"{RESOURCE}/{v}", "version": v} for v in self.versions]
            routes[f"/apis/{RESOURCE}"] = {
                "kind": "APIGroup",
                "apiVersion": "v1",
                "name": RESOURCE,
                "versions": group,
                "preferredVersion": group[0],
            }
            base = f"/apis/{RESOURCE}/{self.versions[0]}"
            for kind, path in (
                ("ResourceSlice", f"resourceslices?fieldSelector=spec.nodeName%3D{NODE}"),
                ("DeviceClass", "deviceclasses"),
                ("ResourceClaim", "resourceclaims"),
            ):
                items = [o for o in objects if o["kind"] == kind]
                if kind != "ResourceClaim" or self.claims_listed:
                    routes[f"{base}/{path}"] = {"kind": f"{kind}List", "items": items}
            for claim in (o for o in objects if o["kind"] == "ResourceClaim"):
                meta = claim["metadata"]
                routes[f"{base}/namespaces/{meta['namespace']}/resourceclaims/{meta['name']}"] = (
                    claim
                )
        server.objects.update(routes)


# --- the edits that break one link each ------------------------------------------------------


def no_resource_api(cluster: Cluster) -> None:
    cluster.versions = ()


def plugin_crashing(objects: Objects) -> None:
    pod = find(objects, "Pod", "dra-driver-nvidia-gpu-kubelet-plugin-x7k2p")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod["status"]["containerStatuses"][0].update(
        ready=False, restartCount=7, state={"waiting": {"reason": "CrashLoopBackOff"}}
    )


def plugin_gone(objects: Objects) -> None:
    objects.remove(find(objects, "Pod", "dra-driver-nvidia-gpu-kubelet-plugin-x7k2p"))
    objects.remove(find(objects, "ResourceSlice"))


def no_slices(objects: Objects) -> None:
    objects.remove(find(objects, "ResourceSlice"))


def pool_incomplete(objects: Objects) -> None:
    find(objects, "ResourceSlice")["spec"]["pool"]["resourceSliceCount"] = 2


def old_driver(objects: Objects) -> None:
    for device in find(objects, "ResourceSlice")["spec"]["devices"]:
        device["attributes"]["driverVersion"] = {"version": "535.104.5"}


def leftover_generation(objects: Objects) -> None:
    old = copy.deepcopy(find(objects, "ResourceSlice"))
    old["metadata"]["name"] = "gpu-node-1-gpu.nvidia.com-4rkzp"
    objects.append(old)
    find(objects, "ResourceSlice", "gpu-node-1-gpu.nvidia.com-v7tgq")["spec"]["pool"][
        "generation"
    ] = 2


def gpu_replaced(objects: Objects) -> None:
    device = find(objects, "ResourceSlice")["spec"]["devices"][1]
    device["attributes"]["uuid"] = {"string": "GPU-5e2c0a44-0d1f-4c7e-9b1a-77f3a9c4e001"}


def mig_destroyed(objects: Objects) -> None:
    """GPU 0 had a third MIG device that no longer exists: the slice still lists it."""
    slice_ = find(objects, "ResourceSlice")
    ghost = copy.deepcopy(slice_["spec"]["devices"][0])
    ghost["name"] = "gpu-0-mig-1g10gb-19-6"
    ghost["attributes"]["uuid"] = {"string": "MIG-2a1c0003-5b6e-5f1a-8c33-000000000003"}
    slice_["spec"]["devices"].insert(2, ghost)


def no_gpu_class(objects: Objects) -> None:
    objects.remove(find(objects, "DeviceClass", "gpu.nvidia.com"))


def claim_unallocated(objects: Objects) -> None:
    claim = find(objects, "ResourceClaim")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "a100.nvidia.com"
    del claim["status"]


def claim_of_gone_pod(objects: Objects) -> None:
    find(objects, "ResourceClaim")["status"]["reservedFor"] = [
        {"resource": "pods", "name": "job-old", "uid": "5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3eff"}
    ]


def device_plugin_too(objects: Objects) -> None:
    status = find(objects, "Node")["status"]
    status["capacity"]["nvidia.com/gpu"] = "2"
    status["allocatable"]["nvidia.com/gpu"] = "2"


def compute_domain(objects: Objects) -> None:
    """The node in compute domain DOMAIN: the compute-domains plugin container, its objects."""
    objects += load("compute-domain")
    plugin = find(objects, "Pod", "dra-driver-nvidia-gpu-kubelet-plugin-x7k2p")
    gpus = plugin["spec"]["containers"][0]
    plugin["spec"]["containers"].append({**copy.deepcopy(gpus), "name": "compute-domains"})
    plugin["status"]["containerStatuses"].append(
        {**plugin["status"]["containerStatuses"][0], "name": "compute-domains"}
    )
    find(objects, "Node")["metadata"]["labels"]["resource.nvidia.com/computeDomain"] = DOMAIN


def imex_daemon_gone(objects: Objects) -> None:
    objects.remove(find(objects, "Pod", "imex-domain-7qf4n-xk2lp"))


def mig_node(objects: Objects) -> None:
    objects.remove(find(objects, "ResourceSlice"))
    objects += load("a100-mig-slice")


def beta1(cluster: Cluster) -> None:
    cluster.versions = ("v1beta1",)


def kubelet_credentials(cluster: Cluster) -> None:
    """The node authorizer: a kubelet gets its pods' claims one by one, lists none."""
    cluster.claims_listed = False


@dataclass(frozen=True)
class Case:
    node: str
    edits: tuple[Edit, ...] = ()
    cluster: tuple[Callable[[Cluster], None], ...] = ()
    problems: dict[str, str] = field(default_factory=dict)


def cluster_of(case: Case) -> Cluster:
    cluster = Cluster(load("h100-node"))
    if case.node in ("dra-mig",):
        mig_node(cluster.objects)
    if case.node in ("dra-compute-domain", "dra-imex-no-channels"):
        compute_domain(cluster.objects)
    for edit in case.edits:
        edit(cluster.objects)
    for change in case.cluster:
        change(cluster)
    return cluster


NOT_REGISTERED = "gpu.nvidia.com has no registration socket in /var/lib/kubelet/plugins_registry: the kubelet does not know the driver, and pods with its claims fail to start ('DRA driver gpu.nvidia.com is not registered')"
CDI_OFF = "containerd does not read CDI specs: pods with GPU claims fail with 'unresolvable CDI devices k8s.gpu.nvidia.com/claim=...'"
CLAIM_SPEC = "/var/run/cdi/k8s.gpu.nvidia.com-claim_6a4d0f57-2c1e-4b8e-9d3a-0c5b7e1f2a90.yaml"

CASES = {
    "healthy": Case("dra-healthy"),
    "healthy-mig": Case("dra-mig"),
    "healthy-compute-domain": Case("dra-compute-domain"),
    "healthy-1.32-v1beta1": Case("dra-healthy", cluster=(beta1,)),
    "healthy-claims-got-one-by-one": Case("dra-healthy", cluster=(kubelet_credentials,)),
    "api-not-served": Case(
        "dra-healthy",
        cluster=(no_resource_api,),
        problems={
            "dra.api-not-served": "the API server does not serve resource.k8s.io v1, v1beta2 or v1beta1: the NVIDIA DRA driver can publish no devices and pods' ResourceClaims are never allocated",
        },
    ),
    "plugin-not-registered": Case(
        "dra-not-registered",
        problems={"dra.plugin-not-registered": NOT_REGISTERED},
    ),
    "plugin-crashing": Case(
        "dra-healthy",
        edits=(plugin_crashing,),
        problems={
            "dra.plugin-not-running": "the DRA kubelet plugin pod nvidia-dra-driver-gpu/dra-driver-nvidia-gpu-kubelet-plugin-x7k2p is Running, not ready: claims on this node are not prepared and their pods stay in ContainerCreating",
        },
    ),
    "plugin-gone-socket-left": Case(
        "dra-healthy",
        edits=(plugin_gone,),
        problems={
            "dra.plugin-not-running": "gpu.nvidia.com is registered but no pod of its kubelet plugin runs on this node: the socket is left from a plugin that is gone, and claims fail to prepare",
        },
    ),
    "slices-missing": Case(
        "dra-healthy",
        edits=(no_slices,),
        problems={
            "dra.slices-missing": "the node publishes no ResourceSlice with GPUs for gpu.nvidia.com: claims for its GPUs stay unallocated ('cannot allocate all claims')",
        },
    ),
    "pool-incomplete": Case(
        "dra-healthy",
        edits=(pool_incomplete,),
        problems={
            "dra.slices-stale": "pool gpu-node-1 of gpu.nvidia.com is incomplete (1 of 2 slices of its newest generation): the scheduler allocates nothing from it",
        },
    ),
    "slices-of-the-old-driver": Case(
        "dra-healthy",
        edits=(old_driver,),
        problems={
            "dra.slices-stale": "the ResourceSlices advertise driver 535.104.5 but 550.54.15 is loaded: the kubelet plugin predates the driver upgrade, and the CDI specs it writes name the old driver's files",
        },
    ),
    "slice-of-an-old-generation": Case(
        "dra-healthy",
        edits=(leftover_generation,),
        problems={
            "dra.slices-stale": "1 ResourceSlice(s) of an older generation are left over: gpu-node-1-gpu.nvidia.com-4rkzp",
        },
    ),
    "gpu-replaced": Case(
        "dra-healthy",
        edits=(gpu_replaced,),
        problems={
            "dra.slices-mismatch": "the ResourceSlices of gpu.nvidia.com do not match the node's GPUs: GPU 1 (GPU-9221d5d1-b60b-a624-bf14-0a1819cfda31) is in no slice; gpu-1 (GPU-5e2c0a44-0d1f-4c7e-9b1a-77f3a9c4e001) names no device of this node",
        },
    ),
    "mig-device-destroyed": Case(
        "dra-mig",
        edits=(mig_destroyed,),
        problems={
            "dra.slices-mismatch": "the ResourceSlices of gpu.nvidia.com do not match the node's GPUs: gpu-0-mig-1g10gb-19-6 (MIG-2a1c0003-5b6e-5f1a-8c33-000000000003) names no device of this node",
        },
    ),
    "no-device-class": Case(
        "dra-healthy",
        edits=(no_gpu_class,),
        problems={
            "dra.device-class-missing": "no DeviceClass selects the node's gpu devices of gpu.nvidia.com: claims cannot ask for them",
        },
    ),
    "claim-unallocated": Case(
        "dra-healthy",
        edits=(claim_unallocated,),
        problems={
            "dra.claim-unallocated": "claim ml/job-0-gpu-q8w2m of pod job-0 is not allocated (DeviceClass a100.nvidia.com does not exist): the pod cannot start",
        },
    ),
    "claim-unallocated-got-one-by-one": Case(
        "dra-healthy",
        edits=(claim_unallocated,),
        cluster=(kubelet_credentials,),
        problems={
            "dra.claim-unallocated": "claim ml/job-0-gpu-q8w2m of pod job-0 is not allocated (DeviceClass a100.nvidia.com does not exist): the pod cannot start",
        },
    ),
    "claim-of-a-gone-pod": Case(
        "dra-healthy",
        edits=(claim_of_gone_pod,),
        problems={
            "dra.claim-orphaned": "claim ml/job-0-gpu-q8w2m is reserved for pod job-old, which is gone: its devices on this node stay taken",
        },
    ),
    "cdi-off": Case("dra-cdi-off", problems={"dra.engine-cdi-unresolvable": CDI_OFF}),
    "cdi-dir-unread": Case(
        "dra-cdi-dir-unread",
        problems={
            "dra.engine-cdi-unresolvable": "the DRA plugin writes its CDI specs to /var/run/cdi, which containerd does not read: pods with GPU claims fail with 'unresolvable CDI devices'",
        },
    ),
    "claim-spec-invalid": Case(
        "dra-claim-spec-invalid",
        problems={
            "dra.claim-spec-invalid": f"{CLAIM_SPEC} of the DRA plugin is not a usable CDI spec (line 5: device name '6a4d0f57-2c1e-4b8e-9d3a-0c5b7e1f2a90/gpu-0' contains '/'; allowed are ASCII letters, digits, '_', '-', '.', ':'): the pod of its claim fails to start",
        },
    ),
    "claim-spec-clash": Case(
        "dra-claim-spec-clash",
        problems={
            "dra.claim-spec-invalid": "/etc/cdi/gpu-claims.yaml defines CDI devices of kind k8s.gpu.nvidia.com/claim, which the DRA plugin owns: the runtime drops clashing devices and claims' pods fail",
        },
    ),
    "device-plugin-too": Case(
        "dra-healthy",
        edits=(device_plugin_too,),
        problems={
            "dra.device-plugin-overlap": "the device plugin offers nvidia.com/gpu=2 and the DRA driver the same GPUs in ResourceSlices: the scheduler can give one GPU to two pods",
            # true of the device plugin's pods: they need the nvidia runtime (no cdi-cri here)
            "containerd.not-default-no-runtimeclass": "nvidia is neither containerd's default runtime nor the handler of a RuntimeClass: GPU pods run under runc and see no GPU",
        },
    ),
    "imex-no-channels": Case(
        "dra-imex-no-channels",
        problems={
            "dra.imex-channels-missing": "the driver has no nvidia-caps-imex-channels device (not in /proc/devices): the compute-domain plugin cannot prepare IMEX channels, and compute domain workloads do not start",
        },
    ),
    "imex-daemon-not-running": Case(
        "dra-compute-domain",
        edits=(imex_daemon_gone,),
        problems={
            "dra.imex-daemon-not-running": f"compute domain {DOMAIN} has no running IMEX daemon on this node: its workloads' channel claims are not prepared ('current node not ready in ComputeDomain')",
        },
    ),
}


@pytest.fixture
def dra_doctor(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    api: Api,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Callable[[Case], tuple[int, dict[str, dict[str, Any]]]]]:
    """Materialise the case's node, serve its cluster, run `ctk doctor --json` on the node; the
    node's root is written ROOT in the remedies' commands."""

    def run(case: Case) -> tuple[int, dict[str, dict[str, Any]]]:
        built = fake_node(case.node)
        cluster_of(case).serve(api)
        _kubelet_conf(built.root, api)
        code = main(["doctor", "--json", "--root", str(built.root)])
        captured = capsys.readouterr()
        assert captured.err == ""
        checks = {c["id"]: c for c in json.loads(captured.out)["checks"]}
        for c in checks.values():
            if c["remedy"] is not None:
                c["remedy"]["commands"] = [
                    line.replace(str(built.root), "ROOT") for line in c["remedy"]["commands"]
                ]
        return code, checks

    yield run


@pytest.mark.parametrize("name", list(CASES))
def test_the_doctor_names_the_broken_link_and_nothing_else(
    name: str, dra_doctor: Callable[[Case], tuple[int, dict[str, dict[str, Any]]]]
) -> None:
    case = CASES[name]
    code, checks = dra_doctor(case)
    problems = {i: c["summary"] for i, c in checks.items() if c["status"] in ("fail", "warn")}
    unknown = {i: c["summary"] for i, c in checks.items() if c["status"] == "unknown"}
    assert (problems, unknown) == (case.problems, {})
    commands = [line for i in problems for line in checks[i]["remedy"]["commands"]]
    assert [p for line in commands for p in command_problems(line, ctk_installed=True)] == []
    errors = [i for i in case.problems if checks[i]["severity"] == "error"]
    assert code == (1 if errors else 0)
    if not case.problems:  # a healthy DRA node: its GPUs count as offered (no false alarm)
        assert checks["k8s.gpu-not-allocatable"]["status"] == "ok"
        dra = {i: c["status"] for i, c in checks.items() if i.startswith("dra.")}
        assert "fail" not in dra.values()


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        (
            "healthy",
            "the node hands out its GPUs through DRA: 2 device(s) in ResourceSlices of gpu.nvidia.com",
        ),
        (
            "healthy-mig",
            "the node hands out its GPUs through DRA: 3 device(s) in ResourceSlices of gpu.nvidia.com",
        ),
        (
            "slices-missing",
            "the node hands out GPUs through DRA (gpu.nvidia.com): dra.slices-missing judges whether it publishes them",
        ),
    ],
)
def test_a_dra_node_is_no_gpu_not_allocatable_false_alarm(
    name: str,
    summary: str,
    dra_doctor: Callable[[Case], tuple[int, dict[str, dict[str, Any]]]],
) -> None:
    """No nvidia.com/gpu in allocatable is right where the GPUs are in ResourceSlices."""
    _, checks = dra_doctor(CASES[name])
    assert checks["k8s.gpu-not-allocatable"]["summary"] == summary


@pytest.mark.parametrize(
    ("name", "check_id", "summary"),
    [
        (
            "healthy",
            "dra.api-not-served",
            "resource.k8s.io/v1 is served (Kubernetes 1.34 or later)",
        ),
        ("healthy-1.32-v1beta1", "dra.api-not-served", "resource.k8s.io/v1beta1 is served (1.32)"),
        ("healthy-1.32-v1beta1", "dra.slices-mismatch", "2 device(s), as NVML reports them"),
        ("healthy-mig", "dra.slices-mismatch", "3 device(s), as NVML reports them"),
        (
            "healthy-mig",
            "dra.device-class-missing",
            "selected by DeviceClass gpu.nvidia.com, mig.nvidia.com",
        ),
        ("healthy", "dra.claim-unallocated", "1 claim(s) of this node's pods allocated"),
        (
            "healthy-claims-got-one-by-one",
            "dra.claim-unallocated",
            "1 claim(s) of this node's pods allocated",
        ),
        ("healthy", "dra.claim-spec-invalid", "1 spec(s) of the DRA plugin valid"),
        (
            "healthy",
            "dra.engine-cdi-unresolvable",
            "containerd reads CDI specs from /var/run/cdi, where the DRA plugin writes them",
        ),
        (
            "healthy-compute-domain",
            "dra.imex-daemon-not-running",
            f"IMEX daemon nvidia-dra-driver-gpu/imex-domain-7qf4n-xk2lp of compute domain {DOMAIN} runs",
        ),
        (
            "healthy-compute-domain",
            "dra.imex-channels-missing",
            "nvidia-caps-imex-channels major 234, 1 channel node(s) on the host",
        ),
    ],
)
def test_a_healthy_link_says_what_it_confirmed(
    name: str,
    check_id: str,
    summary: str,
    dra_doctor: Callable[[Case], tuple[int, dict[str, dict[str, Any]]]],
) -> None:
    _, checks = dra_doctor(CASES[name])
    assert (checks[check_id]["status"], checks[check_id]["summary"]) == ("ok", summary)


def _remedy(check: dict[str, Any]) -> tuple[list[str], list[str]]:
    return check["remedy"]["commands"], check["remedy"]["notes"]


PLUGIN = "nvidia-dra-driver-gpu"
POD = "dra-driver-nvidia-gpu-kubelet-plugin-x7k2p"


@pytest.mark.parametrize(
    ("name", "check_id", "commands"),
    [
        pytest.param(
            "cdi-off",
            "dra.engine-cdi-unresolvable",
            [
                "sudo ctk runtime configure --runtime=containerd --cdi.enabled --config=ROOT/etc/containerd/config.toml --drop-in-config=",
                "sudo systemctl restart containerd",
            ],
            id="cdi-off-enable-cdi",
        ),
        pytest.param(
            "plugin-crashing",
            "dra.plugin-not-running",
            [f"kubectl -n {PLUGIN} describe pod {POD}", f"kubectl -n {PLUGIN} logs {POD} -c gpus"],
            id="plugin-crashing-describe-and-logs",
        ),
        pytest.param(
            "slices-missing",
            "dra.slices-missing",
            [f"kubectl -n {PLUGIN} delete pod {POD}"],
            id="slices-missing-restart-the-plugin",
        ),
        pytest.param(
            "gpu-replaced",
            "dra.slices-mismatch",
            [f"kubectl -n {PLUGIN} delete pod {POD}"],
            id="mismatch-restart-the-plugin",
        ),
        pytest.param(
            "claim-unallocated",
            "dra.claim-unallocated",
            ["kubectl -n ml describe resourceclaim job-0-gpu-q8w2m"],
            id="claim-describe",
        ),
        pytest.param(
            "claim-spec-invalid",
            "dra.claim-spec-invalid",
            [f"ctk cdi validate ROOT{CLAIM_SPEC}"],
            id="claim-spec-validate",
        ),
        pytest.param(
            "imex-daemon-not-running",
            "dra.imex-daemon-not-running",
            [f"kubectl get pods -A -l resource.nvidia.com/computeDomain={DOMAIN} -o wide"],
            id="imex-daemon-pods",
        ),
    ],
)
def test_each_link_comes_with_its_fix(
    name: str,
    check_id: str,
    commands: list[str],
    dra_doctor: Callable[[Case], tuple[int, dict[str, dict[str, Any]]]],
) -> None:
    _, checks = dra_doctor(CASES[name])
    assert checks[check_id]["remedy"]["commands"] == commands


def _kubernetes_validate(objects: list[dict[str, Any]], release: str, folder: Path) -> str:
    """kubernetes-validate's strict check of ``objects`` against ``release``'s schemas: its
    command (which .ci/run installs for the machine, as for the chart's manifests), so the check
    is the same whatever the suite's Python and dependencies; what it printed, '' when all pass."""
    tool = shutil.which("kubernetes-validate")
    if tool is None:
        pytest.skip("kubernetes-validate is not installed (.ci/run installs it)")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"objects-{release}.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    done = subprocess.run(
        [tool, "--strict", "--quiet", "--no-warn", "-k", release, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode == 0) == (done.stdout.strip() == ""), done.stdout + done.stderr
    return done.stdout.strip()


@pytest.mark.same_on_every_python
def test_every_served_object_validates_against_the_kubernetes_schemas(tmp_path: Path) -> None:
    """The fixture objects of every case, as served (v1 for 1.34, v1beta1 for 1.32), are real
    objects: kubernetes-validate's strict check of the release that serves that version."""
    by_release: dict[str, list[dict[str, Any]]] = {"1.32.0": [], "1.34.0": []}
    for case in CASES.values():
        cluster = cluster_of(case)
        release = "1.32.0" if cluster.versions[:1] == ("v1beta1",) else "1.34.0"
        by_release[release].extend(cluster.served())
    assert sum(map(len, by_release.values())) > 100
    for release, objects in by_release.items():
        assert objects, release
        assert _kubernetes_validate(objects, release, tmp_path) == ""


@pytest.mark.same_on_every_python
def test_an_invalid_object_is_refused_by_the_schema_check(tmp_path: Path) -> None:
    """The validation above can fail: a v1 device with v1beta1's `basic` is refused."""
    wrong = _beta1(find(load("h100-node"), "ResourceSlice"))
    wrong["apiVersion"] = f"{RESOURCE}/v1"
    said = _kubernetes_validate([wrong], "1.34.0", tmp_path)
    assert "basic" in said, said


def test_a_node_without_dra_asks_only_whether_the_group_is_served(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    api: Api,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A device-plugin node on a 1.34 cluster: the group and this node's slices (none), no
    cluster-wide DeviceClass or ResourceClaim list; every dra check skips."""
    built = fake_node("healthy")
    cluster = Cluster(load("h100-node"))
    plugin_gone(cluster.objects)  # and the slice
    cluster.objects.remove(find(cluster.objects, "Pod", "job-0"))
    device_plugin_too(cluster.objects)
    cluster.serve(api)
    _kubelet_conf(built.root, api)
    main(["doctor", "--json", "--root", str(built.root)])
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert {c["status"] for c in checks if c["id"].startswith("dra.")} == {"skip"}
    asked = [path for path, _ in api.seen if path.startswith(f"/apis/{RESOURCE}")]
    assert asked == [
        f"/apis/{RESOURCE}",
        f"/apis/{RESOURCE}/v1/resourceslices?fieldSelector=spec.nodeName%3D{NODE}",
    ]


def test_an_uninstalled_drivers_directory_is_no_dra_node(
    fake_node: Callable[[str], FakeNode],  # noqa: F811
    api: Api,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`helm uninstall` leaves /var/lib/kubelet/plugins/gpu.nvidia.com behind: with the pods on
    the node known (no plugin pod, no slice) the device-plugin node is judged as one."""
    built = fake_node("healthy")
    (built.root / "var/lib/kubelet/plugins/gpu.nvidia.com").mkdir(parents=True)
    cluster = Cluster(load("h100-node"))
    plugin_gone(cluster.objects)
    cluster.objects.remove(find(cluster.objects, "Pod", "job-0"))
    device_plugin_too(cluster.objects)
    cluster.serve(api)
    _kubelet_conf(built.root, api)
    main(["doctor", "--json", "--root", str(built.root)])
    checks = {c["id"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert {c["status"] for i, c in checks.items() if i.startswith("dra.")} == {"skip"}
    assert checks["k8s.gpu-not-allocatable"]["summary"] == "allocatable: nvidia.com/gpu=2"
