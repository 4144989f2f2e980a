// Building blocks of the emulator panel's cards, shared by its modules.

import { ApiError } from "./api.js";
import { h, shown } from "./dom.js";

export function card(title, ...children) {
  const id = `card-${title.toLowerCase().replace(/[^a-z]+/g, "-")}`;
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

export function numberOrNull(input) {
  const text = input.value.trim();
  return text === "" ? null : Number(text);
}

/** Shows a short result next to a control: a success, or the server's error message. */
export function reporter() {
  const line = h("p", { class: "muted", role: "status" });
  return {
    element: line,
    ok(text) {
      line.className = "muted";
      line.textContent = shown(text);
    },
    fail(error) {
      line.className = "notice error";
      line.textContent = shown(error instanceof ApiError ? `${error.message} (HTTP ${error.status || "-"})` : error);
    },
  };
}
