package main

// update-ldcache: add library folders to the container's loader cache. ldconfig runs chrooted
// into the container root, so the kernel resolves every path it touches inside that root
// (`ldconfig -r ROOT` resolves them in user space, from the host's view). The ldconfig program is
// the host's, opened before the chroot and executed from its descriptor (execveat), with no shell
// and a fixed environment: the image cannot substitute its own. It must be statically linked: a
// dynamic one would load the image's ld.so as root inside the chroot. Running ldconfig is the
// last step: the hook chroots and becomes ldconfig (execveat), with a timer that stops it.

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	ldSoConfD  = "/etc/ld.so.conf.d"
	notELF     = "not an ELF program; only a static ldconfig runs safely in the container"
	ldTimeout  = 60 * time.Second
	atEmptyPth = 0x1000
)

var ldconfigEnv = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}

// addConfFile writes folders to a new /etc/ld.so.conf.d/<prefix>*.conf; returns its path.
func addConfFile(r *Root, prefix string, folders []string) (string, error) {
	if len(folders) == 0 {
		return "", nil
	}
	folder, err := r.makeDirs(ldSoConfD)
	if err != nil {
		return "", err
	}
	defer syscall.Close(folder)
	name, err := writeNewFile(folder, ldSoConfD, prefix, ".conf",
		strings.Join(folders, "\n")+"\n", 0o644)
	if err != nil {
		return "", err
	}
	return ldSoConfD + "/" + name, nil
}

// openProgram opens path; returns its fd and what makes it unfit to run chrooted ("" if nothing).
func openProgram(path string) (int, string, error) {
	// O_NONBLOCK: a FIFO named as ldconfig would block the open (and the container start)
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return -1, "", hookErrorf("%s: cannot open ldconfig: %s", path, strerror(err))
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
		st.Mode&0o111 == 0 {
		return fd, "not an executable file", nil
	}
	switch elfInterpreter(fd) {
	case elfNone:
		return fd, notELF, nil
	case elfDynamic:
		return fd, "dynamically linked; only a static ldconfig runs safely in the container", nil
	}
	return fd, "", nil
}

const (
	elfNone = iota
	elfStatic
	elfDynamic
)

// elfInterpreter tells whether the ELF file fd asks for a program interpreter.
func elfInterpreter(fd int) int {
	header := make([]byte, 64)
	n, _ := syscall.Pread(fd, header, 0)
	if n < 52 || !bytes.Equal(header[:4], []byte("\x7fELF")) || (header[4] != 1 && header[4] != 2) {
		return elfNone
	}
	var order binary.ByteOrder = binary.LittleEndian
	if header[5] != 1 {
		order = binary.BigEndian
	}
	var phoff uint64
	var phentsize, phnum int
	if header[4] == 2 {
		if n < 64 {
			return elfNone
		}
		phoff = order.Uint64(header[32:])
		phentsize, phnum = int(order.Uint16(header[54:])), int(order.Uint16(header[56:]))
	} else {
		phoff = uint64(order.Uint32(header[28:]))
		phentsize, phnum = int(order.Uint16(header[42:])), int(order.Uint16(header[44:]))
	}
	if phentsize < 4 || phnum == 0 || phoff > 1<<30 {
		return elfStatic
	}
	table := make([]byte, phentsize*phnum)
	got, _ := syscall.Pread(fd, table, int64(phoff))
	for i := 0; (i+1)*phentsize <= got; i++ {
		if order.Uint32(table[i*phentsize:]) == 3 { // PT_INTERP
			return elfDynamic
		}
	}
	return elfStatic
}

// openLdconfig opens the host's static ldconfig named by --ldconfig-path (`@` marks a host
// path). Ubuntu's /sbin/ldconfig is a shell script around /sbin/ldconfig.real: when the program
// named is not ELF, an ldconfig.real beside it is tried before giving up.
func openLdconfig(ldconfigPath string) (int, error) {
	path := strings.TrimPrefix(ldconfigPath, "@")
	if !strings.HasPrefix(path, "/") {
		return -1, hookErrorf("--ldconfig-path %s: must be an absolute host path",
			pyRepr(ldconfigPath))
	}
	fd, problem, err := openProgram(path)
	if err != nil {
		return -1, err
	}
	beside := path[:strings.LastIndex(path, "/")] + "/ldconfig.real"
	if problem == notELF && beside != path {
		if _, err := os.Stat(beside); err == nil {
			syscall.Close(fd)
			path = beside
			if fd, problem, err = openProgram(path); err != nil {
				return -1, err
			}
		}
	}
	if problem != "" {
		syscall.Close(fd)
		return -1, hookErrorf("%s: ldconfig is %s", path, problem)
	}
	return fd, nil
}

// checkConfigFiles refuses an ld.so.conf (or a conf.d file) that is not a regular file: a FIFO
// there would block ldconfig.
func checkConfigFiles(r *Root) error {
	paths := []string{"/etc/ld.so.conf"}
	if dir, err := r.openPath(ldSoConfD); err == nil && dir >= 0 {
		names, _ := listDir(dir)
		syscall.Close(dir)
		for _, name := range names {
			if strings.HasSuffix(name, ".conf") {
				paths = append(paths, ldSoConfD+"/"+name)
			}
		}
	}
	for _, p := range paths {
		fd, err := r.openPath(p)
		if err != nil {
			return err
		}
		if fd < 0 {
			continue
		}
		var st syscall.Stat_t
		err = syscall.Fstat(fd, &st)
		syscall.Close(fd)
		if err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFREG &&
			st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return hookErrorf("%s: not a regular file in the container; refusing to run ldconfig",
				p)
		}
	}
	return nil
}

func updateLdcache(rootPath string, folders []string, ldconfigPath string) error {
	var wanted []string
	seen := map[string]bool{}
	for _, f := range folders {
		if !seen[f] {
			seen[f] = true
			wanted = append(wanted, f)
		}
	}
	root, err := openRoot(rootPath)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, folder := range wanted {
		if !strings.HasPrefix(folder, "/") {
			return hookErrorf("--folder %s: must be an absolute path in the container",
				pyRepr(folder))
		}
		if _, err := root.resolve(folder); err != nil {
			return err
		}
	}
	fd, err := openLdconfig(ldconfigPath)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	etc, err := root.makeDirs("/etc")
	if err != nil {
		return err
	}
	syscall.Close(etc)
	if err := checkConfigFiles(root); err != nil {
		return err
	}
	if _, err := addConfFile(root, "00-nvcr-", wanted); err != nil {
		return err
	}
	args := []string{"ldconfig", "-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache"}
	for _, folder := range wanted {
		if dir, err := root.openPath(folder); err == nil && dir >= 0 {
			kind, _ := fileType(dir)
			syscall.Close(dir)
			if kind == syscall.S_IFDIR {
				args = append(args, folder)
			}
		}
	}
	return execChrooted(root, fd, args)
}

// execChrooted becomes the program fd (ldconfig) with args, chrooted into the root: the last
// step of update-ldcache, so no child is needed, and ldconfig's exit status is the hook's. An
// ITIMER_REAL set just before survives execve: when ldconfig runs longer than ldTimeout,
// SIGALRM (whose default action ends the process) stops it.
func execChrooted(root *Root, program int, args []string) error {
	runtime.LockOSThread()
	fail := func(err error) error {
		return hookErrorf("cannot run ldconfig in %s: %s", root.path, strerror(err))
	}
	argv, err := syscall.SlicePtrFromStrings(args)
	if err != nil {
		return fail(err)
	}
	envp, err := syscall.SlicePtrFromStrings(ldconfigEnv)
	if err != nil {
		return fail(err)
	}
	if err := syscall.Fchdir(root.fd); err != nil {
		return fail(err)
	}
	if err := syscall.Chroot("."); err != nil {
		return fail(err)
	}
	// from here on the process is inside the container root: only the exec is left
	timeout := timeoutFor(ldTimeout)
	timer := [4]int64{0, 0, int64(timeout / time.Second), int64(timeout%time.Second) / 1000}
	if _, _, errno := syscall.RawSyscall(sysSetitimer, 0, uintptr(unsafe.Pointer(&timer)), 0); errno != 0 {
		return fail(errno)
	}
	empty := []byte{0}
	_, _, errno := syscall.Syscall6(sysExecveat, uintptr(program),
		uintptr(unsafe.Pointer(&empty[0])), uintptr(unsafe.Pointer(&argv[0])),
		uintptr(unsafe.Pointer(&envp[0])), atEmptyPth, 0)
	return fail(errno)
}
