// The dependency graph of a SOW as an SVG picture, from the chain report
// (GET /api/dependencies/chain?format=tree&include=criticalPath,external).
//
// Items are nodes; an external dependency's party is a vendor node (one per name).
// Arrows run in time order, from the item that comes first to the one that waits
// for it; which end of a dependency type comes first is the server's rule, read
// from the page (data-target-first, data-source-first). Columns are the layers of
// a longest-path layering over the ordering dependencies, rows are ordered by the
// barycentre of each node's neighbours, which is enough for a few hundred items.

import { svg } from "./dom.js";

const NODE_W = 210;
const NODE_H = 42;
const GAP_X = 70;
const GAP_Y = 14;
const PAD = 24;
const TITLE_CHARS = 27;

/** The ordering rule from the page: which dependency types put their target first, which their source. */
export function orderingRule(body) {
  const words = (text) => new Set((text || "").split(/\s+/).filter(Boolean));
  return { targetFirst: words(body.dataset.targetFirst), sourceFirst: words(body.dataset.sourceFirst) };
}

/** Items in tree order (with depth and parent) from a chain report of format=tree. */
export function flattenItems(chain) {
  const items = [];
  const walk = (list, depth, parent) => {
    for (const item of list || []) {
      items.push({ ...item, depth, parent });
      walk(item.children, depth + 1, item.id);
    }
  };
  walk(chain.items, 0, null);
  return items;
}

/** Nodes, edges and their flags (critical, overdue, blocked, circular, critical path). */
export function buildModel(chain, rule) {
  const issues = chain.issues || {};
  const critical = new Set((issues.critical || []).map((entry) => entry.id));
  const overdue = new Set((issues.overdue || []).map((entry) => entry.id));
  const cycleOf = new Map();
  (issues.circular || []).forEach((cycle, index) => cycle.forEach((id) => cycleOf.set(id, index)));
  const pathIndex = new Map((chain.criticalPath || []).map((id, index) => [id, index]));

  const nodes = new Map();
  const items = flattenItems(chain);
  items.forEach((item, order) => {
    nodes.set(item.id, {
      key: item.id, kind: "item", id: item.id, title: item.title, status: item.status, type: item.type,
      order, linked: false, onPath: pathIndex.has(item.id), circular: cycleOf.has(item.id),
    });
  });
  const ensure = (key, fields) => {
    if (!nodes.has(key)) nodes.set(key, { key, order: nodes.size, linked: false, onPath: false, ...fields });
    return nodes.get(key);
  };

  const edges = [];
  for (const item of items) {
    for (const entry of item.dependencies || []) {
      const source = ensure(entry.sourceItem.id, { kind: "foreign", id: entry.sourceItem.id, title: entry.sourceItem.title });
      const external = Boolean(entry.isExternal) || !entry.targetItem || !entry.targetItem.id;
      const target = external
        ? ensure(`vendor:${entry.externalTarget || entry.targetItem.title}`, {
            kind: "vendor", title: entry.externalTarget || entry.targetItem.title || "external party",
          })
        : ensure(entry.targetItem.id, { kind: "foreign", id: entry.targetItem.id, title: entry.targetItem.title });
      const order = rule.targetFirst.has(entry.dependencyType)
        ? "target"
        : rule.sourceFirst.has(entry.dependencyType) ? "source" : null;
      const [from, to] = order === "target" ? [target, source] : [source, target];
      // What the core counts as an ordering edge: internal, typed with an order, not cancelled.
      const layering = Boolean(order) && !external && entry.status !== "cancelled";
      source.linked = target.linked = true;
      edges.push({
        id: entry.id, entry, from: from.key, to: to.key, arrow: Boolean(order), layering, external,
        critical: critical.has(entry.id),
        overdue: overdue.has(entry.id),
        blocked: entry.status === "blocked",
        muted: entry.status === "resolved" || entry.status === "cancelled",
        cancelled: entry.status === "cancelled",
        circular: layering && cycleOf.has(from.key) && cycleOf.get(from.key) === cycleOf.get(to.key),
        onPath: layering && pathIndex.has(from.key) && pathIndex.get(to.key) === pathIndex.get(from.key) + 1,
      });
    }
  }
  return { nodes, edges, items, criticalPath: chain.criticalPath || [], cycles: issues.circular || [] };
}

/** Column (layer) and row of every shown node; returns {width, height}. */
function layout(shown, edges) {
  const keys = new Set(shown.map((node) => node.key));
  const succ = new Map(shown.map((node) => [node.key, []]));
  const indegree = new Map(shown.map((node) => [node.key, 0]));
  const layerEdges = edges.filter((e) => e.layering && keys.has(e.from) && keys.has(e.to));
  for (const edge of layerEdges) {
    succ.get(edge.from).push(edge.to);
    indegree.set(edge.to, indegree.get(edge.to) + 1);
  }
  // Longest-path layers (Kahn); inside a cycle, the earliest remaining node is let go first.
  const layer = new Map(shown.map((node) => [node.key, 0]));
  const byOrder = [...shown].sort((a, b) => a.order - b.order);
  const done = new Set();
  const queue = byOrder.filter((node) => indegree.get(node.key) === 0).map((node) => node.key);
  while (done.size < byOrder.length) {
    if (queue.length === 0) queue.push(byOrder.find((node) => !done.has(node.key)).key);
    const key = queue.shift();
    if (done.has(key)) continue;
    done.add(key);
    for (const next of succ.get(key)) {
      if (done.has(next)) continue;
      layer.set(next, Math.max(layer.get(next), layer.get(key) + 1));
      indegree.set(next, indegree.get(next) - 1);
      if (indegree.get(next) === 0) queue.push(next);
    }
  }
  // A vendor sits one column before the first item that waits for it (or after the one it follows).
  const vendors = shown.filter((node) => node.kind === "vendor");
  for (const vendor of vendors) {
    const places = edges
      .filter((e) => (e.from === vendor.key || e.to === vendor.key) && keys.has(e.from) && keys.has(e.to))
      .map((e) => (e.from === vendor.key ? layer.get(e.to) - 1 : layer.get(e.from) + 1));
    layer.set(vendor.key, places.length ? Math.min(...places) : 0);
  }
  const lowest = Math.min(0, ...layer.values());
  for (const [key, value] of layer) layer.set(key, value - lowest);

  const columns = [];
  for (const node of byOrder) {
    const column = layer.get(node.key);
    (columns[column] = columns[column] || []).push(node);
  }
  // Rows: two sweeps of barycentres (mean row of the neighbours already placed).
  const neighbours = new Map(shown.map((node) => [node.key, []]));
  for (const edge of edges) {
    if (keys.has(edge.from) && keys.has(edge.to)) {
      neighbours.get(edge.from).push(edge.to);
      neighbours.get(edge.to).push(edge.from);
    }
  }
  const row = new Map();
  const place = () => columns.forEach((column) => (column || []).forEach((node, index) => row.set(node.key, index)));
  place();
  for (let sweep = 0; sweep < 2; sweep += 1) {
    for (const column of columns) {
      if (!column) continue;
      const centre = new Map(column.map((node) => {
        const rows = neighbours.get(node.key).filter((k) => layer.get(k) !== layer.get(node.key)).map((k) => row.get(k));
        return [node.key, rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : row.get(node.key)];
      }));
      column.sort((a, b) => centre.get(a.key) - centre.get(b.key) || a.order - b.order);
      column.forEach((node, index) => row.set(node.key, index));
    }
  }
  // A layer taller than the cap is drawn as several columns side by side (nothing links
  // nodes of one layer in time order), so 200 items make a wide picture, not a tower.
  const cap = Math.max(12, Math.ceil(Math.sqrt(shown.length) * 1.5));
  const drawn = [];
  for (const column of columns) {
    const nodes = column || [];
    if (!nodes.length) drawn.push([]);
    for (let start = 0; start < nodes.length; start += cap) drawn.push(nodes.slice(start, start + cap));
  }
  const tallest = Math.max(1, ...drawn.map((column) => column.length));
  const height = PAD * 2 + tallest * (NODE_H + GAP_Y) - GAP_Y;
  drawn.forEach((column, index) => {
    const top = PAD + ((tallest - column.length) * (NODE_H + GAP_Y)) / 2;
    column.forEach((node, position) => {
      node.x = PAD + index * (NODE_W + GAP_X);
      node.y = top + position * (NODE_H + GAP_Y);
    });
  });
  return { width: PAD * 2 + Math.max(1, drawn.length) * (NODE_W + GAP_X) - GAP_X, height };
}

/** Items without any dependency, in a grid under the graph. */
function layoutUnlinked(unlinked, size) {
  const perRow = Math.max(4, Math.floor((size.width - PAD * 2 + GAP_X) / (NODE_W + GAP_X)));
  const top = size.height + (unlinked.length ? 30 : 0);
  unlinked.forEach((node, index) => {
    node.x = PAD + (index % perRow) * (NODE_W + GAP_X);
    node.y = top + Math.floor(index / perRow) * (NODE_H + GAP_Y);
  });
  const rows = Math.ceil(unlinked.length / perRow);
  return {
    width: Math.max(size.width, PAD * 2 + Math.min(perRow, unlinked.length) * (NODE_W + GAP_X) - GAP_X),
    height: top + rows * (NODE_H + GAP_Y) + (rows ? PAD : 0),
    top,
  };
}

function shorten(text, limit) {
  const value = String(text || "");
  return value.length > limit ? `${value.slice(0, limit - 1)}…` : value;
}

function edgeMarks(edge) {
  return ["critical", "overdue", "blocked", "circular"].filter((flag) => edge[flag]);
}

/** A readable description of an edge, for screen readers and tooltips. */
export function describeEdge(edge, nodes) {
  const name = (key) => nodes.get(key).title;
  const entry = edge.entry;
  const target = edge.external ? entry.externalTarget || entry.targetItem.title : entry.targetItem.title;
  const marks = edgeMarks(edge);
  if (edge.onPath) marks.push("on the critical path");
  const flagText = marks.length ? ` (${marks.join(", ")})` : "";
  return `${entry.id}: ${entry.sourceItem.title} ${entry.dependencyType.replace("_", " ")} ${target}, ` +
    `${entry.status}, risk ${entry.riskLevel}${flagText}` + (edge.arrow ? `; ${name(edge.from)} comes first` : "");
}

function edgeClass(edge) {
  const flags = ["critical", "overdue", "blocked", "circular", "muted", "cancelled"].filter((flag) => edge[flag]);
  if (edge.onPath) flags.push("on-path");
  if (!edge.arrow) flags.push("related");
  return ["edge", ...flags].join(" ");
}

function marker(edge) {
  if (!edge.arrow) return null;
  const kind = edge.critical ? "critical" : edge.overdue ? "overdue" : edge.blocked ? "blocked"
    : edge.circular ? "circular" : edge.onPath ? "path" : edge.muted ? "muted" : "plain";
  return `url(#arrow-${kind})`;
}

function arrowMarkers() {
  return ["plain", "muted", "critical", "overdue", "blocked", "circular", "path"].map((kind) =>
    svg("marker", {
      id: `arrow-${kind}`, class: `arrow arrow-${kind}`, viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse", markerUnits: "userSpaceOnUse",
    }, svg("path", { d: "M0,0 L10,5 L0,10 z" })),
  );
}

/** The path of an edge: {d, mid (label position), extent [x, y] (its farthest point)}. */
function curve(from, to, floor) {
  if (to.x > from.x + NODE_W / 2) {
    const [x1, y1, x2, y2] = [from.x + NODE_W, from.y + NODE_H / 2, to.x, to.y + NODE_H / 2];
    const bend = Math.max(30, (x2 - x1) / 2);
    return {
      d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
      mid: [(x1 + x2) / 2, (y1 + y2) / 2], extent: [x2, Math.max(y1, y2)],
    };
  }
  if (to.x < from.x - NODE_W / 2) {
    // Backwards (inside a cycle, or a vendor after its item): under every node in between.
    const [x1, y1, x2, y2] = [from.x + NODE_W / 2, from.y + NODE_H, to.x + NODE_W / 2, to.y + NODE_H];
    const low = floor(to.x, from.x) + 30;
    return { d: `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`, mid: [(x1 + x2) / 2, low - 6], extent: [x1, low] };
  }
  // Same column: out of the right side of one and into the right side of the other.
  const [x1, y1, x2, y2] = [from.x + NODE_W, from.y + NODE_H / 2, to.x + NODE_W, to.y + NODE_H / 2];
  const reach = 40 + Math.abs(y2 - y1) / 8;
  const right = Math.max(x1, x2) + reach;
  return {
    d: `M${x1},${y1} C${right},${y1} ${right},${y2} ${x2},${y2}`,
    mid: [right - reach / 4, (y1 + y2) / 2], extent: [right, Math.max(y1, y2)],
  };
}

function activate(element, handler) {
  element.addEventListener("click", handler);
  element.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      handler();
    }
  });
}

/**
 * Draw the model; returns {element, select(kind, key), setScale(scale), size}.
 * onSelect(kind, key) is called when a node ("item" or "vendor") or an edge ("dep") is chosen.
 */
export function renderGraph(model, { showUnlinked = false, onSelect = () => {} } = {}) {
  const all = [...model.nodes.values()];
  const linked = all.filter((node) => node.linked);
  const unlinked = showUnlinked ? all.filter((node) => !node.linked) : [];
  let size = layout(linked, model.edges);
  if (unlinked.length) size = layoutUnlinked(unlinked, size);
  const shown = [...linked, ...unlinked];
  const floor = (left, right) =>
    Math.max(...linked.filter((node) => node.x >= left && node.x <= right).map((node) => node.y + NODE_H));
  const paths = new Map(model.edges.map((edge) => [edge.id, curve(model.nodes.get(edge.from), model.nodes.get(edge.to), floor)]));
  // Room for the edges that loop out on the right or under the nodes.
  const reach = [...paths.values()].map((path) => path.extent);
  const width = Math.max(size.width, 320, ...reach.map(([x]) => x + PAD));
  const height = Math.max(size.height, 120, ...reach.map(([, y]) => y + 12));

  const root = svg("svg", {
    class: "graph", viewBox: `0 0 ${width} ${height}`, width, height, role: "group",
    "aria-label": `Dependency graph: ${linked.length} items and parties, ${model.edges.length} dependencies`,
  });
  root.append(svg("defs", {}, arrowMarkers()));
  const elements = new Map();

  if (!linked.length) {
    root.append(svg("text", { x: PAD, y: PAD + 16, class: "empty" }, "No dependencies in this SOW."));
  }
  if (unlinked.length) {
    root.append(svg("text", { x: PAD, y: size.top - 10, class: "caption" }, "Items without dependencies"));
  }
  // Plain edges first, flagged ones over them.
  const rank = (edge) => (edge.critical || edge.overdue || edge.blocked || edge.circular || edge.onPath ? 1 : 0);
  const edgeLayer = svg("g", { class: "edges" });
  for (const edge of [...model.edges].sort((a, b) => rank(a) - rank(b))) {
    const { d, mid } = paths.get(edge.id);
    const label = describeEdge(edge, model.nodes);
    const group = svg("g", {
      class: edgeClass(edge), tabindex: 0, role: "button", "aria-label": label, "data-dep": edge.id,
    },
    svg("title", {}, label),
    svg("path", { class: "hit", d }),
    svg("path", { class: "line", d, "marker-end": marker(edge) }));
    const marks = edgeMarks(edge);
    if (marks.length) {
      group.append(svg("text", { class: "mark", x: mid[0], y: mid[1] - 4, "text-anchor": "middle" }, marks.join(" · ")));
    }
    activate(group, () => onSelect("dep", edge.id));
    elements.set(`dep:${edge.id}`, group);
    edgeLayer.append(group);
  }
  root.append(edgeLayer);

  const nodeLayer = svg("g", { class: "nodes" });
  for (const node of shown) {
    const kindText = node.kind === "vendor" ? "external party" : node.kind === "foreign" ? "item of another SOW" : node.status;
    const classes = ["node", node.kind, node.status ? `status-${node.status}` : "", node.onPath ? "on-path" : "", node.circular ? "circular" : ""];
    const label = `${node.title} (${node.id ? `${node.id}, ` : ""}${kindText}${node.onPath ? ", on the critical path" : ""}${node.circular ? ", in a cycle" : ""})`;
    const group = svg("g", {
      class: classes.filter(Boolean).join(" "), transform: `translate(${node.x},${node.y})`, tabindex: 0,
      role: "button", "aria-label": label, "data-node": node.key,
    },
    svg("title", {}, label),
    svg("rect", { width: NODE_W, height: NODE_H, rx: node.kind === "vendor" ? 14 : 5 }),
    svg("text", { x: 10, y: 17, class: "title" }, shorten(node.title, TITLE_CHARS)),
    svg("text", { x: 10, y: 33, class: "sub" }, shorten(node.kind === "item" ? `${node.id} · ${node.status}${node.circular ? " · in a cycle" : ""}` : kindText, 34)));
    activate(group, () => onSelect(node.kind === "vendor" ? "vendor" : "item", node.key));
    elements.set(`node:${node.key}`, group);
    nodeLayer.append(group);
  }
  root.append(nodeLayer);

  // Selecting something dims what is not connected to it: at 200 items, its links stand out.
  const lit = [];
  const light = (kind, key) => {
    for (const element of lit.splice(0)) element.classList.remove("lit");
    root.classList.remove("focused");
    const edges = kind === "dep"
      ? model.edges.filter((edge) => edge.id === key)
      : model.edges.filter((edge) => edge.from === key || edge.to === key);
    if (!edges.length && kind === "dep") return;
    for (const edge of edges) {
      for (const name of [`dep:${edge.id}`, `node:${edge.from}`, `node:${edge.to}`]) {
        const element = elements.get(name);
        if (element) lit.push(element);
      }
    }
    if (kind !== "dep" && elements.get(`node:${key}`)) lit.push(elements.get(`node:${key}`));
    for (const element of lit) element.classList.add("lit");
    root.classList.add("focused");
  };

  let selected = null;
  return {
    element: root,
    size: { width, height },
    hasNode: (key) => elements.has(`node:${key}`),
    setScale(scale) {
      root.setAttribute("width", String(Math.round(width * scale)));
      root.setAttribute("height", String(Math.round(height * scale)));
    },
    select(kind, key, { focus = false } = {}) {
      if (selected) selected.classList.remove("selected");
      selected = elements.get(`${kind === "dep" ? "dep" : "node"}:${key}`) || null;
      if (!selected) return false;
      selected.classList.add("selected");
      light(kind, key);
      if (focus) {
        selected.focus({ preventScroll: true });
        selected.scrollIntoView({ block: "center", inline: "center" });
      }
      return true;
    },
  };
}

/** The legend: what each colour and line means. */
export function legendEntries() {
  return [
    ["path", "Critical path (longest chain of items that must follow one another)"],
    ["critical", "Critical dependency (risk critical, still open)"],
    ["overdue", "Overdue dependency (SLA date passed, still open)"],
    ["blocked", "Blocked dependency"],
    ["circular", "Circular: items in a cycle"],
    ["muted", "Resolved or cancelled"],
    ["related", "Related to (no order)"],
    ["vendor", "External party (vendor)"],
  ];
}

/** A small swatch for the legend, drawn like the graph draws that kind. */
export function legendSwatch(kind) {
  if (kind === "vendor") {
    return svg("svg", { class: "swatch", width: 34, height: 16, "aria-hidden": "true" },
      svg("g", { class: "node vendor" }, svg("rect", { x: 1, y: 1, width: 32, height: 14, rx: 7 })));
  }
  const classes = kind === "path" ? "edge on-path" : `edge ${kind}`;
  return svg("svg", { class: "swatch", width: 34, height: 16, "aria-hidden": "true" },
    svg("g", { class: classes }, svg("path", { class: "line", d: "M2,8 L32,8" })));
}
