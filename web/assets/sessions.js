// sessions: the panel of recorded sessions (resume one, open a new one,
// in a new worktree of its own where the server offers them).

import { $, el } from "./dom.js";
import { get, post } from "./api.js";
import { state } from "./state.js";

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
      el("span", { class: "muted" }, [x.title ? x.label : "", x.branch ? "worktree " + x.branch : "", x.mode ? "mode " + x.mode : "", when(x.lastUsed)].filter(Boolean).join(" · ")));
  }));
}

// refreshSessions lists the sessions again if the panel is open.
export function refreshSessions() {
  if (!$("sessions").hidden) loadSessions();
}

// showSessions shows the state message m on the panel's buttons: none
// while a turn runs or a session is being opened.
export function showSessions(m) {
  $("newsession").disabled = m.running || m.switching;
  $("wtform").hidden = !m.worktrees;
  if (!m.worktrees) $("wtcheck").checked = false;
  for (const b of document.querySelectorAll("#sessionlist button")) b.disabled = m.running || m.switching || b.dataset.current === "1";
}

$("sessionsbtn").addEventListener("click", () => {
  const p = $("sessions");
  p.hidden = !p.hidden;
  $("sessionsbtn").setAttribute("aria-expanded", String(!p.hidden));
  if (!p.hidden) loadSessions();
});
$("wtcheck").addEventListener("change", () => { $("wtname").disabled = !$("wtcheck").checked; });
// New session: in a new worktree (named, or the server picks a name) when
// the box is ticked.
$("newsession").addEventListener("click", async () => {
  const body = $("wtcheck").checked ? { worktree: true, name: $("wtname").value.trim() } : {};
  if (await post("api/session/new", body)) {
    $("wtcheck").checked = false;
    $("wtname").value = "";
    $("wtname").disabled = true;
  }
});
