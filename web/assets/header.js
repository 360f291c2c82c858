// header: what the page's header says of the agent and the session (the
// agent's name, the context used, the running badge, the permission
// policy and containment, the session's name and worktree branch, an
// agent that ended) and
// the plan-mode switch. The mode picker and the agent's options are
// modes.js's.

import { $ } from "./dom.js";
import { post } from "./api.js";

// showAgent names the agent (a new connection: the usage is not known yet).
export function showAgent(agent) {
  $("usage").textContent = "";
  $("agent").title = [agent.name, agent.version].filter(Boolean).join(" ");
  $("agent").textContent = [(agent.name || "").replace(/^@[^/]+\//, ""), agent.version].filter(Boolean).join(" "); // the npm scope in the title only
}

// usage shows the context window used, and the cost when the agent says.
export function usage(m) {
  const u = $("usage");
  let s = "context " + tokens(m.used) + " / " + tokens(m.size) + " tokens";
  if (m.size > 0) s += " (" + Math.round((100 * m.used) / m.size) + "%)";
  if (m.currency) s += " · " + money(m.cost, m.currency);
  u.textContent = s;
  u.title = m.used + " of " + m.size + " tokens of the context window used" + (m.currency ? "; cost so far " + m.cost + " " + m.currency : "");
}

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

// showHeader shows the state message m.
export function showHeader(m) {
  $("session").textContent = m.session.title || m.session.id;
  $("session").title = "session " + m.session.id;
  const wt = $("worktree");
  wt.hidden = !m.session.branch;
  wt.textContent = m.session.branch ? "worktree " + m.session.branch : "";
  wt.title = m.session.branch ? "this session runs in the worktree " + m.session.dir + " (branch " + m.session.branch + ")" : "";
  $("policy").textContent = [(m.permission ? "permission: " + m.permission : "") + (m.holds ? " (" + m.holds + ")" : ""), m.containment ? "containment: " + m.containment : ""].filter(Boolean).join(" · ");
  $("policy").title = $("policy").textContent; // the whole of it, where the header cuts it short
  const st = $("status");
  st.textContent = m.running ? "running" : "idle";
  st.className = "badge" + (m.running ? " running" : "");
  $("planmode").checked = m.planMode;
  const ae = $("agenterror");
  ae.hidden = !m.agentError;
  ae.textContent = m.agentError ? "agent ended: " + m.agentError : "";
}

$("planmode").addEventListener("change", (e) => post("api/planmode", { on: e.target.checked }));
