// dom: the two helpers every module builds the page with. Strings become
// text nodes, attributes are set with setAttribute: nothing is parsed as
// HTML.

export const $ = (id) => document.getElementById(id);

// el builds an element: el("div", {class: "x"}, "text", child, …).
// Attributes are set with setAttribute; strings become text nodes.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}
