package main

// chmod: set the mode of paths inside the container root (e.g. /dev/dri). Each path is opened
// once and changed through that descriptor, so a folder or file swapped for a symlink after the
// check is never followed.

import (
	"strings"
	"syscall"
	"unsafe"
)

// parseMode parses an octal mode as Python's int(text.strip(), 8) does.
func parseMode(text string) (uint32, error) {
	bad := hookErrorf("invalid --mode %s: expected an octal mode such as 755", pyRepr(text))
	s := strings.TrimFunc(text, isPySpace)
	negative := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		negative, s = s[0] == '-', s[1:]
	}
	underscoreOK := false
	if len(s) > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O') {
		s, underscoreOK = s[2:], true
	}
	var value uint64
	big, digits := false, 0
	for i, c := range s {
		switch {
		case c >= '0' && c <= '7':
			digits++
			if value = value*8 + uint64(c-'0'); value > 0o7777 {
				big = true
				value = 0o10000
			}
		case c == '_' && (i > 0 || underscoreOK) && i+1 < len(s) && s[i+1] != '_':
		default:
			return 0, bad
		}
	}
	if digits == 0 {
		return 0, bad
	}
	if big || (negative && value != 0) {
		return 0, hookErrorf("invalid --mode %s: expected an octal mode up to 7777", pyRepr(text))
	}
	return uint32(value), nil
}

// chmodFd changes the mode of what fd (an O_PATH fd) refers to: fchmodat2 where the kernel has
// it, else through /proc/self/fd.
func chmodFd(fd int, mode uint32) error {
	empty := []byte{0}
	_, _, errno := syscall.Syscall6(sysFchmodat2, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])),
		uintptr(mode), atEmptyPth, 0, 0)
	if errno == 0 {
		return nil
	}
	if errno != syscall.ENOSYS && errno != syscall.EINVAL && errno != syscall.EOPNOTSUPP &&
		errno != syscall.EPERM && errno != syscall.EBADF {
		return errno
	}
	return syscall.Chmod(procPath(fd), mode)
}

func changeModes(rootPath string, paths []string, modeText string) error {
	mode, err := parseMode(modeText)
	if err != nil {
		return err
	}
	root, err := openRoot(rootPath)
	if err != nil {
		return err
	}
	defer root.Close()
	type target struct {
		fd   int
		path string
	}
	var opened []int
	defer func() {
		for _, fd := range opened {
			syscall.Close(fd)
		}
	}()
	var targets []target
	for _, path := range paths {
		if strings.TrimFunc(path, isPySpace) == "" {
			return hookErrorf("--path must not be empty")
		}
		fd, err := root.openPath(path)
		if err != nil {
			return err
		}
		if fd < 0 {
			continue
		}
		opened = append(opened, fd)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return hookErrorf("%s%s: cannot read: %s", rootPath, path, strerror(err))
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK { // swapped in after the check
			return hookErrorf("%s%s: became a symlink; refusing to change its mode", rootPath, path)
		}
		if st.Mode&0o7777 != mode {
			targets = append(targets, target{fd, path})
		}
	}
	for _, t := range targets {
		before("chmod", t.path)
		err := chmodFd(t.fd, mode)
		if err == syscall.EPERM || err == syscall.EACCES {
			continue // a read-only /dev bind mount: nvidia-cdi-hook ignores this too
		} else if err != nil {
			return hookErrorf("%s%s: cannot chmod: %s", rootPath, t.path, strerror(err))
		}
	}
	return nil
}
