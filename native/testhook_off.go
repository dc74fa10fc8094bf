//go:build !ctkhooktest

package main

import "time"

// before and after mark the moments a test build (tag ctkhooktest) can swap a folder of the
// root for a symlink; in the real program they do nothing.
func before(string, string) {}
func after(string, string)  {}

func timeoutFor(d time.Duration) time.Duration { return d }
