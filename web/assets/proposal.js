// proposal: the body of a write proposal's dialog: the diff, the current
// content, and the content to write, editable before it is applied.

import { el } from "./dom.js";
import { answer } from "./dialogs.js";
import { diffBlock } from "./transcript.js";

export function proposalDialog(m) {
  const p = m.proposal;
  const parts = [el("h2", {}, (p.exists ? "Edit " : "Create ") + p.path)];
  if (p.resolved) parts.push(el("div", { class: "desc" }, "lands on " + p.resolved));
  if (p.hidden) parts.push(el("div", { class: "warn" }, "The proposed content holds invisible or control characters (bidirectional overrides, zero-width characters…). They are removed from the diff below but not from the text to write."));
  parts.push(diffBlock({ diff: p.diff, path: p.path, added: p.added, removed: p.removed }, true)); // the heading names the path
  const cur = el("textarea", { readonly: true, class: "current", "aria-label": "current content" });
  cur.value = p.current;
  const ed = el("textarea", { class: "proposed", "aria-label": "content to write", spellcheck: "false" });
  ed.value = p.proposed;
  const original = ed.value; // as the text area holds it (line ends normalised)
  parts.push(el("div", { class: "side" },
    el("label", {}, p.exists ? "current" : "current (new file)", cur),
    el("label", {}, "to write (edit before applying)", ed)));
  const apply = el("button", { type: "button", class: "primary apply default" }, "Apply");
  const deny = el("button", { type: "button", class: "reject deny" }, "Deny");
  apply.addEventListener("click", () => answer(apply.closest(".dialog"), "api/proposal",
    { id: m.id, action: "apply", content: ed.value, edited: ed.value !== original }));
  deny.addEventListener("click", () => answer(deny.closest(".dialog"), "api/proposal", { id: m.id, action: "deny" }));
  parts.push(el("div", { class: "options" }, el("div", { class: "option" }, apply, deny)));
  return parts;
}
