"""sowctl events: the events of a sowctl server. ``listen`` forwards webhook deliveries to a
local URL (``commands/events_listen.py``)."""

from __future__ import annotations

import typer

from sowctl.commands.events_listen import listen

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS
app.command("listen")(listen)
