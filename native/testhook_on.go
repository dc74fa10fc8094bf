//go:build ctkhooktest

package main

// The test build: CTK_HOOK_SWAP="OP\tNAME\tFOLDER\tOUTSIDE" renames FOLDER to FOLDER.orig and
// puts a symlink to OUTSIDE in its place just before (or, for OP "opened", just after) the
// first such operation on NAME (any name when NAME is empty), as a process writing into the
// root could. CTK_HOOK_LDCONFIG_TIMEOUT (seconds) shortens the ldconfig time limit.

import (
	"os"
	"strconv"
	"strings"
	"time"
)

var swapped bool

func swap(op, name string) {
	spec := strings.Split(os.Getenv("CTK_HOOK_SWAP"), "\t")
	if swapped || len(spec) != 4 || spec[0] != op || (spec[1] != "" && spec[1] != name) {
		return
	}
	swapped = true
	if err := os.Rename(spec[2], spec[2]+".orig"); err != nil {
		panic(err)
	}
	if err := os.Symlink(spec[3], spec[2]); err != nil {
		panic(err)
	}
}

func before(op, name string) { swap(op, name) }
func after(op, name string)  { swap("opened", name) }

func timeoutFor(d time.Duration) time.Duration {
	if s, err := strconv.ParseFloat(os.Getenv("CTK_HOOK_LDCONFIG_TIMEOUT"), 64); err == nil {
		return time.Duration(s * float64(time.Second))
	}
	return d
}
