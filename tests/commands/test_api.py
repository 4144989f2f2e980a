"""sowctl api METHOD PATH (issue 28): any route, with the mode's credentials; local mode runs
the same operation in process, so both modes print the same body."""

from __future__ import annotations

from sowctl.storage import models as m
from tests.support.modes import Modes


def _items(modes: Modes, count: int) -> None:
    for n in range(count):
        made = modes.local("items", "create", "sow-1", "--title", f"T{n}", "--id", f"t{n}", "-q")
        assert made.exit_code == 0, made.stderr


def test_a_read_prints_the_same_body_in_both_modes(modes: Modes) -> None:
    _items(modes, 2)
    local, remote = modes.both("api", "GET", "/api/sow/sow-1/items")
    assert (local.exit_code, remote.exit_code) == (0, 0), (local.stderr, remote.stderr)
    assert local.stdout == remote.stdout
    assert [item["id"] for item in local.json()] == ["t0", "t1"]
    assert modes.local("api", "GET", "/api/sows/sow-1", "--jq", ".title").stdout == "Tower A\n"


def test_fields_make_the_body_of_a_write(modes: Modes) -> None:
    local = modes.local("api", "POST", "/api/sow/sow-1/items", "-f", "title=Local", "-f", "type=task_item")
    remote = modes.remote(
        "api",
        "POST",
        "/api/sow/sow-1/items",
        "-f",
        "title=Remote",
        "-f",
        "type=task_item",
        "-F",
        "orderIndex=7",
    )
    assert (local.exit_code, remote.exit_code) == (0, 0), (local.stderr, remote.stderr)
    assert m.Item.get_by_id(remote.json()["id"]).order_index == 7
    assert {item.title for item in m.Item.select()} == {"Local", "Remote"}


def test_input_reads_the_body_from_a_file(modes: Modes, tmp_path) -> None:
    body = tmp_path / "body.json"
    body.write_text('{"title": "Renamed"}')
    result = modes.remote("api", "PUT", "/api/sows/sow-1", "--input", str(body))
    assert result.exit_code == 0, result.stderr
    assert m.Sow.get(m.Sow.id == "sow-1").title == "Renamed"


def test_paginate_follows_every_page(modes: Modes) -> None:
    _items(modes, 5)
    one_page = modes.remote("api", "GET", "/api/sow/sow-1/items?limit=2")
    assert one_page.exit_code == 0 and len(one_page.json()) == 2
    every = modes.remote("api", "GET", "/api/sow/sow-1/items", "--paginate")
    assert [item["id"] for item in every.json()] == [f"t{n}" for n in range(5)]
    assert every.stdout == modes.local("api", "GET", "/api/sow/sow-1/items", "--paginate").stdout


def test_errors_have_the_exit_codes_of_their_status(modes: Modes) -> None:
    missing = modes.both("api", "GET", "/api/sows/nope")
    assert [r.exit_code for r in missing] == [3, 3]
    assert missing[0].stderr == missing[1].stderr == "error: SOW nope not found\n"
    invalid = modes.both("api", "POST", "/api/sow/sow-1/items", "-f", "title=")
    assert [r.exit_code for r in invalid] == [2, 2]
    unknown = modes.local("api", "GET", "/api/nothing")
    assert (unknown.exit_code, unknown.stderr) == (3, "error: no route for GET /api/nothing\n")
    wrong = modes.local("api", "PATCH", "/api/sows")
    assert wrong.exit_code == 2 and "GET, POST" in wrong.stderr
    assert modes.remote("api", "GET", "/api/sows", "--token", "sow_wrong").exit_code == 4


def test_headers_reach_the_server(modes: Modes, monkeypatch) -> None:
    import httpx

    seen = {}
    send = httpx.Client.send

    def spy(self, request, **kwargs):
        seen.update(request.headers)
        return send(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", spy)
    result = modes.remote("api", "GET", "/api/sows", "-H", "X-Trace: abc")
    assert result.exit_code == 0, result.stderr
    assert seen["x-trace"] == "abc" and seen["authorization"].startswith("Bearer ")


def test_bad_arguments_are_usage_errors(cli) -> None:
    assert cli("sows", "create", "S", "-q").exit_code == 0  # the database exists: the refusals are the api's
    assert cli("api", "FETCH", "/api/sows").exit_code == 2
    assert cli("api", "GET", "api/sows").exit_code == 2
    assert cli("api", "POST", "/api/sows", "-f", "novalue").exit_code == 2
    assert cli("api", "GET", "/api/sows", "-H", "no colon").exit_code == 2


def test_a_route_no_operation_declares_is_sent_as_is_remotely(modes: Modes) -> None:
    health = modes.remote("api", "GET", "/healthz")
    assert health.exit_code == 0, health.stderr
    assert health.json()["status"] == "ok"
    assert modes.remote("api", "GET", "/nowhere").exit_code == 3


def test_include_prints_the_status_line_and_headers_first(modes: Modes) -> None:
    shown = modes.remote("api", "GET", "/api/sows/sow-1", "-i")
    assert shown.exit_code == 0, shown.stderr
    head, _, body = shown.stdout.partition("\n\n")
    assert head.startswith("HTTP/1.1 200 OK\n")
    assert "x-request-id: " in head.lower()
    assert '"id": "sow-1"' in body
    refused = modes.local("api", "GET", "/api/sows/sow-1", "-i")
    assert refused.exit_code == 2 and "local mode" in refused.stderr


def test_a_body_over_the_servers_limit_is_refused_in_both_modes_before_it_is_sent(
    modes: Modes, tmp_path
) -> None:
    from sowctl.foundation.budgets import MAX_BODY_BYTES

    body = tmp_path / "big.json"
    body.write_text('{"title": "' + "x" * MAX_BODY_BYTES + '"}')
    local, remote = modes.both("api", "PUT", "/api/sows/sow-1", "--input", str(body))
    assert local.exit_code == remote.exit_code == 2, (local.stderr, remote.stderr)
    assert local.stderr == remote.stderr
    assert f"the limit is {MAX_BODY_BYTES} bytes" in local.stderr
    field = modes.local("api", "PUT", "/api/sows/sow-1", "-F", f"title=@{body}")
    assert field.exit_code == 2 and f"the limit is {MAX_BODY_BYTES} bytes" in field.stderr
    assert m.Sow.get(m.Sow.id == "sow-1").title == "Tower A"  # nothing was written


def test_a_body_at_the_limit_is_sent(modes: Modes, tmp_path) -> None:
    from sowctl.foundation.budgets import MAX_BODY_BYTES

    title = "y" * 200
    padding = " " * (MAX_BODY_BYTES - len(f'{{"title": "{title}"}}'))
    body = tmp_path / "full.json"
    body.write_text(f'{{"title": "{title}"}}{padding}')
    assert body.stat().st_size == MAX_BODY_BYTES
    result = modes.local("api", "PUT", "/api/sows/sow-1", "--input", str(body))
    assert result.exit_code == 0, result.stderr
    assert m.Sow.get(m.Sow.id == "sow-1").title == title
