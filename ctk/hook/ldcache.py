"""`update-ldcache`: add library folders to the container's loader cache.

ldconfig runs chrooted into the container root, so the kernel resolves every path it touches
inside that root; `ldconfig -r ROOT` would instead resolve paths in user space from the host's
view, where an image's absolute symlinks (and globs in its ld.so.conf includes) lead to the host.
The ldconfig binary is the host's, opened before the chroot and executed from its file
descriptor, with no shell and a fixed environment: the image cannot substitute its own. It must
be statically linked (glibc builds it so): a dynamic one would load the image's ld.so and
libraries as root inside the chroot, which is no boundary against root code.
"""

import os
import stat
import struct

from ctk.hook.rootfd import Root, write_new_file
from ctk.hook.rootfs import HookError, resolve

LD_SO_CONF_D = "/etc/ld.so.conf.d"
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}
NOT_ELF = "not an ELF program; only a static ldconfig runs safely in the container"


def add_conf_file(container: Root, prefix: str, folders: list[str]) -> str | None:
    """Write ``folders`` to a new ``/etc/ld.so.conf.d/<prefix>*.conf`` in the container; returns
    its container path."""
    if not folders:
        return None
    folder = container.make_dirs(LD_SO_CONF_D)
    try:
        text = "".join(f"{f}\n" for f in folders)
        name = write_new_file(folder, LD_SO_CONF_D, prefix, ".conf", text=text, mode=0o644)
    finally:
        os.close(folder)
    return f"{LD_SO_CONF_D}/{name}"


def _open_ldconfig(ldconfig_path: str) -> int:
    """Open the host's static ldconfig named by ``--ldconfig-path`` (`@` marks a host path).

    Ubuntu's /sbin/ldconfig is a shell script around /sbin/ldconfig.real: when the program
    named is not ELF, an `ldconfig.real` beside it is tried before giving up.
    """
    path = ldconfig_path.removeprefix("@")
    if not path.startswith("/"):
        raise HookError(f"--ldconfig-path {ldconfig_path!r}: must be an absolute host path")
    fd, problem = _open_program(path)
    beside = path.rpartition("/")[0] + "/ldconfig.real"
    if problem == NOT_ELF and beside != path and os.path.exists(beside):
        os.close(fd)
        path = beside
        fd, problem = _open_program(path)
    if problem:
        os.close(fd)
        raise HookError(f"{path}: ldconfig is {problem}")
    return fd


def _open_program(path: str) -> tuple[int, str]:
    """Open ``path``; return its fd and what makes it unfit to run chrooted ("" if nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise HookError(f"{path}: cannot open ldconfig: {exc.strerror}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o111:
        return fd, "not an executable file"
    interpreter = _elf_interpreter(fd)
    if interpreter is None:
        return fd, NOT_ELF
    if interpreter:
        return fd, "dynamically linked; only a static ldconfig runs safely in the container"
    return fd, ""


def _elf_interpreter(fd: int) -> bool | None:
    """Whether the ELF file ``fd`` asks for a program interpreter; None when it is not ELF."""
    header = os.pread(fd, 64, 0)
    if len(header) < 52 or header[:4] != b"\x7fELF" or header[4] not in (1, 2):
        return None
    order = "<" if header[5] == 1 else ">"
    if header[4] == 2:
        (phoff,) = struct.unpack_from(order + "Q", header, 32)
        phentsize, phnum = struct.unpack_from(order + "HH", header, 54)
    else:
        (phoff,) = struct.unpack_from(order + "I", header, 28)
        phentsize, phnum = struct.unpack_from(order + "HH", header, 42)
    table = os.pread(fd, phentsize * phnum, phoff)
    pt_interp = 3
    return any(
        struct.unpack_from(order + "I", table, i * phentsize)[0] == pt_interp
        for i in range(min(phnum, len(table) // max(phentsize, 1)))
    )


def _run_chrooted(container: Root, fd: int, argv: list[str]) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only chroots and execs
        try:
            os.fchdir(container.fd)
            os.chroot(".")
            os.execve(fd, argv, ENV)
        except OSError as exc:
            message = f"ctk-hook: error: cannot run ldconfig in {container.path}: {exc.strerror}\n"
            os.write(2, message.encode())
        os._exit(127)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def update_ldcache(root: str, folders: list[str], ldconfig_path: str) -> None:
    """Register ``folders`` (container paths) in the container's /etc/ld.so.cache."""
    wanted = list(dict.fromkeys(folders))
    for folder in wanted:
        if not folder.startswith("/"):
            raise HookError(f"--folder {folder!r}: must be an absolute path in the container")
        resolve(root, folder)  # refuses folders whose links lead out of the root
    fd = _open_ldconfig(ldconfig_path)
    try:
        with Root(root) as container:
            os.close(container.make_dirs("/etc"))
            add_conf_file(container, "00-nvcr-", wanted)
            present = [f for f in wanted if os.path.isdir(resolve(root, f))]
            argv = ["ldconfig", "-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache", *present]
            code = _run_chrooted(container, fd, argv)
    finally:
        os.close(fd)
    if code != 0:
        raise HookError(f"ldconfig failed in {root} (exit status {code})")
