// transcript: the turns as they stream in (the person's prompts, the
// agent's text and thoughts, tool cards, plans, amended writes, notes and
// turn ends). Every string is the server's SafeText of the agent's, put in
// text nodes; the agent's messages go through markdown.js.

import { $, el } from "./dom.js";
import { blockNodes, renderStreamed, streamed } from "./markdown.js";

const transcript = $("transcript");

// Per connection: the block text deltas append to, tool cards by id.
let current = null; // {turn, kind: "text"|"thought"|"user", node}
let tools = new Map();
let amended = new Set(); // "turn/path" of the writes amended

function atBottom() { return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80; }

// keepingBottom makes a change to the page and, if the transcript was
// scrolled to its end before, scrolls it to its end again.
export function keepingBottom(change) {
  const stick = atBottom();
  const r = change();
  if (stick) transcript.scrollTop = transcript.scrollHeight;
  return r;
}

function append(node) { return keepingBottom(() => transcript.appendChild(node)); }

// clear empties the transcript for a replay from the start; dropped is how
// many earlier messages the server no longer keeps.
export function clear(dropped) {
  dirty.clear();
  transcript.replaceChildren();
  tools = new Map();
  amended = new Set();
  current = null;
  if (dropped) append(el("div", { class: "note" }, dropped + " earlier messages are no longer kept"));
}

// Agent messages stream in pieces, rendered shortly after the last one
// (and at once before anything else is shown: flush).
const dirty = new Set();
let renderTimer = 0;
function renderDirty() {
  clearTimeout(renderTimer);
  renderTimer = 0;
  keepingBottom(() => { for (const b of dirty) renderStreamed(b); });
  dirty.clear();
}

// flush renders the messages still waiting for their timer.
export function flush() { if (dirty.size) renderDirty(); }

// replayed marks history a loaded session replayed: shown dimmed.
function replayed(node, m) {
  if (m.replay) node.classList.add("replay");
  return node;
}

// user shows the person's prompt (a long one comes in pieces).
export function user(m) {
  const last = transcript.lastElementChild;
  if (current && current.kind === "user" && current.turn === m.turn && last === current.node) {
    last.append(document.createTextNode(m.text)); // the next piece of the prompt
    return;
  }
  current = { turn: m.turn, kind: "user", node: append(replayed(el("div", { class: "user" }, m.text), m)) };
}

// delta adds a piece of the agent's text or thought.
export function delta(m) {
  if (!current || current.turn !== m.turn || current.kind !== m.type) {
    if (m.type === "thought") {
      const body = el("div");
      const d = el("details", { class: "thought" }, el("summary", {}, "thinking"), body);
      append(replayed(d, m));
      current = { turn: m.turn, kind: m.type, node: body };
    } else {
      current = { turn: m.turn, kind: m.type, ...streamed(append(replayed(el("div", { class: "text md" }), m))) };
    }
  }
  if (m.type === "thought") {
    keepingBottom(() => current.node.append(document.createTextNode(m.delta)));
    return;
  }
  current.raw += m.delta;
  dirty.add(current);
  if (!renderTimer) renderTimer = setTimeout(renderDirty, 30);
}

// The diff's own "--- a/…" and "+++ b/…" headers are left out: the line
// above names the path as it is (git's "b/" before an absolute path read
// as a relative one), and says when the file is new. noPath: the dialog's
// heading names the path already.
export function diffBlock(c, noPath) {
  const pre = el("pre", { class: "diff" });
  let created = false, head = true;
  for (const line of c.diff.split("\n")) {
    if (line === "") continue;
    if (head && (line.startsWith("--- ") || line.startsWith("+++ "))) {
      if (line === "--- /dev/null") created = true;
      continue;
    }
    head = false;
    let cls = "";
    if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", { class: cls }, line));
  }
  const where = (noPath ? "" : (c.path || "") + (created ? " (new file)" : "") + "  ") + "+" + (c.added || 0) + " −" + (c.removed || 0);
  return el("div", { class: "diffblock", "data-path": c.path || "" }, el("div", { class: "locations" }, where), pre);
}

// A tool's text output: Markdown (agents fence command output), plain
// above markdown.js's bound as every block is.
function contentBlock(c) {
  if (c.type === "diff") return diffBlock(c);
  const text = c.text || "";
  if (text.includes("```") || text.includes("~~~")) return el("div", { class: "md tooltext" }, ...blockNodes(text));
  return el("pre", {}, text);
}

// toolBody shows a tool call; a dialog whose heading already names it
// (heading) does not repeat its title.
export function toolBody(t, withStatus, heading) {
  const title = t.title || "(untitled tool call)";
  const head = el("div", { class: "head" },
    title === heading ? null : el("span", { class: "title" }, title),
    t.kind ? el("span", { class: "kind" }, t.kind) : null,
    withStatus && t.status ? el("span", { class: "status " + t.status }, t.status.replace("_", " ")) : null);
  const parts = [head];
  if (t.locations && t.locations.length) parts.push(el("div", { class: "locations" }, t.locations.join("  ")));
  for (const c of t.content || []) parts.push(contentBlock(c));
  if (t.input) parts.push(el("details", {}, el("summary", {}, "input"), el("pre", {}, t.input)));
  if (t.output) parts.push(el("details", {}, el("summary", {}, "output"), el("pre", {}, t.output)));
  return parts;
}

// tool shows a tool call, or its update in the card it has.
export function tool(m) {
  const key = m.turn + "/" + m.tool.id;
  let card = tools.get(key);
  if (!card) {
    card = append(replayed(el("div", { class: "card tool" }), m));
    card.dataset.tool = m.tool.id;
    card.dataset.turn = String(m.turn);
    tools.set(key, card);
  }
  card.dataset.status = m.tool.status;
  card.replaceChildren(...toolBody(m.tool, true));
  markSuperseded(card);
  current = null;
}

// toolCard is the card of the tool call id, if the transcript shows it.
export function toolCard(id) {
  return [...transcript.querySelectorAll(".card.tool")].find((c) => c.dataset.tool === id);
}

export function plan(m) {
  const ul = el("ul", { class: "plan" });
  for (const e of m.entries) ul.append(el("li", { class: e.status }, e.content));
  append(replayed(el("div", { class: "card planbox" }, el("div", { class: "kind" }, "plan"), ul), m));
  current = null;
}

// write shows what an amended write put on disk, and marks the agent's
// version of it in this turn's tool cards as not what landed.
function markSuperseded(card) {
  for (const b of card.querySelectorAll(".diffblock")) {
    if (!amended.has(card.dataset.turn + "/" + b.dataset.path) || b.classList.contains("superseded")) continue;
    b.classList.add("superseded");
    b.prepend(el("div", { class: "note" }, "the agent's version: amended before it was applied (see below)"));
  }
}
export function write(m) {
  amended.add(m.turn + "/" + m.diff.path);
  for (const card of transcript.querySelectorAll(".card.tool")) markSuperseded(card);
  append(replayed(el("div", { class: "card write" }, el("div", { class: "head" }, el("span", { class: "title" }, "written, as amended"), el("span", { class: "kind" }, "edit")),
    diffBlock(m.diff)), m));
  current = null;
}

export function note(m) { append(el("div", { class: "note " + m.kind }, m.text)); current = null; }

export function done(m) {
  const txt = "turn ended: " + m.stopReason + (m.error ? " (" + m.error + ")" : "");
  append(el("div", { class: "end " + m.stopReason, "data-turn": m.turn }, txt));
  current = null;
}

export function failed(m) {
  append(el("div", { class: "end error", "data-turn": m.turn }, "turn failed: " + m.error));
  current = null;
}
