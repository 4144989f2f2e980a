// The console's only way to the server: the public API (bearer token) and, for the
// emulator panel, /_admin (admin token). Tokens live in this tab's session storage,
// are sent as an Authorization header, and never as a cookie.

const TOKEN_KEY = "sowctl.token";
const ADMIN_KEY = "sowctl.adminToken";
const PAGE_SIZE = 100; // the API's largest page

function storage() {
  try {
    return window.sessionStorage;
  } catch (error) {
    return null; // storage disabled: the token lasts as long as the page
  }
}

const memory = new Map();

function read(key) {
  const store = storage();
  return store ? store.getItem(key) : memory.get(key) || null;
}

function write(key, value) {
  const store = storage();
  if (value) {
    if (store) store.setItem(key, value);
    else memory.set(key, value);
  } else if (store) {
    store.removeItem(key);
  } else {
    memory.delete(key);
  }
}

export const session = {
  get token() {
    return read(TOKEN_KEY);
  },
  set token(value) {
    write(TOKEN_KEY, value);
  },
  get adminToken() {
    return read(ADMIN_KEY);
  },
  set adminToken(value) {
    write(ADMIN_KEY, value);
  },
};

/**
 * Take "#token=T" (and "&admin=A") out of the address: store them and leave the
 * address without them, so they are not bookmarked, shared or kept in history.
 */
export function takeTokensFromFragment() {
  const hash = window.location.hash.replace(/^#/, "");
  if (!/^(token|admin)=/.test(hash)) return false;
  const params = new URLSearchParams(hash);
  if (params.get("token")) session.token = params.get("token").trim();
  if (params.get("admin")) session.adminToken = params.get("admin").trim();
  window.history.replaceState(null, "", window.location.pathname + window.location.search + "#/");
  return true;
}

export class ApiError extends Error {
  constructor(status, message, body, admin = false) {
    super(message);
    this.status = status;
    this.body = body;
    this.admin = admin; // refused by /_admin (admin token), not by the API
  }
}

function errorMessage(status, body) {
  if (body && typeof body === "object") {
    if (typeof body.error === "string") return body.error; // Groups A and B, /_admin
    if (typeof body.message === "string") {
      // Group C: a fixed message, the detail in issues
      const issues = Array.isArray(body.issues) ? body.issues.map((issue) => issue && issue.message) : [];
      const detail = issues.filter((text) => typeof text === "string").join("; ");
      return detail ? `${body.message}: ${detail}` : body.message;
    }
  }
  return `HTTP ${status}`;
}

/** One request; resolves to {data, headers, status}, rejects with an ApiError. */
export async function request(path, { method = "GET", body, admin = false, raw = false } = {}) {
  const headers = { Accept: "application/json" };
  const token = admin ? session.adminToken : session.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, credentials: "omit", cache: "no-store" });
  } catch (error) {
    throw new ApiError(0, "the server did not answer (stopped, or the connection was dropped)", null, admin);
  }
  const text = await response.text();
  let data = null;
  if (text && !raw) {
    try {
      data = JSON.parse(text);
    } catch (error) {
      data = null;
    }
  }
  if (!response.ok) throw new ApiError(response.status, errorMessage(response.status, data), data, admin);
  return { data: raw ? text : data, headers: response.headers, status: response.status };
}

function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** Every page of a Group A list (page and limit, X-Total-Count). */
export async function allPages(path, query = {}) {
  const found = [];
  for (let page = 1; ; page += 1) {
    const { data, headers } = await request(withQuery(path, { ...query, page, limit: PAGE_SIZE }));
    const rows = Array.isArray(data) ? data : [];
    found.push(...rows);
    const total = Number(headers.get("X-Total-Count"));
    if (rows.length < PAGE_SIZE || !(found.length < total)) return found;
  }
}

/** Every project (Group C: limit and offset, with total). */
export async function allProjects() {
  const found = [];
  for (let offset = 0; ; offset += PAGE_SIZE) {
    const { data } = await request(withQuery("/projects", { limit: PAGE_SIZE, offset }));
    const rows = data && Array.isArray(data.projects) ? data.projects : [];
    found.push(...rows);
    if (rows.length < PAGE_SIZE || !(found.length < Number(data.total))) return found;
  }
}

export const get = (path, query = {}) => request(withQuery(path, query)).then((answer) => answer.data);

export const admin = {
  get: (path, query = {}) => request(withQuery(path, query), { admin: true }).then((a) => a.data),
  send: (method, path, body, query = {}) =>
    request(withQuery(path, query), { method, body, admin: true }).then((a) => a.data),
  text: (path) => request(path, { admin: true, raw: true }).then((a) => a.data),
};
