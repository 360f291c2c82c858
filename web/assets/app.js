// acphost web: the page's entry module. Plain JavaScript in native ES
// modules (each file named after what it shows or does), no dependency, no
// build step; the server embeds them and serves each one as it is.
//
// Everything the agent sends is inserted as text nodes (or as a form
// control's value), never as HTML: the server has already passed it through
// acphost.SafeText, and no module touches innerHTML, outerHTML,
// insertAdjacentHTML, document.write or eval, nor imports anything but
// another module of the page (a test of the web package checks every
// module it serves). Keep it that way.
//
// This module maps each message of the event stream (events.js) to the
// modules that show it.

import { connect } from "./events.js";
import { setState } from "./state.js";
import * as transcript from "./transcript.js";
import { showAgent, showHeader, usage } from "./header.js";
import { showModes } from "./modes.js";
import { showPrompt } from "./prompt.js";
import { refreshSessions, showSessions } from "./sessions.js";
import { clearDialogs, closeDialog, openDialog, renumber } from "./dialogs.js";
import { permissionDialog } from "./permission.js";
import { proposalDialog } from "./proposal.js";
import { elicitationDialog } from "./elicitation.js";

const dialogBodies = { permission: permissionDialog, proposal: proposalDialog, elicitation: elicitationDialog };

const handlers = {
  reset(m) {
    clearDialogs();
    transcript.clear(m.dropped);
    showAgent(m.agent);
    refreshSessions();
  },
  user: transcript.user,
  text: transcript.delta,
  thought: transcript.delta,
  tool: transcript.tool,
  plan: transcript.plan,
  write: transcript.write,
  note: transcript.note,
  done: transcript.done,
  error: transcript.failed,
  usage,
  state(m) {
    setState(m);
    showHeader(m);
    showSessions(m);
    showPrompt(m);
    showModes(m);
    renumber();
  },
  dialog(m) {
    if (Object.hasOwn(dialogBodies, m.kind)) openDialog(m, dialogBodies[m.kind]);
  },
  dialog_close(m) { closeDialog(m.id); },
};

connect((m) => {
  // Text waiting to be rendered is shown before anything else is.
  if (m.type !== "text") transcript.flush();
  if (Object.hasOwn(handlers, m.type)) handlers[m.type](m);
});
