"""`ctk cdi`: CDI specs. Checking (validate, list) and generating live in their own modules."""

from __future__ import annotations

from ctk.cli import cdi_check, cdi_generate, cdi_tools
from ctk.cli.options import new_app

app = new_app(no_args_is_help=True, help="Generate, validate and list CDI specs.")
cdi_check.register(app)
cdi_generate.register(app)
cdi_tools.register(app)
