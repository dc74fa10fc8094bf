package main

// update-application-profile: limit EGL and Vulkan to the container's GPUs. The driver reads
// application profiles from /etc/nvidia/nvidia-application-profiles-rc.d; a profile setting
// EGLVisibleDGPUDevices to the bit mask of the /dev/nvidia<minor> nodes in the container keeps
// EGL and Vulkan from enumerating GPUs the container was not given.

import (
	"fmt"
	"syscall"
)

const (
	profileDir  = "/etc/nvidia/nvidia-application-profiles-rc.d"
	profileName = "10-container.conf"
)

func gpuMask(root *Root) (uint64, error) {
	dev, err := root.openPath("/dev")
	if err != nil || dev < 0 {
		return 0, err
	}
	defer syscall.Close(dev)
	names, err := listDir(dev)
	if err != nil {
		return 0, nil
	}
	var mask uint64
	for _, name := range names {
		if len(name) <= 6 || name[:6] != "nvidia" || !allDigits(name[6:]) {
			continue
		}
		var st syscall.Stat_t
		if lstatat(dev, name, &st) != nil ||
			st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
			continue
		}
		minor := (st.Rdev & 0xff) | ((st.Rdev >> 12) & 0xfff00)
		if minor < 64 {
			mask |= 1 << minor
		}
	}
	return mask, nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func updateApplicationProfile(rootPath string) error {
	root, err := openRoot(rootPath)
	if err != nil {
		return err
	}
	defer root.Close()
	mask, err := gpuMask(root)
	if err != nil || mask == 0 {
		return err
	}
	text := fmt.Sprintf(`{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",%#x]}],`+
		`"rules":[{"pattern":[],"profile":"_container_"}]}`, mask)
	folder, err := root.makeDirs(profileDir)
	if err != nil {
		return err
	}
	defer syscall.Close(folder)
	var st syscall.Stat_t
	if lstatat(folder, profileName, &st) == nil &&
		st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return hookErrorf("%s%s/%s: is a directory; refusing to replace it", rootPath, profileDir,
			profileName)
	}
	temp, err := writeNewFile(folder, profileDir, ".10-container-", ".tmp", text, 0o444)
	if err != nil {
		return err
	}
	before("rename", profileName)
	if err := syscall.Renameat(folder, temp, folder, profileName); err != nil {
		return hookErrorf("%s/%s: cannot replace: %s", profileDir, profileName, strerror(err))
	}
	return nil
}
