"""Group B prime contracts.

The lookup is scoped (``services.external_scope``): a contract outside the caller's
organization and company is "not found", exactly as if it did not exist.
"""

from __future__ import annotations

from sowctl.foundation.errors import NotFound
from sowctl.schemas.contracts import Customer, PaymentTerms, PrimeContractOut, PrimeContractResponse
from sowctl.schemas.rows import from_row
from sowctl.services.access import Caller
from sowctl.services.external_scope import project_for
from sowctl.storage import models as m


def get_prime_contract(
    caller: Caller, company_id: str | None, project_id: int, prime_contract_id: int
) -> PrimeContractResponse:
    project = project_for(caller, company_id, project_id)
    contract = m.PrimeContract.get_or_none(
        (m.PrimeContract.id == prime_contract_id) & (m.PrimeContract.financial_project == project.id)
    )
    if contract is None:
        raise NotFound(f"prime contract {prime_contract_id} not found in project {project_id}")
    customer, terms = contract.customer, contract.payment_terms
    return PrimeContractResponse(
        data=[
            from_row(
                PrimeContractOut,
                contract,
                project_id=contract.financial_project_id,
                customer=Customer.model_validate(customer) if isinstance(customer, dict) else None,
                payment_terms=PaymentTerms.model_validate(terms) if isinstance(terms, dict) else None,
            )
        ]
    )
