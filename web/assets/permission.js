// permission: the body of a permission request's dialog: what the agent
// wants to do (the tool call, its command, address or plan) and one button
// per option the agent offered, with what each would change.

import { el } from "./dom.js";
import { answer } from "./dialogs.js";
import { toolBody } from "./transcript.js";

export function permissionDialog(m) {
  const p = m.permission;
  const parts = [el("h2", {}, p.heading)];
  if (p.description) parts.push(el("div", { class: "desc" }, p.description));
  if (p.command) parts.push(el("pre", { class: "command" }, p.command));
  if (p.url) parts.push(el("div", { class: "url" }, p.url));
  if (p.plan) parts.push(el("pre", { class: "plantext" }, p.plan));
  // The tool's title once: as the heading, or under it when it differs.
  parts.push(el("div", { class: "card" }, ...toolBody(p.tool, false, p.heading)));
  const opts = el("div", { class: "options" });
  let def = null;
  for (const o of p.options) {
    const kind = o.kind.startsWith("allow") ? "allow" : o.kind.startsWith("reject") ? "reject" : "";
    const b = el("button", { type: "button", class: "optbtn " + kind, "data-option": o.id, "data-kind": o.kind }, o.name);
    if (!def && (p.defaultToNo ? kind === "reject" : kind === "allow")) { def = b; b.classList.add("default"); }
    b.addEventListener("click", () => answer(b.closest(".dialog"), "api/permission", { id: m.id, option: o.id }));
    const changes = el("ul");
    for (const c of o.changes) changes.append(el("li", { class: c.known ? "" : "unknown" }, c.text + (c.known ? "" : " (not recognised)")));
    opts.append(el("div", { class: "option" }, b, el("span", { class: "kind" }, o.kind),
      o.description ? el("span", { class: "desc" }, o.description) : null, o.changes.length ? changes : null));
  }
  if (p.options.length === 0) opts.append(el("div", { class: "note" }, "The agent offered no option: stop the turn to cancel the request."));
  parts.push(opts);
  return parts;
}
