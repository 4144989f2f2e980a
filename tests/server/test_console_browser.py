"""The web console in a real headless Chromium (Debian's ``chromium``, driven by Playwright)
against ``sowctl serve --demo --admin`` on a free port.

One server and one browser for the module; each test gets a fresh browser context (so a
fresh session storage) at 1280x800, and fails on any console error, uncaught exception or
Content-Security-Policy violation it did not announce. Screenshots of the main views go to
``$SOWCTL_TEST_ARTIFACTS`` (default: ``<tmp>/sowctl-artifacts``).

The console is a front end; the API under it is tested on both backends elsewhere, so
these tests always serve a SQLite file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from sowctl import demo_data
from tests.support.server import Server

pytestmark = pytest.mark.slow

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


# --- signing in --------------------------------------------------------------------------------------


def test_sign_in_with_a_pasted_token_kept_in_session_storage_only(tab: Tab, served: SimpleNamespace) -> None:
    page = tab.page
    response = page.goto(served.url + "/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    page.fill("#token-input", "sowt_not-a-real-token")
    tab.allow("/api/sows", 401)
    page.click("button[type=submit]")
    alert = page.text_content("[role=alert]")
    assert "refused this token" in alert and "authorization not provided" not in alert
    page.fill("#token-input", served.token)
    page.click("button[type=submit]")
    page.wait_for_selector(f"a[data-sow='{SOW}']")
    assert page.evaluate("sessionStorage.getItem('sowctl.token')") == served.token
    assert page.evaluate("document.cookie") == ""
    assert page.evaluate("localStorage.length") == 0
    tab.shot("projects")
    page.click("#sign-out")
    page.wait_for_selector("#token-input")
    assert page.evaluate("sessionStorage.getItem('sowctl.token')") is None


def test_the_demo_link_signs_in_and_leaves_no_token_in_the_address(tab: Tab, served: SimpleNamespace) -> None:
    tab.open_link()
    assert "token" not in tab.page.url
    projects = served.api.get("/projects").json()["projects"]
    for project in projects:
        assert tab.page.get_by_role("heading", name=project["name"], exact=True).is_visible()


def _issue_token(served: SimpleNamespace) -> dict:
    issued = served.admin.post(
        "/_admin/tokens", json={"userId": demo_data.DEMO_USER, "organizationId": demo_data.DEMO_ORG}
    )
    assert issued.status_code == 201, issued.text
    return issued.json()


def _revoke(served: SimpleNamespace, token: dict) -> None:
    """As an administrator does, with the CLI on the server's database, while it serves."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    done = subprocess.run(
        [sys.executable, "-m", "sowctl", "--db", str(served.db), "tokens", "revoke", token["id"], "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    refused = httpx.get(
        served.url + "/api/sows", headers={"Authorization": f"Bearer {token['token']}"}, timeout=10
    )
    assert refused.status_code == 401


def test_a_token_revoked_mid_session_asks_for_a_token_again(tab: Tab, served: SimpleNamespace) -> None:
    """The token is revoked while a SOW is open: the next request (a selection's fields) is
    refused, and the console says so and asks for a token again instead of showing the API's
    error inside the page; signing in again returns to the same SOW."""
    page = tab.page
    wait = 5_000  # ms: every step below is a local request or two
    item = chain(served)["criticalPath"][0]
    dep = chain(served)["issues"]["critical"][0]["id"]

    def refused_and_asked() -> None:
        page.wait_for_selector("#token-input", timeout=wait)
        alert = page.text_content("[role=alert]")
        assert "refused this token" in alert and "authorization not provided" not in alert
        assert page.evaluate("sessionStorage.getItem('sowctl.token')") is None
        assert page.text_content("#session-state") == "" and page.is_hidden("#sign-out")
        assert page.locator("svg.graph, .details").count() == 0  # nothing of the SOW page is left
        assert f"#/sow/{SOW}/" in page.url

    def sign_in(secret: str) -> None:
        page.fill("#token-input", secret)
        page.click("button[type=submit]")
        page.wait_for_selector(f"svg.graph .node[data-node='{item}']", timeout=wait)

    first = _issue_token(served)
    page.goto(f"{served.url}/#token={first['token']}")
    page.wait_for_selector("a[data-sow]", timeout=wait)
    page.goto(f"{served.url}/#/sow/{SOW}/graph")
    page.wait_for_selector(f"svg.graph .node[data-node='{item}']", timeout=wait)
    _revoke(served, first)
    tab.allow(f"/api/items/{item}", 401)
    page.focus(f"svg.graph .node[data-node='{item}']")
    page.keyboard.press("Enter")  # an item's fields: GET /api/items/ID, refused
    refused_and_asked()
    tab.shot("token-refused")

    second = _issue_token(served)
    sign_in(second["token"])
    _revoke(served, second)
    tab.allow(f"/api/dependencies/{dep}", 401)
    page.click(f"svg.graph .edge[data-dep='{dep}'] .line", force=True)  # a dependency's fields, refused
    refused_and_asked()

    sign_in(served.token)
    page.click(f"svg.graph .edge[data-dep='{dep}'] .line", force=True)
    page.wait_for_selector(f".details h2:text('Dependency {dep}')", timeout=wait)
    page.wait_for_function(
        "!document.querySelector('.details').textContent.includes('Loading')", timeout=wait
    )
    assert served.api.get(f"/api/dependencies/{dep}").json()["riskLevel"] in page.text_content(".details")


# --- a SOW ------------------------------------------------------------------------------------------


def test_sow_graph_highlights_the_critical_path_and_marks_overdue_and_critical(
    tab: Tab, served: SimpleNamespace
) -> None:
    report = chain(served)
    path = report["criticalPath"]
    overdue = [entry["id"] for entry in report["issues"]["overdue"]]
    critical = [entry["id"] for entry in report["issues"]["critical"]]
    assert len(path) >= 2 and overdue and critical  # the demo data has each

    tab.open_link()
    page = tab.page
    page.click(f"a[data-sow='{SOW}']")
    page.wait_for_selector("svg.graph")
    assert page.get_attribute("#tab-graph", "aria-selected") == "true"
    on_path = page.eval_on_selector_all("svg.graph .node.on-path", "nodes => nodes.map(n => n.dataset.node)")
    assert sorted(on_path) == sorted(path)
    assert page.locator("svg.graph .edge.on-path").count() == len(path) - 1
    for dep in overdue:
        edge = page.locator(f"svg.graph .edge[data-dep='{dep}']")
        assert "overdue" in edge.get_attribute("class").split()
        assert "overdue" in edge.locator(".mark").text_content()
    for dep in critical:
        assert "critical" in page.get_attribute(f"svg.graph .edge[data-dep='{dep}']", "class").split()
    legend = page.text_content(".legend")
    for word in ("Critical path", "Critical dependency", "Overdue", "Blocked", "Circular"):
        assert word in legend
    # Highlight colours differ: critical path, critical, overdue.
    strokes = {
        kind: page.eval_on_selector(f"svg.graph .edge.{kind} .line", "line => getComputedStyle(line).stroke")
        for kind in ("on-path", "critical", "overdue")
    }
    assert len(set(strokes.values())) == 3, strokes
    tab.shot("sow-graph")

    # Click a dependency: its fields, read from the API.
    page.click(f"svg.graph .edge[data-dep='{overdue[0]}'] .line", force=True)
    dep = served.api.get(f"/api/dependencies/{overdue[0]}").json()
    page.wait_for_selector(f".details h2:text('Dependency {overdue[0]}')")
    # The heading shows at once; the fields follow once the item's request answers.
    page.wait_for_function("!document.querySelector('.details').textContent.includes('Loading')")
    details = page.text_content(".details")
    assert dep["slaDate"] in details and "overdue" in details
    assert f"/dep/{overdue[0]}" in page.url

    # Keyboard: focus an item on the path and press Enter.
    first = served.api.get(f"/api/items/{path[0]}").json()
    page.focus(f"svg.graph .node[data-node='{path[0]}']")
    page.keyboard.press("Enter")
    page.wait_for_selector(f".details h2:text-is('{first['title']}')")
    # The heading shows at once; the fields follow once the item's request answers.
    page.wait_for_function("!document.querySelector('.details').textContent.includes('Loading')")
    details = page.text_content(".details")
    assert "critical path" in details
    assert "null" not in details and "undefined" not in details


def test_risks_list_links_into_the_graph(tab: Tab, served: SimpleNamespace) -> None:
    report = chain(served)
    overdue = report["issues"]["overdue"][0]["id"]
    tab.page.goto(served.link)  # signs in, then straight to the risks
    tab.page.wait_for_selector("a[data-sow]")
    tab.page.goto(f"{served.url}/#/sow/{SOW}/risks")
    tab.page.wait_for_selector(".risks")
    risks = tab.page.text_content(".risks")
    for entry in report["issues"]["overdue"] + report["issues"]["critical"]:
        assert entry["sourceItem"]["title"] in risks
    tab.shot("sow-risks")
    tab.page.click(f".risks a[data-dep='{overdue}']")
    tab.page.wait_for_selector(f"svg.graph .edge.selected[data-dep='{overdue}']")
    assert tab.page.get_attribute("#tab-graph", "aria-selected") == "true"
    assert tab.page.evaluate("document.activeElement.dataset.dep") == overdue


def test_item_tree_shows_the_calculated_statuses(tab: Tab, served: SimpleNamespace) -> None:
    items = {
        item["id"]: item for item in served.api.get(f"/api/sow/{SOW}/items", params={"limit": 100}).json()
    }
    tab.open_link()
    tab.page.goto(f"{served.url}/#/sow/{SOW}/items")
    tab.page.wait_for_selector(".tree")
    for item_id, item in items.items():
        row = tab.page.locator(f"li:has(> button[data-item='{item_id}'])")
        assert row.locator("> .badge").first.text_content() == item["status"], item_id
    tab.shot("sow-tree")


def test_a_title_with_markup_is_shown_as_text(tab: Tab, served: SimpleNamespace) -> None:
    title = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & <b>bold</b>'
    created = served.api.post(f"/api/sow/{SOW}/items", json={"title": title, "type": "task_item"})
    assert created.status_code == 201, created.text
    item_id = created.json()["id"]
    dep = served.api.post(
        "/api/dependencies",
        json={
            "sourceItemId": item_id,
            "targetItemId": "item-001",
            "dependencyType": "related_to",
            "riskLevel": "low",
        },
    )
    assert dep.status_code == 201, dep.text
    try:
        tab.open_link()
        page = tab.page
        page.goto(f"{served.url}/#/sow/{SOW}/items")
        assert page.text_content(f"button[data-item='{item_id}']") == title
        page.click(f"button[data-item='{item_id}']")
        page.wait_for_selector(".details dl")
        assert page.text_content(".details h2") == title
        page.click("#tab-graph")
        node = page.locator(f"svg.graph .node[data-node='{item_id}']")
        assert node.locator("title").text_content().startswith(title)
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main img, main b, main script").count() == 0
    finally:
        served.api.delete(f"/api/dependencies/{dep.json()['id']}")
        served.api.delete(f"/api/items/{item_id}")


def test_a_stored_cycle_is_drawn_in_its_own_colour_and_listed(tab: Tab, served: SimpleNamespace) -> None:
    """Only an import can store a cycle (the API refuses to close one): load one into a new SOW."""
    project = served.api.get("/projects").json()["projects"][0]["id"]
    items = [
        {"id": f"loop-{name}", "sowId": "sow-loop", "title": f"Loop {name}", "type": "task_item"}
        for name in ("a", "b", "c", "d")
    ]
    waits = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]  # a, b, c wait for one another; d for a
    dependencies = [
        {
            "id": f"dep-loop-{source}{target}",
            "sourceItemId": f"loop-{source}",
            "targetItemId": f"loop-{target}",
            "dependencyType": "depends_on",
            "riskLevel": "medium",
        }
        for source, target in waits
    ]
    data = {"sows": [{"id": "sow-loop", "projectId": project, "title": "Loop"}], "items": items}
    loaded = served.admin.post("/_admin/dataset", json={**data, "dependencies": dependencies})
    assert loaded.status_code == 200, loaded.text
    cycle = served.api.get("/api/dependencies/chain", params={"sowId": "sow-loop"}).json()["issues"][
        "circular"
    ]
    assert sorted(cycle[0]) == ["loop-a", "loop-b", "loop-c"]

    tab.open_link()
    page = tab.page
    page.goto(f"{served.url}/#/sow/sow-loop/graph")
    page.wait_for_selector("svg.graph .node")
    circular = page.eval_on_selector_all(
        "svg.graph .node.circular", "nodes => nodes.map(n => n.dataset.node)"
    )
    assert sorted(circular) == ["loop-a", "loop-b", "loop-c"]
    edges = page.eval_on_selector_all("svg.graph .edge.circular", "edges => edges.map(e => e.dataset.dep)")
    assert sorted(edges) == ["dep-loop-ab", "dep-loop-bc", "dep-loop-ca"]
    colour = page.eval_on_selector("svg.graph .edge.circular .line", "line => getComputedStyle(line).stroke")
    others = page.eval_on_selector_all(
        ".legend .edge .line",
        "lines => lines.map(l => [l.parentNode.getAttribute('class'), getComputedStyle(l).stroke])",
    )
    assert [kind for kind, stroke in others if stroke == colour] == ["edge circular"]
    tab.shot("sow-circular")
    page.click("#tab-risks")
    risk = page.locator("#risks-circular ~ ol li")
    assert risk.count() == 1
    assert risk.text_content().count("Loop") == 4  # a -> b -> c -> a, each a link into the graph
    risk.locator("a").first.click()
    page.wait_for_selector("svg.graph .node.selected.circular")


def test_two_hundred_items_are_laid_out_without_overlap(tab: Tab, served: SimpleNamespace) -> None:
    """A SOW of 200 items and 260 dependencies (fixed random order, no cycle): every linked item
    is drawn, no two boxes overlap, and the picture is wider than tall rather than a tower."""
    import random

    project = served.api.get("/projects").json()["projects"][0]["id"]
    rng = random.Random(18)
    items = [
        {"id": f"big-{n:03d}", "sowId": "sow-big", "title": f"Work package {n}", "type": "task_item"}
        for n in range(200)
    ]
    pairs = set()
    while len(pairs) < 260:
        first, then = sorted(rng.sample(range(200), 2))
        pairs.add((then, first))  # the later one depends on the earlier one: never a cycle
    dependencies = [
        {
            "id": f"dep-big-{index}",
            "sourceItemId": f"big-{then:03d}",
            "targetItemId": f"big-{first:03d}",
            "dependencyType": "depends_on",
            "riskLevel": rng.choice(["low", "medium", "high", "critical"]),
        }
        for index, (then, first) in enumerate(sorted(pairs))
    ]
    data = {"sows": [{"id": "sow-big", "projectId": project, "title": "Big"}], "items": items}
    loaded = served.admin.post("/_admin/dataset", json={**data, "dependencies": dependencies})
    assert loaded.status_code == 200, loaded.text
    linked = {f"big-{n:03d}" for pair in pairs for n in pair}

    tab.open_link()
    tab.page.goto(f"{served.url}/#/sow/sow-big/graph")
    tab.page.wait_for_selector("svg.graph .node")
    boxes = tab.page.eval_on_selector_all(
        "svg.graph .node",
        "nodes => nodes.map(n => { const m = n.transform.baseVal.consolidate().matrix;"
        " const r = n.querySelector('rect'); return [n.dataset.node, m.e, m.f, r.width.baseVal.value,"
        " r.height.baseVal.value]; })",
    )
    assert {key for key, *_ in boxes} == linked
    for index, (key, x, y, w, h) in enumerate(boxes):
        for other, ox, oy, ow, oh in boxes[index + 1 :]:
            assert x + w <= ox or ox + ow <= x or y + h <= oy or oy + oh <= y, (key, other)
    view = tab.page.get_attribute("svg.graph", "viewBox").split()
    assert float(view[2]) > float(view[3])
    assert tab.page.locator("svg.graph .edge").count() == len(dependencies)
    tab.shot("sow-200-items")


def test_narrow_window_scrolls_the_graph_not_the_page(tab: Tab, served: SimpleNamespace) -> None:
    tab.page.set_viewport_size({"width": 420, "height": 800})
    tab.open_link()
    tab.page.goto(f"{served.url}/#/sow/{SOW}/graph")
    tab.page.wait_for_selector("svg.graph")
    assert tab.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    tab.shot("sow-graph-narrow")


# --- the emulator panel -------------------------------------------------------------------------------


def test_emulator_sets_a_fault_and_shows_it_in_the_request_log(tab: Tab, served: SimpleNamespace) -> None:
    tab.open_link()
    page = tab.page
    page.click("#nav-emulator")
    page.wait_for_selector("#request-log")
    page.wait_for_selector("#checkpoint-list")  # this server has checkpoints, so the panel shows them
    # Nothing (the dataset file input was one) makes the page wider than the 1280 window.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    page.check("#fault-on")
    page.fill("#fault-rate", "1")
    page.fill("#fault-status", "503")
    page.fill("#fault-count", "1")
    page.fill("#fault-routes", "GET /api/sows")
    page.click("#card-faults-and-latency ~ form button[type=submit]")
    page.wait_for_selector("text=Applied to the next API requests.")
    assert served.admin.get("/_admin/faults").json()["routes"] == ["GET /api/sows"]

    tab.allow("/api/sows", 503)
    page.click("#nav-projects")
    page.wait_for_selector("text=Could not load this page")
    assert "injected fault (HTTP 503)" in page.text_content("[role=alert]")

    page.click("#nav-emulator")
    row = page.locator("#request-log tr.entry", has_text="/api/sows").first
    row.wait_for()
    assert row.locator("td.status").text_content() == "503"
    assert row.locator("td.fault").text_content() == "injected error"
    page.fill("#log-status", "5xx")
    statuses = page.eval_on_selector_all("#request-log td.status", "cells => cells.map(c => c.textContent)")
    assert statuses and set(statuses) == {"503"}
    row.click()
    assert "injected fault" in page.text_content("#request-log tr.detail pre:nth-of-type(2)")
    tab.shot("emulator")

    # The clock: frozen and running again.
    page.fill("#clock-input", "2030-01-02T03:04:05Z")
    page.click("#card-clock ~ form button[type=submit]")
    page.wait_for_selector("#clock-now:text('2030-01-02T03:04:05Z · frozen')")
    page.click("text=Let it run")
    page.wait_for_selector("#clock-now:text('running')")
    page.click("#card-faults-and-latency ~ form button:text('Clear')")
    page.wait_for_selector("text=No faults, no latency.")


def test_emulator_saves_and_restores_a_checkpoint(tab: Tab, served: SimpleNamespace) -> None:
    """The panel drives the server's real checkpoints: save, see it listed, change the data,
    restore, and the change is gone."""
    tab.open_link()
    page = tab.page
    page.click("#nav-emulator")
    page.wait_for_selector("#checkpoint-list")
    page.fill("#checkpoint-name", "before-browser-change")
    page.click("#checkpoint-name ~ button")
    page.wait_for_selector("text=Saved before-browser-change.")
    listed = served.admin.get("/_admin/checkpoints").json()
    assert "before-browser-change" in [point["name"] for point in listed]
    assert "before-browser-change" in page.text_content("#checkpoint-list")

    created = served.api.post("/api/sows", json={"id": "sow-made-after-checkpoint", "title": "Temporary"})
    assert created.status_code == 201, created.text
    row = page.locator("#checkpoint-list li", has_text="before-browser-change")
    row.locator("button:text('Restore')").click()
    page.wait_for_selector("text=Restored before-browser-change.")
    assert "sow-made-after-checkpoint" not in [sow["id"] for sow in served.api.get("/api/sows").json()]
    row.locator("button:text('Drop')").click()
    page.wait_for_selector("text=Dropped before-browser-change.")
    assert "before-browser-change" not in [p["name"] for p in served.admin.get("/_admin/checkpoints").json()]


def test_emulator_downloads_resets_and_loads_a_dataset(
    tab: Tab, served: SimpleNamespace, tmp_path: Path
) -> None:
    tab.open_link()
    page = tab.page
    page.click("#nav-emulator")
    page.wait_for_selector("#dataset-dump")
    with page.expect_download() as download:
        page.click("#dataset-dump")
    saved = tmp_path / "dump.json"
    download.value.save_as(saved)
    dumped = json.loads(saved.read_text())
    assert {item["id"] for item in dumped["items"]} >= {"item-001", "item-011"}

    page.click("text=Reset…")
    page.click("text=Yes, empty every table")
    page.wait_for_selector("text=Every table emptied")
    assert served.admin.get("/_admin/dataset").json()["items"] == []

    page.set_input_files("#dataset-file", str(saved))
    page.click("#dataset-file ~ button[type=submit]")
    page.wait_for_selector("text=Loaded:")
    assert f"{len(dumped['items'])} items" in page.text_content("text=Loaded:")
    # The reset took the demo token with it (credentials are not in a dataset): a new one
    # for the rest of the module, and the console asks for it.
    issued = served.admin.post(
        "/_admin/tokens", json={"userId": demo_data.DEMO_USER, "organizationId": demo_data.DEMO_ORG}
    )
    assert issued.status_code == 201, issued.text
    served.token = issued.json()["token"]
    served.link = served.link.replace(re.search(r"#token=([^&]+)", served.link).group(1), served.token)
    served.api.headers["Authorization"] = f"Bearer {served.token}"
    tab.allow("/api/sows", 401)
    tab.allow("/projects", 401)
    page.click("#nav-projects")
    page.wait_for_selector("#token-input")
    tab.open_link()


# --- /docs -------------------------------------------------------------------------------------------


def test_docs_try_it_out_with_the_console_token(tab: Tab, served: SimpleNamespace) -> None:
    tab.open_link()  # the token given to the console is pre-authorized in /docs
    page = tab.page
    response = page.goto(served.url + "/docs")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock")
    spec = served.api.get("/openapi.json").json()
    operations = sum(len(methods) for methods in spec["paths"].values())
    assert page.locator(".opblock").count() == operations
    block = page.locator(".opblock-get:has([data-path='/api/sows'])")
    block.locator(".opblock-summary").click()
    block.locator("button.try-out__btn").click()
    block.locator("button.execute").click()
    code = block.locator(".live-responses-table tbody .response-col_status").first
    code.wait_for()
    assert code.text_content().strip() == "200"
    tab.shot("docs")


def test_load_timings_are_recorded(tab: Tab, served: SimpleNamespace) -> None:
    """Not a timed assertion: the figures go to the artifacts for a person (or bench/) to read."""
    tab.open_link()
    tab.page.goto(f"{served.url}/#/sow/{SOW}/graph")
    tab.page.reload()
    tab.page.wait_for_selector("svg.graph")
    timing = tab.page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd,"
        " graphShown: performance.now()}; })()"
    )
    (ARTIFACTS / "console-timings.json").write_text(json.dumps(timing, indent=2))
    assert timing["load"] > 0
