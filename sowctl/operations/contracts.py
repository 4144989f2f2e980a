"""Group B prime contracts.

Authenticated and scoped as every Group B route (see ``operations.purchase_orders``).
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import dump
from sowctl.schemas.contracts import PrimeContractQuery, PrimeContractResponse

service = LazyModule("sowctl.services.contracts")


@operation(
    name="finance.prime_contract",
    method="GET",
    path="/api/external/prime-contract-details",
    group=Group.B,
    summary="Retrieve the details of a prime contract (data: an array of one object)",
    query=PrimeContractQuery,
    response=PrimeContractResponse,
)
def prime_contract(request: Request) -> Result:
    query = request.query
    found = service.get_prime_contract(
        request.caller, request.company_id, query.project_id, query.prime_contract_id
    )
    return Result(dump(found))
