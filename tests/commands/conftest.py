from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.scripted import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted HTTP server that answers 200 ``{"status": "ok"}`` unless a test scripts otherwise."""
    scripted = ScriptedServer()
    scripted.script.default = (200, {}, {"status": "ok"})
    yield scripted
    scripted.close()
