// prompt: the prompt box, its queue, and the stop button.
//
// A prompt sent while a turn runs is queued, as the terminal does: shown
// under the prompt (each can be taken back), and sent, oldest first, once
// the turn has ended.

import { $, el } from "./dom.js";
import { post } from "./api.js";
import { state } from "./state.js";

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

// showPrompt shows the state message m on the buttons, and sends the next
// queued prompt once no turn runs.
export function showPrompt(m) {
  $("stop").disabled = !m.running;
  $("send").disabled = m.switching;
  $("send").textContent = m.running ? "Queue" : "Send";
  sendQueued();
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
document.addEventListener("keydown", (e) => {
  // Escape stops the turn, as in editors' agent panels (not while editing a proposal).
  if (e.key === "Escape" && state.running && !e.target.closest(".dialog")) post("api/stop", {});
});
