// Building the page without ever handing a string to an HTML parser: every string becomes a text node, so item titles
// and anything else a user typed are shown as typed and never parsed as markup.

const SVG_NS = "http://www.w3.org/2000/svg";

// Bidirectional embeddings, overrides and isolates (and the marks): one in a title would
// reorder what is drawn after it, an id or a risk level next to it. Shown as \u202e,
// as the CLI and the reports show them (sowctl/output/safe.py).
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** ``value`` as text to show: bidirectional controls written out, never obeyed. */
export function shown(value) {
  return String(value).replace(BIDI_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function build(element, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "text") {
      element.textContent = shown(value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(shown(child)));
  }
  return element;
}

/** An HTML element: h("a", {href: "#/"}, "text", otherNode). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** Replace an element's content (null, undefined and false children are left out). */
export function fill(element, ...children) {
  element.replaceChildren();
  return build(element, {}, children);
}

/** An SVG element, the same way. */
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** A definition list of [label, value] pairs; values left out when empty. */
export function fields(pairs) {
  const list = h("dl", { class: "fields" });
  for (const [label, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    list.append(h("dt", {}, label), h("dd", {}, value));
  }
  return list;
}

/** A short message for a person (errors in red). */
export function notice(text, kind = "info") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

/** Pretty JSON for a <pre>, or the text as it is. */
export function prettyBody(value) {
  if (value === undefined || value === null) return "(empty)";
  return shown(typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

/** Local date and time of an ISO timestamp, for display; the text itself when it does not parse. */
export function when(text) {
  if (!text) return "";
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? String(text) : date.toLocaleString();
}
