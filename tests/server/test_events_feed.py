"""The changes feed over HTTP: GET /api/events (bearer token, its organization only),
GET /_admin/events (every organization, or one), and their Server-Sent Events streams."""

from __future__ import annotations

import json

import httpx
import pytest

from sowctl.foundation.budgets import MAX_EVENT_PAGE_BYTES
from sowctl.services import events
from sowctl.storage.database import write_transaction
from tests.support.doubles import ADMIN, ORG, SOW, bearer, in_process, load

pytestmark = pytest.mark.database  # the feed's reads and the outbox's writes are SQL


@pytest.fixture
def double(db_url):
    client = in_process(db_url, event_stream_seconds=1.0)
    secrets = load(client)
    return client, bearer(secrets["token"])


def other_organization(client: httpx.Client) -> dict[str, str]:
    """A member token of a second organization, with a SOW of its own."""
    data = {"organizations": [{"id": "org-other", "name": "Other"}]}
    assert client.post("/_admin/dataset", json=data, headers=ADMIN).status_code == 200
    issued = client.post(
        "/_admin/tokens", json={"userId": "u-o", "organizationId": "org-other"}, headers=ADMIN
    )
    headers = bearer(issued.json()["token"])
    assert (
        client.post("/api/sows", json={"title": "Theirs", "id": "their-sow"}, headers=headers).status_code
        == 201
    )
    return headers


def make_item(client: httpx.Client, headers: dict[str, str], title: str, sow: str = SOW) -> dict:
    answer = client.post(f"/api/sow/{sow}/items", json={"title": title, "type": "task_item"}, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_the_token_feed_shows_its_organizations_events_with_the_api_answer(double):
    client, member = double
    other = other_organization(client)
    created = make_item(client, member, "Mine")
    make_item(client, other, "Theirs", "their-sow")
    page = client.get("/api/events", headers=member)
    assert page.status_code == 200, page.text
    body = page.json()
    assert [(e["type"], e["resourceId"]) for e in body["events"]] == [("item.created", created["id"])]
    assert body["events"][0]["data"] == created
    assert body["events"][0]["organizationId"] == ORG
    assert body["lastEventId"] == body["events"][0]["id"]
    assert body["hasMore"] is False
    everything = client.get("/_admin/events", headers=ADMIN).json()["events"]
    assert [e["type"] for e in everything] == ["sow.created", "item.created", "item.created"]
    theirs = client.get("/_admin/events", params={"organization": "org-other"}, headers=ADMIN).json()
    assert {e["organizationId"] for e in theirs["events"]} == {"org-other"}


def test_paging_by_since_and_limit_and_type(double):
    client, member = double
    items = [make_item(client, member, f"T{n}") for n in range(3)]
    client.put(f"/api/items/{items[0]['id']}", json={"title": "Renamed"}, headers=member)
    first = client.get("/api/events", params={"limit": 2}, headers=member).json()
    assert [e["resourceId"] for e in first["events"]] == [items[0]["id"], items[1]["id"]]
    assert first["hasMore"] is True
    rest = client.get("/api/events", params={"since": first["lastEventId"]}, headers=member).json()
    assert [e["type"] for e in rest["events"]] == ["item.created", "item.updated"]
    assert rest["hasMore"] is False
    number = int(first["lastEventId"][4:])
    assert client.get("/api/events", params={"since": str(number)}, headers=member).json() == rest
    updates = client.get("/api/events", params={"type": "item.updated"}, headers=member).json()
    assert [e["type"] for e in updates["events"]] == ["item.updated"]
    wildcard = client.get("/api/events", params={"type": "sow.*,item.updated"}, headers=member).json()
    assert [e["type"] for e in wildcard["events"]] == ["item.updated"]
    empty = client.get("/api/events", params={"since": rest["lastEventId"]}, headers=member).json()
    assert empty == {"events": [], "lastEventId": rest["lastEventId"], "hasMore": False}
    assert client.get("/api/events", headers=member).json()["lastEventId"] is not None


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"since": "evt_x"}, "since"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"type": "item.exploded"}, "type"),
        ({"type": "nothing.*"}, "type"),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(double, params, named):
    client, member = double
    for path, headers in (("/api/events", member), ("/_admin/events", ADMIN)):
        answer = client.get(path, params=params, headers=headers)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"].startswith(f"{named}:"), answer.text


def test_the_feeds_need_their_credentials(double):
    client, member = double
    assert client.get("/api/events").status_code == 401
    assert client.get("/_admin/events", headers=member).status_code == 401
    assert client.get("/api/events", headers=ADMIN).status_code == 401


# --- Server-Sent Events -------------------------------------------------------------------


def read_stream(response: httpx.Response) -> tuple[list[str], list[dict]]:
    """The stream's lines until it ends, and its events."""
    lines = list(response.iter_lines())
    events, current = [], {}
    for line in lines:
        if not line:
            if "data" in current:
                events.append(current)
            current = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            current[name] = value
    return lines, events


def test_a_stream_resumes_after_last_event_id_in_order(double):
    client, member = double
    items = [make_item(client, member, f"T{n}") for n in range(4)]
    ids = [e["id"] for e in client.get("/api/events", headers=member).json()["events"]]
    headers = {**member, "Last-Event-ID": ids[1]}
    with client.stream("GET", "/api/events/stream", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        lines, events = read_stream(response)
    assert lines[0] == "retry: 1000"
    assert [e["id"] for e in events] == ids[2:]
    assert [e["event"] for e in events] == ["item.created", "item.created"]
    assert [json.loads(e["data"])["resourceId"] for e in events] == [items[2]["id"], items[3]["id"]]
    assert json.loads(events[0]["data"])["data"] == items[2]


def test_a_commit_arrives_on_an_open_stream(double):
    client, member = double
    with client.stream("GET", "/_admin/events/stream", params={"type": "item.*"}, headers=ADMIN) as response:
        lines = response.iter_lines()
        assert next(lines) == "retry: 1000"
        created = make_item(client, member, "Late")  # committed while the stream is open
        _, events = read_stream_rest(lines)
    assert [json.loads(e["data"])["resourceId"] for e in events] == [created["id"]]


def read_stream_rest(lines) -> tuple[list[str], list[dict]]:
    class Rest:
        def iter_lines(self):
            return lines

    return read_stream(Rest())  # type: ignore[arg-type]


def test_a_bad_last_event_id_is_refused(double):
    client, member = double
    answer = client.get("/api/events/stream", headers={**member, "Last-Event-ID": "yesterday"})
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("Last-Event-ID:")


def test_streams_past_the_cap_are_refused_with_retry_after(db_url):
    client = in_process(db_url, event_stream_seconds=1.0, event_streams_per_caller=1)
    member = bearer(load(client)["token"])
    with client.stream("GET", "/api/events/stream", headers=member) as first:
        assert first.status_code == 200
        second = client.get("/api/events/stream", headers=member)
        assert second.status_code == 429
        assert int(second.headers["retry-after"]) >= 1
        first.read()
    again = client.get("/api/events/stream", headers=member)  # the first ended: its slot is free
    assert again.status_code == 200


def test_streams_past_the_process_cap_are_503(db_url):
    client = in_process(db_url, event_stream_seconds=1.0, event_streams=1)
    member = bearer(load(client)["token"])
    with client.stream("GET", "/_admin/events/stream", headers=ADMIN) as first:
        assert first.status_code == 200
        refused = client.get("/api/events/stream", headers=member)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        first.read()


def test_a_checkpoint_restores_the_feed_as_it_was(double):
    client, member = double
    make_item(client, member, "Before")
    saved = client.post("/_admin/checkpoints", json={"name": "start"}, headers=ADMIN)
    assert saved.status_code == 201
    before = client.get("/_admin/events", headers=ADMIN).json()
    make_item(client, member, "After")
    assert len(client.get("/_admin/events", headers=ADMIN).json()["events"]) == len(before["events"]) + 1
    assert client.post("/_admin/checkpoints/start/restore", headers=ADMIN).status_code == 200
    assert client.get("/_admin/events", headers=ADMIN).json() == before
    again = make_item(client, member, "Again")
    newest = client.get("/_admin/events", params={"since": before["lastEventId"]}, headers=ADMIN).json()
    assert [e["resourceId"] for e in newest["events"]] == [again["id"]]


def test_a_reset_empties_the_feed(double):
    client, member = double
    make_item(client, member, "Gone")
    assert client.post("/_admin/reset", headers=ADMIN).status_code == 200
    assert client.get("/_admin/events", headers=ADMIN).json() == {
        "events": [],
        "lastEventId": None,
        "hasMore": False,
    }


def test_a_dataset_load_records_no_events(db_url):
    client = in_process(db_url)
    load(client)
    assert client.get("/_admin/events", headers=ADMIN).json()["events"] == []


def test_contract_mode_strict_refuses_the_token_feed_and_report_marks_it(db_url):
    client = in_process(db_url, contract="strict")
    member = bearer(load(client)["token"])
    for path in ("/api/events", "/api/events/stream"):
        refused = client.get(path, headers=member)
        assert refused.status_code == 400, refused.text
        assert "route.extension" in refused.headers.get("x-sowctl-contract", "") + refused.text
    assert client.put("/_admin/contract", json={"mode": "report"}, headers=ADMIN).status_code == 200
    marked = client.get("/api/events", headers=member)
    assert marked.status_code == 200
    assert "route.extension" in marked.headers["x-sowctl-contract"]
    assert client.get("/_admin/events", headers=ADMIN).status_code == 200  # the admin API is never judged


def test_an_event_stream_is_never_sent_to_a_heavy_helper(db_url):
    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings

    app = create_app(db_url, ServerSettings(admin_token="t" * 32))
    assert app.is_heavy("GET", "/api/events/stream", 0) is None
    assert app.is_heavy("GET", "/_admin/events/stream", 0) is None
    assert app.is_heavy("GET", "/api/events", 0) is False


def test_an_event_keeps_the_traceparent_of_the_request_that_made_it(db_url):
    from sowctl.storage import models as m
    from tests.support.doubles import SOW, bearer, in_process, load

    client = in_process(db_url)
    token = load(client)["token"]
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    traced = client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "Traced", "type": "requirement"},
        headers={**bearer(token), "traceparent": traceparent},
    )
    malformed = client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "Badly traced", "type": "requirement"},
        headers={**bearer(token), "traceparent": "not-a-trace"},
    )
    assert traced.status_code == malformed.status_code == 201
    stored = dict(m.Event.select(m.Event.resource_id, m.Event.traceparent).tuples())
    assert stored[traced.json()["id"]] == traceparent
    assert stored[malformed.json()["id"]] is None


def test_the_admin_client_waits_for_an_event_and_names_the_closest_when_none_comes(db_url):
    import pytest

    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings
    from sowctl.testing.admin import AdminClient
    from tests.support.client import transport
    from tests.support.doubles import ADMIN_TOKEN, SOW, bearer, in_process, load

    client = in_process(db_url)
    token = load(client)["token"]
    made = client.post(
        f"/api/sow/{SOW}/items", json={"title": "Wall", "type": "requirement"}, headers=bearer(token)
    )
    assert made.status_code == 201
    app = create_app(db_url, ServerSettings(admin_token=ADMIN_TOKEN))
    with AdminClient("http://double.test", ADMIN_TOKEN, transport=transport(app)) as admin:
        found = admin.wait_for_event("item.created", data={"title": "Wall"}, timeout=2)
        assert found["resourceId"] == made.json()["id"]
        with pytest.raises(AssertionError) as missed:
            admin.wait_for_event("item.created", data={"title": "Walls"}, timeout=0.3)
    message = str(missed.value)
    assert message.startswith(
        'no event matching {"type": "item.created", "data": {"title": "Walls"}} within 0.3 s'
    )
    assert 'data.title: expected "Walls", got "Wall"' in message


def record_large_items(count: int) -> list[str]:
    """``count`` item.created events of 10,000-character titles, written straight to the outbox."""
    ids = [f"big-{n:04d}" for n in range(count)]
    with write_transaction(f"org:{ORG}"):
        events.record_many(ORG, "item", "created", [(i, {"id": i, "title": "t" * 10_000}) for i in ids])
    return ids


def walk(client: httpx.Client, path: str, headers: dict[str, str]) -> tuple[list[int], list[str], int]:
    """Every page of a feed asked for with limit=1000 and since=lastEventId: (each page's
    length, the event ids in order, the largest page's bytes)."""
    lengths, seen, largest = [], [], 0
    since = None
    while True:
        params = {"limit": 1000, **({"since": since} if since else {})}
        page = client.get(path, params=params, headers=headers)
        assert page.status_code == 200, page.text
        body = page.json()
        lengths.append(len(body["events"]))
        seen.extend(event["id"] for event in body["events"])
        largest = max(largest, len(page.content))
        since = body["lastEventId"]
        if not body["hasMore"]:
            return lengths, seen, largest


@pytest.mark.parametrize("feed", ["/api/events", "/_admin/events"])
def test_a_page_of_large_events_is_cut_near_a_mib_and_the_next_pages_give_the_rest(double, feed):
    client, member = double
    ids = record_large_items(250)
    lengths, seen, largest = walk(client, feed, member if feed == "/api/events" else ADMIN)
    assert len(seen) == len(set(seen)), "an event was given twice"
    wanted = [e.id for e in events.read_after(0, 10_000) if e.resource_id in set(ids)]
    assert [i for i in seen if i in set(wanted)] == wanted  # every one, in order
    assert lengths[0] < 1000 and len(lengths) >= 3, lengths
    assert largest <= MAX_EVENT_PAGE_BYTES + 11_000, largest  # the bound, passed by one event at most
