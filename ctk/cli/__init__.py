"""The typer layer: parse flags, call the core, render. Kept light to import."""
