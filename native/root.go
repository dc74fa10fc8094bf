package main

// Acting inside a container root through file descriptors, so that a folder swapped for a
// symlink between a check and its use cannot lead a write out of the root (the CVE-2024-0132
// class). Existing paths are opened with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS) where the
// kernel has it, after the path's symlinks were resolved under this file's rule (an absolute
// target restarts at the root; a ".." above the root is refused, not clamped); without openat2,
// and whenever folders are made, the path is walked one name at a time from the root's
// descriptor, each folder opened O_PATH|O_NOFOLLOW|O_DIRECTORY. Every mkdir, symlink, rename,
// file creation, chmod and mount then acts relative to a descriptor, never on a path string.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"unsafe"
)

const (
	maxSymlinks = 40
	dirFlags    = oPath | syscall.O_NOFOLLOW | syscall.O_DIRECTORY | syscall.O_CLOEXEC
	pathFlags   = oPath | syscall.O_NOFOLLOW | syscall.O_CLOEXEC

	resolveNoMagiclinks = 0x02
	resolveNoSymlinks   = 0x04
	resolveInRoot       = 0x10
)

var errNotFound = errors.New("not found")

// haveOpenat2 turns false when the kernel (or a seccomp filter) refuses openat2: probed once
// when the root is opened, so that one run resolves every path one way.
var haveOpenat2 = true

func refusesOpenat2(err error) bool {
	return err == syscall.ENOSYS || err == syscall.EPERM || err == syscall.E2BIG
}

type openHow struct{ flags, mode, resolve uint64 }

func openat2(dirfd int, path string, flags int, resolve uint64) (int, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	how := openHow{flags: uint64(flags), resolve: resolve}
	fd, _, errno := syscall.Syscall6(sysOpenat2, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func procPath(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

func splitPath(path string) []string {
	var parts []string
	for _, p := range strings.Split(path, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	return parts
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := readlinkatRaw(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

func readlinkatRaw(dirfd int, name string, buf []byte) (int, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return 0, err
	}
	n, _, errno := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(dirfd),
		uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// linkTarget is the target of symlink name in folder; ok is false when it is missing or not a
// symlink.
func linkTarget(folder int, name string) (string, bool, error) {
	target, err := readlinkat(folder, name)
	switch {
	case err == nil:
		return target, true, nil
	case err == syscall.ENOENT || err == syscall.ENOTDIR || err == syscall.EINVAL:
		return "", false, nil
	}
	return "", false, err
}

// Root is a container root held open by descriptor; path is its host path, for messages.
type Root struct {
	fd   int
	path string
}

func openRoot(path string) (*Root, error) {
	fd, err := syscall.Open(path, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, hookErrorf("%s: cannot open the container root: %s", path, strerror(err))
	}
	if haveOpenat2 {
		probe, err := openat2(fd, ".", oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, resolveInRoot)
		if err == nil {
			syscall.Close(probe)
		} else if refusesOpenat2(err) {
			haveOpenat2 = false
		}
	}
	return &Root{fd: fd, path: path}, nil
}

func (r *Root) Close() { syscall.Close(r.fd) }

func (r *Root) escape(path string) error {
	return hookErrorf("%s: leads out of the container root %s; refusing", path, r.path)
}

func (r *Root) loop(path string) error {
	return hookErrorf("%s: too many levels of symbolic links in %s", path, r.path)
}

// resolve returns container path path with every symlink resolved inside the root, as a list
// of names; missing names are kept, so the result can name something to create.
func (r *Root) resolve(path string) ([]string, error) {
	pending := splitPath(path)
	var resolved []string
	for links := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		if part == ".." {
			if len(resolved) == 0 {
				return nil, r.escape(path)
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		candidate := strings.Join(append(append([]string{}, resolved...), part), "/")
		target, isLink, err := linkTarget(r.fd, candidate)
		if err != nil {
			return nil, hookErrorf("%s/%s: cannot read: %s", r.path, candidate, strerror(err))
		}
		if !isLink {
			resolved = append(resolved, part)
			continue
		}
		if links++; links > maxSymlinks {
			return nil, r.loop(path)
		}
		if strings.HasPrefix(target, "/") {
			resolved = nil
		}
		pending = append(splitPath(target), pending...)
	}
	return resolved, nil
}

// hostPath is the host path of resolved names, for messages.
func (r *Root) hostPath(names []string) string {
	if len(names) == 0 {
		return r.path
	}
	return r.path + "/" + strings.Join(names, "/")
}

// openDir opens folder name in folder (made, mode 755, when missing and make); isLink is true
// when name is a symlink; errors are errno values.
func openDir(folder int, name string, make bool) (fd int, isLink bool, err error) {
	fd, err = syscall.Openat(folder, name, dirFlags, 0)
	after("open", name)
	switch {
	case err == nil:
		return fd, false, nil
	case err == syscall.ENOENT && make:
		before("mkdir", name)
		if err := syscall.Mkdirat(folder, name, 0o755); err != nil && err != syscall.EEXIST {
			return -1, false, err
		}
		return openDir(folder, name, false)
	case err == syscall.ENOTDIR:
		if _, isLink, _ := linkTarget(folder, name); isLink {
			return -1, true, nil
		}
	}
	return -1, false, err
}

// walk opens the folder of container path path's last name; returns its fd and that name
// ("." when the path ends at a folder). Symlinks are followed inside the root, the last name's
// only when follow. Missing folders are made when make, else errNotFound.
func (r *Root) walk(path string, follow, make bool) (int, string, error) {
	first, err := syscall.Dup(r.fd)
	if err != nil {
		return -1, "", hookErrorf("%s: %s", r.path, strerror(err))
	}
	fds := []int{first}
	closeFrom := func(n int) {
		for _, fd := range fds[n:] {
			syscall.Close(fd)
		}
		fds = fds[:n]
	}
	pending := splitPath(path)
	for links := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		if part == ".." {
			if len(fds) == 1 {
				closeFrom(0)
				return -1, "", r.escape(path)
			}
			closeFrom(len(fds) - 1)
			continue
		}
		if len(pending) == 0 && !follow {
			last := fds[len(fds)-1]
			fds = fds[:len(fds)-1]
			closeFrom(0)
			return last, part, nil
		}
		if len(pending) > 0 {
			fd, isLink, err := openDir(fds[len(fds)-1], part, make)
			switch {
			case err == syscall.ENOENT:
				closeFrom(0)
				return -1, "", errNotFound
			case err == syscall.ENOTDIR:
				closeFrom(0)
				return -1, "", hookErrorf("%s: %s is not a folder in the container", path, part)
			case err != nil:
				closeFrom(0)
				return -1, "", hookErrorf("%s: cannot open %s: %s", path, part, strerror(err))
			case !isLink:
				fds = append(fds, fd)
				continue
			}
		}
		target, isLink, err := linkTarget(fds[len(fds)-1], part)
		if err != nil {
			closeFrom(0)
			return -1, "", hookErrorf("%s: cannot read %s: %s", path, part, strerror(err))
		}
		if !isLink { // the last name, and not a symlink
			last := fds[len(fds)-1]
			fds = fds[:len(fds)-1]
			closeFrom(0)
			return last, part, nil
		}
		if links++; links > maxSymlinks {
			closeFrom(0)
			return -1, "", r.loop(path)
		}
		if strings.HasPrefix(target, "/") {
			closeFrom(1)
		}
		pending = append(splitPath(target), pending...)
	}
	last := fds[len(fds)-1]
	fds = fds[:len(fds)-1]
	closeFrom(0)
	return last, ".", nil
}

// makeDirs opens container folder path, making missing folders (mode 755); an O_PATH fd.
func (r *Root) makeDirs(path string) (int, error) {
	folder, name, err := r.walk(path, true, true)
	if err != nil {
		return -1, err
	}
	defer syscall.Close(folder)
	fd, isLink, err := openDir(folder, name, true)
	if err != nil {
		return -1, hookErrorf("%s: cannot create folder in %s: %s", path, r.path, strerror(err))
	}
	if isLink { // it became a symlink after the walk read it
		return -1, hookErrorf("%s: changed while being opened in %s; refusing", path, r.path)
	}
	return fd, nil
}

// openPath returns an O_PATH fd of what container path path names (symlinks followed inside
// the root), or -1 when it does not exist.
func (r *Root) openPath(path string) (int, error) {
	if haveOpenat2 {
		names, err := r.resolve(path)
		if err != nil {
			return -1, err
		}
		rel := "."
		if len(names) > 0 {
			rel = strings.Join(names, "/")
			before("open", names[len(names)-1])
		}
		fd, err := openat2(r.fd, rel, pathFlags, resolveInRoot|resolveNoSymlinks|resolveNoMagiclinks)
		switch err {
		case nil:
			return fd, nil
		case syscall.ENOENT:
			return -1, nil
		default:
			if refusesOpenat2(err) {
				haveOpenat2 = false
			}
		}
		// anything else (a symlink swapped in meanwhile, a file where a folder was): the walk
		// below sees the root as it is now and names the problem
	}
	folder, name, err := r.walk(path, true, false)
	if err == errNotFound {
		return -1, nil
	} else if err != nil {
		return -1, err
	}
	defer syscall.Close(folder)
	before("open", name)
	fd, err := syscall.Openat(folder, name, pathFlags, 0)
	switch err {
	case nil:
		return fd, nil
	case syscall.ENOENT:
		return -1, nil
	}
	return -1, hookErrorf("%s: cannot open in %s: %s", path, r.path, strerror(err))
}

// symlink makes container path link a symlink to target; an old symlink is replaced
// (atomically), anything else is refused. Missing parent folders are made.
func (r *Root) symlink(target, link string) error {
	folder, name, err := r.walk(link, false, true)
	if err != nil {
		return err
	}
	defer syscall.Close(folder)
	current, err := readlinkat(folder, name)
	exists := err == nil
	if err != nil && err != syscall.ENOENT {
		return hookErrorf("%s%s: already exists and is not a symlink; refusing to replace it",
			r.path, link)
	}
	if exists && current == target {
		return nil
	}
	if !exists {
		before("symlink", name)
		err = symlinkat(target, folder, name)
	} else {
		temp := fmt.Sprintf(".%s.ctk-hook-%d", name, syscall.Getpid())
		before("symlink", temp)
		if err = symlinkat(target, folder, temp); err == nil {
			before("rename", name)
			err = syscall.Renameat(folder, temp, folder, name)
		}
	}
	if err != nil {
		return hookErrorf("%s: cannot create symlink in %s: %s", link, r.path, strerror(err))
	}
	return nil
}

// writeNewFile writes text to a new file with a random name in folder (an fd of container
// folder where), never through a symlink; returns the name.
func writeNewFile(folder int, where, prefix, suffix, text string, mode uint32) (string, error) {
	flags := syscall.O_WRONLY | syscall.O_CREAT | syscall.O_EXCL | syscall.O_NOFOLLOW |
		syscall.O_CLOEXEC
	for range 10 {
		name := fmt.Sprintf("%s%08x%s", prefix, rand.Uint32(), suffix)
		before("create", name)
		fd, err := syscall.Openat(folder, name, flags, mode)
		if err == syscall.EEXIST {
			continue
		} else if err != nil {
			return "", hookErrorf("%s/%s: cannot create: %s", where, name, strerror(err))
		}
		_, err = syscall.Write(fd, []byte(text))
		if err == nil {
			err = syscall.Fchmod(fd, mode)
		}
		syscall.Close(fd)
		if err != nil {
			return "", hookErrorf("%s/%s: cannot write: %s", where, name, strerror(err))
		}
		return name, nil
	}
	return "", hookErrorf("%s: cannot find a free file name for %s*%s", where, prefix, suffix)
}

// fileType is the S_IFMT bits of what fd refers to (an O_PATH fd is fine).
func fileType(fd int) (uint32, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Mode & syscall.S_IFMT, nil
}

// listDir returns the names in container folder fd (an O_PATH fd).
func listDir(fd int) ([]string, error) {
	dir, err := syscall.Openat(fd, ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(dir)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(dir, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}
