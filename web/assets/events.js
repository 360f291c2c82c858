// events: the event stream. Server-Sent Events read with fetch, so that
// the request carries the token's header; on an error or the end of the
// stream it connects again (the server replays the transcript from a
// reset).

import { $ } from "./dom.js";
import { auth, noToken, showError, token } from "./api.js";

// connect reads the event stream for good, handing each message, parsed,
// to onMessage (on the page's one thread, in order).
export async function connect(onMessage) {
  const conn = $("conn");
  const down = (text) => { conn.textContent = text; conn.className = "badge off"; };
  if (!token) { down("no token"); showError(noToken); return; }
  const dispatch = (data) => {
    let m;
    try { m = JSON.parse(data); } catch (_) { return; }
    onMessage(m);
  };
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
