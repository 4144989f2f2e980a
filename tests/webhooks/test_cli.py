"""``sowctl webhooks`` in local mode (the database) and remote mode (the admin API), and
``sowctl events listen`` forwarding a served delivery, signed, then deleting its subscription."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.support.cli import run_main
from tests.support.doubles import ADMIN, ADMIN_TOKEN, ORG, SOW, bearer, load
from tests.support.receiver import Receiver, verify_standard_webhooks
from tests.support.server import Server

pytestmark = pytest.mark.database


def test_local_mode_creates_lists_and_deletes(cli: Any) -> None:
    assert cli("orgs", "create", "org-1").exit_code == 0
    created = cli("webhooks", "create", "--url", "http://127.0.0.1:9/h", "--event", "item.created", "--json")
    assert created.exit_code == 0, created.stderr
    hook = created.json()
    assert hook["organizationId"] == "org-1" and hook["secret"].startswith("whsec_")
    listed = cli("webhooks", "list", "--json").json()
    assert [entry["id"] for entry in listed] == [hook["id"]] and hook["secret"] not in str(listed)
    assert cli("webhooks", "deliveries", hook["id"], "--json").json() == []
    assert cli("webhooks", "resume", hook["id"], "--json").json()["status"] == "active"
    deleted = cli("webhooks", "delete", hook["id"])
    assert deleted.exit_code == 0 and deleted.stdout == f"deleted {hook['id']}\n"
    assert cli("webhooks", "list", "--json").json() == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--url", "ftp://x"], "error: --url: 'ftp://x' is not an http:// or https:// URL with a host\n"),
        (["--url", "http://x/", "--org", "org-none"], "error: --org: no organization 'org-none'\n"),
        (["--url", "http://x/", "--secret", "whsec_x"], None),
        (["--url", "http://x/", "--signing", "authorization"], None),
    ],
)
def test_local_mode_refusals_name_the_option(cli: Any, args: list[str], error: str | None) -> None:
    assert cli("orgs", "create", "org-1").exit_code == 0
    result = cli("webhooks", "create", *args)
    assert result.exit_code == 2 and result.stdout == ""
    if error is not None:
        assert result.stderr == error
    else:
        assert result.stderr.startswith(("error: --secret: ", "error: --authorization: "))
    assert cli("webhooks", "list", "--json").json() == []


def test_the_org_is_required_when_the_database_has_several(cli: Any) -> None:
    for org in ("org-1", "org-2"):
        assert cli("orgs", "create", org).exit_code == 0
    result = cli("webhooks", "create", "--url", "http://x/")
    assert result.exit_code == 2
    assert result.stderr == "error: --org is required: the organization whose events are delivered\n"


def test_an_unknown_subscription_is_not_found(cli: Any) -> None:
    for command in (["delete", "wh_none"], ["resume", "wh_none"], ["deliveries", "wh_none"]):
        result = cli("webhooks", *command)
        assert result.exit_code == 3 and result.stderr == "error: no webhook subscription 'wh_none'\n"


def test_remote_mode_goes_through_the_admin_api(serve: Any, receiver: Receiver) -> None:
    server: Server = serve(None, "--admin-token", ADMIN_TOKEN)
    token = load(server.client)["token"]
    remote = ["--server", server.url]
    admin = ["--admin-token", ADMIN_TOKEN]
    refused = run_main(*remote, "webhooks", "list")
    assert refused.exit_code == 2 and "--admin-token is required" in refused.stderr
    created = run_main(*remote, "webhooks", "create", "--url", receiver.url, "--org", ORG, *admin, "--json")
    assert created.exit_code == 0, created.stderr
    hook = created.json()
    server.client.post(
        f"/api/sow/{SOW}/items", json={"title": "Walls", "type": "task_item"}, headers=bearer(token)
    )
    (got,) = receiver.wait_for(1)
    assert verify_standard_webhooks(hook["secret"], got)
    queued = run_main(*remote, "webhooks", "redeliver", hook["id"], got.event["id"], *admin)
    assert queued.exit_code == 0 and queued.stdout == f"queued {got.event['id']} for {hook['id']}\n"
    assert receiver.wait_for(2)[1].body == got.body
    deadline = time.monotonic() + 20
    while len(run_main(*remote, "webhooks", "deliveries", hook["id"], *admin, "--json").json()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    wrong = run_main(*remote, "webhooks", "create", "--url", "ftp://x", "--org", ORG, *admin)
    assert (
        wrong.exit_code == 2
        and wrong.stderr == "error: --url: 'ftp://x' is not an http:// or https:// URL with a host\n"
    )
    assert run_main(*remote, "webhooks", "delete", hook["id"], *admin).exit_code == 0
    assert server.client.get("/_admin/webhooks", headers=ADMIN).json() == []


def test_events_listen_forwards_signed_deliveries_and_cleans_up(serve: Any, receiver: Receiver) -> None:
    server: Server = serve(None, "--admin-token", ADMIN_TOKEN)
    token = load(server.client)["token"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env.update({"PYTHONUNBUFFERED": "1", "SOWCTL_ADMIN_TOKEN": ADMIN_TOKEN})
    command = [sys.executable, "-m", "sowctl", "--server", server.url, "events", "listen"]
    listener = subprocess.Popen(
        [*command, "--forward-to", receiver.url, "--org", ORG, "--event", "item.*"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in listener.stdout], daemon=True).start()  # type: ignore[union-attr]
    try:
        secret = ""
        while not secret:
            line = lines.get(timeout=30)
            secret = (
                line.removeprefix("Signing secret: ").strip() if line.startswith("Signing secret: ") else ""
            )
        (hook,) = server.client.get("/_admin/webhooks", headers=ADMIN).json()
        assert hook["url"].startswith("http://127.0.0.1:") and hook["eventTypes"] == ["item.*"]
        created = server.client.post(
            f"/api/sow/{SOW}/items", json={"title": "Walls", "type": "task_item"}, headers=bearer(token)
        )
        (got,) = receiver.wait_for(1)
        assert verify_standard_webhooks(secret, got)  # body and signature passed on unchanged
        assert got.event["resourceId"] == created.json()["id"]
        printed = lines.get(timeout=20)
        assert printed == f"{got.event['id']}  item.created  -> 200\n"
        listener.send_signal(signal.SIGTERM)
        assert listener.wait(timeout=20) == 0
        assert lines.get(timeout=5) == f"Deleted {hook['id']}\n"
        assert server.client.get("/_admin/webhooks", headers=ADMIN).json() == []
    finally:
        if listener.poll() is None:
            os.killpg(listener.pid, signal.SIGKILL)
            listener.wait()
