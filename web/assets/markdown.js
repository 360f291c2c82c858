// markdown: the agent's messages, rendered as DOM nodes.
//
// The subset agents write: paragraphs, ATX headings, emphasis (*, _, **,
// __, ~~), code spans, fenced code blocks, lists (nested by indentation),
// block quotes, rules, links [text](url), <url> and bare http(s) URLs.
// Elements are built one by one and every character of the agent's goes
// into a text node: HTML in the text stays text; a link whose target is
// not an absolute http: or https: URL (javascript:, data:, a relative path
// to this server's API) is left as the text it was written as. Images are
// never loaded. Nesting is bounded, a delimiter with no closer is not
// searched for again, a bracket's closer found is kept for the brackets
// before it, and no line is matched by a pattern that can backtrack
// (headings and list items are read by hand): rendering is linear in the
// text. A block longer than plainAbove is shown as plain text, not parsed.

import { el } from "./dom.js";

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
export function blockNodes(text) {
  return text.length > plainAbove ? [el("p", { class: "plain" }, text)] : mdBlocks(text, 0);
}

// A message that streams in pieces is rendered incrementally: what text
// still to come cannot change (up to a blank line outside a code fence
// that a line starting in column 0 follows) is rendered once, and only
// the rest of the message again. Each line is looked at once.

// streamed is a streamed message rendered into node: raw (its text so
// far), settled (the length rendered for good), scan (the next line to
// look at), fence (the code fence open there), blank (the line before it
// was blank), tail (the nodes of the rest).
export function streamed(node) {
  return { node, raw: "", settled: 0, scan: 0, fence: "", blank: false, tail: [] };
}

// renderStreamed renders what b.raw gained since the last call.
export function renderStreamed(b) {
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
