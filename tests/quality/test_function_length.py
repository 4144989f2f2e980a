"""No long functions outside the CLI: a function of more than ``MAX_LINES`` lines does
several things, and each deserves a name.

A function that must stay longer is listed in ``ALLOWED`` with its length, and the list only
shrinks: a listed function may not grow, and one made shorter must have its entry lowered
(or removed once it fits), so an allowance never hides new lines. It is empty today.
The CLI (``sowctl/cli.py``, ``sowctl/commands/``) declares Typer commands whose signatures
(one option a few lines) and help are long by nature: there, only a function's body counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sowctl"
MAX_LINES = 80
BODY_ONLY = ("sowctl/cli.py", "sowctl/commands/")

# "module path:qualified name" -> its length in lines (from the def line to its last line).
ALLOWED: dict[str, int] = {}  # none left: keep it so


def _functions(tree: ast.AST, prefix: str = "", body_only: bool = False) -> Iterator[tuple[str, int]]:
    """(qualified name, length in lines) of every function, nested ones and methods included;
    ``body_only``: from the first statement after the signature and docstring."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            yield name, (node.end_lineno or node.lineno) - _start(node, body_only) + 1
            yield from _functions(node, name + ".", body_only)
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".", body_only)
        else:
            yield from _functions(node, prefix, body_only)


def _start(node: ast.FunctionDef | ast.AsyncFunctionDef, body_only: bool) -> int:
    if not body_only:
        return node.lineno
    first = node.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if docstring and len(node.body) > 1:
        return node.body[1].lineno
    return first.lineno


def function_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, length in _functions(tree, body_only=module.startswith(BODY_ONLY)):
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
    command = (
        'def c(\n    a: int = 1,\n    b: int = 2,\n) -> None:\n    """Help."""\n    print(a)\n    print(b)\n'
    )
    assert dict(_functions(ast.parse(command), body_only=True)) == {"c": 2}
