"""The HTTP engine of ``sowctl serve``: what serves HTTP, apart from what is served.

granian (Rust's hyper) parses every request; :mod:`sowctl.engine.bridge` reads each
request's body whole, within its limits and deadline, before one of a worker's threads runs
the WSGI application; :mod:`sowctl.engine.process` runs the worker processes. Nothing here
knows the API: an application hands the engine its WSGI callable and a :class:`Hooks`
(how to word a refusal, who a caller is, how large a body a route takes, where refusals are
logged), and :class:`Limits` says what a client is held to. ``bench/WSGI_SERVERS.md`` says
why this server, measured against the others.
"""

from __future__ import annotations

from sowctl.engine.hooks import CUT_SHORT_KEY, PAUSE_KEY, Hooks, Pause, Refusal
from sowctl.engine.limits import Limits

__all__ = ["CUT_SHORT_KEY", "PAUSE_KEY", "Hooks", "Limits", "Pause", "Refusal"]
