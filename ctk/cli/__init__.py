"""The command line: parse flags, call the core, render. Kept light to import."""
