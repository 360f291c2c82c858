// acphost web: the page. Plain JavaScript, no dependency, no build step.
//
// Everything the agent sends is inserted as text nodes (or as a form
// control's value), never as HTML: the server has already passed it through
// acphost.SafeText, and this file never touches innerHTML, outerHTML,
// insertAdjacentHTML, document.write or eval. Keep it that way. The agent's
// messages are Markdown, rendered by the small renderer below, which builds
// elements one by one (paragraphs, headings, emphasis, code, lists, quotes,
// links) and puts every character of the agent's into a text node; a link
// is made only for an absolute http or https address.
//
// The token: the printed URL carries it in its fragment (#token=…, which
// no server sees), or in a ?token= query. The script reads it, keeps it in
// sessionStorage (this tab, this origin and port only: a reload goes on
// working) and removes it from the address bar; it is sent in an
// Authorization header with every request, the event stream included
// (read with fetch: an EventSource cannot send a header). No cookie.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  const tokenKey = "acphost-token";
  const token = (() => {
    const fromURL = new URLSearchParams(location.hash.slice(1)).get("token") || new URLSearchParams(location.search).get("token");
    if (fromURL) {
      try { sessionStorage.setItem(tokenKey, fromURL); } catch (_) { /* storage off: this load only */ }
      history.replaceState(history.state, "", location.pathname);
      return fromURL;
    }
    try { return sessionStorage.getItem(tokenKey) || ""; } catch (_) { return ""; }
  })();
  const auth = (headers) => Object.assign({ Authorization: "Bearer " + token }, headers || {});
  const noToken = "This page needs the token: open the URL acphost printed (the whole of it, with its #token=…).";

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

  // post sends a JSON command; a refusal is shown (unless refused, given
  // its status and body, takes it and returns true), not thrown.
  async function post(path, body, refused) {
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: auth({ "Content-Type": "application/json" }),
        body: JSON.stringify(body || {}),
        credentials: "omit",
      });
      if (!r.ok) {
        const text = (await r.text()).trim();
        if (refused && refused(r.status, text)) showError("");
        else showError(path + ": " + text);
        return null;
      }
      showError("");
      return await r.json();
    } catch (e) {
      showError(path + ": " + e);
      return null;
    }
  }


  // --- Markdown ---
  //
  // The subset agents write: paragraphs, ATX headings, emphasis (*, _, **,
  // __, ~~), code spans, fenced code blocks, lists (nested by indentation),
  // block quotes, rules, links [text](url), <url> and bare http(s) URLs.
  // HTML in the text stays text; a link whose target is not an absolute
  // http: or https: URL (javascript:, data:, a relative path to this
  // server's API) is left as the text it was written as. Images are never
  // loaded. Nesting is bounded, a delimiter with no closer is not searched
  // for again, a bracket's closer found is kept for the brackets before
  // it, and no line is matched by a pattern that can backtrack (headings
  // and list items are read by hand): rendering is linear in the text. A
  // block longer than plainAbove is shown as plain text, not parsed.

  const mdDepth = 8;
  const plainAbove = 64 << 10;
  const maxTicks = 32; // a longer run of backticks is text

  function safeHref(raw) {
    let u;
    try { u = new URL(raw); } catch (_) { return null; }
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  }

  function link(href, children) {
    const a = el("a", { href, rel: "noopener noreferrer", target: "_blank", title: href }, ...children);
    return a;
  }

  const isSpace = (c) => c === undefined || /\s/.test(c);
  const isWord = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

  // closer finds the delimiter d closing an emphasis opened before from.
  function closer(s, d, from) {
    const c = d[0];
    for (let k = s.indexOf(d, from + 1); k >= 0; k = s.indexOf(d, k + 1)) {
      if (isSpace(s[k - 1])) continue;
      if (d.length === 1 && (s[k + 1] === c || s[k - 1] === c)) continue;
      if (c === "_" && isWord(s[k + d.length])) continue;
      return k;
    }
    return -1;
  }

  // codeRun finds a run of exactly n backticks from i.
  function codeRun(s, n, i) {
    const ticks = "`".repeat(n);
    for (let k = s.indexOf(ticks, i); k >= 0; k = s.indexOf(ticks, k + 1)) {
      let e = k + n;
      if (s[e] !== "`" && s[k - 1] !== "`") return k;
      while (s[e] === "`") e++;
      k = e - 1;
    }
    return -1;
  }

  function mdInline(s, depth) {
    const out = [];
    let text = "";
    const push = (node) => {
      if (text) { out.push(document.createTextNode(text)); text = ""; }
      out.push(node);
    };
    const none = new Set(); // delimiters with no closer further on
    let closeAt = -1, parenAt = -1; // the next "]" and ")" found, for the brackets before them
    let i = 0;
    while (i < s.length) {
      const c = s[i];
      if (c === "\\" && i + 1 < s.length && /[!-/:-@[-`{-~]/.test(s[i + 1])) {
        text += s[i + 1];
        i += 2;
        continue;
      }
      if (c === "`") {
        let n = 1;
        while (s[i + n] === "`") n++;
        const key = "`" + n;
        const j = none.has(key) || n > maxTicks ? -1 : codeRun(s, n, i + n);
        if (j < 0) {
          none.add(key);
          text += "`".repeat(n);
          i += n;
          continue;
        }
        let code = s.slice(i + n, j).replace(/\n/g, " ");
        if (code.length > 2 && code[0] === " " && code[code.length - 1] === " ") code = code.slice(1, -1);
        push(el("code", {}, code));
        i = j + n;
        continue;
      }
      if ((c === "*" || c === "_" || c === "~") && depth < mdDepth) {
        const d = s[i + 1] === c ? c + c : c;
        const open = i + d.length;
        if ((c === "~" && d.length === 1) || isSpace(s[open]) || (c === "_" && isWord(s[i - 1])) || none.has(d)) {
          text += d;
          i += d.length;
          continue;
        }
        const j = closer(s, d, open);
        if (j < 0) {
          none.add(d);
          text += d;
          i += d.length;
          continue;
        }
        const tag = d.length === 1 ? "em" : c === "~" ? "del" : "strong";
        push(el(tag, {}, ...mdInline(s.slice(open, j), depth + 1)));
        i = j + d.length;
        continue;
      }
      if (c === "[" && depth < mdDepth && !none.has("]")) {
        if (closeAt <= i) closeAt = s.indexOf("]", i + 1);
        const close = closeAt;
        if (close < 0) none.add("]");
        let end = -1;
        if (close > 0 && s[close + 1] === "(" && !none.has(")")) {
          if (parenAt < close + 2) parenAt = s.indexOf(")", close + 2);
          if (parenAt < 0) none.add(")");
          end = parenAt;
        }
        if (end > 0) {
          let target = s.slice(close + 2, end).trim();
          const sp = target.search(/\s/);
          if (sp > 0) target = target.slice(0, sp); // a "title" after the address
          if (target.startsWith("<") && target.endsWith(">")) target = target.slice(1, -1);
          const href = s[i - 1] === "!" ? null : safeHref(target); // ![image](…) stays text
          if (href) push(link(href, mdInline(s.slice(i + 1, close), depth + 1)));
          else text += s.slice(i, end + 1); // not a link: as written, inert
          i = end + 1;
          continue;
        }
      }
      if (c === "<" || (c === "h" && !isWord(s[i - 1]) && (s.startsWith("http://", i) || s.startsWith("https://", i)))) {
        const m = c === "<" ? /^<(https?:\/\/[^\s<>]+)>/.exec(s.slice(i, i + 2048))
          : /^https?:\/\/[^\s<>]*[^\s<>.,;:!?'")\]*_~]/.exec(s.slice(i, i + 2048));
        const href = m && safeHref(c === "<" ? m[1] : m[0]);
        if (href) {
          push(link(href, [c === "<" ? m[1] : m[0]]));
          i += m[0].length;
          continue;
        }
      }
      text += c;
      i++;
    }
    if (text) out.push(document.createTextNode(text));
    return out;
  }

  // indentOf counts the (up to three) spaces a block line may start with.
  function indentOf(line) {
    let i = 0;
    while (i < 3 && line[i] === " ") i++;
    return i;
  }

  // listItem reads a list item's line: [line, indent, marker, text after
  // the marker's space] (text undefined with nothing after the marker),
  // or null.
  function listItem(line) {
    const i = indentOf(line);
    let j = i;
    if (line[j] === "-" || line[j] === "*" || line[j] === "+") {
      j++;
    } else {
      while (j < i + 9 && line[j] >= "0" && line[j] <= "9") j++;
      if (j === i || (line[j] !== "." && line[j] !== ")")) return null;
      j++;
    }
    const marker = line.slice(i, j);
    if (j === line.length) return [line, line.slice(0, i), marker, undefined];
    if (!isSpace(line[j])) return null;
    return [line, line.slice(0, i), marker, line.slice(j).trimStart()];
  }

  // heading reads an ATX heading's line: [level, text], or null. The
  // text loses its closing run of #s (one after a space).
  function heading(line) {
    const i = indentOf(line);
    let n = 0;
    while (line[i + n] === "#") n++;
    if (n < 1 || n > 6 || !isSpace(line[i + n]) || i + n === line.length) return null;
    let t = line.slice(i + n).trim();
    let e = t.length;
    while (e > 0 && t[e - 1] === "#") e--;
    if (e < t.length && (e === 0 || isSpace(t[e - 1]))) t = t.slice(0, e).trimEnd();
    return [n, t];
  }
  const fenceOpen = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;

  function mdList(lines, i, depth) {
    const first = listItem(lines[i]);
    const base = first[1].length; // the items' indentation
    const ordered = /\d/.test(first[2]);
    const list = el(ordered ? "ol" : "ul");
    if (ordered && parseInt(first[2], 10) !== 1) list.start = parseInt(first[2], 10);
    const inside = (l) => l.length - l.trimStart().length > base + 1;
    for (let m = first; m; m = i < lines.length ? listItem(lines[i]) : null) {
      if (m !== first && (inside(lines[i]) || /\d/.test(m[2]) !== ordered)) break;
      const body = [m[3] || ""];
      i++; // always: the item's own line
      while (i < lines.length) {
        const l = lines[i];
        if (/^\s*$/.test(l)) {
          if (i + 1 < lines.length && inside(lines[i + 1])) { body.push(""); i++; continue; }
          break;
        }
        if (!inside(l) && (listItem(l) || fenceOpen.test(l) || /^ {0,3}(#|>)/.test(l))) break;
        body.push(l.slice(Math.min(l.length - l.trimStart().length, base + 2)));
        i++;
      }
      const blocks = depth < mdDepth ? mdBlocks(body.join("\n"), depth + 1) : [document.createTextNode(body.join("\n"))];
      if (blocks.length && blocks[0].tagName === "P") blocks.splice(0, 1, ...blocks[0].childNodes); // a tight item
      list.append(el("li", {}, ...blocks));
    }
    return [list, i];
  }

  function mdBlocks(text, depth) {
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let para = [];
    const flush = () => {
      if (para.length) out.push(el("p", {}, ...mdInline(para.join("\n"), depth)));
      para = [];
    };
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if ((m = fenceOpen.exec(line))) {
        flush();
        const fence = m[1];
        const body = [];
        for (i++; i < lines.length; i++) {
          const t = lines[i].trim();
          if (t.length >= fence.length && t === fence[0].repeat(t.length)) { i++; break; }
          body.push(lines[i]);
        }
        const code = el("code", {}, body.join("\n"));
        if (m[2]) code.dataset.lang = m[2];
        out.push(el("pre", { class: "code" }, code));
        continue;
      }
      if (/^\s*$/.test(line)) { flush(); i++; continue; }
      if ((m = heading(line))) {
        flush();
        out.push(el("h" + Math.min(6, m[0] + 2), {}, ...mdInline(m[1], depth)));
        i++;
        continue;
      }
      if (/^ {0,3}([-*_])(?:\s*\1){2,}\s*$/.test(line)) { flush(); out.push(el("hr")); i++; continue; }
      if (/^ {0,3}>/.test(line)) {
        flush();
        const q = [];
        while (i < lines.length && (m = /^ {0,3}> ?(.*)$/.exec(lines[i]))) { q.push(m[1]); i++; }
        out.push(el("blockquote", {}, ...(depth < mdDepth ? mdBlocks(q.join("\n"), depth + 1) : [q.join("\n")])));
        continue;
      }
      if ((m = listItem(line)) && m[3] !== undefined && (para.length === 0 || !/\d/.test(m[2]) || m[2].startsWith("1"))) {
        flush();
        const [list, next] = mdList(lines, i, depth);
        out.push(list);
        i = next;
        continue;
      }
      para.push(line);
      i++;
    }
    flush();
    return out;
  }

  // blockNodes renders one block of a message: Markdown, or plain text
  // above plainAbove.
  function blockNodes(text) {
    return text.length > plainAbove ? [el("p", { class: "plain" }, text)] : mdBlocks(text, 0);
  }

  // Agent messages stream in pieces, rendered shortly after the last one
  // (and at once before anything else is shown), incrementally: what text
  // still to come cannot change (up to a blank line outside a code fence
  // that a line starting in column 0 follows) is rendered once, and only
  // the rest of the message again. Each line is looked at once.
  const dirty = new Set();
  let renderTimer = 0;
  function renderDirty() {
    clearTimeout(renderTimer);
    renderTimer = 0;
    const stick = atBottom();
    for (const b of dirty) renderStreamed(b);
    dirty.clear();
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  // A streamed message b: raw (its text so far), settled (the length
  // rendered for good), scan (the next line to look at), fence (the code
  // fence open there), blank (the line before it was blank), tail (the
  // nodes of the rest).
  function renderStreamed(b) {
    for (const n of b.tail) n.remove();
    const raw = b.raw;
    for (let nl = raw.indexOf("\n", b.scan); nl >= 0; nl = raw.indexOf("\n", b.scan)) {
      const start = b.scan;
      const line = raw.slice(start, nl);
      b.scan = nl + 1;
      const blank = /^\s*$/.test(line);
      if (!b.fence && !blank && b.blank && !isSpace(line[0]) && start > b.settled) {
        b.node.append(...blockNodes(raw.slice(b.settled, start)));
        b.settled = start;
      }
      if (b.fence) {
        const t = line.trim();
        if (t.length >= b.fence.length && t === b.fence[0].repeat(t.length)) b.fence = "";
      } else if (!blank) {
        const m = fenceOpen.exec(line);
        if (m) b.fence = m[1];
      }
      b.blank = !b.fence && blank;
    }
    b.tail = blockNodes(raw.slice(b.settled));
    b.node.append(...b.tail);
  }

  // --- transcript ---

  // replayed marks history a loaded session replayed: shown dimmed.
  function replayed(node, m) {
    if (m.replay) node.classList.add("replay");
    return node;
  }

  function delta(m) {
    if (!current || current.turn !== m.turn || current.kind !== m.type) {
      if (m.type === "thought") {
        const body = el("div");
        const d = el("details", { class: "thought" }, el("summary", {}, "thinking"), body);
        append(replayed(d, m));
        current = { turn: m.turn, kind: m.type, node: body };
      } else {
        current = { turn: m.turn, kind: m.type, node: append(replayed(el("div", { class: "text md" }), m)),
          raw: "", settled: 0, scan: 0, fence: "", blank: false, tail: [] };
      }
    }
    if (m.type === "thought") {
      const stick = atBottom();
      current.node.append(document.createTextNode(m.delta));
      if (stick) transcript.scrollTop = transcript.scrollHeight;
      return;
    }
    current.raw += m.delta;
    dirty.add(current);
    if (!renderTimer) renderTimer = setTimeout(renderDirty, 30);
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
    return el("div", { class: "diffblock", "data-path": c.path || "" }, el("div", { class: "locations" }, (c.path || "") + "  +" + (c.added || 0) + " −" + (c.removed || 0)), pre);
  }

  // A tool's text output: Markdown (agents fence command output), plain
  // above plainAbove as every block is.
  function contentBlock(c) {
    if (c.type === "diff") return diffBlock(c);
    const text = c.text || "";
    if (text.includes("```") || text.includes("~~~")) return el("div", { class: "md tooltext" }, ...blockNodes(text));
    return el("pre", {}, text);
  }

  // toolBody shows a tool call; a dialog whose heading already names it
  // (heading) does not repeat its title.
  function toolBody(t, withStatus, heading) {
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

  function tool(m) {
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

  function plan(m) {
    const ul = el("ul", { class: "plan" });
    for (const e of m.entries) ul.append(el("li", { class: e.status }, e.content));
    append(replayed(el("div", { class: "card planbox" }, el("div", { class: "kind" }, "plan"), ul), m));
    current = null;
  }

  // write shows what an amended write put on disk, and marks the agent's
  // version of it in this turn's tool cards as not what landed.
  let amended = new Set(); // "turn/path" of the writes amended
  function markSuperseded(card) {
    for (const b of card.querySelectorAll(".diffblock")) {
      if (!amended.has(card.dataset.turn + "/" + b.dataset.path) || b.classList.contains("superseded")) continue;
      b.classList.add("superseded");
      b.prepend(el("div", { class: "note" }, "the agent's version: amended before it was applied (see below)"));
    }
  }
  function write(m) {
    amended.add(m.turn + "/" + m.diff.path);
    for (const card of transcript.querySelectorAll(".card.tool")) markSuperseded(card);
    append(replayed(el("div", { class: "card write" }, el("div", { class: "head" }, el("span", { class: "title" }, "written, as amended"), el("span", { class: "kind" }, "edit")),
      diffBlock(m.diff)), m));
    current = null;
  }

  const handlers = {
    write,
    reset(m) {
      dirty.clear();
      transcript.replaceChildren();
      $("usage").textContent = "";
      dialogs.replaceChildren();
      open.clear();
      tools = new Map();
      amended = new Set();
      current = null;
      $("agent").title = [m.agent.name, m.agent.version].filter(Boolean).join(" ");
      $("agent").textContent = [(m.agent.name || "").replace(/^@[^/]+\//, ""), m.agent.version].filter(Boolean).join(" "); // the npm scope in the title only
      if (m.dropped) append(el("div", { class: "note" }, m.dropped + " earlier messages are no longer kept"));
      if (!$("sessions").hidden) loadSessions();
    },
    user(m) {
      const last = transcript.lastElementChild;
      if (current && current.kind === "user" && current.turn === m.turn && last === current.node) {
        last.append(document.createTextNode(m.text)); // the next piece of the prompt
        return;
      }
      current = { turn: m.turn, kind: "user", node: append(replayed(el("div", { class: "user" }, m.text), m)) };
    },
    text: delta,
    thought: delta,
    tool,
    plan,
    usage(m) {
      const u = $("usage");
      let s = "context " + tokens(m.used) + " / " + tokens(m.size) + " tokens";
      if (m.size > 0) s += " (" + Math.round((100 * m.used) / m.size) + "%)";
      if (m.currency) s += " · " + money(m.cost, m.currency);
      u.textContent = s;
      u.title = m.used + " of " + m.size + " tokens of the context window used" + (m.currency ? "; cost so far " + m.cost + " " + m.currency : "");
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

  // tokens shortens a count: 1234 → 1.2k.
  function tokens(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1).replace(/\.0$/, "") + "M";
    if (n >= 1e3) return (n / 1e3).toFixed(1).replace(/\.0$/, "") + "k";
    return String(n);
  }

  function money(amount, currency) {
    try {
      return new Intl.NumberFormat(undefined, { style: "currency", currency, maximumFractionDigits: 4 }).format(amount);
    } catch (_) {
      return amount.toFixed(4) + " " + currency; // not an ISO 4217 code
    }
  }

  function setState(m) {
    state = m;
    $("session").textContent = m.session.title || m.session.id;
    $("session").title = "session " + m.session.id;
    $("policy").textContent = [(m.permission ? "permission: " + m.permission : "") + (m.holds ? " (" + m.holds + ")" : ""), m.containment ? "containment: " + m.containment : ""].filter(Boolean).join(" · ");
    $("newsession").disabled = m.running || m.switching;
    const st = $("status");
    st.textContent = m.running ? "running" : "idle";
    st.className = "badge" + (m.running ? " running" : "");
    $("stop").disabled = !m.running;
    $("send").disabled = m.switching;
    $("send").textContent = m.running ? "Queue" : "Send";
    for (const b of document.querySelectorAll("#sessionlist button")) b.disabled = m.running || m.switching || b.dataset.current === "1";
    $("planmode").checked = m.planMode;
    sendQueued();
    const ae = $("agenterror");
    ae.hidden = !m.agentError;
    ae.textContent = m.agentError ? "agent ended: " + m.agentError : "";

    const sel = $("mode");
    $("modewrap").hidden = m.modes.length === 0;
    sel.replaceChildren(...m.modes.map((o) => {
      const opt = el("option", { title: o.description }, o.name);
      opt.value = o.value;
      return opt;
    }));
    sel.value = m.mode;

    // The selects in the header; the switches in a menu beside them, so
    // that the header keeps to one line.
    const switches = m.config.filter((c) => c.type === "boolean").map((c) => {
      const box = el("input", { type: "checkbox" });
      box.checked = c.value === true;
      box.addEventListener("change", () => post("api/config", { id: c.id, value: box.checked }));
      return el("label", { title: c.description }, box, " " + c.name);
    });
    $("more").hidden = switches.length === 0;
    $("morelist").replaceChildren(...switches);
    const cfg = $("config");
    cfg.replaceChildren(...m.config.filter((c) => c.type !== "boolean").map((c) => {
      const s = el("select");
      for (const o of c.options) {
        const opt = el("option", { title: o.description }, o.name);
        opt.value = o.value;
        s.append(opt);
      }
      s.value = c.value;
      s.addEventListener("change", () => post("api/config", { id: c.id, value: s.value }));
      s.title = c.name + ": " + ((c.options.find((o) => o.value === c.value) || {}).name || "");
      return el("label", { title: c.description }, el("span", { class: "lbl" }, c.name), s);
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

  // A dialog must not be answered by what was meant for something else: it
  // never takes the keyboard focus from where the person types (no button
  // of it is focused by default), its buttons ignore clicks for inertMs
  // after it appears (a click aimed at what was there before), and a click
  // made with the keyboard counts only if its key went down after the
  // dialog appeared (a key held or pressed before it, in the prompt).
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

  function openDialog(m) {
    if (open.has(m.id)) return;
    let body;
    if (m.kind === "permission") body = permissionDialog(m);
    else if (m.kind === "proposal") body = proposalDialog(m);
    else if (m.kind === "elicitation") body = elicitationDialog(m);
    else return;
    const d = el("div", { class: "dialog inert " + m.kind, role: "dialog", tabindex: "-1", "data-dialog": m.id }, el("span", { class: "queue" }), ...body);
    open.set(m.id, d);
    const shown = performance.now();
    shownAt.set(d, shown);
    const stick = atBottom();
    dialogs.append(d);
    renumber();
    // The dialog takes room from the transcript: the turn that asked stays
    // in view (the end of it, and the tool card the request is about).
    if (stick) transcript.scrollTop = transcript.scrollHeight;
    const asker = m.permission && m.permission.tool ? [...transcript.querySelectorAll(".card.tool")].find((c) => c.dataset.tool === m.permission.tool.id) : null;
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

  function closeDialog(id) {
    const d = open.get(id);
    if (!d) return;
    open.delete(id);
    const stick = atBottom();
    d.remove();
    renumber();
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  // busy disables a dialog's buttons while its answer is sent; a refusal
  // enables them again.
  async function answer(d, path, body, refused) {
    const buttons = [...d.querySelectorAll("button")];
    buttons.forEach((b) => (b.disabled = true));
    const r = await post(path, body, refused);
    if (!r) buttons.forEach((b) => (b.disabled = false));
  }

  function permissionDialog(m) {
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

  // --- controls ---

  // A prompt sent while a turn runs is queued, as the terminal does: shown
  // under the prompt (each can be taken back), and sent, oldest first, once
  // the turn has ended.
  const queue = [];
  let launching = false;
  function showQueue() {
    $("queue").replaceChildren(...queue.map((text, i) => {
      const x = el("button", { type: "button", class: "unqueue", title: "take it back", "aria-label": "take back queued prompt " + (i + 1) }, "×");
      x.addEventListener("click", () => {
        queue.splice(i, 1);
        showQueue();
        if ($("prompt").value === "") $("prompt").value = text;
      });
      return el("li", {}, el("span", { class: "muted" }, "queued: "), el("span", { class: "qtext" }, text), x);
    }));
  }
  async function sendQueued() {
    if (launching || state.running || state.switching || !queue.length) return;
    launching = true;
    const text = queue.shift();
    showQueue();
    const ok = await post("api/prompt", { text }, (status) => status === 409);
    launching = false;
    if (!ok) {
      queue.unshift(text); // another tab's turn began first: after it
      showQueue();
    }
  }
  $("promptform").addEventListener("submit", async (e) => {
    e.preventDefault();
    const p = $("prompt");
    const text = p.value;
    if (!text.trim() || state.switching) return;
    p.value = ""; // now: what the person types next is the next prompt
    if (state.running || launching || queue.length) {
      queue.push(text);
      showQueue();
      sendQueued();
      return;
    }
    launching = true;
    const ok = await post("api/prompt", { text });
    launching = false;
    if (!ok && p.value === "") p.value = text;
    sendQueued();
  });
  // The Enter that sends: its line break is not typed into the prompt
  // emptied for the next one (a browser driven over DevTools types it even
  // though the keydown was cancelled).
  let sending = false;
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      sending = true;
      $("promptform").requestSubmit();
    }
  });
  $("prompt").addEventListener("keyup", (e) => { if (e.key === "Enter") sending = false; });
  $("prompt").addEventListener("beforeinput", (e) => {
    if (sending && (e.inputType === "insertLineBreak" || e.inputType === "insertParagraph")) e.preventDefault();
  });
  $("stop").addEventListener("click", () => post("api/stop", {}));
  $("planmode").addEventListener("change", (e) => post("api/planmode", { on: e.target.checked }));
  $("mode").addEventListener("change", (e) => {
    if (state.modeOption) post("api/config", { id: state.modeOption, value: e.target.value });
    else post("api/mode", { id: e.target.value });
  });
  document.addEventListener("keydown", (e) => {
    // Escape stops the turn, as in editors' agent panels (not while editing a proposal).
    if (e.key === "Escape" && state.running && !e.target.closest(".dialog")) post("api/stop", {});
  });


  // --- sessions ---

  async function get(path) {
    try {
      const r = await fetch(path, { headers: auth(), credentials: "omit" });
      if (!r.ok) { showError(path + ": " + (await r.text()).trim()); return null; }
      return await r.json();
    } catch (e) {
      showError(path + ": " + e);
      return null;
    }
  }

  function when(t) {
    const d = new Date(t);
    return isNaN(d) ? "" : d.toLocaleString();
  }

  async function loadSessions() {
    const l = await get("api/sessions");
    if (!l) return;
    const list = $("sessionlist");
    const note = $("sessionnote");
    if (!l.recording) note.textContent = "Sessions are not recorded here.";
    else if (!l.canLoad && !l.canResume) note.textContent = "This agent can neither load nor resume a session.";
    else if (l.sessions.length === 0) note.textContent = "No session of this agent recorded in this directory yet.";
    else note.textContent = l.error || "";
    list.replaceChildren(...l.sessions.map((x) => {
      const b = el("button", { type: "button", class: "resume", "data-session": x.id, "data-current": x.current ? "1" : "0" }, x.current ? "current" : "Resume");
      b.disabled = x.current || state.running || state.switching || (!l.canLoad && !l.canResume);
      b.addEventListener("click", async () => {
        b.disabled = true;
        b.textContent = "opening…";
        if (!(await post("api/session/resume", { id: x.id }))) b.textContent = "Resume";
      });
      return el("li", { class: x.current ? "current" : "" }, b,
        el("span", { class: "stitle" }, x.title || x.label),
        el("span", { class: "muted" }, [x.title ? x.label : "", x.mode ? "mode " + x.mode : "", when(x.lastUsed)].filter(Boolean).join(" · ")));
    }));
  }

  $("sessionsbtn").addEventListener("click", () => {
    const p = $("sessions");
    p.hidden = !p.hidden;
    $("sessionsbtn").setAttribute("aria-expanded", String(!p.hidden));
    if (!p.hidden) loadSessions();
  });
  $("newsession").addEventListener("click", () => post("api/session/new", {}));

  // --- the event stream ---
  //
  // Server-Sent Events read with fetch, so that the request carries the
  // token's header; on an error or the end of the stream it connects
  // again (the server replays the transcript from a reset).

  function dispatch(data) {
    let m;
    try { m = JSON.parse(data); } catch (_) { return; }
    if (m.type !== "text" && dirty.size) renderDirty();
    const h = handlers[m.type];
    if (h) h(m);
  }

  async function connect() {
    const conn = $("conn");
    const down = (text) => { conn.textContent = text; conn.className = "badge off"; };
    if (!token) { down("no token"); showError(noToken); return; }
    for (let failures = 0; ; failures++) {
      try {
        const r = await fetch("events", { headers: auth({ Accept: "text/event-stream" }), cache: "no-store", credentials: "omit" });
        if (r.status === 401) { down("not authorized"); showError(noToken); return; }
        if (!r.ok || !r.body) throw new Error("events: " + r.status);
        conn.textContent = "connected";
        conn.className = "badge";
        failures = 0;
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "", from = 0, data = [];
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let nl;
          while ((nl = buf.indexOf("\n", from)) >= 0) {
            let line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            from = 0;
            if (line.endsWith("\r")) line = line.slice(0, -1);
            if (line === "") {
              if (data.length) dispatch(data.join("\n"));
              data = [];
            } else if (line.startsWith("data:")) {
              data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
            } // a comment (keepalive) or another field: nothing to do
          }
          from = buf.length;
        }
      } catch (_) {
        // connect again below
      }
      down("reconnecting…");
      await new Promise((res) => setTimeout(res, Math.min(5000, 250 * 2 ** Math.min(failures, 5))));
    }
  }
  connect();
})();
