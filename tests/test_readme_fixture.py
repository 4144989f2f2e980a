# This file is the example of README.md's section "Using sowctl serve in your test suite",
# copied verbatim below this comment: it MUST stay identical to the README's code block
# (a test compares them). Change both together.

import subprocess
import sys
import time

import httpx
import pytest

ADMIN_TOKEN = "test-admin-token"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

DATASET = {
    "organizations": [{"id": "org-1", "name": "Acme Build"}],
    "users": [{"id": "user-1", "organizationId": "org-1", "name": "Ada", "email": "ada@example.com"}],
    "projects": [
        {
            "id": "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c10",
            "organizationId": "org-1",
            "name": "Tower A",
            "status": "active",
        }
    ],
    "sows": [{"id": "sow-1", "projectId": "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c10", "title": "Phase 1"}],
    "items": [{"id": "item-1", "sowId": "sow-1", "title": "Foundations", "type": "requirement"}],
}


@pytest.fixture(scope="session")
def sowctl_server(tmp_path_factory):
    """`sowctl serve` on a free port with the admin API on; stopped after the test session."""
    db = tmp_path_factory.mktemp("sowctl") / "test.db"
    command = [sys.executable, "-m", "sowctl", "--db", str(db), "serve", "--port", "0", "--quiet"]
    server = subprocess.Popen([*command, "--admin-token", ADMIN_TOKEN], stdout=subprocess.PIPE, text=True)
    for line in server.stdout:  # "Listening on URL" once the port accepts connections
        if line.startswith("Listening on "):
            break
    else:
        raise RuntimeError("sowctl serve did not start")
    yield line.split()[-1]
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture
def service(sowctl_server):
    """Per test: an empty database, the dataset, a fresh token, and an admin client."""
    with httpx.Client(base_url=sowctl_server, headers=ADMIN, timeout=10) as admin:
        admin.post("/_admin/reset").raise_for_status()
        admin.post("/_admin/dataset", json=DATASET).raise_for_status()
        issued = admin.post("/_admin/tokens", json={"userId": "user-1", "organizationId": "org-1"})
        yield {"url": sowctl_server, "token": issued.json()["token"], "admin": admin}


def get_with_retries(client, path, attempts=5):
    """The client code under test: retries 5xx answers and dropped connections, with backoff."""
    for attempt in range(attempts):
        try:
            response = client.get(path)
            if response.status_code < 500:
                return response
        except httpx.TransportError:
            if attempt == attempts - 1:
                raise
        time.sleep(0.05 * 2**attempt)  # a real client would also honour Retry-After
    return response


def test_client_retries_through_injected_failures(service):
    admin = service["admin"]
    # The next two GETs of the SOW's items fail with 503 (in Group A's envelope), then all succeed.
    fault = {"rate": 1.0, "status": 503, "count": 2, "routes": ["GET /api/sow/*/items"]}
    admin.put("/_admin/faults", json=fault).raise_for_status()
    auth = {"Authorization": f"Bearer {service['token']}"}
    with httpx.Client(base_url=service["url"], headers=auth, timeout=10) as client:
        response = get_with_retries(client, "/api/sow/sow-1/items")
    assert response.status_code == 200
    assert [item["title"] for item in response.json()] == ["Foundations"]
    # The request log shows what the client did: two failures, then the success.
    log = admin.get("/_admin/requests").json()
    assert [(entry["method"], entry["status"]) for entry in log] == [("GET", 503), ("GET", 503), ("GET", 200)]
