// modes: the mode picker and the agent's session config options: the
// selects in the header, the switches in a menu beside them, so that the
// header keeps to one line. An agent whose modes are a config option
// (state.modeOption) is switched through that option.

import { $, el } from "./dom.js";
import { post } from "./api.js";
import { state } from "./state.js";

// showModes shows the modes and options of the state message m.
export function showModes(m) {
  const sel = $("mode");
  $("modewrap").hidden = m.modes.length === 0;
  sel.replaceChildren(...m.modes.map((o) => {
    const opt = el("option", { title: o.description }, o.name);
    opt.value = o.value;
    return opt;
  }));
  sel.value = m.mode;

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
}

$("mode").addEventListener("change", (e) => {
  if (state.modeOption) post("api/config", { id: state.modeOption, value: e.target.value });
  else post("api/mode", { id: e.target.value });
});
