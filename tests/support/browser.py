"""The web console's browser harness: ``sowctl serve --demo --admin`` on a free port and
Debian's Chromium driven by Playwright (tests/server/test_console_*browser.py).

One server and one browser per test module; each test gets a fresh browser context (so a
fresh session storage) at 1280x800, and fails on any console error, uncaught exception or
Content-Security-Policy violation it did not announce. Screenshots of the main views go to
``$SOWCTL_TEST_ARTIFACTS`` (default: ``<tmp>/sowctl-artifacts``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from sowctl.services import demo_data
from tests.support.server import Server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("SOWCTL_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "sowctl-artifacts")
SOW = demo_data.DEMO_SOW
TIMEOUT_MS = 10_000
PUBLIC_PATHS = ("/api/", "/projects", "/clients", "/_admin/", "/console/", "/docs/assets/", "/#", "/healthz")

# Installed in every page before its own scripts: records what the CSP refused.
CSP_WATCH = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    db = tmp_path_factory.mktemp("console") / "console.db"
    server = Server(db, "--demo", "--admin")
    try:
        lines = server.read_stdout_until("  console:")
        link = next(line.split("console:", 1)[1].strip() for line in lines if "  console:" in line)
        token = re.search(r"#token=([^&]+)", link).group(1)
        api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        admin = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.admin_token}"}, timeout=10
        )
        yield SimpleNamespace(url=server.url, link=link, token=token, api=api, admin=admin, db=db)
        api.close()
        admin.close()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        # The system's Chromium: no browser download, same binary in CI and on a laptop.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


class Tab:
    """A page plus what it must not do: console errors, page errors, CSP violations."""

    def __init__(self, context, served: SimpleNamespace) -> None:
        self.context = context
        self.served = served
        self.page = context.new_page()
        self.errors: list[str] = []
        self.allowed: list[tuple[str, int]] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        self.page.on("request", lambda request: self.requests.append(request.url))

    def allow(self, path: str, status: int) -> None:
        """A failed request the test causes on purpose (the browser reports it as an error)."""
        self.allowed.append((path, status))

    def _console(self, message) -> None:
        if message.type != "error":
            return
        url = (message.location or {}).get("url", "")
        for path, status in self.allowed:
            if f"status of {status}" in message.text and url.split("?")[0].endswith(path):
                return
        self.errors.append(f"console: {message.text} ({url})")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def open_link(self) -> None:
        """The link serve --demo printed: token and admin token in the fragment."""
        self.page.goto(self.served.link)
        self.page.wait_for_selector("a[data-sow]")


@pytest.fixture
def tab(browser, served: SimpleNamespace) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(script=CSP_WATCH)
    opened = Tab(context, served)
    yield opened
    violations = opened.page.evaluate("window.__cspViolations || []")
    context.close()
    assert not opened.errors, opened.errors
    assert violations == [], violations
    # Nothing from elsewhere (no CDN, no font service), and nothing but the public API,
    # /_admin and the console's own files from this server.
    for url in opened.requests:
        assert url.startswith(served.url + "/") or url.startswith("blob:" + served.url), url
        path = url.removeprefix(served.url).split("?")[0]
        assert path.startswith(PUBLIC_PATHS) or path in ("/", "/docs", "/openapi.json"), url


def chain(served: SimpleNamespace) -> dict:
    response = served.api.get(
        "/api/dependencies/chain", params={"sowId": SOW, "include": "criticalPath,external"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def wait_for_fields(page, timeout: float = 30_000) -> None:
    """Until the selection's fields have loaded (the heading shows first, then "Loading…").

    A locator assertion, not ``page.wait_for_function``: that polls with a string evaluated
    in the page, which the console's Content-Security-Policy (no 'unsafe-eval') refuses
    whenever the first check does not already pass."""
    from playwright.sync_api import expect

    expect(page.locator(".details")).not_to_contain_text("Loading", timeout=timeout)
