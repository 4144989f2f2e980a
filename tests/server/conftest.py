"""Fixtures of the server tests: ``api``, the server in process (tests/support/server_api.py);
and for the console's browser tests (tests/support/browser.py) a served demo with its admin
API, the Chromium they drive, and a checked tab. Module-scoped ones start once per test
module."""

from tests.support.browser import browser, served, tab  # noqa: F401
from tests.support.server_api import api  # noqa: F401
