// A SOW: its dependency graph, its item tree and its risks, from one chain report
// (GET /api/dependencies/chain?sowId=S&format=tree&include=criticalPath,external),
// with the full fields of whatever is selected read from the API on demand.

import { get } from "./api.js";
import { fields, fill, h, notice, when } from "./dom.js";
import { buildModel, legendEntries, legendSwatch, renderGraph } from "./graph.js";

const TABS = [
  ["graph", "Dependency graph"],
  ["items", "Item tree"],
  ["risks", "Risks"],
];
const MIN_SCALE = 0.25;
const MAX_SCALE = 2;
const STEP = 1.25;
const READABLE_SCALE = 0.8;

function badge(text, kind) {
  return h("span", { class: `badge ${kind || ""}` }, text);
}

function flagBadges(edge) {
  const found = ["critical", "overdue", "blocked", "circular"].filter((flag) => edge[flag]).map((flag) => badge(flag, flag));
  if (edge.onPath) found.push(badge("critical path", "status-active"));
  return found.flatMap((element) => [element, " "]);
}

function targetTitle(entry) {
  return entry.isExternal || !entry.targetItem.id ? entry.externalTarget || entry.targetItem.title : entry.targetItem.title;
}

export async function showSow(main, route, ctx) {
  const sowId = route.key;
  fill(main, notice(`Loading SOW ${sowId}…`));
  let chain, sowList, projectList;
  try {
    [chain, sowList, projectList] = await Promise.all([
      get("/api/dependencies/chain", { sowId, format: "tree", include: "criticalPath,external" }),
      ctx.sows(),
      ctx.projects().catch(() => []), // the project's name is a nicety; the SOW shows without it
    ]);
    if (!sowList.some((sow) => sow.id === sowId)) sowList = await ctx.sows({ fresh: true }); // created since
  } catch (error) {
    ctx.failed(error, () => showSow(main, route, ctx));
    return null;
  }
  return new SowPage(main, ctx, sowId, chain, sowList, projectList).open(route);
}

class SowPage {
  constructor(main, ctx, sowId, chain, sowList, projectList) {
    this.main = main;
    this.ctx = ctx;
    this.sowId = sowId;
    this.sow = sowList.find((sow) => sow.id === sowId) || { id: sowId, title: sowId };
    this.project = projectList.find((project) => project.id === this.sow.projectId) || null;
    this.model = buildModel(chain, ctx.rule);
    this.edges = new Map(this.model.edges.map((edge) => [edge.id, edge]));
    this.showUnlinked = false;
    this.scale = null; // null until the graph is first shown: then it starts fitted (at most 100%)
    this.graph = null;
    this.detailsTicket = 0;
    this.tab = null;
  }

  open(route) {
    document.title = `${this.sow.title} · sowctl console`;
    const risks = this.riskCount();
    this.tabButtons = new Map();
    const tablist = h("div", { class: "tabs", role: "tablist", "aria-label": "SOW views" });
    TABS.forEach(([name, label], index) => {
      const button = h("button", {
        type: "button", role: "tab", id: `tab-${name}`, "aria-controls": "sow-panel",
        onclick: () => this.go(name),
        onkeydown: (event) => this.tabKey(event, index),
      }, name === "risks" ? `${label} (${risks})` : label);
      this.tabButtons.set(name, button);
      tablist.append(button);
    });
    this.panel = h("div", { id: "sow-panel", role: "tabpanel", tabindex: "-1" });
    this.details = h("aside", { class: "details", "aria-label": "Details", "aria-live": "polite" });
    const edgeCount = this.model.edges.length;
    fill(this.main,
      h("div", { class: "sow-head" },
        h("h1", {}, this.sow.title),
        h("span", { class: "muted" },
          `SOW ${this.sowId}${this.project ? ` · project ${this.project.name}` : ""} · ` +
          `${this.model.items.length} items · ${edgeCount} dependencies`),
        risks ? badge(`${risks} risks`, "critical") : badge("no risks", "status-completed")),
      tablist,
      h("div", { class: "sow-body" }, this.panel, this.details));
    this.showHint();
    this.update(route);
    return { update: (next) => this.update(next), close: () => {} };
  }

  go(tab) {
    window.location.hash = this.ctx.sowLink(this.sowId, tab);
  }

  tabKey(event, index) {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    event.preventDefault();
    const [name] = TABS[(index + step + TABS.length) % TABS.length];
    this.go(name);
    this.tabButtons.get(name).focus();
  }

  update(route) {
    const tab = TABS.some(([name]) => name === route.tab) ? route.tab : "graph";
    if (tab !== this.tab) {
      this.tab = tab;
      for (const [name, button] of this.tabButtons) {
        button.setAttribute("aria-selected", String(name === tab));
        button.tabIndex = name === tab ? 0 : -1;
      }
      this.panel.setAttribute("aria-labelledby", `tab-${tab}`);
      if (tab === "graph") this.drawGraphPanel();
      else if (tab === "items") this.drawTree();
      else this.drawRisks();
    }
    if (route.kind && route.select) this.select(route.kind, route.select, { focus: true });
  }

  // --- selection and details ---------------------------------------------------------------------

  select(kind, key, { focus = false } = {}) {
    if (this.graph) this.graph.select(kind, key, { focus: focus && this.tab === "graph" });
    if (kind === "dep") this.showDependency(key);
    else if (kind === "vendor") this.showVendor(key);
    else this.showItem(key);
  }

  /** A choice made on this page: shown at once, and kept in the address for a reload or a link. */
  choose(kind, key, { focus = false } = {}) {
    this.ctx.replaceAddress(this.ctx.sowLink(this.sowId, this.tab, kind, key));
    this.select(kind, key, { focus });
  }

  showHint() {
    fill(this.details, h("h2", {}, "Details"),
      h("p", { class: "muted" }, "Select an item, an external party or a dependency to see its fields."));
  }

  edgeList(key) {
    const touching = this.model.edges.filter((edge) => edge.from === key || edge.to === key);
    if (!touching.length) return h("p", { class: "muted" }, "No dependencies.");
    return h("ul", { class: "linklist" }, touching.map((edge) => h("li", {},
      h("button", { type: "button", class: "linkish", onclick: () => this.choose("dep", edge.id) },
        `${edge.entry.sourceItem.title} ${edge.entry.dependencyType.replace("_", " ")} ${targetTitle(edge.entry)}`),
      " ", flagBadges(edge))));
  }

  async showItem(itemId) {
    const ticket = ++this.detailsTicket;
    const node = this.model.nodes.get(itemId);
    fill(this.details, h("h2", {}, node ? node.title : itemId), notice("Loading…"));
    let item;
    try {
      item = await get(`/api/items/${encodeURIComponent(itemId)}`);
    } catch (error) {
      if (this.ctx.tokenRefused(error)) return; // not the panel's failure: the whole session's
      if (ticket === this.detailsTicket) fill(this.details, h("h2", {}, itemId), notice(error.message, "error"));
      return;
    }
    if (ticket !== this.detailsTicket) return; // another selection came first
    const parent = item.parentItemId ? this.model.nodes.get(item.parentItemId) : null;
    fill(this.details,
      h("h2", {}, item.title),
      h("p", {}, badge(item.status, `status-${item.status}`), " ",
        node && node.onPath ? badge("critical path", "status-active") : null, " ",
        node && node.circular ? badge("in a cycle", "circular") : null),
      fields([
        ["ID", item.id], ["Type", item.type], ["Status", item.type === "requirement" ? `${item.status} (calculated)` : item.status],
        ["Description", item.description], ["Parent", parent ? `${parent.title} (${item.parentItemId})` : item.parentItemId],
        ["Order", item.orderIndex], ["SOW", item.sowId], ["Created", when(item.createdAt)],
        ["Updated", when(item.updatedAt)], ["Created by", item.createdByUserId],
      ]),
      h("h3", {}, "Dependencies"),
      this.edgeList(itemId),
      this.graph && this.graph.hasNode(itemId) && this.tab !== "graph"
        ? h("a", { href: this.ctx.sowLink(this.sowId, "graph", "item", itemId) }, "Show in the graph")
        : null);
  }

  showVendor(key) {
    this.detailsTicket += 1;
    const node = this.model.nodes.get(key);
    fill(this.details, h("h2", {}, node ? node.title : key),
      h("p", {}, badge("external party", "")),
      h("h3", {}, "Dependencies"), this.edgeList(key));
  }

  async showDependency(depId) {
    const ticket = ++this.detailsTicket;
    const edge = this.edges.get(depId);
    fill(this.details, h("h2", {}, `Dependency ${depId}`), notice("Loading…"));
    let dep;
    try {
      dep = await get(`/api/dependencies/${encodeURIComponent(depId)}`);
    } catch (error) {
      if (this.ctx.tokenRefused(error)) return;
      if (ticket === this.detailsTicket) fill(this.details, h("h2", {}, depId), notice(error.message, "error"));
      return;
    }
    if (ticket !== this.detailsTicket) return;
    const title = (id) => (this.model.nodes.get(id) ? `${this.model.nodes.get(id).title} (${id})` : id);
    fill(this.details,
      h("h2", {}, `Dependency ${dep.id}`),
      h("p", {}, edge ? flagBadges(edge) : null),
      fields([
        ["Source", title(dep.sourceItemId)],
        ["Type", dep.dependencyType],
        ["Target", dep.isExternal ? `${dep.externalTarget} (external)` : title(dep.targetItemId)],
        ["Risk", dep.riskLevel], ["Status", dep.status], ["SLA date", dep.slaDate],
        ["Escalation", dep.escalationDate], ["Vendor", dep.vendor], ["Owner", dep.externalOwner],
        ["Contact", dep.contactEmail], ["Notes", dep.notes], ["Created", when(dep.createdAt)],
        ["Updated", when(dep.updatedAt)], ["Created by", dep.createdByUserId],
      ]),
      edge && edge.arrow
        ? h("p", { class: "muted" }, `${this.model.nodes.get(edge.from).title} comes first.`)
        : null);
  }

  // --- the graph ---------------------------------------------------------------------------------

  drawGraphPanel() {
    const legend = h("ul", { class: "legend", "aria-label": "Legend" },
      legendEntries().map(([kind, text]) => h("li", {}, legendSwatch(kind), text)));
    const zoomLabel = h("span", { class: "muted", "aria-live": "polite" });
    const setZoom = (scale) => {
      this.scale = Math.max(MIN_SCALE, Math.min(MAX_SCALE, scale));
      this.graph.setScale(this.scale);
      zoomLabel.textContent = `${Math.round(this.scale * 100)}%`;
    };
    const unlinked = h("input", { type: "checkbox", id: "show-unlinked", checked: this.showUnlinked,
      onchange: () => { this.showUnlinked = unlinked.checked; this.drawGraph(scroll); setZoom(this.scale); } });
    const path = this.model.criticalPath.flatMap((id, index) => [
      index ? " → " : "",
      h("button", { type: "button", class: "linkish", onclick: () => this.choose("item", id, { focus: true }) },
        (this.model.nodes.get(id) || { title: id }).title),
    ]);
    const scroll = h("div", { class: "graph-scroll", id: "graph-scroll" });
    fill(this.panel,
      legend,
      h("div", { class: "toolbar" },
        h("button", { type: "button", "aria-label": "Zoom out", onclick: () => setZoom(this.scale / STEP) }, "−"),
        zoomLabel,
        h("button", { type: "button", "aria-label": "Zoom in", onclick: () => setZoom(this.scale * STEP) }, "+"),
        h("button", { type: "button", onclick: () => setZoom(this.fitScale(scroll)) }, "Fit"),
        h("label", {}, unlinked, " Show items without dependencies")),
      h("p", { class: "muted", id: "critical-path" },
        this.model.criticalPath.length
          ? [`Critical path (${this.model.criticalPath.length} items): `, path]
          : "No critical path: nothing is ordered."),
      scroll);
    this.drawGraph(scroll);
    // A wide graph starts fitted, but never so small that its titles cannot be read (scroll instead).
    setZoom(this.scale ?? Math.max(READABLE_SCALE, Math.min(1, this.fitScale(scroll))));
  }

  drawGraph(scroll) {
    this.graph = renderGraph(this.model, {
      showUnlinked: this.showUnlinked,
      onSelect: (kind, key) => this.choose(kind, key),
    });
    fill(scroll, this.graph.element);
  }

  fitScale(scroll) {
    return (scroll.clientWidth - 2) / this.graph.size.width;
  }

  // --- the item tree -----------------------------------------------------------------------------

  drawTree() {
    this.graph = null;
    const byParent = new Map();
    for (const item of this.model.items) {
      if (!byParent.has(item.parent)) byParent.set(item.parent, []);
      byParent.get(item.parent).push(item);
    }
    const flagsOf = (id) => this.model.edges.filter((edge) => edge.entry.sourceItem.id === id);
    const branch = (parent) => {
      const children = byParent.get(parent) || [];
      if (!children.length) return null;
      return h("ul", { class: parent === null ? "tree" : null, "aria-label": parent === null ? "Items" : null },
        children.map((item) => {
          const node = this.model.nodes.get(item.id);
          const marks = new Set(flagsOf(item.id).flatMap((edge) => ["critical", "overdue", "blocked"].filter((f) => edge[f])));
          return h("li", {},
            h("span", { class: "kind", title: item.type }, item.type === "requirement" ? "R" : "T"),
            h("button", { type: "button", class: "linkish", "data-item": item.id, onclick: () => this.choose("item", item.id) }, item.title),
            " ", badge(item.status, `status-${item.status}`),
            node.onPath ? [" ", badge("critical path", "status-active")] : null,
            node.circular ? [" ", badge("in a cycle", "circular")] : null,
            [...marks].map((mark) => [" ", badge(mark, mark)]),
            " ", h("span", { class: "muted" }, item.id),
            branch(item.id));
        }));
    };
    fill(this.panel,
      h("p", { class: "muted" }, "Requirements (R) show the status calculated from their task items (T)."),
      branch(null) || notice("This SOW has no items yet."));
  }

  // --- risks -------------------------------------------------------------------------------------

  riskCount() {
    const blocked = this.model.edges.filter((edge) => edge.blocked).length;
    return this.model.cycles.length + this.model.edges.filter((edge) => edge.critical || edge.overdue).length + blocked;
  }

  drawRisks() {
    this.graph = null;
    const depLink = (edge) => h("li", {},
      h("a", { href: this.ctx.sowLink(this.sowId, "graph", "dep", edge.id), "data-dep": edge.id },
        `${edge.entry.sourceItem.title} ${edge.entry.dependencyType.replace("_", " ")} ${targetTitle(edge.entry)}`),
      " ", h("span", { class: "muted" }, `${edge.id} · risk ${edge.entry.riskLevel} · ${edge.entry.status}`));
    const group = (title, kind, edges, help) => h("section", { "aria-labelledby": `risks-${kind}` },
      h("h2", { id: `risks-${kind}` }, badge(String(edges.length), edges.length ? kind : ""), " ", title),
      h("p", { class: "muted" }, help),
      edges.length ? h("ol", {}, edges.map(depLink)) : null);
    const title = (id) => (this.model.nodes.get(id) || { title: id }).title;
    const cycles = h("section", { "aria-labelledby": "risks-circular" },
      h("h2", { id: "risks-circular" }, badge(String(this.model.cycles.length), this.model.cycles.length ? "circular" : ""), " Circular"),
      h("p", { class: "muted" }, "Items that wait for one another in a loop (stored data, e.g. from an import)."),
      this.model.cycles.length
        ? h("ol", {}, this.model.cycles.map((cycle) => h("li", {}, cycle.flatMap((id, index) => [
            index ? " → " : "",
            h("a", { href: this.ctx.sowLink(this.sowId, "graph", "item", id) }, title(id)),
          ]), ` → ${title(cycle[0])}`)))
        : null);
    const edges = this.model.edges;
    fill(this.panel, h("div", { class: "risks" },
      h("p", { class: "muted" }, "From the chain report's issues; each links to the dependency in the graph."),
      cycles,
      group("Critical", "critical", edges.filter((e) => e.critical), "Risk critical, still active or blocked."),
      group("Overdue", "overdue", edges.filter((e) => e.overdue), "SLA date passed, still active or blocked."),
      group("Blocked", "blocked", edges.filter((e) => e.blocked), "Dependencies whose status is blocked.")));
  }
}
