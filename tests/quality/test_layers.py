"""The layers of ARCHITECTURE.md, enforced: no upward import, no import cycle, no UI in the core.

Imports are read from the source (``ast``), including those inside functions;
those under ``if TYPE_CHECKING:`` are annotations only and do not count.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sowctl"

# Lowest first: each layer is a folder (or two). A module may import its own layer and those
# below, never one above.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("sowctl", "sowctl.foundation")),
    ("storage", ("sowctl.storage",)),
    ("records", ("sowctl.schemas",)),
    ("domain core", ("sowctl.services",)),
    ("API declaration", ("sowctl.operations",)),
    (
        "surfaces",
        (
            "sowctl.engine",
            "sowctl.server",
            "sowctl.backends",
            "sowctl.testing",
            "sowctl.conformance",
        ),
    ),
    ("output", ("sowctl.output",)),
    ("CI gate", ("sowctl.gate",)),
    # The MCP server hands an agent the registry's operations and the CI gate's check.
    ("agents", ("sowctl.mcp",)),
    ("CLI", ("sowctl.__main__", "sowctl.cli", "sowctl.commands")),
]
# Inside the surfaces layer: who may not import whom (a module under an exempt folder is not held).
SIBLING_RULES: dict[str, tuple[str, ...]] = {
    # The HTTP engine knows nothing of the API: it serves whatever application it is handed,
    # with the foundation's redaction rule for its log lines.
    "sowctl.engine": (
        "sowctl.storage",
        "sowctl.schemas",
        "sowctl.services",
        "sowctl.operations",
        "sowctl.server",
        "sowctl.backends",
        "sowctl.testing",
        "sowctl.mcp",
        "sowctl.conformance",
    ),
    # The API app does not know the test double that may wrap it, nor the CLI's backends.
    "sowctl.server": ("sowctl.backends", "sowctl.server.testdouble"),
    "sowctl.server.testdouble": ("sowctl.backends", "sowctl.server.app"),
    "sowctl.backends": ("sowctl.server",),
    # The Python client and the test kit talk HTTP: they never reach into the server.
    "sowctl.backends.client": ("sowctl.server", "sowctl.testing", "sowctl.backends.local"),
    "sowctl.testing": ("sowctl.server", "sowctl.backends.local"),
    # The MCP server runs operations through the CLI's backends, never the HTTP server's code.
    "sowctl.mcp": ("sowctl.server",),
    # Conformance judges any server from outside, over HTTP: it never reaches into sowctl's own.
    "sowctl.conformance": ("sowctl.server", "sowctl.backends.local", "sowctl.services", "sowctl.storage"),
}
EXEMPT = {"sowctl.server": ("sowctl.server.testdouble",)}
# The one deliberate exception: create_app is the composition root that puts the test
# double (when asked for) in front of the API it wraps.
ALLOWED = {
    ("sowctl.server.app", "sowctl.server.testdouble.layer"),
    ("sowctl.server.app", "sowctl.server.testdouble.admin_api"),
    # ``sowctl.Client``: a lazy re-export (module __getattr__), not an import of the package's own.
    ("sowctl", "sowctl.backends.client"),
}
# Libraries of the surfaces that the core never touches.
UI_LIBRARIES = ("typer", "rich", "click", "bottle", "httpx", "granian")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@functools.cache
def imports(path: Path, *, top_level_only: bool = False) -> frozenset[str]:
    """Absolute names imported by the module at ``path`` (modules, or packages' members)."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_lines(tree)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if getattr(node, "lineno", 0) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            for alias in node.names:  # "from sowctl.services import graph" imports a module
                candidate = f"{node.module}.{alias.name}"
                if (PACKAGE.parent / candidate.replace(".", "/")).with_suffix(".py").exists():
                    found.add(candidate)
    return frozenset(found)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_of(name: str) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{name} belongs to no layer: add it to LAYERS"
    return rank


@functools.cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for name, path in modules().items():
        for target in imports(path):
            if not target.startswith("sowctl") or (name, target) in ALLOWED:
                continue
            if layer_of(target) > layer_of(name):
                upward.append(
                    f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
                )
            for prefix, forbidden in SIBLING_RULES.items():
                if not _within(name, prefix) or any(_within(name, e) for e in EXEMPT.get(prefix, ())):
                    continue
                if any(_within(target, f) for f in forbidden):
                    upward.append(f"{name} imports {target}")
    assert upward == []


def test_the_core_imports_no_ui_or_http_library() -> None:
    core = [name for name in modules() if layer_of(name) <= layer_of("sowctl.operations")]
    offenders = [
        f"{name} imports {target}"
        for name in core
        for target in imports(modules()[name])
        if target.split(".")[0] in UI_LIBRARIES
    ]
    assert offenders == []


def _all_imports(path: Path) -> frozenset[str]:
    """Every import of the module: at the top, inside functions, and under TYPE_CHECKING."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules().keys()
            # "from sowctl import operations" reaches the submodule, not the package's own code
            found.update(submodules if len(submodules) == len(node.names) else {node.module, *submodules})
    return frozenset(found)


def test_imports_form_no_cycle_not_even_inside_functions_or_for_type_checking() -> None:
    graph = {
        name: {target for target in _all_imports(path) if target in modules() and target != name}
        for name, path in modules().items()
    }
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert cycles == []


def _deferred_imports() -> tuple[list[str], list[str]]:
    inside_functions, for_type_checking = [], []
    for name, path in sorted(modules().items()):
        tree = ast.parse(path.read_text())
        annotations_only = _type_checking_lines(tree)
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            where = f"{name}:{node.lineno}"
            if node.lineno in annotations_only:
                for_type_checking.append(where)
            elif id(node) not in top_level:
                inside_functions.append(where)
    return inside_functions, for_type_checking


# Imports inside functions keep start-up light (Rich, Pydantic models, the server are loaded
# only by the commands that use them) but hide dependencies from a reader: their number may
# only go down. Lower these when you remove some.
MAX_IMPORTS_INSIDE_FUNCTIONS = 344
MAX_TYPE_CHECKING_IMPORTS = 22


def test_deferred_imports_do_not_grow() -> None:
    inside_functions, for_type_checking = _deferred_imports()
    assert len(inside_functions) <= MAX_IMPORTS_INSIDE_FUNCTIONS
    assert len(for_type_checking) <= MAX_TYPE_CHECKING_IMPORTS


def test_every_module_is_placed_in_a_layer() -> None:
    for name in modules():
        layer_of(name)
