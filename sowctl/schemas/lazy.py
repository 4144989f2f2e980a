"""JSON arrays made while they are read, for answers whose size the caller chooses.

A page of 100 purchase orders of up to 1,000 lines each is some 100 MB of JSON, from data a
caller wrote in 1 MiB requests. A handler answers such a list as a ``LazyArray``: the server
writes it member by member (``server.streaming.iter_json``), so a worker holds one batch of
members and a chunk of text, never the page. Whatever needs the whole body at once (local
mode, the CLI) calls ``materialize`` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class LazyArray:
    """A JSON array whose members are made as it is iterated, once (an iterator, not a list)."""

    __slots__ = ("_members",)

    def __init__(self, members: Iterable[Any]) -> None:
        self._members = iter(members)

    def __iter__(self) -> Iterator[Any]:
        return self._members


def materialize(body: Any) -> Any:
    """``body`` with its lazy arrays made lists: where handlers put them, the body itself or
    a member of a body that is an object (``{"data": LazyArray}``); their members are plain."""
    if isinstance(body, LazyArray):
        return list(body)
    if isinstance(body, dict) and any(isinstance(value, LazyArray) for value in body.values()):
        return {key: list(value) if isinstance(value, LazyArray) else value for key, value in body.items()}
    return body
