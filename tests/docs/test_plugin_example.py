# This file is the example of docs/test-double.md's section "With pytest: the plugin",
# copied verbatim below this comment: it MUST stay identical to that page's code block
# (a test compares them). Change both together.

import time

import httpx
import pytest

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

# Every test in this module starts from DATASET (loaded once, then restored from a checkpoint).
pytestmark = pytest.mark.sowctl_dataset(DATASET)


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


def test_each_test_starts_from_the_dataset(sowctl_service):
    api = sowctl_service.client  # a sowctl.Client with this test's token and API key
    api.items.create("sow-1", title="Walls", type="requirement")
    assert [item["title"] for item in api.items.list("sow-1")] == ["Foundations", "Walls"]
    # The server received exactly one such request (a near miss fails, saying what differed).
    sowctl_service.admin.verify("POST", "/api/sow/sow-1/items", body={"title": "Walls"}, exactly=1)


def test_the_walls_of_the_previous_test_are_gone(sowctl_service):
    assert [item["title"] for item in sowctl_service.client.items.list("sow-1")] == ["Foundations"]


# The next two GETs of the SOW's items fail with 503 (in Group A's envelope), then all succeed.
@pytest.mark.sowctl_faults(rate=1.0, status=503, count=2, routes=["GET /api/sow/*/items"])
def test_client_retries_through_injected_failures(sowctl_service):
    auth = {"Authorization": f"Bearer {sowctl_service.token}"}
    with httpx.Client(base_url=sowctl_service.url, headers=auth, timeout=10) as client:
        response = get_with_retries(client, "/api/sow/sow-1/items")
    assert response.status_code == 200
    # The request log shows what the client did: two failures, then the success.
    log = sowctl_service.admin.requests(path="/api/sow/sow-1/items")
    assert [entry["status"] for entry in log] == [503, 503, 200]


@pytest.mark.sowctl_clock("2030-01-01T00:00:00Z")
def test_with_a_frozen_clock(sowctl_service):
    item = sowctl_service.client.items.create("sow-1", title="Roof", type="requirement")
    assert item["createdAt"].startswith("2030-01-01T00:00:00")


def test_back_to_a_checkpoint_of_my_own(sowctl_service):
    admin, api = sowctl_service.admin, sowctl_service.client
    admin.checkpoint("before-roof")
    api.items.create("sow-1", title="Roof", type="requirement")
    admin.restore("before-roof")
    assert [item["title"] for item in api.items.list("sow-1")] == ["Foundations"]
