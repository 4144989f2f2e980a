"""An import's refusal lists the first problems of a file and counts the rest, however many the
file has: the message names the first, the issues (Group C's ``issues``, the admin API's) hold at
most ``MAX_REPORTED_ISSUES`` and one counting the others."""

from __future__ import annotations

import pytest

from sowctl.foundation.budgets import MAX_REPORTED_ISSUES
from sowctl.foundation.errors import InvalidInput, Issue
from sowctl.services.dataset import import_dataset
from sowctl.storage import models as m


def test_thousands_of_problems_are_reported_as_the_first_and_a_count(db) -> None:
    records = [{"id": f"i-{index}", "sowId": "s", "title": "t"} for index in range(3000)]  # no type

    with pytest.raises(InvalidInput) as refused:
        import_dataset({"items": records})

    assert refused.value.message == "items[0] (id i-0): type: is required (and 2999 more problems)"
    assert refused.value.issues[0] == Issue(("items", 0, "type"), "is required")
    assert len(refused.value.issues) == MAX_REPORTED_ISSUES + 1
    assert refused.value.issues[-1] == Issue((), f"and {3000 - MAX_REPORTED_ISSUES} more problems")
    assert m.Item.select().count() == 0
