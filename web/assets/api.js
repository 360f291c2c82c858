// api: the token and the requests that carry it.
//
// The printed URL carries the token in its fragment (#token=…, which no
// server sees), or in a ?token= query. This module reads it when the page
// loads, keeps it in sessionStorage (this tab, this origin and port only: a
// reload goes on working) and removes it from the address bar; it is sent
// in an Authorization header with every request, the event stream included
// (read with fetch: an EventSource cannot send a header). No cookie.

import { $ } from "./dom.js";

const tokenKey = "acphost-token";

export const token = (() => {
  const fromURL = new URLSearchParams(location.hash.slice(1)).get("token") || new URLSearchParams(location.search).get("token");
  if (fromURL) {
    try { sessionStorage.setItem(tokenKey, fromURL); } catch (_) { /* storage off: this load only */ }
    history.replaceState(history.state, "", location.pathname);
    return fromURL;
  }
  try { return sessionStorage.getItem(tokenKey) || ""; } catch (_) { return ""; }
})();

export const auth = (headers) => Object.assign({ Authorization: "Bearer " + token }, headers || {});

export const noToken = "This page needs the token: open the URL acphost printed (the whole of it, with its #token=…).";

export function showError(msg) { $("error").textContent = msg || ""; }

// post sends a JSON command; a refusal is shown (unless refused, given
// its status and body, takes it and returns true), not thrown.
export async function post(path, body, refused) {
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

// get fetches a JSON resource; a refusal is shown, not thrown.
export async function get(path) {
  try {
    const r = await fetch(path, { headers: auth(), credentials: "omit" });
    if (!r.ok) { showError(path + ": " + (await r.text()).trim()); return null; }
    return await r.json();
  } catch (e) {
    showError(path + ": " + e);
    return null;
  }
}
