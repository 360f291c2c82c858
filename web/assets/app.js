// acphost web: the page. Plain JavaScript, no dependency, no build step.
//
// Everything the agent sends is inserted with textContent (or as a form
// control's value), never as HTML: the server has already passed it through
// acphost.SafeText, and this file never touches innerHTML, outerHTML,
// insertAdjacentHTML, document.write or eval. Keep it that way.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  // el builds an element: el("div", {class: "x"}, "text", child, …).
  // Attributes are set with setAttribute; strings become text nodes.
  function el(tag, attrs, ...children) {
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

  const transcript = $("transcript");
  const dialogs = $("dialogs");
  let state = { running: false };
  // Per connection: the block text deltas append to, tool cards by id.
  let current = null; // {turn, kind: "text"|"thought", node}
  let tools = new Map();
  const open = new Map(); // dialog id -> element

  function showError(msg) { $("error").textContent = msg || ""; }

  function atBottom() { return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80; }
  function append(node) {
    const stick = atBottom();
    transcript.append(node);
    if (stick) transcript.scrollTop = transcript.scrollHeight;
    return node;
  }

  // post sends a JSON command; a refusal is shown, not thrown.
  async function post(path, body) {
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body || {}),
        credentials: "same-origin",
      });
      if (!r.ok) {
        showError(path + ": " + (await r.text()).trim());
        return null;
      }
      showError("");
      return await r.json();
    } catch (e) {
      showError(path + ": " + e);
      return null;
    }
  }

  // --- transcript ---

  function delta(m) {
    if (!current || current.turn !== m.turn || current.kind !== m.type) {
      if (m.type === "thought") {
        const body = el("div");
        const d = el("details", { class: "thought" }, el("summary", {}, "thinking"), body);
        append(d);
        current = { turn: m.turn, kind: m.type, node: body };
      } else {
        current = { turn: m.turn, kind: m.type, node: append(el("div", { class: "text" })) };
      }
    }
    const stick = atBottom();
    current.node.append(document.createTextNode(m.delta));
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  function diffBlock(c) {
    const pre = el("pre", { class: "diff" });
    for (const line of c.diff.split("\n")) {
      if (line === "") continue;
      let cls = "";
      if (line.startsWith("+++") || line.startsWith("---")) cls = "hdr";
      else if (line.startsWith("+")) cls = "add";
      else if (line.startsWith("-")) cls = "del";
      else if (line.startsWith("@@")) cls = "hunk";
      pre.append(el("span", { class: cls }, line));
    }
    return el("div", {}, el("div", { class: "locations" }, (c.path || "") + "  +" + (c.added || 0) + " −" + (c.removed || 0)), pre);
  }

  function contentBlock(c) {
    if (c.type === "diff") return diffBlock(c);
    return el("pre", {}, c.text || "");
  }

  function toolBody(t, withStatus) {
    const head = el("div", { class: "head" },
      el("span", { class: "title" }, t.title || "(untitled tool call)"),
      t.kind ? el("span", { class: "kind" }, t.kind) : null,
      withStatus && t.status ? el("span", { class: "status " + t.status }, t.status.replace("_", " ")) : null);
    const parts = [head];
    if (t.locations && t.locations.length) parts.push(el("div", { class: "locations" }, t.locations.join("  ")));
    for (const c of t.content || []) parts.push(contentBlock(c));
    if (t.input) parts.push(el("details", {}, el("summary", {}, "input"), el("pre", {}, t.input)));
    if (t.output) parts.push(el("details", {}, el("summary", {}, "output"), el("pre", {}, t.output)));
    return parts;
  }

  function tool(m) {
    const key = m.turn + "/" + m.tool.id;
    let card = tools.get(key);
    if (!card) {
      card = append(el("div", { class: "card tool" }));
      card.dataset.tool = m.tool.id;
      tools.set(key, card);
    }
    card.dataset.status = m.tool.status;
    card.replaceChildren(...toolBody(m.tool, true));
    current = null;
  }

  function plan(m) {
    const ul = el("ul", { class: "plan" });
    for (const e of m.entries) ul.append(el("li", { class: e.status }, e.content));
    append(el("div", { class: "card planbox" }, el("div", { class: "kind" }, "plan"), ul));
    current = null;
  }

  const handlers = {
    reset(m) {
      transcript.replaceChildren();
      dialogs.replaceChildren();
      open.clear();
      tools = new Map();
      current = null;
      $("agent").textContent = [m.agent.name, m.agent.version].filter(Boolean).join(" ");
      if (m.dropped) append(el("div", { class: "note" }, m.dropped + " earlier messages are no longer kept"));
    },
    user(m) { append(el("div", { class: "user" }, m.text)); current = null; },
    text: delta,
    thought: delta,
    tool,
    plan,
    usage(m) {
      let s = "context " + m.used + " / " + m.size;
      if (m.currency) s += " · " + m.cost.toFixed(4) + " " + m.currency;
      $("usage").textContent = s;
    },
    note(m) { append(el("div", { class: "note " + m.kind }, m.text)); current = null; },
    done(m) {
      const txt = "turn ended: " + m.stopReason + (m.error ? " (" + m.error + ")" : "");
      append(el("div", { class: "end " + m.stopReason, "data-turn": m.turn }, txt));
      current = null;
    },
    error(m) {
      append(el("div", { class: "end error", "data-turn": m.turn }, "turn failed: " + m.error));
      current = null;
    },
    state(m) { setState(m); },
    dialog(m) { openDialog(m); },
    dialog_close(m) { closeDialog(m.id); },
  };

  function setState(m) {
    state = m;
    const st = $("status");
    st.textContent = m.running ? "running" : "idle";
    st.className = "badge" + (m.running ? " running" : "");
    $("stop").disabled = !m.running;
    $("send").disabled = m.running;
    $("planmode").checked = m.planMode;
    const ae = $("agenterror");
    ae.hidden = !m.agentError;
    ae.textContent = m.agentError ? "agent ended: " + m.agentError : "";

    const sel = $("mode");
    $("modewrap").hidden = m.modes.length === 0;
    sel.replaceChildren(...m.modes.map((o) => {
      const opt = el("option", { title: o.description }, o.name || o.value);
      opt.value = o.value;
      return opt;
    }));
    sel.value = m.mode;

    const cfg = $("config");
    cfg.replaceChildren(...m.config.map((c) => {
      if (c.type === "boolean") {
        const box = el("input", { type: "checkbox" });
        box.checked = c.value === true;
        box.addEventListener("change", () => post("api/config", { id: c.id, value: box.checked }));
        return el("label", { title: c.description }, box, " " + c.name);
      }
      const s = el("select");
      for (const o of c.options) {
        const opt = el("option", { title: o.description }, o.name || o.value);
        opt.value = o.value;
        s.append(opt);
      }
      s.value = c.value;
      s.addEventListener("change", () => post("api/config", { id: c.id, value: s.value }));
      return el("label", { title: c.description }, c.name + " ", s);
    }));
    renumber();
  }

  // --- dialogs ---

  function renumber() {
    const all = [...dialogs.children];
    all.forEach((d, i) => {
      const q = d.querySelector(".queue");
      if (q) q.textContent = all.length > 1 ? (i + 1) + " of " + all.length : "";
    });
  }

  function openDialog(m) {
    if (open.has(m.id)) return;
    let body;
    if (m.kind === "permission") body = permissionDialog(m);
    else if (m.kind === "proposal") body = proposalDialog(m);
    else if (m.kind === "elicitation") body = elicitationDialog(m);
    else return;
    const d = el("div", { class: "dialog " + m.kind, role: "dialog", "data-dialog": m.id }, el("span", { class: "queue" }), ...body);
    open.set(m.id, d);
    dialogs.append(d);
    renumber();
    if (dialogs.children.length === 1) {
      const f = d.querySelector("button.default") || d.querySelector("button");
      if (f) f.focus({ preventScroll: true });
    }
  }

  function closeDialog(id) {
    const d = open.get(id);
    if (!d) return;
    open.delete(id);
    d.remove();
    renumber();
  }

  // busy disables a dialog's buttons while its answer is sent; a refusal
  // enables them again.
  async function answer(d, path, body) {
    const buttons = [...d.querySelectorAll("button")];
    buttons.forEach((b) => (b.disabled = true));
    const r = await post(path, body);
    if (!r) buttons.forEach((b) => (b.disabled = false));
  }

  function permissionDialog(m) {
    const p = m.permission;
    const parts = [el("h2", {}, p.heading)];
    if (p.description) parts.push(el("div", { class: "desc" }, p.description));
    if (p.command) parts.push(el("pre", { class: "command" }, p.command));
    if (p.url) parts.push(el("div", { class: "url" }, p.url));
    if (p.plan) parts.push(el("pre", { class: "plantext" }, p.plan));
    parts.push(el("div", { class: "card" }, ...toolBody(p.tool, false)));
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

  function proposalDialog(m) {
    const p = m.proposal;
    const parts = [el("h2", {}, (p.exists ? "Edit " : "Create ") + p.path)];
    if (p.resolved) parts.push(el("div", { class: "desc" }, "lands on " + p.resolved));
    if (p.hidden) parts.push(el("div", { class: "warn" }, "The proposed content holds invisible or control characters (bidirectional overrides, zero-width characters…). They are removed from the diff below but not from the text to write."));
    parts.push(diffBlock({ diff: p.diff, path: p.path, added: p.added, removed: p.removed }));
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

  function elicitationDialog(m) {
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
        for (const c of f.choices) { const o = el("option", {}, c.name || c.value); o.value = c.value; input.append(o); }
        if (f.default !== undefined) input.value = f.default;
      } else if (f.kind === "multi_select") {
        input = el("select", { multiple: true });
        for (const c of f.choices) { const o = el("option", {}, c.name || c.value); o.value = c.value; input.append(o); }
        if (Array.isArray(f.default)) for (const o of input.options) o.selected = f.default.includes(o.value);
      } else if (f.kind === "boolean") {
        input = el("input", { type: "checkbox" });
        input.checked = f.default === true;
      } else {
        input = el("input", { type: f.kind === "number" || f.kind === "integer" ? "number" : "text" });
        if (f.kind === "integer") input.step = "1";
        if (f.default !== undefined) input.value = String(f.default);
      }
      input.name = f.name;
      inputs.push([f, input]);
      parts.push(el("label", { class: "field" }, (f.title || f.name) + (f.required ? " *" : ""), input,
        f.description ? el("span", { class: "hint" }, f.description) : null));
    }
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
    accept.addEventListener("click", () => answer(accept.closest(".dialog"), "api/elicitation", { id: m.id, action: "accept", content: collect() }));
    decline.addEventListener("click", () => answer(decline.closest(".dialog"), "api/elicitation", { id: m.id, action: "decline" }));
    cancel.addEventListener("click", () => answer(cancel.closest(".dialog"), "api/elicitation", { id: m.id, action: "cancel" }));
    parts.push(el("div", { class: "options" }, el("div", { class: "option" }, accept, decline, cancel)));
    return parts;
  }

  // --- controls ---

  $("promptform").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("prompt").value;
    if (!text.trim() || state.running) return;
    if (await post("api/prompt", { text })) $("prompt").value = "";
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("promptform").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => post("api/stop", {}));
  $("planmode").addEventListener("change", (e) => post("api/planmode", { on: e.target.checked }));
  $("mode").addEventListener("change", (e) => post("api/mode", { id: e.target.value }));
  document.addEventListener("keydown", (e) => {
    // Escape stops the turn, as in editors' agent panels (not while editing a proposal).
    if (e.key === "Escape" && state.running && !e.target.closest(".dialog")) post("api/stop", {});
  });

  // --- the event stream ---

  function connect() {
    const es = new EventSource("events");
    const conn = $("conn");
    es.onopen = () => { conn.textContent = "connected"; conn.className = "badge"; };
    es.onerror = () => { conn.textContent = "reconnecting…"; conn.className = "badge off"; };
    es.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch (_) { return; }
      const h = handlers[m.type];
      if (h) h(m);
    };
  }
  connect();
})();
