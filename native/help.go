package main

// --help, laid out as Python's argparse lays it out (the Python hook rendered it with argparse).

import "strings"

const helpWidth = 80

// wrap fills words into lines of helpWidth-2 (argparse's width), the first line after lead,
// the others after indent spaces.
func wrap(lead string, words []string, indent int) string {
	var b strings.Builder
	line := lead
	for _, w := range words {
		switch {
		case strings.TrimSpace(line) == "" || strings.HasSuffix(line, " "):
			line += w
		case len(line)+1+len(w) > helpWidth-2:
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", indent) + w
		default:
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// entry writes one option or command: its name, then its help from column 24.
func entry(b *strings.Builder, name, help string) {
	const col = 24
	words := strings.Fields(help)
	if len(name)+2 <= col-2 {
		b.WriteString(wrap("  "+name+strings.Repeat(" ", col-2-len(name)), words, col))
		return
	}
	b.WriteString("  " + name + "\n")
	b.WriteString(wrap(strings.Repeat(" ", col), words, col))
}

func helpText(name string) string {
	var b strings.Builder
	cmd := findCommand(name)
	if cmd == nil {
		b.WriteString("usage: ctk-hook [-h] [--debug] COMMAND ...\n\n")
		b.WriteString("OCI createContainer hooks for CDI specs (nvidia-cdi-hook's CLI).\n\n")
		b.WriteString("options:\n")
		entry(&b, "-h, --help", "show this help message and exit")
		entry(&b, "--debug, -d", "show details of internal errors")
		entry(&b, "--quiet, -q", "accepted for compatibility; only errors are printed")
		entry(&b, "--version, -v", "print the version and exit")
		b.WriteString("\ncommands:\n  COMMAND\n")
		for _, c := range commands {
			var sub strings.Builder
			entry(&sub, "  "+c.name, c.help)
			b.WriteString(sub.String())
		}
		return b.String()
	}
	lead := "usage: ctk-hook " + cmd.name + " "
	words := []string{"[-h]"}
	for _, o := range cmd.options {
		words = append(words, "[--"+o.name+" "+o.metavar+"]")
	}
	b.WriteString(wrap(lead, words, len(lead)))
	b.WriteString("\n" + cmd.help + "\n\noptions:\n")
	entry(&b, "-h, --help", "show this help message and exit")
	for _, o := range cmd.options {
		help := o.help
		if o.repeat {
			help += " (repeatable)"
		}
		if o.def != "" {
			help += " (default: " + o.def + ")"
		}
		entry(&b, "--"+o.name+" "+o.metavar, help)
	}
	return b.String()
}
