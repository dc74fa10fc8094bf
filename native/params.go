package main

// disable-device-node-modification: hide `ModifyDeviceFiles: 1` from the container. The driver's
// /proc/driver/nvidia/params tells the CUDA library whether it may create device nodes; in a
// container it must not. A copy saying `ModifyDeviceFiles: 0` is bind-mounted over the
// container's file, read-only, from a tmpfs in the container's /run. Every mount names its target
// through a descriptor (/proc/self/fd/N), so a folder swapped for a symlink cannot move it.

import (
	"fmt"
	"strings"
	"syscall"
)

const paramsPath = "/proc/driver/nvidia/params"

// modifiedParams returns text with `ModifyDeviceFiles: 0`, or "" when nothing needs changing.
func modifiedParams(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	found := false
	var b strings.Builder
	for _, line := range lines {
		if line == "ModifyDeviceFiles: 1" {
			found, line = true, "ModifyDeviceFiles: 0"
		}
		b.WriteString(line + "\n")
	}
	if !found {
		return ""
	}
	return b.String()
}

func disableDeviceNodeModification(rootPath string) error {
	fd, err := syscall.Open(paramsPath, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err == syscall.ENOENT {
		return nil
	} else if err != nil {
		return hookErrorf("%s: cannot read: %s", paramsPath, strerror(err))
	}
	buf := make([]byte, 64<<10)
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil {
		return hookErrorf("%s: cannot read: %s", paramsPath, strerror(err))
	}
	contents := modifiedParams(string(buf[:n]))
	if contents == "" {
		return nil
	}
	root, err := openRoot(rootPath)
	if err != nil {
		return err
	}
	defer root.Close()
	var fds []int
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	return mask(root, contents, &fds)
}

func mask(root *Root, contents string, fds *[]int) error {
	where := root.path + paramsPath
	missing := hookErrorf("%s: missing in the container; is /proc mounted?", where)
	folder, name, err := root.walk(paramsPath, true, false)
	if err == errNotFound {
		return missing
	} else if err != nil {
		return err
	}
	*fds = append(*fds, folder)
	target, err := syscall.Openat(folder, name, pathFlags, 0)
	if err != nil {
		return missing
	}
	*fds = append(*fds, target)
	if kind, err := fileType(target); err != nil || kind != syscall.S_IFREG {
		return missing
	}
	pid := fmt.Sprint(syscall.Getpid())
	run, err := root.makeDirs("/run/ctk-hook")
	if err != nil {
		return err
	}
	*fds = append(*fds, run)
	mountpoint, err := root.makeDirs("/run/ctk-hook/" + pid)
	if err != nil {
		return err
	}
	*fds = append(*fds, mountpoint)
	failed := func(err error) error {
		return hookErrorf("%s: cannot mount a read-only copy over it: %s", where, strerror(err))
	}
	size := max(len(contents), 4096)
	if err := syscall.Mount("tmpfs", procPath(mountpoint), "tmpfs", 0,
		fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return failed(err)
	}
	tmpfs, err := syscall.Openat(run, pid, dirFlags, 0) // the tmpfs, now on top
	if err != nil {
		return failed(err)
	}
	*fds = append(*fds, tmpfs)
	copyName, err := writeNewFile(tmpfs, "/run/ctk-hook/"+pid, "params-", "", contents, 0o444)
	if err != nil {
		return err
	}
	source, err := syscall.Openat(tmpfs, copyName, pathFlags, 0)
	if err != nil {
		return failed(err)
	}
	*fds = append(*fds, source)
	before("bind", name)
	if err := syscall.Mount(procPath(source), procPath(target), "", syscall.MS_BIND, ""); err != nil {
		return failed(err)
	}
	masked, err := syscall.Openat(folder, name, pathFlags, 0) // the bind mount
	if err != nil {
		return failed(err)
	}
	*fds = append(*fds, masked)
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_BIND | syscall.MS_RDONLY | syscall.MS_NODEV)
	if err := syscall.Mount("", procPath(masked), "", flags, ""); err != nil {
		return failed(err)
	}
	if err := syscall.Mount("", procPath(masked), "", syscall.MS_PRIVATE, ""); err != nil {
		return failed(err)
	}
	return nil
}
