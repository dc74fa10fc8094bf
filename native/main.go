// Command ctk-hook runs the OCI createContainer hooks that CDI specs name, with the subcommands
// and flags of NVIDIA's nvidia-cdi-hook: create-symlinks, update-ldcache, chmod,
// enable-cuda-compat, update-application-profile and disable-device-node-modification. It is a
// static program with no interpreter: it runs on every container start, on nodes without Python.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
)

const prog = "ctk-hook"

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// hookError is a problem told as one line on stderr (exit 1).
type hookError struct{ msg string }

func (e *hookError) Error() string { return e.msg }

func hookErrorf(format string, args ...any) error {
	return &hookError{fmt.Sprintf(format, args...)}
}

// oneLine keeps an error on one line whatever it quotes (a path with a newline or carriage
// return in it): those two are written as \n and \r.
func oneLine(text string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(text)
}

// strerror is the C library's message for err's errno, as Python's OSError.strerror has it.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = errno
	}
	text := err.Error()
	if text == "" {
		return text
	}
	return strings.ToUpper(text[:1]) + text[1:]
}

// pyRepr quotes s as Python's repr() does, for messages that name a value.
func pyRepr(s string) string {
	quote := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		quote = `"`
	}
	var b strings.Builder
	b.WriteString(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case string(r) == quote:
			b.WriteString(`\` + quote)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(quote)
	return b.String()
}

type option struct {
	name, help, def, metavar string
	repeat                   bool
}

type command struct {
	name, help string
	options    []option
}

var spec = option{name: "container-spec", metavar: "VALUE",
	help: "OCI container state file; empty or '-' reads stdin (default)"}

var commands = []command{
	{"create-symlinks", "Create symlinks in the container.", []option{
		{name: "link", help: "a symlink to create, as TARGET::LINK", metavar: "T::L", repeat: true},
		spec}},
	{"update-ldcache", "Add folders to the container's loader cache by running ldconfig in it.",
		[]option{
			{name: "folder", help: "a container folder to add to the cache", metavar: "DIR",
				repeat: true},
			{name: "ldconfig-path", help: "the host's ldconfig program", def: "/sbin/ldconfig",
				metavar: "P"},
			spec}},
	{"chmod", "Set the mode of paths in the container.", []option{
		{name: "path", help: "a container path to change", metavar: "PATH", repeat: true},
		{name: "mode", help: "the octal mode, e.g. 755", metavar: "MODE"},
		spec}},
	{"enable-cuda-compat",
		"Use the image's CUDA compat libraries when they are newer than the host driver.",
		[]option{
			{name: "host-driver-version", help: "the host driver version, e.g. 570.124.06",
				metavar: "VALUE"},
			{name: "host-cuda-version",
				help: "accepted for compatibility; the driver version decides", metavar: "VALUE"},
			{name: "cuda-compat-container-root", help: "the compat folder in the container",
				def: "/usr/local/cuda/compat", metavar: "DIR"},
			spec}},
	{"update-application-profile",
		"Limit EGL and Vulkan to the container's GPUs (an application profile).",
		[]option{spec}},
	{"disable-device-node-modification",
		"Stop CUDA in the container from creating device nodes (ModifyDeviceFiles: 0).",
		[]option{spec}},
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// helpWanted asks for the help of a command ("" for the program).
type helpWanted struct{ command string }

func (h *helpWanted) Error() string { return "help" }

type versionWanted struct{}

func (versionWanted) Error() string { return "version" }

type invocation struct {
	command string
	values  map[string][]string
	debug   bool
}

func parse(args []string) (*invocation, error) {
	inv := &invocation{values: map[string][]string{}}
	rest := args
	for len(rest) > 0 {
		switch rest[0] {
		case "--debug", "-d":
			inv.debug = true
		case "--quiet", "-q":
		case "--version", "-v":
			return nil, versionWanted{}
		default:
			goto globalsDone
		}
		rest = rest[1:]
	}
globalsDone:
	if len(rest) == 0 || rest[0] == "-h" || rest[0] == "--help" || rest[0] == "help" {
		return nil, &helpWanted{}
	}
	inv.command, rest = rest[0], rest[1:]
	cmd := findCommand(inv.command)
	if cmd == nil {
		names := make([]string, len(commands))
		for i, c := range commands {
			names[i] = c.name
		}
		return nil, usagef("unknown command %s (one of: %s)", pyRepr(inv.command),
			strings.Join(names, ", "))
	}
	for len(rest) > 0 {
		arg := rest[0]
		rest = rest[1:]
		if arg == "-h" || arg == "--help" {
			return nil, &helpWanted{cmd.name}
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
			return nil, usagef("%s: unexpected argument %s", cmd.name, pyRepr(arg))
		}
		flag, value, hasValue := strings.Cut(arg, "=")
		name := strings.TrimLeft(flag, "-")
		var opt *option
		for i := range cmd.options {
			if cmd.options[i].name == name {
				opt = &cmd.options[i]
			}
		}
		if opt == nil {
			return nil, usagef("%s: unknown option %s", cmd.name, flag)
		}
		if !hasValue {
			if len(rest) == 0 {
				return nil, usagef("%s: option %s needs a value", cmd.name, flag)
			}
			value, rest = rest[0], rest[1:]
		}
		if _, seen := inv.values[name]; seen && !opt.repeat {
			return nil, usagef("%s: option --%s given more than once", cmd.name, name)
		}
		inv.values[name] = append(inv.values[name], value)
	}
	for _, opt := range cmd.options {
		if _, seen := inv.values[opt.name]; !seen && opt.def != "" {
			inv.values[opt.name] = []string{opt.def}
		}
	}
	return inv, nil
}

func (inv *invocation) one(name string) string {
	if v := inv.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func run(inv *invocation) error {
	state, err := readState(inv.one("container-spec"))
	if err != nil {
		return err
	}
	rootPath, err := containerRoot(state)
	if err != nil {
		return err
	}
	switch inv.command {
	case "create-symlinks":
		root, err := openRoot(rootPath)
		if err != nil {
			return err
		}
		defer root.Close()
		return createSymlinks(root, inv.values["link"])
	case "update-ldcache":
		return updateLdcache(rootPath, inv.values["folder"], inv.one("ldconfig-path"))
	case "chmod":
		return changeModes(rootPath, inv.values["path"], inv.one("mode"))
	case "enable-cuda-compat":
		return enableCudaCompat(rootPath, inv.one("host-driver-version"),
			inv.one("cuda-compat-container-root"))
	case "update-application-profile":
		return updateApplicationProfile(rootPath)
	}
	return disableDeviceNodeModification(rootPath)
}

func main() {
	os.Exit(mainArgs(os.Args[1:]))
}

func mainArgs(args []string) (code int) {
	inv, err := parse(args)
	var help *helpWanted
	var usage *usageError
	switch {
	case errors.As(err, &help):
		os.Stdout.WriteString(helpText(help.command))
		if len(args) == 0 {
			return 2
		}
		return 0
	case errors.Is(err, versionWanted{}):
		fmt.Printf("%s version %s\n", prog, version)
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "%s: error: %s (see %s --help)\n", prog, usage.msg, prog)
		return 2
	}
	debugging := inv.debug || os.Getenv("NVIDIA_CTK_DEBUG") == "true"
	defer func() {
		if r := recover(); r != nil {
			if debugging {
				fmt.Fprintf(os.Stderr, "%s %s: internal error: %v\n%s", prog, inv.command, r,
					debug.Stack())
			} else {
				fmt.Fprintf(os.Stderr, "%s %s: error: internal error (a bug in %s); run it with "+
					"--debug to see where\n", prog, inv.command, prog)
			}
			code = 1
		}
	}()
	if err := run(inv); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: error: %s\n", prog, inv.command, oneLine(err.Error()))
		return 1
	}
	return 0
}
