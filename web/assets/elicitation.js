// elicitation: the body of an elicitation's dialog: the agent's form (a
// field per property of its schema) or the address it asks the person to
// open, which this page never opens itself.

import { el } from "./dom.js";
import { answer } from "./dialogs.js";

export function elicitationDialog(m) {
  const q = m.elicitation;
  const parts = [el("h2", {}, q.title || "The agent asks")];
  if (q.message) parts.push(el("div", { class: "desc" }, q.message));
  if (q.description) parts.push(el("div", { class: "desc" }, q.description));
  const inputs = [];
  if (q.mode === "url") {
    parts.push(el("div", { class: "url" }, q.url));
    parts.push(el("div", { class: "note" }, "Accepting tells the agent you will open this address yourself; this page never opens it."));
  }
  for (const f of q.fields) {
    let input;
    if (f.kind === "enum") {
      input = el("select");
      if (!f.required) input.append(el("option", { value: "" }, "—"));
      for (const c of f.choices) { const o = el("option", {}, c.name); o.value = c.value; input.append(o); }
      if (f.default !== undefined) input.value = f.default;
    } else if (f.kind === "multi_select") {
      input = el("select", { multiple: true });
      for (const c of f.choices) { const o = el("option", {}, c.name); o.value = c.value; input.append(o); }
      if (Array.isArray(f.default)) for (const o of input.options) o.selected = f.default.includes(o.value);
    } else if (f.kind === "boolean") {
      input = el("input", { type: "checkbox" });
      input.checked = f.default === true;
    } else {
      input = el("input", { type: f.kind === "number" || f.kind === "integer" ? "number" : "text" });
      if (f.kind === "integer") input.step = "1";
      if (f.min !== undefined) input.min = String(f.min);
      if (f.max !== undefined) input.max = String(f.max);
      if (f.default !== undefined) input.value = String(f.default);
    }
    input.name = f.name;
    inputs.push([f, input]);
    parts.push(el("label", { class: "field" }, f.label + (f.required ? " *" : ""), input,
      f.range ? el("span", { class: "hint range" }, f.range) : null,
      f.description ? el("span", { class: "hint" }, f.description) : null));
  }
  // A refusal of the content names its field: shown beside it, with the
  // field's range, as the terminal does; the dialog stays.
  const fieldRefused = (status, text) => {
    let e;
    try { e = JSON.parse(text); } catch (_) { return false; }
    const at = inputs.find(([f]) => f.name === e.field);
    if (status !== 400 || !at) return false;
    at[1].setAttribute("aria-invalid", "true");
    at[1].closest("label").append(el("span", { class: "fielderr", role: "alert" }, e.message + (e.range ? ": " + e.range : "")));
    return true;
  };
  const clearErrors = (d) => {
    for (const x of d.querySelectorAll(".fielderr")) x.remove();
    for (const x of d.querySelectorAll("[aria-invalid]")) x.removeAttribute("aria-invalid");
  };
  const collect = () => {
    const content = {};
    for (const [f, input] of inputs) {
      if (f.kind === "boolean") content[f.name] = input.checked;
      else if (f.kind === "multi_select") content[f.name] = [...input.selectedOptions].map((o) => o.value);
      else if (input.value === "") continue;
      else if (f.kind === "number" || f.kind === "integer") content[f.name] = Number(input.value);
      else content[f.name] = input.value;
    }
    return content;
  };
  const accept = el("button", { type: "button", class: "primary accept default" }, q.mode === "url" ? "I will open it" : "Submit");
  const decline = el("button", { type: "button", class: "reject decline" }, "Decline");
  const cancel = el("button", { type: "button", class: "cancel" }, "Dismiss");
  accept.addEventListener("click", () => {
    const d = accept.closest(".dialog");
    clearErrors(d);
    answer(d, "api/elicitation", { id: m.id, action: "accept", content: collect() }, fieldRefused);
  });
  decline.addEventListener("click", () => answer(decline.closest(".dialog"), "api/elicitation", { id: m.id, action: "decline" }));
  cancel.addEventListener("click", () => answer(cancel.closest(".dialog"), "api/elicitation", { id: m.id, action: "cancel" }));
  parts.push(el("div", { class: "options" }, el("div", { class: "option" }, accept, decline, cancel)));
  return parts;
}
