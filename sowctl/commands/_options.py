"""Options shared by every command that shows resources (contract §3)."""

from __future__ import annotations

from typing import Annotated

import typer

Json = Annotated[bool, typer.Option("--json", help="Print exactly the API's JSON body, nothing else.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print ids only, one per line.")]
