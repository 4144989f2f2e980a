// The emulator panel's contract-mode card: the mode (off, report, strict) and, by departure
// from the service's description, how many logged requests relied on it.

import { admin } from "./api.js";
import { card, reporter } from "./panel.js";
import { fill, h } from "./dom.js";

const MODES = ["off", "report", "strict"];

/** One line per mark of a logged request: its code and this request's instance. */
export function marksList(marks) {
  if (!marks || !marks.length) return null;
  return h("ul", { class: "marks" }, marks.map((mark) => h("li", {}, h("code", {}, mark.code), ` ${mark.kind}: ${mark.detail}`)));
}

export function contractCard(refreshLog) {
  const result = reporter();
  const mode = h("select", { id: "contract-mode" }, MODES.map((value) => h("option", { value }, value)));
  const rows = h("tbody");
  const table = h("table", { class: "log", id: "contract-departures" },
    h("thead", {}, h("tr", {}, ["Departure", "Kind", "Requests", "Example"].map((t) => h("th", { scope: "col" }, t)))), rows);
  // The mode shown is set when the card opens and after a change made here: a live refresh
  // updates the table only, so it never undoes a choice the user is about to apply.
  const showDepartures = (report) => {
    fill(rows, ...report.departures.map((d) =>
      h("tr", {}, h("td", {}, h("code", {}, d.code)), h("td", {}, d.kind), h("td", { class: "count" }, String(d.requests)), h("td", {}, d.example))));
    if (!report.departures.length) fill(rows, h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No logged request relied on an extension.")));
  };
  const show = (report) => {
    mode.value = report.mode;
    showDepartures(report);
  };
  const refresh = () => admin.get("/_admin/contract").then(showDepartures, (error) => result.fail(error));
  const apply = async (event) => {
    event.preventDefault();
    try {
      const report = await admin.send("PUT", "/_admin/contract", { mode: mode.value });
      show(report);
      result.ok(`Contract mode is ${report.mode}.`);
      refreshLog();
    } catch (error) {
      result.fail(error);
    }
  };
  admin.get("/_admin/contract").then(show, (error) => result.fail(error));
  const element = card("Contract mode",
    h("p", { class: "muted" }, "What would break against the real service: requests relying on sowctl's extensions or leniencies. " +
      "report serves and marks them; strict refuses them (400); off does neither."),
    h("form", { class: "form-row", onsubmit: apply },
      h("label", { for: "contract-mode" }, "Mode"), mode,
      h("button", { type: "submit", class: "primary" }, "Set"),
      h("button", { type: "button", onclick: refresh }, "Refresh")),
    result.element, h("div", { class: "log-table-wrap" }, table));
  return { element, refresh };
}
