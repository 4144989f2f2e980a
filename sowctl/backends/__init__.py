"""Backends: the same operations, run in process (local) or over HTTP (remote)."""

from __future__ import annotations

from typing import Any, Protocol


class Backend(Protocol):
    mode: str  # "local" or "remote"

    def call(
        self,
        name: str,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        *,
        all_pages: bool = True,
    ) -> Any:
        """Run the named operation (see ``sowctl.operations``) and return its JSON body."""
        ...

    def call_typed(
        self, name: str, params: dict[str, str] | None = None, query: dict[str, Any] | None = None
    ) -> Any:
        """Run the named operation, which declares ``typed``, and return its answer as a record
        (``Operation.typed``), made in process or read back from the server's body."""
        ...

    def call_page(
        self, name: str, params: dict[str, str] | None, query: dict[str, Any] | None, *, page: int, limit: int
    ) -> tuple[Any, int | None]:
        """One page of a paginated operation (``page`` from 1) and the total count, if known."""
        ...
