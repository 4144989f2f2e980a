"""The web console's emulator panel and /docs in a real headless Chromium (Debian's
``chromium``, driven by Playwright) against ``sowctl serve --demo --admin`` on a free port.

The harness (server, browser, a checked tab) is tests/support/browser.py.

The console is a front end; the API under it is tested on both backends elsewhere, so
these tests always serve a SQLite file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from sowctl.services import demo_data
from tests.support.browser import ARTIFACTS, SOW, Tab

pytestmark = pytest.mark.slow


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
    # The message shows before the list is fetched again: wait for the list, not the message.
    page.wait_for_selector("#checkpoint-list li:has-text('before-browser-change')", timeout=5000)

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
    # Swagger UI renders the whole document (the admin operations too: this server has an
    # admin token) before the first block shows; on a busy machine that takes longer.
    page.wait_for_selector(".opblock", timeout=30_000)
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


def test_emulator_sets_contract_mode_and_shows_the_marks(tab: Tab, served: SimpleNamespace) -> None:
    tab.open_link()
    page = tab.page
    page.click("#nav-emulator")
    page.wait_for_selector("#contract-departures tbody tr")  # the card has read the mode in force
    page.select_option("#contract-mode", "report")
    page.click("#card-contract-mode ~ form button[type=submit]")
    page.wait_for_selector("text=Contract mode is report.")
    try:
        assert served.admin.get("/_admin/contract").json()["mode"] == "report"
        # /api/sows is a sowctl extension: in report mode its request is served and marked.
        assert served.api.get("/api/sows").status_code == 200
        page.click("#card-contract-mode ~ form button:text('Refresh')")
        departure = page.locator("#contract-departures tr", has_text="route.extension")
        departure.wait_for()
        assert int(departure.locator("td.count").text_content()) >= 1
        # The live log shows the marked request (the console's own /api/sows calls are too).
        row = page.locator("#request-log tr.entry", has_text="route.extension").first
        row.wait_for()
        assert "/api/sows" in row.locator("td.path").text_content()
        row.click()
        assert "route.extension" in page.text_content("#request-log tr.detail ul.marks")
    finally:
        served.admin.put("/_admin/contract", json={"mode": "off"})


def test_emulator_shows_the_event_log_and_a_webhook_s_deliveries(tab: Tab, served: SimpleNamespace) -> None:
    org = demo_data.DEMO_ORG
    # Nothing listens on port 9: the first attempt fails and, at maxFailures 1, pauses the subscription.
    hook = served.admin.post(
        "/_admin/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "organizationId": org, "maxFailures": 1},
    )
    assert hook.status_code == 201, hook.text
    hook_id = hook.json()["id"]
    try:
        made = served.api.post(f"/api/sow/{SOW}/items", json={"title": "Evented", "type": "requirement"})
        assert made.status_code == 201, made.text
        tab.open_link()
        page = tab.page
        page.click("#nav-emulator")
        row = page.locator("#event-log tr.entry", has_text=made.json()["id"]).first
        row.wait_for()
        assert row.locator("td.event-type").text_content() == "item.created"
        row.click()
        assert '"title": "Evented"' in page.text_content("#event-log tr.detail pre")

        subscription = page.locator(f"#webhooks tr.entry[data-id='{hook_id}']")
        subscription.wait_for()
        page.wait_for_selector(
            f"#webhooks tr.entry[data-id='{hook_id}'] td.webhook-status:text('paused')", timeout=20_000
        )
        subscription.click()
        page.wait_for_selector("#deliveries tr.entry td.outcome:text('failed')")
        subscription.locator("button.resume").click()
        page.wait_for_selector(f"text=Subscription {hook_id} resumed.")
    finally:
        served.admin.delete(f"/_admin/webhooks/{hook_id}")
