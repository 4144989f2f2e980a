"""``SandboxSession``: a test session's sandbox on a shared ``sowctl serve`` (the pytest
plugin's ``--sowctl-server``), made at its start and removed at its end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sowctl.services.dataset.narrowed import narrowed
from sowctl.testing.admin import AdminClient

SANDBOX_TTL = "1d"  # removed at the session's end; the server removes one a crash left


class SandboxSession:
    """The sandbox (``organizationId``, ``userId``, ``adminToken``...) and its admin client."""

    def __init__(self, sandbox: dict[str, Any], admin: AdminClient) -> None:
        self.sandbox = sandbox
        self.admin = admin
        self.organization_id: str = sandbox["organizationId"]

    @classmethod
    @contextmanager
    def opened(cls, url: str, server_admin_token: str) -> Iterator[SandboxSession]:
        """A new sandbox on the server at ``url`` (``AdminError`` when it makes none), removed
        when the block ends."""
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with AdminClient(url, server_admin_token) as server_admin:
            sandbox = server_admin.create_sandbox(ttl=SANDBOX_TTL, name=f"pytest {worker}")
            try:
                with AdminClient(url, sandbox["adminToken"]) as admin:
                    yield cls(sandbox, admin)
            finally:
                server_admin.delete_sandbox(sandbox["organizationId"])

    def dataset(
        self, dataset: dict[str, Any] | None, options: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The dataset's records of the test's organization (the marker's ``org``, else the
        dataset's first), that organization renamed to the sandbox's; and the options with it."""
        own = options.get("org")
        options = {**options, "org": self.organization_id}
        if dataset is None:
            return None, options
        organizations = [o for o in dataset.get("organizations") or [] if isinstance(o, dict)]
        own = own or (organizations[0].get("id") if organizations else None)
        if own is None:
            return dataset, options
        return narrowed(dataset, own, self.organization_id), options
