"""No long functions outside the CLI: a function of more than ``MAX_LINES`` lines does
several things, and each deserves a name.

A function that must stay longer is listed in ``ALLOWED`` with its length, and the list only
shrinks: a listed function may not grow, and one made shorter must have its entry lowered
(or removed once it fits), so an allowance never hides new lines. It is empty today.
The CLI (``sowctl/cli.py``, ``sowctl/commands/``) declares Typer commands whose signatures
are long by nature: not held.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sowctl"
MAX_LINES = 80
NOT_HELD = ("sowctl/cli.py", "sowctl/commands/")

# "module path:qualified name" -> its length in lines (from the def line to its last line).
ALLOWED: dict[str, int] = {}  # none left: keep it so


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, length in lines) of every function, nested ones and methods included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def function_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).as_posix()
        if module.startswith(NOT_HELD):
            continue
        for name, length in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            lengths[f"{module}:{name}"] = length
    return lengths


def test_no_function_is_longer_than_the_limit_or_its_allowance() -> None:
    too_long = {
        name: length
        for name, length in function_lengths().items()
        if length > max(MAX_LINES, ALLOWED.get(name, 0))
    }
    assert not too_long, f"functions over {MAX_LINES} lines (split them): {too_long}"


def test_the_allowances_shrink_with_their_functions() -> None:
    lengths = function_lengths()
    stale = {name: lengths.get(name) for name, allowed in ALLOWED.items() if lengths.get(name, 0) < allowed}
    assert not stale, f"shorter now (or gone): lower or drop their ALLOWED entries: {stale}"


def test_the_lengths_are_measured_as_the_allowances_say() -> None:
    source = "class A:\n    def f(self):\n        def g():\n            return 1\n\n        return g\n"
    assert dict(_functions(ast.parse(source))) == {"A.f": 5, "A.f.g": 2}
