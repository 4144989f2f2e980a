"""A scripted HTTP server on a free port (a real socket): it answers queued responses, then a
default one, and records the requests it got. For remote-mode tests of what a real server
would not do on demand (errors, delays, odd bodies)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ITEM = {
    "id": "item-1",
    "title": "Steel frame",
    "type": "task_item",
    "sowId": "sow-1",
    "parentItemId": None,
    "orderIndex": 0,
    "status": "pending",
    "createdAt": "2026-01-05T09:00:00Z",
    "updatedAt": "2026-01-05T09:00:00Z",
}


@dataclass
class Script:
    """What the scripted HTTP server answers: queued responses, then ``default``."""

    responses: list[tuple[int, dict[str, str], Any]] = field(default_factory=list)
    default: tuple[int, dict[str, str], Any] = (200, {}, ITEM)
    delay: float = 0.0
    requests: list[tuple[str, str]] = field(default_factory=list)


class ScriptedServer:
    def __init__(self) -> None:
        self.script = Script()
        script = self.script

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                script.requests.append((self.command, self.path))
                if script.delay:
                    time.sleep(script.delay)
                status, headers, body = script.responses.pop(0) if script.responses else script.default
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
