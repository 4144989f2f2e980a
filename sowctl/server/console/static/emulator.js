// The emulator panel: the /_admin API of `sowctl serve --admin` in a page. The request
// log (bodies masked by the server), faults and latency, the clock, reset, dataset load
// and dump, and checkpoints when the server has them (found by a GET: 404 hides them).

import { ApiError, admin, session } from "./api.js";
import { contractCard, marksList } from "./contract.js";
import { eventLog, webhooksCard } from "./events.js";
import { fill, h, notice, prettyBody, when } from "./dom.js";
import { card, numberOrNull, reporter } from "./panel.js";

const POLL_MS = 2000;
const LOG_LIMIT = 200;

export function showEmulator(main, { adminOn }) {
  document.title = "Emulator · sowctl console";
  let timer = null;
  let closed = false;
  const stop = () => {
    if (timer) window.clearTimeout(timer);
    timer = null;
  };

  if (!adminOn) {
    fill(main, h("h1", {}, "Emulator"),
      notice("This server runs without the admin API. Start it with `sowctl serve --admin` (or --admin-token TOKEN) to use the emulator panel."));
    return { close: stop };
  }

  const askToken = (message) => {
    const input = h("input", { type: "password", id: "admin-token-input", autocomplete: "off", required: true });
    fill(main, h("h1", {}, "Emulator"),
      message ? notice(message, "error") : null,
      h("p", { class: "muted" }, "The emulator panel calls /_admin with the admin token that `sowctl serve --admin` printed (kept in this tab only)."),
      h("form", { class: "form-row", onsubmit: (event) => {
        event.preventDefault();
        session.adminToken = input.value.trim();
        start();
      } }, h("label", { for: "admin-token-input" }, "Admin token"), input, h("button", { type: "submit", class: "primary" }, "Open panel")));
    input.focus();
  };

  const start = async () => {
    if (!session.adminToken) {
      askToken(null);
      return;
    }
    try {
      await admin.get("/_admin/clock");
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        session.adminToken = null;
        askToken(`The server refused the admin token: ${error.message}`);
      } else {
        fill(main, h("h1", {}, "Emulator"), notice(error.message, "error"));
      }
      return;
    }
    if (!closed) build();
  };

  // --- the page ---------------------------------------------------------------------------------

  const build = () => {
    const log = requestLog(() => schedule());
    const schedule = () => {
      stop();
      // A hidden tab asks nothing (it looks again once shown); the panel never loads the server for no one.
      const poll = () => (document.hidden ? schedule()
        : Promise.all([log.refresh(), contract.refresh(), feed.refresh(), hooks.refresh()]).finally(schedule));
      if (!closed && log.live()) timer = window.setTimeout(poll, POLL_MS);
    };
    const checkpoints = h("div");
    const contract = contractCard(log.refresh);
    const feed = eventLog();
    const hooks = webhooksCard();
    fill(main,
      h("h1", {}, "Emulator"),
      h("div", { class: "emulator" },
        h("div", { class: "main-column" }, log.element, feed.element, hooks.element),
        h("div", { class: "side" }, faultsCard(log.refresh), clockCard(), contract.element, dataCard(log.refresh), checkpoints)));
    checkpointsCard(checkpoints, log.refresh);
    feed.refresh();
    hooks.refresh();
    log.refresh().finally(schedule);
  };

  start();
  return {
    close: () => {
      closed = true;
      stop();
    },
  };
}

// --- request log ------------------------------------------------------------------------------------

function requestLog(onLiveChange) {
  let entries = [];
  const open = new Set(); // ids of the entries whose bodies are shown
  const method = h("select", { id: "log-method", onchange: () => draw() },
    ["", "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS"].map((m) => h("option", { value: m }, m || "any")));
  const path = h("input", { id: "log-path", type: "search", placeholder: "/api/…", oninput: () => draw() });
  const status = h("input", { id: "log-status", type: "search", placeholder: "503, 4xx", size: 8, oninput: () => draw() });
  const live = h("input", { type: "checkbox", id: "log-live", checked: true, onchange: () => onLiveChange() });
  const result = reporter();
  const body = h("tbody");
  const count = h("span", { class: "muted", role: "status" });

  const matches = (entry) => {
    if (method.value && entry.method !== method.value) return false;
    if (path.value.trim() && !entry.path.includes(path.value.trim())) return false;
    const wanted = status.value.trim().toLowerCase();
    if (wanted) {
      const code = entry.status === null ? "dropped" : String(entry.status);
      const pattern = wanted.replace(/x/g, "\\d");
      if (!new RegExp(`^${pattern.replace(/[^\w\\]/g, "")}`).test(code)) return false;
    }
    return true;
  };

  const row = (entry) => {
    const query = entry.query && Object.keys(entry.query).length ? `?${new URLSearchParams(entry.query)}` : "";
    const family = entry.status === null ? "5" : String(entry.status)[0];
    const toggle = () => {
      if (open.has(entry.id)) open.delete(entry.id);
      else open.add(entry.id);
      draw();
    };
    const tr = h("tr", {
      class: `entry status-${family}${entry.fault ? " faulted" : ""}`, tabindex: 0, "aria-expanded": String(open.has(entry.id)),
      "data-id": entry.id, onclick: toggle,
      onkeydown: (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          toggle();
        }
      },
    },
    h("td", {}, when(entry.at)),
    h("td", {}, entry.method),
    h("td", { class: "path" }, entry.path + query),
    h("td", { class: "status" }, entry.status === null ? "dropped" : String(entry.status)),
    h("td", {}, `${entry.latencyMs} ms`),
    h("td", { class: "fault" }, entry.fault ? `injected ${entry.fault.mode}` : ""),
    h("td", {}, entry.identity ? entry.identity.userId || entry.identity.apiKeyId || "" : ""),
    h("td", { class: "contract" }, entry.contract && entry.contract.length ? entry.contract.map((mark) => mark.code).join(", ") : ""));
    if (!open.has(entry.id)) return [tr];
    const detail = h("tr", { class: "detail" }, h("td", { colspan: 8 },
      marksList(entry.contract) ? h("div", {}, h("strong", {}, "Contract marks"), marksList(entry.contract)) : null,
      h("div", {}, h("strong", {}, "Request body"), entry.requestBodyTruncated ? " (cut at 4 KiB)" : ""),
      h("pre", { class: "body" }, prettyBody(entry.requestBody)),
      h("div", {}, h("strong", {}, "Response body"), entry.responseBodyTruncated ? " (cut at 4 KiB)" : ""),
      h("pre", { class: "body" }, prettyBody(entry.responseBody)),
      h("div", { class: "muted" }, `request id ${entry.requestId || "-"} · group ${entry.group}` +
        (entry.identity ? ` · caller ${JSON.stringify(entry.identity)}` : ""))));
    return [tr, detail];
  };

  const draw = () => {
    const focused = document.activeElement && body.contains(document.activeElement) ? document.activeElement.dataset.id : null;
    const visible = entries.filter(matches).reverse(); // newest first
    fill(body, ...visible.flatMap(row));
    count.textContent = `${visible.length} of ${entries.length} requests`;
    if (focused) {
      const again = body.querySelector(`tr[data-id="${CSS.escape(focused)}"]`);
      if (again) again.focus(); // a live refresh must not take the keyboard focus away
    }
  };

  let seen = "";
  const refresh = async () => {
    try {
      entries = await admin.get("/_admin/requests", { limit: LOG_LIMIT });
      const signature = `${entries.length}:${entries.length ? entries[entries.length - 1].id : ""}`;
      if (signature !== seen) draw(); // unchanged: leave the table (and the reader's place) alone
      seen = signature;
    } catch (error) {
      result.fail(error);
    }
  };

  const clear = async () => {
    try {
      const answer = await admin.send("DELETE", "/_admin/requests");
      result.ok(`Cleared ${answer.deleted} entries.`);
      await refresh();
    } catch (error) {
      result.fail(error);
    }
  };

  const element = card("Request log",
    h("p", { class: "muted" }, "API requests to this server, newest first; bodies as stored, secrets shown as ***. Select a row for its bodies."),
    h("div", { class: "form-row" },
      h("label", { for: "log-method" }, "Method"), method,
      h("label", { for: "log-path" }, "Path"), path,
      h("label", { for: "log-status" }, "Status"), status,
      h("label", {}, live, " Live"),
      h("button", { type: "button", onclick: refresh }, "Refresh"),
      h("button", { type: "button", onclick: clear }, "Clear log")),
    count, result.element,
    h("div", { class: "log-table-wrap" }, h("table", { class: "log", id: "request-log" },
      h("thead", {}, h("tr", {}, ["Time", "Method", "Path", "Status", "Latency", "Fault", "Caller", "Contract"].map((t) => h("th", { scope: "col" }, t)))),
      body)));
  return { element, refresh, live: () => live.checked };
}

// --- faults and latency -------------------------------------------------------------------------------

function faultsCard(refreshLog) {
  const result = reporter();
  const current = h("pre", { class: "body", id: "faults-current" });
  const failOn = h("input", { type: "checkbox", id: "fault-on" });
  const rate = h("input", { type: "number", id: "fault-rate", min: 0, max: 1, step: 0.05, value: 1 });
  const status = h("input", { type: "number", id: "fault-status", min: 400, max: 599, value: 503 });
  const mode = h("select", { id: "fault-mode" }, h("option", { value: "error" }, "error response"), h("option", { value: "drop" }, "drop connection"));
  const count = h("input", { type: "number", id: "fault-count", min: 1, step: 1, placeholder: "no limit" });
  const latencyOn = h("input", { type: "checkbox", id: "latency-on" });
  const low = h("input", { type: "number", id: "latency-min", min: 0, step: 10, value: 100 });
  const high = h("input", { type: "number", id: "latency-max", min: 0, step: 10, placeholder: "same" });
  const routes = h("textarea", { id: "fault-routes", placeholder: "GET /projects\n/api/items/*", rows: 2 });

  const show = (config) => {
    current.textContent = prettyBody(config);
    failOn.checked = config.rate > 0;
    if (config.rate > 0) {
      rate.value = config.rate;
      status.value = config.status;
      mode.value = config.mode;
      count.value = config.count ?? "";
    }
    latencyOn.checked = Array.isArray(config.latencyMs);
    if (latencyOn.checked) {
      low.value = config.latencyMs[0];
      high.value = config.latencyMs[1] === config.latencyMs[0] ? "" : config.latencyMs[1];
    }
    routes.value = (config.routes || []).join("\n");
  };
  const send = async (method, body) => {
    try {
      show(await admin.send(method, "/_admin/faults", body));
      result.ok(method === "DELETE" ? "No faults, no latency." : "Applied to the next API requests.");
      refreshLog();
    } catch (error) {
      result.fail(error);
    }
  };
  const apply = (event) => {
    event.preventDefault();
    const config = { routes: routes.value.split("\n").map((line) => line.trim()).filter(Boolean) };
    if (failOn.checked) {
      Object.assign(config, { rate: numberOrNull(rate) ?? 0, status: numberOrNull(status) ?? 503, mode: mode.value });
      if (numberOrNull(count) !== null) config.count = numberOrNull(count);
    }
    if (latencyOn.checked) {
      const min = numberOrNull(low) ?? 0;
      const max = numberOrNull(high);
      config.latencyMs = max === null ? min : [min, max];
    }
    send("PUT", config);
  };
  admin.get("/_admin/faults").then(show, (error) => result.fail(error));
  return card("Faults and latency",
    h("form", { onsubmit: apply },
      h("fieldset", {}, h("legend", {}, h("label", {}, failOn, " Fail requests")),
        h("label", {}, "Share ", rate), h("label", {}, "Status ", status), h("label", {}, "Mode ", mode),
        h("label", {}, "Only the next ", count, " failures")),
      h("fieldset", {}, h("legend", {}, h("label", {}, latencyOn, " Add latency")),
        h("label", {}, "ms ", low), h("label", {}, "to ", high)),
      h("label", { for: "fault-routes" }, "Routes (one per line; empty: every API route)"), routes,
      h("button", { type: "submit", class: "primary" }, "Apply"),
      h("button", { type: "button", onclick: () => send("DELETE") }, "Clear")),
    result.element, h("details", {}, h("summary", {}, "Current config"), current));
}

// --- clock ----------------------------------------------------------------------------------------------

function clockCard() {
  const result = reporter();
  const now = h("p", { id: "clock-now" });
  const input = h("input", { id: "clock-input", type: "text", placeholder: "2026-01-01T00:00:00Z", size: 22 });
  const show = (clock) => {
    now.textContent = `${clock.now} · ${clock.frozen ? "frozen" : "running"}`;
  };
  const set = async (value) => {
    try {
      show(await admin.send("POST", "/_admin/clock", { now: value }));
      result.ok(value === null ? "The clock runs." : "The clock is frozen.");
    } catch (error) {
      result.fail(error);
    }
  };
  admin.get("/_admin/clock").then(show, (error) => result.fail(error));
  return card("Clock", now,
    h("form", { onsubmit: (event) => { event.preventDefault(); set(input.value.trim()); } },
      h("label", { for: "clock-input" }, "Freeze at"), input,
      h("button", { type: "submit" }, "Freeze"),
      h("button", { type: "button", onclick: () => set(null) }, "Let it run")),
    result.element);
}

// --- reset and datasets ---------------------------------------------------------------------------------

function dataCard(refreshLog) {
  const result = reporter();
  const file = h("input", { type: "file", id: "dataset-file", accept: "application/json,.json" });
  const replace = h("input", { type: "checkbox", id: "dataset-replace" });
  const confirmReset = h("button", { type: "button", class: "danger", hidden: true, onclick: async () => {
    confirmReset.hidden = true;
    try {
      await admin.send("POST", "/_admin/reset");
      result.ok("Every table emptied; start-up faults, clock and seed restored.");
      refreshLog();
    } catch (error) {
      result.fail(error);
    }
  } }, "Yes, empty every table");
  const load = async (event) => {
    event.preventDefault();
    if (!file.files.length) {
      result.fail("Choose a dataset file (JSON) first.");
      return;
    }
    try {
      const text = await file.files[0].text();
      const answer = await admin.send("POST", "/_admin/dataset", text, replace.checked ? { replace: "true" } : {});
      const counts = Object.entries(answer.imported || {}).map(([name, n]) => `${n} ${name}`).join(", ");
      result.ok(`Loaded: ${counts || "nothing"}.`);
    } catch (error) {
      result.fail(error);
    }
  };
  const dump = async () => {
    try {
      const text = await admin.text("/_admin/dataset");
      const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      const link = h("a", { href: url, download: "sowctl-dataset.json", hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 10000);
      result.ok(`Downloaded sowctl-dataset.json (${text.length} bytes).`);
    } catch (error) {
      result.fail(error);
    }
  };
  return card("Data",
    h("div", { class: "form-row" },
      h("button", { type: "button", id: "dataset-dump", onclick: dump }, "Download dataset"),
      h("button", { type: "button", class: "danger", onclick: () => { confirmReset.hidden = false; confirmReset.focus(); } }, "Reset…"),
      confirmReset),
    h("form", { onsubmit: load },
      h("label", { for: "dataset-file" }, "Load a dataset"), file,
      h("label", {}, replace, " replace everything"),
      h("button", { type: "submit" }, "Load")),
    result.element);
}

// --- checkpoints (only on servers that have them) ----------------------------------------------------

async function checkpointsCard(holder, refreshLog) {
  const result = reporter();
  const list = h("ul", { class: "linklist", id: "checkpoint-list" });
  const name = h("input", { id: "checkpoint-name", type: "text", placeholder: "baseline", size: 16 });
  const draw = (checkpoints) => {
    fill(list, ...(checkpoints.length ? checkpoints.map((point) => h("li", {},
      h("strong", {}, point.name), " ", h("span", { class: "muted" }, `${when(point.createdAt)} · ${point.records ?? "?"} records`), " ",
      h("button", { type: "button", onclick: () => act("POST", `/_admin/checkpoints/${encodeURIComponent(point.name)}/restore`, `Restored ${point.name}.`) }, "Restore"), " ",
      h("button", { type: "button", class: "danger", onclick: () => act("DELETE", `/_admin/checkpoints/${encodeURIComponent(point.name)}`, `Dropped ${point.name}.`) }, "Drop")))
      : [h("li", { class: "muted" }, "No checkpoints yet.")]));
  };
  const reload = async () => draw(await admin.get("/_admin/checkpoints"));
  const act = async (method, path, message, body) => {
    try {
      await admin.send(method, path, body);
      result.ok(message);
      await reload();
      refreshLog();
    } catch (error) {
      result.fail(error);
    }
  };
  try {
    await reload();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return; // this server has no checkpoints
    fill(holder, card("Checkpoints", notice(error.message, "error")));
    return;
  }
  fill(holder, card("Checkpoints", list,
    h("form", { onsubmit: (event) => { event.preventDefault(); act("POST", "/_admin/checkpoints", `Saved ${name.value.trim()}.`, { name: name.value.trim() }); } },
      h("label", { for: "checkpoint-name" }, "Save as"), name, h("button", { type: "submit" }, "Save")),
    result.element));
}
