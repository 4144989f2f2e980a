"""Diagram sources of a dependency chain: Mermaid (paste into Markdown) and Graphviz DOT.

Both take the API body of ``GET /api/dependencies/chain?format=flat&include=criticalPath``, so they
work the same in local and remote mode. Each dependency is an arrow from its
source item to its target (an item, or an external party drawn as a separate
shape, one per distinct name), labelled with its type. Highlighted:

* critical dependencies (``issues.critical``): thick red;
* overdue dependencies (``issues.overdue``): thick orange (red wins when both);
* ``related_to`` (no order): dashed; cancelled: dotted grey; resolved: grey;
* items on ``criticalPath``: bold border.
"""

from __future__ import annotations

from typing import Any

from sowctl.output.safe import clean

RED = "#d62728"
ORANGE = "#ff7f0e"
GREY = "#999999"


class _Chart:
    """Nodes and edges of a chain body, with stable short ids for the diagram."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.sow_id: str = report["sowId"]
        self.critical = {entry["id"] for entry in report["issues"]["critical"]}
        self.overdue = {entry["id"] for entry in report["issues"]["overdue"]}
        self.on_path = set(report.get("criticalPath") or [])
        self.nodes: dict[str, tuple[str, str, bool]] = {}  # key -> (short id, label, external)
        self.edges: list[tuple[str, str, dict[str, Any]]] = []
        for entry in report["dependencies"]:
            source = self._node(entry["sourceItem"]["id"], entry["sourceItem"]["title"], False)
            if entry.get("isExternal") or entry["targetItem"].get("id") is None:
                name = entry.get("externalTarget") or entry["targetItem"]["title"] or "external"
                target = self._node("external:" + name, name, True)
            else:
                target = self._node(entry["targetItem"]["id"], entry["targetItem"]["title"], False)
            self.edges.append((source, target, entry))

    def _node(self, key: str, title: str | None, external: bool) -> str:
        if key not in self.nodes:
            short = f"{'x' if external else 'n'}{len(self.nodes) + 1}"
            self.nodes[key] = (short, title or key, external)
        return self.nodes[key][0]

    def item_id(self, key: str) -> str | None:
        return None if key.startswith("external:") else key

    def colour(self, entry: dict[str, Any]) -> str | None:
        """Highlight colour of an edge; None for an ordinary one."""
        if entry["id"] in self.critical:
            return RED
        if entry["id"] in self.overdue:
            return ORANGE
        if entry["status"] in ("cancelled", "resolved"):
            return GREY
        return None

    def label(self, entry: dict[str, Any]) -> str:
        marks = [
            mark
            for mark, ids in (("critical", self.critical), ("overdue", self.overdue))
            if entry["id"] in ids
        ]
        if entry["status"] != "active":
            marks.append(entry["status"])
        return " / ".join([entry["dependencyType"], *marks])


# --- Mermaid ---------------------------------------------------------------------


def mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for the characters it parses).

    Control characters are made harmless by ``output.safe.clean`` (line breaks become
    spaces, so a label cannot end its line and start a statement of its own); a backtick
    would open a Markdown string.
    """
    text = " ".join(clean(str(text)).split())
    # "#" first: every code after it starts with one. "&" too, or "&amp;" in a title would be
    # rendered as the HTML entity it spells ("&"), not as written.
    for char, code in (
        ("#", "#35;"),
        ("&", "#amp;"),
        ('"', "#quot;"),
        ("<", "#lt;"),
        (">", "#gt;"),
        ("`", "#96;"),
    ):
        text = text.replace(char, code)
    return text


def mermaid_node(short: str, title: str | None, item_id: str | None) -> str:
    """A node's line, as every Mermaid diagram of sowctl draws it (``chain show``, the Markdown
    report): an item as its title over its id (the id alone when its title is not known), an
    external party (no item id) as a parallelogram of its name."""
    if item_id is None:
        return f'  {short}[/"{mermaid_text(title or "external")}"/]'
    label = f"{mermaid_text(title)}<br/>{mermaid_text(item_id)}" if title else mermaid_text(item_id)
    return f'  {short}["{label}"]'


def to_mermaid(report: dict[str, Any]) -> str:
    """A ``flowchart LR`` of the chain, ready for a Markdown ```mermaid block."""
    chart = _Chart(report)
    lines = [
        "flowchart LR",
        f"  %% dependency chain of SOW {mermaid_text(chart.sow_id)} (sowctl chain show --format mermaid)",
        "  %% red: critical, orange: overdue, dashed: related_to, grey: resolved or cancelled",
    ]
    for key, (short, title, external) in chart.nodes.items():
        lines.append(mermaid_node(short, title, None if external else key))
    styles = []
    for index, (source, target, entry) in enumerate(chart.edges):
        if entry["status"] == "cancelled" or entry["dependencyType"] == "related_to":
            arrow = "-.->"
        else:
            arrow = "==>" if entry["id"] in chart.critical or entry["id"] in chart.overdue else "-->"
        lines.append(f'  {source} {arrow}|"{mermaid_text(chart.label(entry))}"| {target}')
        colour = chart.colour(entry)
        if colour is not None:
            width = "1px" if colour == GREY else "3px"
            styles.append(f"  linkStyle {index} stroke:{colour},stroke-width:{width}")
    lines.extend(styles)
    lines.append("  classDef external stroke-dasharray: 4 3")
    externals = [short for short, _title, external in chart.nodes.values() if external]
    if externals:
        lines.append(f"  class {','.join(externals)} external")
    on_path = [short for key, (short, _t, _e) in chart.nodes.items() if chart.item_id(key) in chart.on_path]
    if on_path:
        lines.append("  classDef criticalPath stroke-width:3px,font-weight:bold")
        lines.append(f"  class {','.join(on_path)} criticalPath")
    return "\n".join(lines) + "\n"


# --- Graphviz DOT --------------------------------------------------------------------


def _dot_text(text: str) -> str:
    """A DOT double-quoted string's content (a newline is DOT's line break; no control passes)."""
    from sowctl.output.safe import clean

    return clean(str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n"))


def to_dot(report: dict[str, Any]) -> str:
    """A Graphviz ``digraph`` of the chain: ``dot -Tsvg chain.dot -o chain.svg``."""
    chart = _Chart(report)
    lines = [
        f'digraph "{_dot_text(chart.sow_id)}" {{',
        f'  label="Dependency chain of SOW {_dot_text(chart.sow_id)}";',
        "  labelloc=t;",
        "  rankdir=LR;",
        '  node [shape=box, style=rounded, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for key, (short, title, external) in chart.nodes.items():
        if external:
            attrs = f'label="{_dot_text(title)}", shape=note, style=dashed'
        else:
            attrs = f'label="{_dot_text(title)}\\n{_dot_text(key)}"'
            if key in chart.on_path:
                attrs += ', penwidth=2.5, style="rounded,bold"'
        lines.append(f"  {short} [{attrs}];")
    for source, target, entry in chart.edges:
        edge_attrs = [f'label="{_dot_text(chart.label(entry))}"']
        colour = chart.colour(entry)
        if colour is not None:
            edge_attrs.append(f'color="{colour}", fontcolor="{colour}"')
            if colour != GREY:
                edge_attrs.append("penwidth=2.5")
        if entry["status"] == "cancelled":
            edge_attrs.append("style=dotted")
        elif entry["dependencyType"] == "related_to":
            edge_attrs.append("style=dashed, arrowhead=none")
        lines.append(f"  {source} -> {target} [{', '.join(edge_attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
