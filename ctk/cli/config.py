"""`ctk config`: read and edit the NVIDIA Container Toolkit's config.toml, comments kept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer import Option

from ctk.cli import compat
from ctk.cli.options import new_app

app = new_app(help="Show or edit the NVIDIA Container Toolkit's config.toml (nvidia-ctk config).")

Output = Annotated[
    Path | None, Option("--output", "-o", help="Write here instead of standard output.")
]


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from ctk.host import files

    files.write_atomic(output, text, make_parents=True)  # as nvidia-ctk does for config default
    compat.info(f"wrote {output}")


@app.callback(invoke_without_command=True)
def config(
    ctx: typer.Context,
    config_file: Annotated[
        Path,
        Option("--config-file", "--config", "-c", help="The toolkit's config file to read."),
    ] = Path("/etc/nvidia-container-runtime/config.toml"),
    sets: Annotated[
        list[str],
        Option(
            "--set",
            metavar="KEY[=VALUE]",
            help="Set a key (repeatable), e.g. nvidia-container-runtime.mode=cdi; a boolean "
            "key alone is true; lists are comma-separated.",
        ),
    ] = [],  # noqa: B006  (typer reads the default; it is never mutated)
    in_place: Annotated[
        bool, Option("--in-place", "-i", help="Write the result back to the config file.")
    ] = False,
    output: Output = None,
) -> None:
    """Print the toolkit's config with --set applied, or write it (--in-place, --output).

    A missing config file starts from the toolkit's default. Comments, key order and layout
    are kept; setting a value it already has changes nothing.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ctk.host import files
    from ctk.toolkit_config import DEFAULT_CONFIG, apply_sets, parse, parse_setting

    settings = [parse_setting(given) for given in sets]
    before = files.read_text(config_file, missing_ok=True)
    text = DEFAULT_CONFIG if before is None else before
    parse(text, str(config_file))  # a broken file is an error even with nothing to set
    after = apply_sets(text, settings, str(config_file))
    if not in_place:
        _emit(after, output)
        return
    if output is not None:
        compat.warn("--output is ignored with --in-place")
    if after == before:
        compat.info(f"{config_file} already has these values; nothing written")
        return
    files.write_atomic(config_file, after, make_parents=True)
    compat.info(f"wrote {config_file}")


def default(output: Output = None) -> None:
    """Print the toolkit's default config.toml (or write it with --output)."""
    from ctk.toolkit_config import DEFAULT_CONFIG

    _emit(DEFAULT_CONFIG, output)


for _name in ("default", "create-default", "generate-default"):
    app.command(_name, hidden=_name != "default")(default)
