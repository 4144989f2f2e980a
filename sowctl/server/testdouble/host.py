"""What the test double needs of the API application it wraps, and nothing more.

The API app (``sowctl.server.app``) installs the test double; the double sees the app only
through these protocols, so neither package imports the other in a loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import bottle
import peewee as pw

from sowctl.operations.groups import Group
from sowctl.server.configuration import ServerSettings
from sowctl.server.event_stream import Streams

WSGIApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]


class HostDispatcher(Protocol):
    database: pw.Database
    event_streams: Streams  # the changes feed's open streams (/_admin/events/stream shares them)

    def ensure_connection(self) -> None: ...

    def recover_connection(self) -> None: ...

    def failure_response(
        self, environ: dict, group: Group | str, exc: Exception, headers: dict[str, str]
    ) -> bottle.HTTPResponse: ...


class HostApp(Protocol):
    dispatcher: HostDispatcher
    settings: ServerSettings
    # Bodies larger than the default limit, by path: the limit and who may send one.
    body_limits: dict[str, tuple[int, Callable[[str | None], bool]]]
    wsgi: WSGIApp

    def route(self, path: str, method: str, callback: Callable[..., Any], name: str) -> Any: ...
