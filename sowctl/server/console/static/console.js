// The console's start: tokens, the address (#/, #/sow/ID/TAB/KIND/KEY, #/emulator) and the
// projects page. The SOW page is sow.js, the emulator panel emulator.js.

import { ApiError, allPages, allProjects, request, session, takeTokensFromFragment } from "./api.js";
import { fill, h, notice } from "./dom.js";
import { orderingRule } from "./graph.js";
import { showEmulator } from "./emulator.js";
import { showSow } from "./sow.js";

const main = document.getElementById("main");
const adminOn = document.body.dataset.admin === "on";
const rule = orderingRule(document.body);

let current = null; // the page shown: {name, key, update(route), close()}
let cache = { sows: null, projects: null };

// --- the address --------------------------------------------------------------------------------

function decode(part) {
  try {
    return decodeURIComponent(part);
  } catch (error) {
    return part;
  }
}

function parseRoute() {
  const parts = window.location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decode);
  if (parts[0] === "sow" && parts[1]) {
    return { name: "sow", key: parts[1], tab: parts[2] || "graph", kind: parts[3] || null, select: parts[4] || null };
  }
  if (parts[0] === "emulator") return { name: "emulator", key: "emulator" };
  return { name: "projects", key: "projects" };
}

function sowLink(sowId, tab = "graph", kind = null, key = null) {
  const parts = ["sow", sowId, tab, kind, key].filter((part) => part !== null && part !== undefined);
  return `#/${parts.map(encodeURIComponent).join("/")}`;
}

/** Change the address without a new page (a selection inside the page already shown). */
function replaceAddress(link) {
  window.history.replaceState(null, "", link);
}

// --- data shared by pages -----------------------------------------------------------------------

async function sows({ fresh = false } = {}) {
  // Paged like the other Group A lists (20 a page unless asked): every page, not the first.
  if (!cache.sows || fresh) cache.sows = await allPages("/api/sows");
  return cache.sows;
}

async function projects() {
  if (!cache.projects) cache.projects = await allProjects();
  return cache.projects;
}

const context = { rule, sows, projects, sowLink, replaceAddress, failed, tokenRefused };

// --- pages --------------------------------------------------------------------------------------

function setCurrentNav(name) {
  for (const [id, page] of [["nav-projects", "projects"], ["nav-emulator", "emulator"]]) {
    const link = document.getElementById(id);
    if (page === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function showSession() {
  const signedIn = Boolean(session.token);
  document.getElementById("session-state").textContent = signedIn ? "Signed in with a bearer token" : "";
  document.getElementById("sign-out").hidden = !signedIn;
  document.getElementById("nav-emulator").hidden = !adminOn;
}

function close() {
  if (current && current.close) current.close();
  current = null;
}

const REFUSED_TOKEN = "The server refused this token. Check it (or create a new one) and sign in again.";

/**
 * A token refused by the API (revoked, or the data reset under it), wherever a request
 * meets it: forget it and ask for one again, saying why; the address is kept, so signing
 * in again returns to the same view. True when it was that.
 */
function tokenRefused(error) {
  if (!(error instanceof ApiError && error.status === 401 && !error.admin)) return false;
  session.token = null;
  cache = { sows: null, projects: null };
  close();
  showLogin(REFUSED_TOKEN);
  return true;
}

/** An API failure on a page: a refused token goes back to the login form. */
function failed(error, retry) {
  if (tokenRefused(error)) return;
  const text = error instanceof ApiError ? `${error.message} (HTTP ${error.status || "-"})` : String(error);
  fill(main,
    h("h1", {}, "Could not load this page"),
    notice(text, "error"),
    h("p", {}, h("button", { type: "button", class: "primary", onclick: retry }, "Retry")),
  );
}

function showLogin(message) {
  close();
  showSession();
  setCurrentNav(null);
  document.title = "Sign in · sowctl console";
  const input = h("input", {
    id: "token-input", type: "password", name: "token", autocomplete: "off", spellcheck: "false",
    required: true, "aria-describedby": "token-help",
  });
  const form = h("form", { onsubmit: (event) => signIn(event, input) },
    input, h("button", { type: "submit", class: "primary" }, "Open console"));
  fill(main, h("section", { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Sign in with a bearer token"),
    message ? notice(message, "error") : null,
    h("p", { id: "token-help", class: "muted" },
      "The token is kept in this browser tab only (session storage) and sent as an Authorization header. ",
      "Get one with `sowctl tokens create`, or open the link that `sowctl serve --demo` prints."),
    h("label", { for: "token-input" }, "Bearer token"),
    form));
  input.focus();
}

async function signIn(event, input) {
  event.preventDefault();
  const token = input.value.trim();
  if (!token) return;
  session.token = token;
  try {
    await request("/api/sows?limit=1"); // a check of the token: one SOW is enough
  } catch (error) {
    session.token = null;
    // A 401's API wording ("authorization not provided: invalid bearer token") is for programs.
    const refused = error instanceof ApiError && error.status === 401;
    showLogin(refused ? REFUSED_TOKEN : `The check failed: ${error.message}`);
    return;
  }
  cache = { sows: null, projects: null };
  route();
}

function signOut() {
  session.token = null;
  session.adminToken = null;
  cache = { sows: null, projects: null };
  showLogin(null);
}

async function showProjects() {
  document.title = "Projects · sowctl console";
  fill(main, notice("Loading projects…"));
  cache = { sows: null, projects: null }; // the list page always shows the server's current state
  let found;
  try {
    found = await Promise.all([projects(), sows()]);
  } catch (error) {
    failed(error, showProjects);
    return;
  }
  const [projectList, sowList] = found;
  const byProject = new Map();
  for (const sow of sowList) {
    if (!byProject.has(sow.projectId)) byProject.set(sow.projectId, []);
    byProject.get(sow.projectId).push(sow);
  }
  const sowItems = (list) =>
    list.length
      ? h("ul", {}, list.map((sow) => h("li", {},
          h("a", { href: sowLink(sow.id), "data-sow": sow.id }, sow.title), " ",
          h("span", { class: "muted" }, `${sow.itemCount ?? "?"} items · ${sow.id}`))))
      : h("p", { class: "muted" }, "No SOW yet.");
  const cards = projectList.map((project) => h("li", { class: "project" },
    h("h2", {}, project.name),
    h("div", {},
      h("span", { class: `badge status-${project.status}` }, project.status), " ",
      h("span", { class: "muted" }, project.clientName ? `for ${project.clientName}` : "")),
    project.description ? h("p", { class: "muted" }, project.description) : null,
    sowItems(byProject.get(project.id) || [])));
  const known = new Set(projectList.map((project) => project.id));
  const others = sowList.filter((sow) => !known.has(sow.projectId));
  if (others.length) {
    cards.push(h("li", { class: "project" }, h("h2", {}, "Other SOWs"), sowItems(others)));
  }
  fill(main,
    h("h1", {}, "Projects"),
    h("p", { class: "muted" }, `${projectList.length} projects, ${sowList.length} SOWs. Open a SOW for its items, dependency graph and risks.`),
    projectList.length || others.length ? h("ul", { class: "projects" }, cards) : notice("No projects yet."));
}

async function route() {
  if (!session.token) {
    showLogin(null);
    return;
  }
  showSession();
  const next = parseRoute();
  setCurrentNav(next.name);
  if (current && current.name === next.name && current.key === next.key && current.update) {
    current.update(next);
    return;
  }
  close();
  if (next.name === "sow") {
    current = { name: "sow", key: next.key };
    const page = await showSow(main, next, context);
    if (page && current && current.key === next.key) Object.assign(current, page);
  } else if (next.name === "emulator") {
    current = { name: "emulator", key: "emulator", ...showEmulator(main, { adminOn, failed }) };
  } else {
    current = { name: "projects", key: "projects" };
    await showProjects();
  }
  if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
}

takeTokensFromFragment();
document.getElementById("sign-out").addEventListener("click", signOut);
window.addEventListener("hashchange", () => {
  if (takeTokensFromFragment()) cache = { sows: null, projects: null };
  route();
});
route();
