"""`sowctl wait URL`: exit 0 once GET URL/readyz answers 200; one line and exit 5 at the timeout."""

from __future__ import annotations

import pytest

from tests.support.sockets import closed_url


def test_a_ready_server_is_waited_for_with_readyz_until_it_answers_200(cli, server) -> None:
    server.script.responses = [(503, {"Retry-After": "1"}, {"status": "unavailable"})] * 2
    result = cli("wait", server.url, "--timeout", "30")
    assert result.exit_code == 0, result.stderr
    assert server.script.requests == [("GET", "/readyz")] * 3
    assert result.stderr == f"ready: {server.url}/readyz\n" and result.stdout == ""


def test_a_url_with_a_path_is_asked_as_it_is(cli, server) -> None:
    result = cli("wait", server.url + "/healthz")
    assert result.exit_code == 0, result.stderr
    assert server.script.requests == [("GET", "/healthz")]


def test_a_server_never_ready_is_exit_5_with_the_last_reason(cli, server) -> None:
    server.script.default = (503, {}, {"status": "unavailable"})
    result = cli("wait", server.url, "--timeout", "1")
    assert result.exit_code == 5
    assert result.stderr == f"error: {server.url}/readyz not ready after 1 s: HTTP 503\n"


def test_nothing_listening_is_exit_5_and_says_so(cli) -> None:
    url = closed_url()
    result = cli("wait", url, "--timeout", "0.2")
    assert result.exit_code == 5
    assert result.stderr == f"error: {url}/readyz not ready after 0.2 s: cannot connect\n"


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://host/", "http://", "http://host:port/"])
def test_a_url_that_is_not_an_http_url_is_exit_2(cli, url) -> None:
    result = cli("wait", url)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: URL must be an http:// or https:// URL with a host")


def test_a_password_in_the_url_is_not_printed(cli) -> None:
    url = closed_url().replace("http://", "http://ada:hunter2@")
    result = cli("wait", url, "--timeout", "0")
    assert result.exit_code == 5
    assert "hunter2" not in result.stderr and "ada:***@" in result.stderr
