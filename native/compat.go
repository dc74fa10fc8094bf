package main

// enable-cuda-compat: prefer the image's CUDA forward-compat driver when it is newer than the
// host's. Like nvidia-cdi-hook: a no-op unless the image has the compat folder, an ld.so.cache
// and an ld.so.conf.d folder, and exactly one compat libcuda.

import (
	"strings"
	"syscall"
)

// majorOf returns the leading decimal digits of version ("" when there are none), without
// leading zeros, so that majors compare as numbers of any size.
func majorOf(version string) (string, bool) {
	head, _, _ := strings.Cut(strings.TrimFunc(version, isPySpace), ".")
	if head == "" || strings.Trim(head, "0123456789") != "" {
		return "", false
	}
	head = strings.TrimLeft(head, "0")
	if head == "" {
		head = "0"
	}
	return head, true
}

func greater(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

func compatMajor(root *Root, compatDir string) (string, bool) {
	fd, err := root.openPath(compatDir)
	if err != nil || fd < 0 {
		return "", false
	}
	names, err := listDir(fd)
	syscall.Close(fd)
	if err != nil {
		return "", false
	}
	var libs []string
	for _, n := range names {
		if strings.HasPrefix(n, "libcuda.so.") && strings.Count(n, ".") >= 3 {
			libs = append(libs, n)
		}
	}
	if len(libs) != 1 {
		return "", false
	}
	version := strings.TrimPrefix(libs[0], "libcuda.so.")
	head, _, _ := strings.Cut(version, ".")
	return majorOf(head)
}

func enableCudaCompat(rootPath, hostVersion, compatDir string) error {
	if hostVersion == "" {
		return hookErrorf("--host-driver-version is required")
	}
	hostMajor, ok := majorOf(hostVersion)
	if !ok {
		return hookErrorf("--host-driver-version %s: expected a version such as 570.124.06",
			pyRepr(hostVersion))
	}
	if !strings.HasPrefix(compatDir, "/") {
		return hookErrorf("--cuda-compat-container-root %s: must be absolute", pyRepr(compatDir))
	}
	root, err := openRoot(rootPath)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, needed := range []string{compatDir, "/etc/ld.so.cache", "/etc/ld.so.conf.d"} {
		fd, err := root.openPath(needed)
		if err != nil {
			return err
		}
		if fd < 0 {
			return nil
		}
		syscall.Close(fd)
	}
	major, ok := compatMajor(root, compatDir)
	if !ok || !greater(major, hostMajor) {
		return nil
	}
	_, err = addConfFile(root, "00-compat-", []string{compatDir})
	return err
}
