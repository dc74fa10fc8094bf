package main

// System calls the frozen syscall package lacks.

import (
	"syscall"
	"unsafe"
)

const (
	oPath             = 0x200000
	atSymlinkNofollow = 0x100
)

func symlinkat(target string, dirfd int, name string) error {
	t, err := syscall.BytePtrFromString(target)
	if err != nil {
		return err
	}
	n, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall(syscall.SYS_SYMLINKAT, uintptr(unsafe.Pointer(t)),
		uintptr(dirfd), uintptr(unsafe.Pointer(n)))
	if errno != 0 {
		return errno
	}
	return nil
}

func lstatat(dirfd int, name string, st *syscall.Stat_t) error {
	n, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(sysFstatat, uintptr(dirfd), uintptr(unsafe.Pointer(n)),
		uintptr(unsafe.Pointer(st)), atSymlinkNofollow, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
