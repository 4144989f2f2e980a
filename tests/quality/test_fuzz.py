"""Schema fuzzing: schemathesis drives the Bottle app in process with the server's own OpenAPI document.

Every operation of ``/openapi.json`` gets a bounded, deterministic run (positive and
negative inputs), authenticated as a member of the demo organization: a bearer token
for Groups A and C, an API key with the organization and company headers for Group B
(with a rate limit high enough that fuzzing never meets a 429; 429 is documented
anyway). Generated ids are mixed with real ones of the demo dataset so that the
success paths are fuzzed too, not only the 404s. A response fails the run when it is
a 5xx, does not match its documented schema, has an undocumented status code, content
type or header.
"""

from __future__ import annotations

import datetime
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sowctl import operations
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.server.http import json_bytes
from sowctl.server.openapi import build_openapi
from sowctl.services import credentials, demo_data
from sowctl.services.dataset import import_dataset
from sowctl.storage import models
from tests.support.client import wsgi_client

# slow: property runs, fuzzing, real servers: the full suite only;
# database: a backend's own refusals (NUL, ranges) must not be 500s
pytestmark = [pytest.mark.slow, pytest.mark.database]

# 25 per operation in CI (deterministic); SOWCTL_FUZZ_EXAMPLES=500 for a deeper local hunt.
MAX_EXAMPLES = int(os.environ.get("SOWCTL_FUZZ_EXAMPLES", "25"))
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
]

# The document the server serves: built by the same function from the same registry
# (``test_fuzzed_document_is_the_served_one`` pins that they are identical).
DOCUMENT = json.loads(json_bytes(build_openapi(operations.load_all().values())))
schema = schemathesis.openapi.from_dict(DOCUMENT)

# Real ids of the demo dataset, mixed into generated values (the dataset is deterministic).
_DEMO = demo_data.demo_dataset(datetime.date(2026, 1, 15))
ACME_SOWS = [sow["id"] for sow in _DEMO["sows"] if sow["id"] != demo_data.GLOBEX_SOW]
ACME_ITEMS = [item["id"] for item in _DEMO["items"] if item["sowId"] in ACME_SOWS]
ACME_DEPENDENCIES = [dep["id"] for dep in _DEMO["dependencies"] if dep["sourceItemId"] in ACME_ITEMS]
ACME_COMPANIES = {c["id"] for c in _DEMO["companies"] if c["organizationId"] == demo_data.DEMO_ORG}
ACME_FIN_PROJECTS = [p["id"] for p in _DEMO["financialProjects"] if p["companyId"] in ACME_COMPANIES]
REAL_VALUES: dict[str, list] = {
    "sowId": ACME_SOWS,
    "itemId": ACME_ITEMS,
    "parentId": ACME_ITEMS,
    "parentItemId": ACME_ITEMS,
    "sourceItemId": ACME_ITEMS,
    "targetItemId": ACME_ITEMS,
    "dependencyId": ACME_DEPENDENCIES,
    "projectId": [p["id"] for p in _DEMO["projects"] if p["organizationId"] == demo_data.DEMO_ORG],
    "clientId": [c["id"] for c in _DEMO["clients"] if c["organizationId"] == demo_data.DEMO_ORG],
    "project_id": ACME_FIN_PROJECTS,
    "snapshot_id": [s["id"] for s in _DEMO["budgetViewSnapshots"] if s["project_id"] in ACME_FIN_PROJECTS],
    "prime_contract_id": [c["id"] for c in _DEMO["primeContracts"] if c["project_id"] in ACME_FIN_PROJECTS],
    "commitment_id": [c["id"] for c in _DEMO["commitments"] if c["project_id"] in ACME_FIN_PROJECTS],
    "vendor_id": [v["id"] for v in _DEMO["vendors"] if v["companyId"] in ACME_COMPANIES],
    "cost_code_id": [c["id"] for c in _DEMO["costCodes"] if c["companyId"] in ACME_COMPANIES],
}
SCOPE_HEADERS = {
    "x-organization-id": demo_data.DEMO_ORG,
    "organization-id": demo_data.DEMO_ORG,
    "x-company-id": demo_data.DEMO_COMPANY,
    "company-id": demo_data.DEMO_COMPANY,
}


def _with_real_values(values: dict | None) -> st.SearchStrategy:
    """The generated mapping, or a copy with some known keys set to real demo ids."""
    if not isinstance(values, dict):
        return st.just(values)
    known = [key for key in values if key in REAL_VALUES]
    if not known:
        return st.just(values)
    replaced = st.fixed_dictionaries({key: st.sampled_from(REAL_VALUES[key]) for key in known})
    return st.one_of(st.just(values), replaced.map(lambda real: {**values, **real}))


def _with_real_body(body):
    if isinstance(body, dict) and isinstance(body.get("line_items"), list):
        lines = st.lists(
            st.fixed_dictionaries(
                {"description": st.just("line"), "amount": st.sampled_from(["0.10", "12.5", "1000"])},
                optional={"cost_code_id": st.sampled_from(REAL_VALUES["cost_code_id"])},
            ),
            min_size=1,
            max_size=3,
        )
        fixed = st.tuples(_with_real_values(body), lines).map(lambda pair: {**pair[0], "line_items": pair[1]})
        return st.one_of(_with_real_values(body), fixed)
    return _with_real_values(body)


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    return _with_real_values(path_parameters)


@schema.hook
def flatmap_query(context, query):
    return _with_real_values(query)


@schema.hook
def flatmap_body(context, body):
    return _with_real_body(body)


@schema.hook
def flatmap_headers(context, headers):
    if not isinstance(headers, dict) or not any(name.lower() in SCOPE_HEADERS for name in headers):
        return st.just(headers)
    real = {name: SCOPE_HEADERS[name.lower()] for name in headers if name.lower() in SCOPE_HEADERS}
    return st.sampled_from([headers, {**headers, **real}])


@dataclass
class Env:
    app: object
    errors: io.StringIO
    token: str
    api_key: str


@pytest.fixture
def env(db_url: str) -> Iterator[Env]:
    # Rate limits high enough that fuzzing never meets a 429 (it is documented anyway).
    app = create_app(db_url, ServerSettings(rate_per_minute=10**6, rate_per_day=10**7, access_log=False))
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    api_key = credentials.create_key(demo_data.DEMO_ORG).secret
    yield Env(app, io.StringIO(), token, api_key)
    models.database_proxy.obj.close()


GROUP_OF_PATH = {op.path: op.group for op in operations.load_all().values()}


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_route_honours_its_documented_contract(case, env: Env) -> None:
    if GROUP_OF_PATH.get(case.path) == "B":
        headers = {"x-api-key": env.api_key}
    else:
        headers = {"Authorization": f"Bearer {env.token}"}
    response = case.call(app=env.app, headers=headers)
    case.validate_response(response, checks=CHECKS, headers=headers)
    assert "Traceback" not in response.text


def test_fuzzed_document_is_the_served_one(env: Env) -> None:
    with wsgi_client(env.app, base_url="http://fuzz") as client:
        served = client.get("/openapi.json")
    assert served.status_code == 200
    assert served.json() == DOCUMENT


def test_group_b_documents_429_and_every_body_documents_413() -> None:
    for op in operations.load_all().values():
        statuses = DOCUMENT["paths"][op.path][op.method.lower()]["responses"]
        if op.group == "B":
            assert "429" in statuses, op.name
        if op.body is not None:
            assert "413" in statuses and "415" not in statuses, op.name
        assert "500" in statuses, op.name


def test_a_real_429_matches_the_documented_response(db_url: str) -> None:
    """Fuzzing runs with a huge limit, so a real 429 is checked here against the same document."""
    app = create_app(db_url, ServerSettings(rate_per_minute=1, access_log=False))
    try:
        import_dataset(demo_data.demo_dataset(datetime.date.today()))
        api_key = credentials.create_key(demo_data.DEMO_ORG).secret
        case = schema["/api/external/budget-views"]["GET"].Case(
            query={"project_id": demo_data.DEMO_PROJECT_ID},
            headers={"x-organization-id": demo_data.DEMO_ORG, "x-company-id": demo_data.DEMO_COMPANY},
        )
        headers = {"x-api-key": api_key}
        first = case.call(app=app, headers=headers)
        case.validate_response(first, checks=CHECKS, headers=headers)
        refused = case.call(app=app, headers=headers)
        assert refused.status_code == 429 and int(refused.headers["retry-after"][0]) >= 1
        case.validate_response(refused, checks=CHECKS, headers=headers)
    finally:
        models.database_proxy.obj.close()
