// Building the page from data without ever parsing it: every value from the server is
// set with textContent (never innerHTML), and long values are cut with a marker.

export const CUT_MARK = " … [cut]";

/** `text` at most `max` characters, cut with a visible marker. */
export function cut(text, max = 200) {
  const value = text === null || text === undefined ? "" : String(text);
  return value.length > max ? value.slice(0, max) + CUT_MARK : value;
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
