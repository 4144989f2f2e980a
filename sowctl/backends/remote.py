"""Remote mode: every operation as an HTTP request to a sowctl server (or the real service).

The operation registry says how to call each operation (method, path, group,
paging); this module turns that into an httpx request, authenticates it by
group, fetches every page of a list, retries what is safe to retry, and maps
HTTP errors back to the typed errors of ``sowctl.foundation.errors``, so a command prints
the same output and exits with the same code in local and remote mode.

Retry policy: connection errors, 502/503/504 and 429 are retried with
exponential backoff and full jitter (base ``BACKOFF_BASE``, cap ``BACKOFF_CAP``,
at most ``MAX_RETRIES`` retries, ``SOWCTL_RETRIES`` overrides the count, 0
disables). Only idempotent requests (GET, PUT, DELETE) are retried after they
may have reached the server; a POST is retried only when the connection could
not even be opened, since then nothing was sent.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from sowctl import operations
from sowctl.backends.profiles import mask_url
from sowctl.backends.remote_errors import NOT_JSON, error_message, header_issues, issues_in
from sowctl.backends.scheme import (
    followed_redirect,
    https_instead,
    plain_http_instead,
    redirect_refusal,
    tls_hint,
)
from sowctl.foundation import json_input
from sowctl.foundation.budgets import MAX_PAGE_SIZE
from sowctl.foundation.errors import (
    ERROR_CODE_HEADER,
    Forbidden,
    Interrupted,
    InvalidInput,
    NotFound,
    RateLimited,
    RemoteError,
    ServiceUnavailable,
    SowctlError,
    Unauthorized,
    UsageError,
    quoted,
)
from sowctl.foundation.version import VERSION as _version
from sowctl.operations.groups import API_KEY_HEADER, Group

if TYPE_CHECKING:
    from sowctl.backends.settings import Settings
    from sowctl.operations import Operation

BACKOFF_BASE = 0.2  # seconds before the first retry (upper bound of the jittered delay)
BACKOFF_CAP = 5.0  # no single wait is longer, Retry-After included
MAX_RETRIES = 4
# An answer that is not JSON, or nests deeper than Python's parser goes (which stops with
# flat memory): said as such, never a traceback.
PAGE_SIZE = MAX_PAGE_SIZE  # the servers' maximum page size
DEFAULT_TIMEOUT = 10.0

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})


def group_b_headers(op: Operation, key: str, org: str, company: str) -> dict[str, str]:
    """The API key and the scope headers under the names ``op``'s route documents."""
    organization_header, company_header = op.group.scope_headers(op.path)
    return {API_KEY_HEADER: key, organization_header: org, company_header: company}


_sleep = time.sleep  # tests replace it to record the waits


def retry_count() -> int:
    """How many times a failed request is retried: ``SOWCTL_RETRIES`` or ``MAX_RETRIES``."""
    text = os.environ.get("SOWCTL_RETRIES", "").strip()
    if not text:
        return MAX_RETRIES
    try:
        return max(0, int(text))
    except ValueError:
        raise UsageError(f"SOWCTL_RETRIES must be a whole number, not {quoted(text)}") from None


def backoff_delay(attempt: int) -> float:
    """Full jitter: a uniform wait in [0, min(cap, base * 2**attempt)]."""
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt)))


def retry_after_delay(response: httpx.Response, attempt: int) -> float:
    """The server's Retry-After (seconds or an HTTP date), capped; backoff when absent."""
    value = response.headers.get("retry-after", "").strip()
    seconds: float | None = None
    if value:
        try:
            seconds = float(value)
        except ValueError:
            try:
                moment = email.utils.parsedate_to_datetime(value)
                seconds = (moment - datetime.now(UTC)).total_seconds()
            except (TypeError, ValueError):
                seconds = None
    if seconds is None:
        return backoff_delay(attempt)
    return min(BACKOFF_CAP, max(0.0, seconds))


class RemoteBackend:
    mode = "remote"

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        if not settings.server:
            raise UsageError("remote mode needs --server (or SOWCTL_SERVER)")
        self.settings = settings
        self.base_url = settings.server.rstrip("/")
        self.shown_url = mask_url(self.base_url)  # what messages show: no password
        self.timeout = float(settings.timeout if settings.timeout is not None else DEFAULT_TIMEOUT)
        self.retries = retry_count()
        self._transport = transport
        self._client: httpx.Client | None = None

    # --- the HTTP client ----------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(
                timeout=httpx.Timeout(self.timeout),
                transport=self._transport,
                follow_redirects=False,
                headers={"User-Agent": f"sowctl/{_version}", "Accept": "application/json"},
            )
            weakref.finalize(self, self._client.close)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # --- Backend.call ---------------------------------------------------------------

    def call(
        self,
        name: str,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        *,
        all_pages: bool = True,
    ) -> Any:
        op = operations.get(name)
        url = self.url_for(op, params or {})
        headers = self.auth_headers(op)
        # The same text the local backend validates (it turns every value into str).
        query = {key: str(value) for key, value in (query or {}).items() if value is not None}
        if op.paginated and all_pages and not ({"page", "limit"} & query.keys()):
            return self._all_pages(op, url, query, headers)
        if op.list_key and all_pages and not ({"limit", "offset"} & query.keys()):
            return self._all_offsets(op, url, query, headers)
        return self._json(op, self.request(op, url, query, body, headers=headers))

    def call_typed(
        self, name: str, params: dict[str, str] | None = None, query: dict[str, Any] | None = None
    ) -> Any:
        """The operation's record, read back from the server's body (``Operation.read_back``)."""
        op = operations.get(name)
        if op.read_back is None:
            raise ValueError(f"{name} declares no typed answer")
        return op.read_back(self.call(name, params, query, all_pages=False))

    def call_page(
        self, name: str, params: dict[str, str] | None, query: dict[str, Any] | None, *, page: int, limit: int
    ) -> tuple[Any, int | None]:
        """One page of a paginated list: its JSON body and the server's X-Total-Count."""
        op = operations.get(name)
        url = self.url_for(op, params or {})
        headers = self.auth_headers(op)
        query = {key: str(value) for key, value in (query or {}).items() if value is not None}
        response = self.request(op, url, {**query, "page": str(page), "limit": str(limit)}, headers=headers)
        return self._json(op, response), _int_header(response, "x-total-count")

    def url_for(self, op: Operation, params: dict[str, str]) -> str:
        path = op.path
        for name in op.path_params:
            value = params.get(name)
            if not value:
                raise NotFound(f"missing path parameter {name}")
            path = path.replace("{" + name + "}", quote(str(value), safe=""))
        return self.base_url + path

    def auth_headers(self, op: Operation) -> dict[str, str]:
        """Credentials by group; a missing one is refused before any request."""
        s = self.settings
        if not op.group.uses_api_key:
            return {"Authorization": f"Bearer {_need(s.token, '--token', 'SOWCTL_TOKEN')}"}
        key = _need(s.api_key, "--api-key", "SOWCTL_API_KEY")
        # Without the organization or company header the server answers 400, not 401.
        org = _need(s.org, "--org", "SOWCTL_ORG", UsageError)
        company = _need(s.company, "--company", "SOWCTL_COMPANY", UsageError)
        return group_b_headers(op, key, org, company)

    # --- any route (sowctl api) -------------------------------------------------------

    def raw(
        self,
        route: Operation | None,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        paginate: bool = False,
        answered: Callable[[httpx.Response], None] | None = None,
    ) -> Any:
        """The JSON body of ``method`` ``path``: a declared operation's ``route`` with its
        group's credentials, any other path (``/_admin``) with the bearer token, if any.
        ``paginate``: every page of a list, as one array (or Group C's object); else
        ``answered`` is shown the response (``sowctl api -i``)."""
        op: Any = route or _RawRoute(method=method, path=path)
        url = self.base_url + path
        if route is not None:
            sent = self.auth_headers(route)
        else:
            sent = {"Authorization": f"Bearer {self.settings.token}"} if self.settings.token else {}
        sent = {**sent, **(headers or {})}
        if paginate and op.paginated:
            return self._all_pages(op, url, query, sent)
        if paginate and op.list_key:
            return self._all_offsets(op, url, query, sent)
        response = self.request(op, url, query, body, headers=sent)
        if answered is not None:
            answered(response)
        return self._json(op, response)

    # --- paging -------------------------------------------------------------------------

    def _all_pages(self, op: Operation, url: str, query: dict[str, str], headers: dict) -> Any:
        """Group A/B page+limit lists: every page, concatenated into one array."""
        records: list[Any] = []
        wrapper = op.group.list_wrapper  # a Group B list wraps its records in {"data": [...]}
        envelope: dict | None = None
        page, previous = 1, None
        while True:
            page_query = {**query, "page": str(page), "limit": str(PAGE_SIZE)}
            response = self.request(op, url, page_query, headers=headers)
            body = self._json(op, response)
            if wrapper and isinstance(body, dict) and isinstance(body.get(wrapper), list):
                envelope, chunk = body, body[wrapper]
            elif isinstance(body, list):
                chunk = body
            else:
                return body  # not a list after all: show what the server said
            if chunk and chunk == previous:
                break  # the server ignores `page`: the same page again would loop forever
            previous = chunk
            records.extend(chunk)
            total = _int_header(response, "x-total-count")
            more = "next" in response.links if response.headers.get("link") else None
            if not chunk or (total is not None and len(records) >= total):
                break
            if more is False or (more is None and total is None and len(chunk) < PAGE_SIZE):
                break
            page += 1
        if envelope is not None:
            return {**envelope, str(wrapper): records}
        return records

    def _all_offsets(self, op: Operation, url: str, query: dict[str, str], headers: dict) -> Any:
        """Group C limit/offset lists: every record, as {list_key: [...], "total": n}."""
        key = op.list_key or ""
        records: list[Any] = []
        total = 0
        while True:
            page_query = {**query, "limit": str(PAGE_SIZE), "offset": str(len(records))}
            body = self._json(op, self.request(op, url, page_query, headers=headers))
            if not isinstance(body, dict) or not isinstance(body.get(key), list):
                return body
            chunk = body[key]
            records.extend(chunk)
            total = int(body.get("total") or 0)
            if not chunk or len(records) >= total:
                break
        return {key: records, "total": total}

    # --- one request, with retries ---------------------------------------------------

    def request(
        self,
        op: Operation,
        url: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        headers = headers if headers is not None else self.auth_headers(op)
        method = op.method.upper()
        idempotent = method in IDEMPOTENT
        content = None
        if body is not None:
            content = json_input.dumps(body).encode("utf-8")
            headers = {**headers, "Content-Type": "application/json"}
        attempt = redirects = 0
        while True:
            try:
                response = self.client.request(
                    method, url, params=query or None, content=content, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                wrong_scheme = plain_http_instead(self.shown_url, exc)
                if wrong_scheme is not None:  # every retry would meet the same server
                    raise ServiceUnavailable(wrong_scheme) from None
                # The connection was never opened, so nothing was sent: safe to retry any method.
                if attempt < self.retries:
                    _sleep(backoff_delay(attempt))
                    attempt += 1
                    continue
                raise self._unreachable(exc) from None
            except KeyboardInterrupt:
                # Ctrl-C (which Typer would end silently): a write may have reached the server.
                if method == "GET":
                    raise Interrupted("interrupted") from None
                raise Interrupted(
                    f"interrupted: the server may have applied {method} {op.path}; check before resending"
                ) from None
            except httpx.TimeoutException:
                if idempotent and attempt < self.retries:
                    _sleep(backoff_delay(attempt))
                    attempt += 1
                    continue
                maybe = "" if idempotent else "; it may have applied the request, check before resending"
                raise ServiceUnavailable(
                    f"server at {self.shown_url} did not answer within {self.timeout:g} s{maybe} "
                    "(raise the limit with --timeout or SOWCTL_TIMEOUT)"
                ) from None
            except httpx.TransportError as exc:
                wrong_scheme = https_instead(self.shown_url, exc)
                if wrong_scheme is not None:  # every retry would meet the same server
                    raise ServiceUnavailable(wrong_scheme) from None
                # The request may have reached the server: only an idempotent one is resent.
                if idempotent and attempt < self.retries:
                    _sleep(backoff_delay(attempt))
                    attempt += 1
                    continue
                hint = tls_hint(self.shown_url) if isinstance(exc, httpx.RemoteProtocolError) else ""
                raise ServiceUnavailable(
                    f"connection to server at {self.shown_url} failed: {_reason(exc)}{hint}"
                ) from None
            status = response.status_code
            if status in RETRY_STATUSES and idempotent and attempt < self.retries:
                delay = retry_after_delay(response, attempt) if status == 429 else backoff_delay(attempt)
                response.close()
                _sleep(delay)
                attempt += 1
                continue
            if 300 <= status < 400:
                target = followed_redirect(self.base_url, method, response, redirects)
                if target is None:
                    raise ServiceUnavailable(redirect_refusal(self.shown_url, method, response))
                url, query, redirects = target, None, redirects + 1  # the location has its query
                continue
            if status >= 400:
                raise self._error(op, response, attempts=attempt + 1)
            return response

    def _unreachable(self, exc: Exception) -> ServiceUnavailable:
        if isinstance(exc, httpx.ConnectTimeout):
            return ServiceUnavailable(
                f"cannot reach server at {self.shown_url}: no connection within {self.timeout:g} s"
            )
        return ServiceUnavailable(f"cannot reach server at {self.shown_url}: {_reason(exc)}")

    # --- answers ----------------------------------------------------------------------------

    def _json(self, op: Operation, response: httpx.Response) -> Any:
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except NOT_JSON:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            raise ServiceUnavailable(
                f"server at {self.shown_url} answered {op.method} {op.path} with HTTP "
                f"{response.status_code} and {kind}, not JSON: is --server a sowctl API URL?"
            ) from None

    def _error(self, op: Operation, response: httpx.Response, attempts: int) -> Exception:
        error = self._typed_error(op, response, attempts)
        error.answered_status = response.status_code
        error.request_id = response.headers.get("x-request-id")
        error.answered_code = response.headers.get(ERROR_CODE_HEADER)
        return error

    def _typed_error(self, op: Operation, response: httpx.Response, attempts: int) -> SowctlError:
        status = response.status_code
        message, issues = error_message(op, response)
        if status == 400:
            return InvalidInput(message, issues or header_issues(response) or issues_in(message))
        if status == 401:
            return Unauthorized(message)
        if status == 403:
            return Forbidden(message)
        if status == 404:
            return NotFound(message + self._api_path_hint())
        if status == 429:
            retry_after = _int_header(response, "retry-after") or 0
            suffix = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
            return RateLimited(f"rate limited by server: {message}{suffix}", retry_after)
        if status >= 500:
            suffix = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
            return RemoteError(status, f"server error (HTTP {status}): {message}{suffix}")
        return RemoteError(status, message)

    def _api_path_hint(self) -> str:
        """A server URL ending in /api makes every path /api/api/...: say what to give instead."""
        path = httpx.URL(self.base_url).path.rstrip("/")
        if not path.endswith("/api"):
            return ""
        return f" (--server is the base URL, without /api: {self.shown_url[: -len('/api')]})"

    # --- health -------------------------------------------------------------------------------

    def health(self, timeout: float = 3.0) -> tuple[bool, str]:
        """GET /readyz once, without retries: (ready, what it said). A server without /readyz
        (sowctl before it, another implementation) is asked its /healthz instead."""
        ready, detail, status = self._probe("/readyz", timeout)
        if status == 404:
            ready, detail, _ = self._probe("/healthz", timeout)
        return ready, detail

    def _probe(self, path: str, timeout: float) -> tuple[bool, str, int | None]:
        url = self.base_url + path
        try:
            response = self.client.get(url, timeout=httpx.Timeout(timeout))
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return False, plain_http_instead(self.shown_url, exc) or str(self._unreachable(exc).message), None
        except httpx.TimeoutException:
            return False, f"server at {self.shown_url} did not answer within {timeout:g} s", None
        except httpx.TransportError as exc:
            return False, f"connection to server at {self.shown_url} failed: {_reason(exc)}", None
        try:
            body = response.json()
        except NOT_JSON:
            body = None
        status = response.status_code
        if status == 200 and isinstance(body, dict) and body.get("status") == "ok":
            return True, "ok", status
        not_json = "" if body is not None else " and not JSON"
        return False, f"GET {path} answered HTTP {status}{not_json}", status


@dataclass(frozen=True)
class _RawRoute:
    """A path no operation declares (``/_admin/...``), as ``request`` reads an operation."""

    method: str
    path: str
    name: str = "api"
    group: Group = Group.A
    paginated: bool = False
    list_key: str | None = None


def _need(value: str | None, option: str, env: str, error: type[SowctlError] = Unauthorized) -> str:
    if not value:
        raise error(f"remote mode needs {option} (or {env}) for this command")
    return value


def _int_header(response: httpx.Response, name: str) -> int | None:
    try:
        return int(response.headers[name])
    except (KeyError, ValueError):
        return None


def _reason(exc: Exception) -> str:
    text = str(exc)
    lowered = text.lower()
    if "header" in lowered:
        # httpx quotes the offending header in full: that may be the token or the API key.
        return "a request header could not be sent (its value is not shown)"
    if "refused" in lowered:
        return "connection refused"
    if "name or service not known" in lowered or "nodename nor servname" in lowered:
        return "unknown host"
    return text or type(exc).__name__
