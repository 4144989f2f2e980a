"""The web console (``/``) and the interactive API documentation (``/docs``) of ``sowctl serve``.

Plain HTML, CSS and a little vanilla JavaScript, served as files from this
package's ``static/`` folder: nothing to build, nothing fetched from the
network. The console is a client of the public API like any other: the page
holds no data, its scripts call ``/projects``, ``/api/sows`` and the chain report
with the bearer token the user gave (kept in the tab's session storage, sent as a
header, never a cookie), and the emulator panel calls ``/_admin`` with the admin
token. ``/docs`` is Swagger UI from the ``swagger-ui-py`` package, read from its
installed folder, pointed at ``/openapi.json``.

Routes: ``GET /``, ``GET /docs``, ``GET /console/FILE`` (this package's files) and
``GET /docs/assets/FILE`` (Swagger UI's). They are registered after the API's, so
an API request never meets them, and they answer with a strict
Content-Security-Policy: scripts, styles and requests from this origin only, no
inline script, no framing.

This module is imported by ``server.app.create_app`` and by the test double
(``is_console_path``) only, never by the CLI's start-up.
"""

from __future__ import annotations

import html
import importlib.util
from functools import cache
from pathlib import Path

import bottle

from sowctl.server.http import EVERY_RESPONSE_HEADERS

STATIC_DIR = Path(__file__).resolve().parent / "static"
CONSOLE_PREFIX = "/console/"
DOCS_ASSETS_PREFIX = "/docs/assets/"
PAGES = ("/", "/docs")

# Swagger UI's files that /docs uses; the package ships more (an editor, source maps).
DOCS_ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png", "favicon-16x16.png"})

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    **EVERY_RESPONSE_HEADERS,
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",  # revalidated each load (Last-Modified), so an upgrade shows at once
}
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}


def is_console_path(path: str) -> bool:
    """A page or file of the console or /docs: never delayed, failed or logged by the test double."""
    return path in PAGES or path.startswith((CONSOLE_PREFIX, DOCS_ASSETS_PREFIX))


def register(app: bottle.Bottle, *, admin: bool) -> None:
    """Add the console's routes to ``app`` (after the API's); ``admin``: the /_admin API is on."""
    index = _index_page(admin)
    app.route("/", "GET", lambda: _page(index), name="console")
    app.route("/docs", "GET", _docs_page, name="docs")
    app.route(CONSOLE_PREFIX + "<name:path>", "GET", _console_file, name="console-file")
    app.route(DOCS_ASSETS_PREFIX + "<name>", "GET", _docs_asset, name="docs-asset")


# --- pages ------------------------------------------------------------------------------


def _index_page(admin: bool) -> bytes:
    """index.html with what the scripts need from the server filled in as data attributes.

    The ordering rule (which dependency types put their target first) is the domain
    core's; the graph's layout reads it from here rather than keeping a copy.
    """
    from sowctl.services.graph_algorithms import SOURCE_FIRST, TARGET_FIRST

    values = {
        "{{TARGET_FIRST}}": " ".join(sorted(TARGET_FIRST)),
        "{{SOURCE_FIRST}}": " ".join(sorted(SOURCE_FIRST)),
        "{{ADMIN}}": "on" if admin else "off",
    }
    text = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    for placeholder, value in values.items():
        text = text.replace(placeholder, html.escape(value, quote=True))
    return text.encode("utf-8")


def _page(body: bytes) -> bottle.HTTPResponse:
    headers = {**SECURITY_HEADERS, "Content-Type": TYPES[".html"]}
    return bottle.HTTPResponse(body=body, status=200, headers=headers)


def _docs_page() -> bottle.HTTPResponse:
    if _swagger_dir() is None:
        return _not_available()
    return _page((STATIC_DIR / "docs.html").read_bytes())


# --- files ------------------------------------------------------------------------------


def _console_file(name: str) -> bottle.HTTPResponse:
    if name == "index.html" or name.startswith("."):  # the page itself is served at /
        raise bottle.HTTPError(404)
    return _file(name, STATIC_DIR)


def _docs_asset(name: str) -> bottle.HTTPResponse:
    root = _swagger_dir()
    if name not in DOCS_ASSETS:
        raise bottle.HTTPError(404)
    if root is None:
        return _not_available()
    return _file(name, root)


def _file(name: str, root: Path) -> bottle.HTTPResponse:
    content_type = TYPES.get(Path(name).suffix)
    if content_type is None:
        raise bottle.HTTPError(404)
    # static_file refuses paths outside root, answers HEAD, If-Modified-Since (304) and ranges.
    response = bottle.static_file(name, root=str(root), mimetype=content_type.split(";")[0], charset="utf-8")
    if response.status_code >= 400:
        raise bottle.HTTPError(response.status_code)  # the API's JSON envelope, like any unknown route
    for header, value in SECURITY_HEADERS.items():
        response.set_header(header, value)
    return response


@cache
def _swagger_dir() -> Path | None:
    """Swagger UI's files in the installed ``swagger-ui-py`` package, found without importing it
    (its ``__init__`` imports Jinja2, which the server does not need)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


def _not_available() -> bottle.HTTPResponse:
    from sowctl.server.envelopes import HttpStatusError
    from sowctl.server.responses import error_response

    message = "the API documentation needs the swagger-ui-py package: pip install swagger-ui-py"
    return error_response("A", HttpStatusError(503, message), {})
