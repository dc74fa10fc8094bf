"""`ctk system`: node setup tasks (issue 6): device nodes and their /dev/char links."""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated

from typer import Option

from ctk.cli import render
from ctk.cli.options import new_app
from ctk.errors import CtkError, UsageError

if TYPE_CHECKING:
    from ctk.host.driver_numbers import DriverNumbers
    from ctk.host.root import HostRoot
    from ctk.node.dev import DevNode

app = new_app(no_args_is_help=True, help="Prepare the node: device nodes and /dev/char links.")

DRIVER_ROOT_ENV = ["NVIDIA_DRIVER_ROOT", "DRIVER_ROOT"]
DriverRoot = Annotated[
    Path | None,
    Option(
        "--driver-root",
        envvar=DRIVER_ROOT_ENV,
        help="Root of the driver installation; /proc/devices and /dev are read under it "
        "[default: /].",
        show_default=False,
    ),
]
# nvidia-ctk's other name for --driver-root: its own option, so that errors name what was given
RootAlias = Annotated[
    Path | None, Option("--root", help="The same as --driver-root.", show_default=False)
]


def _given_root(driver_root: Path | None, root: Path | None) -> tuple[str, Path]:
    """(the option as given, the root): --root or --driver-root (one of them), else /."""
    if root is None:
        return "--driver-root", driver_root or Path("/")
    if driver_root is not None and driver_root != root:
        raise UsageError(
            f"--driver-root {driver_root} and --root {root} name two different roots",
            hint="pass one of them (--root is nvidia-ctk's other name for --driver-root)",
        )
    return "--root", root


DryRun = Annotated[
    bool,
    Option("--dry-run", envvar="DRY_RUN", help="Show what would change; change nothing."),
]
LoadKernelModules = Annotated[
    bool,
    Option(
        "--load-kernel-modules",
        envvar="LOAD_KERNEL_MODULES",
        help="First load the NVIDIA kernel modules (modprobe nvidia, nvidia-uvm, nvidia-modeset).",
    ),
]
KERNEL_MODULES = ("nvidia", "nvidia-uvm", "nvidia-modeset")


def _load_kernel_modules(*, dry_run: bool) -> None:
    """modprobe each NVIDIA module, as nvidia-ctk's --load-kernel-modules does."""
    import shutil
    import subprocess

    modprobe = shutil.which("modprobe") or "/sbin/modprobe"
    for module in KERNEL_MODULES:
        if dry_run:
            render.echo(f"{'would load':<13} {module}")
            continue
        try:
            done = subprocess.run(
                [modprobe, module], capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CtkError(
                f"cannot load kernel module {module}: {exc}", hint="is kmod installed?"
            ) from exc
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise CtkError(
                f"cannot load kernel module {module}: {why[-1] if why else done.returncode}",
                hint="is the NVIDIA driver installed for this kernel?",
            )
        render.echo(f"{'loaded':<13} {module}")


def _driver_numbers(root: HostRoot) -> DriverNumbers:
    """The driver's numbers under ``root``, else the running kernel's (as nvidia-ctk reads)."""
    from ctk.host.driver_numbers import PROC_DEVICES, read_driver_numbers
    from ctk.host.root import HostRoot

    kernel = HostRoot()
    facts = read_driver_numbers(root, kernel=kernel)
    if root.root != kernel.root and facts.source == kernel.path(PROC_DEVICES):
        sys.stderr.write(
            f"note: {root.root} has no {PROC_DEVICES}: read the running kernel's "
            f"{facts.source} (the majors are the kernel's)\n"
        )
    return facts


def _create_nodes(
    driver_root: Path,
    dev_root: Path,
    *,
    control_devices: bool,
    dry_run: bool,
    option: str = "--driver-root",
) -> list[DevNode]:
    """Create the missing nodes; return every wanted node (host path) there is or would be."""
    from ctk.host.devnodes import make_node, node_state
    from ctk.host.root import HostRoot, existing_root
    from ctk.node.dev import DevNode, Major, expected_nodes

    facts = _driver_numbers(existing_root(option, driver_root))
    if Major.FRONTEND not in facts.majors and Major.NVIDIA not in facts.majors:
        raise CtkError(
            f"no NVIDIA driver loaded: {facts.source} lists no nvidia major",
            hint="load the driver (modprobe nvidia), or pass --driver-root of a driver container",
        )
    dev = HostRoot(dev_root)  # created as needed
    plan = [
        (node, dev.path(node.path))
        for node in expected_nodes(
            facts.majors, facts.gpu_minors, control=control_devices, modeset=control_devices
        )
    ]
    for node, host_path in plan:
        state = node_state(host_path, node)
        if state not in ("missing", "ok"):
            raise CtkError(
                f"{host_path}: {state}, not c {node.major}:{node.minor}; refusing to replace it",
                hint="remove it by hand if it is stale, then run this again",
            )
    for node, host_path in plan:
        numbers = f"c {node.major}:{node.minor}"
        if node_state(host_path, node) == "ok":
            render.echo(f"{'exists':<13} {host_path} ({numbers})")
        elif dry_run:
            render.echo(f"{'would create':<13} {host_path} ({numbers})")
        else:
            make_node(host_path, node)
            render.echo(f"{'created':<13} {host_path} ({numbers})")
    return [DevNode(PurePosixPath(host_path), node.major, node.minor) for node, host_path in plan]


@app.command("create-device-nodes")
def create_device_nodes(
    *,
    driver_root: Annotated[
        Path | None,
        Option(
            "--driver-root",
            envvar=DRIVER_ROOT_ENV,
            help="Root of the driver installation; /proc/devices is read under it [default: /].",
            show_default=False,
        ),
    ] = None,
    root: Annotated[
        Path | None,
        Option("--root", envvar="ROOT", help="The same as --driver-root.", show_default=False),
    ] = None,
    dev_root: Annotated[
        Path | None,
        Option(
            "--dev-root",
            envvar=["NVIDIA_DEV_ROOT", "DEV_ROOT"],
            help="Root under which /dev is populated (default: the driver root).",
        ),
    ] = None,
    control_devices: Annotated[
        bool,
        Option(
            "--control-devices", help="Also create nvidiactl, nvidia-modeset, nvidia-uvm(-tools)."
        ),
    ] = False,
    load_kernel_modules: LoadKernelModules = False,
    dry_run: DryRun = False,
) -> None:
    """Create missing /dev/nvidia* nodes from /proc/devices and the driver's GPU list."""
    option, given = _given_root(driver_root, root)
    if load_kernel_modules:
        _load_kernel_modules(dry_run=dry_run)
    _create_nodes(
        given,
        dev_root or given,
        control_devices=control_devices,
        dry_run=dry_run,
        option=option,
    )


def _all_possible(driver_root: Path, option: str) -> list[DevNode]:
    """Every node the loaded driver implies (host paths), existing or not (--create-all)."""
    from ctk.host.root import existing_root
    from ctk.node.dev import DevNode, expected_nodes

    root = existing_root(option, driver_root)
    facts = _driver_numbers(root)
    nodes = expected_nodes(facts.majors, facts.gpu_minors, control=True, modeset=True)
    if not nodes:
        raise CtkError(
            f"--create-all: no NVIDIA driver loaded: {facts.source} lists no nvidia major",
            hint="load the driver first (--load-kernel-modules), or pass --driver-root",
        )
    return [DevNode(PurePosixPath(root.path(n.path)), n.major, n.minor) for n in nodes]


def _check_dev_char_path(path: Path) -> None:
    """Refuse a --dev-char-path that cannot hold links, before anything is changed."""
    hint = "pass the directory for the <major>:<minor> links, e.g. /dev/char"
    if os.path.lexists(path) and not path.is_dir():
        raise CtkError(f"--dev-char-path {path}: not a directory", hint=hint)
    for parent in path.parents:  # the nearest one that exists must be a directory
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise CtkError(f"--dev-char-path {path}: {parent} is not a directory", hint=hint)
            return


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` lies under ``root``, when ``root`` is not `/`."""
    top = root.resolve()
    return top != Path("/") and path.resolve().is_relative_to(top)


@app.command("create-dev-char-symlinks")
def create_dev_char_symlinks(
    *,
    dev_char_path: Annotated[
        Path,
        Option(
            "--dev-char-path", envvar="DEV_CHAR_PATH", help="Where the <major>:<minor> links go."
        ),
    ] = Path("/dev/char"),
    driver_root: DriverRoot = None,
    root_alias: RootAlias = None,
    create_all: Annotated[
        bool,
        Option(
            "--create-all",
            envvar="CREATE_ALL",
            help="Link every node the loaded driver implies (its GPUs and control devices), "
            "whether or not the node exists yet; fails without a driver.",
        ),
    ] = False,
    create_device_nodes: Annotated[
        bool,
        Option(
            "--create-device-nodes",
            envvar="CREATE_DEVICE_NODES",
            help="First create missing GPU and control device nodes.",
        ),
    ] = False,
    load_kernel_modules: LoadKernelModules = False,
    dry_run: DryRun = False,
) -> None:
    """Create /dev/char links for the NVIDIA device nodes (prevents NVML "Unknown Error")."""
    from ctk.host.devnodes import dev_nodes, link_state, make_link
    from ctk.host.root import existing_root
    from ctk.system.devices import CharLink, char_links

    option, driver_root = _given_root(driver_root, root_alias)
    _check_dev_char_path(dev_char_path)
    if load_kernel_modules:
        _load_kernel_modules(dry_run=dry_run)
    planned: list[DevNode] = []
    if create_device_nodes:
        planned = _create_nodes(
            driver_root, driver_root, control_devices=True, dry_run=dry_run, option=option
        )
    elif create_all:
        planned = _all_possible(driver_root, option)
    root = existing_root(option, driver_root)
    # A dry run links the nodes it would have created, as the real run links those it created.
    numbers = _driver_numbers(root)
    nodes = sorted(set(dev_nodes(root, numbers.majors)) | set(planned))
    if not nodes:
        render.echo(f"No NVIDIA device nodes found in {driver_root}")
        return
    links = char_links(nodes, PurePosixPath(dev_char_path))
    if _inside(dev_char_path, driver_root):
        # links inside another root must work from inside it too (a host mounted at /host, a
        # chroot): relative targets, as udev writes them, instead of the root-prefixed path
        links = [
            CharLink(link.link, PurePosixPath(os.path.relpath(link.target, link.link.parent)))
            for link in links
        ]
    states = [
        (link, link_state(Path(link.link), Path(link.link.parent, link.target))) for link in links
    ]
    for link, state in states:
        if state == "blocked":
            raise CtkError(
                f"{link.link}: exists and is not a symlink; refusing to replace it",
                hint="remove it by hand, or pass another --dev-char-path",
            )
    verbs = {"ok": "exists", "missing": "created", "replace": "replaced"}
    for link, state in states:
        verb = verbs[state]
        if state != "ok":
            if dry_run:
                verb = "would create " if state == "missing" else "would replace"
            else:
                make_link(Path(link.link), link.target)
        render.echo(f"{verb:<13} {link.link} -> {link.target}")
