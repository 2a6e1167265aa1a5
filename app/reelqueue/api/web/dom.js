// Building the page from data without ever parsing it: every value from the server is
// set with textContent (never innerHTML), and long values are cut with a marker.

export const CUT_MARK = " … [cut]";

// Characters that change how the text around them reads without being seen: the
// direction overrides and isolates (a U+202E turns "gnp.exe" into "exe.png" on screen)
// and the control characters. They are shown as what they are: ⟨U+202E⟩.
const INVISIBLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

export function visible(text) {
  return text.replace(INVISIBLE, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

/** `text` at most `max` characters, cut with a visible marker, its invisible
 *  characters shown. */
export function cut(text, max = 200) {
  const value = text === null || text === undefined ? "" : String(text);
  return visible(value.length > max ? value.slice(0, max) + CUT_MARK : value);
}

/** An element with attributes (strings only; no event handler attributes) and children
 *  (nodes, or strings set as text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) throw new Error("no inline handlers");
    if (name === "text") node.textContent = String(value);
    else if (name === "className") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A span of data: text, cut, isolated from the text around it (a U+202E in a name
 *  cannot turn the row around). */
export function data(text, max = 200, className = "data") {
  return el("span", { className, text: cut(text, max), title: text && String(text).length > max ? "cut: the whole text is longer" : null });
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

export function money(usd) {
  if (usd === null || usd === undefined || Number.isNaN(Number(usd))) return "—";
  const value = Number(usd);
  return "$" + (value > 0 && value < 0.01 ? value.toFixed(3) : value.toFixed(2));
}

export function stamp(epochSeconds) {
  if (!epochSeconds) return "—";
  const at = new Date(epochSeconds * 1000);
  return at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function ago(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min ago`;
}
