"""How a table fits a terminal: which columns are shown, and how wide each is.

Ids, enum values, dates and money are never wrapped or cut: a column of them is as
wide as its widest cell. Text (titles, descriptions) gives way: it is shortened with
``…`` down to ``TEXT_MIN`` cells. When even that does not fit, the least valuable
columns are left out, as ``gh`` does (highest ``priority`` number first, the rightmost
first among equals); when only essential columns (priority 1) remain and they still do
not fit, the caller shows each row as a block of "name value" lines instead (``None``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SEPARATOR = 2  # cells between two columns
TEXT_MIN = 16  # a title shortened further says too little


@dataclass(frozen=True)
class Need:
    natural: int  # the widest cell, header and footer included
    minimum: int  # the widest cell that may not be cut, or TEXT_MIN of text
    priority: int = 1  # 1: essential; higher numbers are left out first


def need(whole: Sequence[int], text: Sequence[int], priority: int = 1) -> Need:
    """What a column needs: ``whole`` cells are never cut, ``text`` cells may be (down to TEXT_MIN)."""
    widest_text = max(text, default=0)
    return Need(
        natural=max(max(whole, default=0), widest_text),
        minimum=max(max(whole, default=0), min(widest_text, TEXT_MIN)),
        priority=priority,
    )


@dataclass(frozen=True)
class Fit:
    shown: list[int]  # indexes of the columns shown, in order
    widths: dict[int, int]  # content width of each shown column
    hidden: list[int]  # indexes of the columns left out


def table_width(widths: Sequence[int]) -> int:
    return sum(widths) + SEPARATOR * max(len(widths) - 1, 0)


def fit(needs: Sequence[Need], width: int) -> Fit | None:
    """The columns and widths that fit ``width`` cells; None when the rows must be folded."""
    shown = list(range(len(needs)))
    while table_width([needs[i].minimum for i in shown]) > width:
        droppable = [i for i in shown if needs[i].priority > 1]
        if not droppable:
            return None
        shown.remove(max(droppable, key=lambda i: (needs[i].priority, i)))
    widths = {i: needs[i].natural for i in shown}
    excess = table_width(list(widths.values())) - width
    while excess > 0:
        # Take one cell at a time from the text column with the most to give.
        i = max(
            (i for i in shown if widths[i] > needs[i].minimum), key=lambda i: widths[i] - needs[i].minimum
        )
        widths[i] -= 1
        excess -= 1
    return Fit(shown, widths, [i for i in range(len(needs)) if i not in shown])
