package main

// The OCI hook protocol: the container state on stdin (or --container-spec) names the bundle,
// whose config.json names the container's root filesystem.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
)

// maxJSON bounds what the hook reads of a state or config.json: an OCI config is kilobytes;
// a link to /dev/zero must not fill memory.
const maxJSON = 16 << 20

func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// readBounded reads a regular file (never a FIFO or device: opening does not block, reading
// stops at maxJSON).
func readBounded(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	return readCapped(f)
}

func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxJSON+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJSON {
		return nil, fmt.Errorf("larger than %d MiB", maxJSON>>20)
	}
	return data, nil
}

func loadJSON(data []byte, where string) (any, error) {
	value, err := parseJSON(string(data))
	if err != nil {
		return nil, hookErrorf("%s: not valid JSON: %s", where, err)
	}
	return value, nil
}

func readState(spec string) (map[string]any, error) {
	var data []byte
	var err error
	where := spec
	if spec == "" || spec == "-" {
		where = "container state on stdin"
		data, err = readCapped(os.Stdin)
		if err != nil {
			return nil, hookErrorf("%s: cannot read: %s", where, strerror(err))
		}
	} else if data, err = readBounded(spec); err != nil {
		return nil, hookErrorf("%s: cannot read container state: %s", spec, strerror(err))
	}
	if strings.TrimFunc(string(data), isPySpace) == "" {
		return nil, hookErrorf("%s: empty; an OCI runtime passes the container state here", where)
	}
	value, err := loadJSON(data, where)
	if err != nil {
		return nil, err
	}
	state, ok := value.(map[string]any)
	if !ok {
		return nil, hookErrorf("%s: not an OCI container state (expected a JSON object)", where)
	}
	return state, nil
}

// absPath is Python's os.path.abspath: joined to the working folder, then normalized.
func absPath(path string) string {
	if !strings.HasPrefix(path, "/") {
		if cwd, err := os.Getwd(); err == nil {
			path = cwd + "/" + path
		}
	}
	return filepath.Clean(path)
}

func containerRoot(state map[string]any) (string, error) {
	bundle, ok := state["bundle"].(string)
	if !ok || bundle == "" {
		return "", hookErrorf("container state has no 'bundle' path")
	}
	bundle = absPath(bundle)
	configPath := filepath.Join(bundle, "config.json")
	data, err := readBounded(configPath)
	if err != nil {
		return "", hookErrorf("%s: cannot read the bundle's config: %s", configPath, strerror(err))
	}
	value, err := loadJSON(data, configPath)
	if err != nil {
		return "", err
	}
	var rootPath string
	if config, ok := value.(map[string]any); ok {
		if root, ok := config["root"].(map[string]any); ok {
			rootPath, _ = root["path"].(string)
		}
	}
	if rootPath == "" {
		return "", hookErrorf("%s: has no root.path", configPath)
	}
	joined := rootPath
	if !strings.HasPrefix(rootPath, "/") {
		joined = bundle + "/" + rootPath
	}
	rootfs := realPath(joined)
	if rootfs == "/" {
		return "", hookErrorf("%s: root.path is the host's /; refusing to change it", configPath)
	}
	var st syscall.Stat_t
	if syscall.Stat(rootfs, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return "", hookErrorf("%s: the container root (root.path) is not a directory", rootfs)
	}
	return rootfs, nil
}

// realPath is Python's os.path.realpath (not strict): host symlinks resolved, missing names kept.
func realPath(path string) string {
	resolved := "/"
	pending := strings.Split(path, "/")
	for links := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		target, err := os.Readlink(next)
		if err != nil || links > maxSymlinks {
			resolved = next
			continue
		}
		links++
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return resolved
}
