package main

// create-symlinks: make link -> target symlinks inside the container root. Every link is
// checked before any is made, so a refused link leaves the root untouched; a relative target
// that climbs above the root, a link path that does, and an existing entry that is not a
// symlink are refused. The links are then made through descriptors (root.go).

import (
	"path"
	"strings"
	"syscall"
)

func parseLink(spec string) (string, string, error) {
	parts := strings.Split(spec, "::")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", hookErrorf("invalid --link %s: expected TARGET::LINK", pyRepr(spec))
	}
	return parts[0], parts[1], nil
}

func climbsAboveRoot(depth int, target string) bool {
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "..":
			if depth--; depth < 0 {
				return true
			}
		case "", ".":
		default:
			depth++
		}
	}
	return false
}

// pyDirname is Python's posixpath.dirname.
func pyDirname(p string) string {
	i := strings.LastIndex(p, "/") + 1
	head := p[:i]
	if head != "" && strings.Trim(head, "/") != "" {
		head = strings.TrimRight(head, "/")
	}
	return head
}

// planLink returns the host path of the link, or "" when it is already there.
func planLink(r *Root, target, link string) (string, error) {
	trimmed := strings.TrimRight(link, "/")
	name := path.Base(trimmed)
	if i := strings.LastIndex(trimmed, "/"); i >= 0 {
		name = trimmed[i+1:]
	} else {
		name = trimmed
	}
	if name == "" || name == "." || name == ".." {
		return "", hookErrorf("invalid link path %s", pyRepr(link))
	}
	dir := pyDirname(trimmed)
	if dir == "" {
		dir = "/"
	}
	parent, err := r.resolve(dir)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(target, "/") && climbsAboveRoot(len(parent), target) {
		return "", hookErrorf("%s -> %s: the target leads out of the container root", link, target)
	}
	rel := strings.Join(append(append([]string{}, parent...), name), "/")
	hostLink := r.hostPath(parent) + "/" + name
	current, err := readlinkat(r.fd, rel)
	switch err {
	case nil:
		if current == target {
			return "", nil
		}
		return hostLink, nil
	case syscall.ENOENT:
		return hostLink, nil
	case syscall.ENOTDIR:
		return "", hookErrorf(
			"%s: cannot create the link: a parent in the container is not a directory", link)
	case syscall.EINVAL:
		return "", hookErrorf("%s: already exists and is not a symlink; refusing to replace it",
			hostLink)
	}
	return "", hookErrorf("%s: cannot read: %s", hostLink, strerror(err))
}

func createSymlinks(root *Root, specs []string) error {
	type plan struct{ target, link string }
	var plans []plan
	seen := map[string]bool{}
	for _, spec := range specs {
		if seen["spec:"+spec] {
			continue
		}
		seen["spec:"+spec] = true
		target, link, err := parseLink(spec)
		if err != nil {
			return err
		}
		hostLink, err := planLink(root, target, link)
		if err != nil {
			return err
		}
		if hostLink != "" && !seen["link:"+hostLink] {
			seen["link:"+hostLink] = true
			plans = append(plans, plan{target, link})
		}
	}
	for _, p := range plans {
		if err := root.symlink(p.target, p.link); err != nil {
			return err
		}
	}
	return nil
}
