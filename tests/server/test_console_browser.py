"""The web console in a real headless Chromium (Debian's ``chromium``, driven by Playwright)
against ``sowctl serve --demo --admin`` on a free port.

The harness (server, browser, a checked tab) is tests/support/browser.py.

The console is a front end; the API under it is tested on both backends elsewhere, so
these tests always serve a SQLite file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import httpx
import pytest

from sowctl.services import demo_data
from tests.support.browser import SOW, Tab, chain, wait_for_fields

pytestmark = pytest.mark.slow


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
    wait_for_fields(page, timeout=wait)
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
    wait_for_fields(page)
    details = page.text_content(".details")
    assert dep["slaDate"] in details and "overdue" in details
    assert f"/dep/{overdue[0]}" in page.url

    # Keyboard: focus an item on the path and press Enter.
    first = served.api.get(f"/api/items/{path[0]}").json()
    page.focus(f"svg.graph .node[data-node='{path[0]}']")
    page.keyboard.press("Enter")
    page.wait_for_selector(f".details h2:text-is('{first['title']}')")
    # The heading shows at once; the fields follow once the item's request answers.
    wait_for_fields(page)
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


def test_a_bidirectional_override_in_a_title_is_shown_not_obeyed(tab: Tab, served: SimpleNamespace) -> None:
    """U+202E in a title would draw what follows it (an id, a risk level) backwards."""
    title = "Pour \u202eslab"
    created = served.api.post(f"/api/sow/{SOW}/items", json={"title": title, "type": "task_item"})
    assert created.status_code == 201, created.text
    item_id = created.json()["id"]
    try:
        tab.open_link()
        page = tab.page
        page.goto(f"{served.url}/#/sow/{SOW}/items")
        assert page.text_content(f"button[data-item='{item_id}']") == "Pour \\u202eslab"
        page.click(f"button[data-item='{item_id}']")
        page.wait_for_selector(".details dl")
        assert page.text_content(".details h2") == "Pour \\u202eslab"
        assert page.evaluate("document.body.innerText.includes('\\u202e')") is False
    finally:
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
    page.wait_for_selector("#risks-circular ~ ol li")  # the tab loads its list after the click
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


def test_every_sow_is_listed_past_the_api_s_first_page(tab: Tab, served: SimpleNamespace) -> None:
    """GET /api/sows answers 20 SOWs a page unless asked for more: the projects page shows all,
    and a SOW past the first page opens."""
    before = int(served.api.get("/api/sows").headers["x-total-count"])
    created = []
    for index in range(max(0, 25 - before)):
        answer = served.api.post("/api/sows", json={"title": f"Paged {index:02}", "id": f"paged-{index:02}"})
        assert answer.status_code == 201, answer.text
        created.append(answer.json()["id"])
    listed = served.api.get("/api/sows", params={"limit": 100}).json()
    every = [sow["id"] for sow in listed]
    assert len(every) >= 25 and created[-1] == every[-1]
    tab.open_link()
    shown = tab.page.eval_on_selector_all("a[data-sow]", "links => links.map((a) => a.dataset.sow)")
    assert sorted(shown) == sorted(every)
    tab.page.click(f"a[data-sow='{every[-1]}']")
    # The SOW page takes its title from the SOW list (its id when the SOW is not in it).
    tab.page.wait_for_function("title => document.title.startsWith(title)", arg=listed[-1]["title"] + " ·")
