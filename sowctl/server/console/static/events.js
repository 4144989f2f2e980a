// The emulator panel's event cards: the changes feed (every committed change, newest first)
// and the webhook subscriptions with each one's delivery log, a paused one resumable here.

import { admin } from "./api.js";
import { card, reporter } from "./panel.js";
import { fill, h, prettyBody, when } from "./dom.js";

const EVENTS_KEPT = 200;
const DELIVERIES_SHOWN = 20;

function table(id, headings, body) {
  return h("div", { class: "log-table-wrap" },
    h("table", { class: "log", id }, h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))), body));
}

/** The changes feed: read from where it was last read (since=), so a refresh costs only what is new. */
export function eventLog() {
  let events = [];
  let last = "0";
  const open = new Set();
  const result = reporter();
  const body = h("tbody");
  const count = h("span", { class: "muted", role: "status" });

  const row = (event) => {
    const toggle = () => {
      if (open.has(event.id)) open.delete(event.id);
      else open.add(event.id);
      draw();
    };
    const tr = h("tr", { class: "entry", tabindex: 0, "data-id": event.id, "aria-expanded": String(open.has(event.id)), onclick: toggle,
      onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } } },
    h("td", { class: "event-id" }, event.id), h("td", {}, when(event.timestamp)), h("td", { class: "event-type" }, event.type),
    h("td", {}, event.resourceId), h("td", {}, event.organizationId));
    if (!open.has(event.id)) return [tr];
    return [tr, h("tr", { class: "detail" }, h("td", { colspan: 5 }, h("pre", { class: "body" }, prettyBody(event.data))))];
  };
  const draw = () => {
    fill(body, ...[...events].reverse().flatMap(row));
    count.textContent = `${events.length} events`;
  };
  const refresh = async () => {
    try {
      let page;
      let changed = false;
      do {
        page = await admin.get("/_admin/events", { since: last, limit: 1000 });
        if (page.events.length) {
          events = events.concat(page.events).slice(-EVENTS_KEPT);
          changed = true;
        }
        last = page.lastEventId || last;
      } while (page.hasMore);
      if (changed || !body.childElementCount) draw();
    } catch (error) {
      result.fail(error);
    }
  };
  const restart = () => {
    events = [];
    last = "0";
    return refresh();
  };
  const element = card("Events",
    h("p", { class: "muted" }, "Every committed change, newest first (the changes feed, /_admin/events). Select a row for the resource as the API returned it."),
    h("div", { class: "form-row" }, h("button", { type: "button", onclick: restart }, "Reload"), count),
    result.element,
    table("event-log", ["Event", "Time", "Type", "Resource", "Organization"], body));
  return { element, refresh, restart };
}

/** The webhook subscriptions; one selected shows its delivery log, and a paused one can resume. */
export function webhooksCard() {
  let chosen = null;
  const result = reporter();
  const rows = h("tbody");
  const deliveries = h("tbody");
  const title = h("p", { class: "muted", id: "deliveries-of" }, "Select a subscription for its delivery log.");

  const showDeliveries = async () => {
    if (!chosen) return;
    try {
      const log = await admin.get(`/_admin/webhooks/${encodeURIComponent(chosen)}/deliveries`, { limit: DELIVERIES_SHOWN });
      title.textContent = `Delivery log of ${chosen}, newest first`;
      fill(deliveries, ...[...log].reverse().map((d) => h("tr", { class: `entry outcome-${d.outcome}` },
        h("td", {}, d.eventId), h("td", {}, String(d.attempt)), h("td", { class: "status" }, d.status === null ? "-" : String(d.status)),
        h("td", { class: "outcome" }, d.outcome + (d.fault ? ` (${d.fault})` : "")), h("td", {}, `${d.latencyMs} ms`),
        h("td", {}, d.error || d.responseExcerpt || ""))));
    } catch (error) {
      result.fail(error);
    }
  };
  const resume = async (id) => {
    try {
      await admin.send("POST", `/_admin/webhooks/${encodeURIComponent(id)}/resume`);
      result.ok(`Subscription ${id} resumed.`);
      await refresh();
    } catch (error) {
      result.fail(error);
    }
  };
  const refresh = async () => {
    try {
      const subscriptions = await admin.get("/_admin/webhooks");
      fill(rows, ...subscriptions.map((s) => h("tr", { class: `entry${s.id === chosen ? " chosen" : ""}`, "data-id": s.id,
        onclick: () => { chosen = s.id; refresh(); } },
      h("td", {}, s.id), h("td", { class: "path" }, s.url), h("td", { class: "webhook-status" }, s.status),
      h("td", {}, s.lastEventId || "-"), h("td", {}, String(s.consecutiveFailures)),
      h("td", {}, s.status === "paused" ? h("button", { type: "button", class: "resume", onclick: (e) => { e.stopPropagation(); resume(s.id); } }, "Resume") : ""))));
      if (!subscriptions.length) fill(rows, h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No subscription: create one with sowctl webhooks create or POST /_admin/webhooks.")));
      if (chosen && !subscriptions.some((s) => s.id === chosen)) chosen = null;
      await showDeliveries();
    } catch (error) {
      result.fail(error);
    }
  };
  const element = card("Webhooks",
    h("div", { class: "form-row" }, h("button", { type: "button", onclick: refresh }, "Refresh")),
    result.element,
    table("webhooks", ["Subscription", "URL", "Status", "Delivered up to", "Failures", ""], rows),
    title,
    table("deliveries", ["Event", "Attempt", "Status", "Outcome", "Latency", "Answer or error"], deliveries));
  return { element, refresh };
}
