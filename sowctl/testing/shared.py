"""``SandboxSession``: a test session's sandbox on a shared ``sowctl serve`` (the pytest
plugin's ``--sowctl-server``), made at its start and removed at its end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sowctl.services.dataset.narrowed import narrowed
from sowctl.testing.admin import AdminClient, AdminError

SANDBOX_TTL = "1d"  # removed at the session's end; the server removes one a crash left


class SandboxSession:
    """The sandbox (``organizationId``, ``userId``...), its admin token and its admin client."""

    def __init__(self, sandbox: dict[str, Any], admin_token: str, admin: AdminClient) -> None:
        self.sandbox = sandbox
        self.admin_token = admin_token
        self.admin = admin
        self.organization_id: str = sandbox["organizationId"]
        self.user_id: str = sandbox["userId"]

    @classmethod
    @contextmanager
    def opened(cls, url: str, admin_token: str) -> Iterator[SandboxSession]:
        """With the server's admin token: a new sandbox, removed when the block ends. With a
        sandbox's (a CI job that made one, ``sowctl sandbox create``): that sandbox, kept.
        ``AdminError`` when neither."""
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with AdminClient(url, admin_token) as given:
            try:
                sandbox = given.create_sandbox(ttl=SANDBOX_TTL, name=f"pytest {worker}")
            except AdminError as exc:
                if exc.status != 403:
                    raise
                own = given.sandboxes()  # a sandbox's admin token lists its own sandbox
                if len(own) != 1:
                    raise
                if worker != "main":  # two workers would reset each other's records
                    raise AdminError(
                        "a sandbox's admin token serves one session: run without pytest-xdist's -n, "
                        "or give the server's admin token (each worker then makes a sandbox)"
                    ) from None
                yield cls(own[0], admin_token, given)
                return
            try:
                with AdminClient(url, sandbox["adminToken"]) as admin:
                    yield cls(sandbox, sandbox["adminToken"], admin)
            finally:
                given.delete_sandbox(sandbox["organizationId"])

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
