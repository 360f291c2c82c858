// dialogs: the agent's pending requests (permissions, write proposals,
// elicitations), one dialog each under the transcript, answered by the
// first tab to answer and closed on every tab. permission.js, proposal.js
// and elicitation.js build their bodies.
//
// A dialog must not be answered by what was meant for something else: it
// never takes the keyboard focus from where the person types (no button
// of it is focused by default), its buttons ignore clicks for inertMs
// after it appears (a click aimed at what was there before), and a click
// made with the keyboard counts only if its key went down after the
// dialog appeared (a key held or pressed before it, in the prompt).

import { $, el } from "./dom.js";
import { post } from "./api.js";
import { keepingBottom, toolCard } from "./transcript.js";

const dialogs = $("dialogs");
const open = new Map(); // dialog id -> element

const inertMs = 500;
const shownAt = new WeakMap(); // dialog element -> performance.now() when shown
let keyBegan = -Infinity; // when the latest key press began (auto-repeats aside)
document.addEventListener("keydown", (e) => { if (!e.repeat) keyBegan = performance.now(); }, true);
dialogs.addEventListener("click", (e) => {
  const d = e.target.closest(".dialog");
  if (!d || !e.target.closest("button")) return;
  const shown = shownAt.has(d) ? shownAt.get(d) : -Infinity;
  if (performance.now() - shown < inertMs || (e.detail === 0 && keyBegan < shown)) {
    e.preventDefault();
    e.stopImmediatePropagation(); // before the button's own handler
  }
}, true);

// renumber says "2 of 3" on each dialog when there are several.
export function renumber() {
  const all = [...dialogs.children];
  all.forEach((d, i) => {
    const q = d.querySelector(".queue");
    if (q) q.textContent = all.length > 1 ? (i + 1) + " of " + all.length : "";
  });
}

// clearDialogs removes every dialog (a new connection shows the pending
// ones again).
export function clearDialogs() {
  dialogs.replaceChildren();
  open.clear();
}

// openDialog shows the dialog message m, its body built by build(m),
// unless it is shown already.
export function openDialog(m, build) {
  if (open.has(m.id)) return;
  const body = build(m);
  const d = el("div", { class: "dialog inert " + m.kind, role: "dialog", tabindex: "-1", "data-dialog": m.id }, el("span", { class: "queue" }), ...body);
  open.set(m.id, d);
  const shown = performance.now();
  shownAt.set(d, shown);
  // The dialog takes room from the transcript: the turn that asked stays
  // in view (the end of it, and the tool card the request is about).
  keepingBottom(() => {
    dialogs.append(d);
    renumber();
  });
  const asker = m.permission && m.permission.tool ? toolCard(m.permission.tool.id) : null;
  if (asker) asker.scrollIntoView({ block: "nearest" });
  // The look of it only: the click handler above decides, by the clock.
  const arm = () => {
    const left = inertMs - (performance.now() - shown);
    if (left > 0) setTimeout(arm, left + 1);
    else d.classList.remove("inert");
  };
  setTimeout(arm, inertMs);
  // Only when nothing has the focus: the dialog itself (not a button), so
  // that a screen reader announces it and no key answers it.
  const a = document.activeElement;
  if (dialogs.children.length === 1 && (!a || a === document.body)) d.focus({ preventScroll: true });
}

export function closeDialog(id) {
  const d = open.get(id);
  if (!d) return;
  open.delete(id);
  keepingBottom(() => {
    d.remove();
    renumber();
  });
}

// answer posts a dialog's answer, its buttons disabled meanwhile; a
// refusal enables them again.
export async function answer(d, path, body, refused) {
  const buttons = [...d.querySelectorAll("button")];
  buttons.forEach((b) => (b.disabled = true));
  const r = await post(path, body, refused);
  if (!r) buttons.forEach((b) => (b.disabled = false));
}
