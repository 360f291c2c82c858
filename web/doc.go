// Package web serves a browser UI for one agent: a live transcript, approval
// dialogs, editable write proposals, a stop button, plan mode, the agent's
// modes and config options, and elicitation forms. It is an http.Handler
// built only on acphost's public API, with its page embedded (go:embed): its
// script is native ES modules, one per concept, served as they are written:
// no CDN, no build step, no dependency beyond the standard library and
// acphost.
// It is the tool behind "acphost web", and the reference for hosting acphost
// in a web application of your own.
//
//	s, err := web.New(ctx, web.Config{Agent: acphost.ACPOptions{Command: "my-agent"}})
//	...
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	fmt.Println(s.URL("http://" + ln.Addr().String() + "/"))
//	web.Serve(ctx, ln, s) // timeouts, and a cap on connections without the token
//
// # How the hooks map to HTTP
//
// The server owns one warm [acphost.ACPClient]. A POST to api/prompt starts
// a turn with [acphost.ACPClient.GenerateStream] on a goroutine of the
// server's, whose context is the turn's: api/stop cancels it (the client
// sends session/cancel, answers the turn's pending permissions "cancelled"
// and waits for the agent's confirmation), and so does Close. Each
// [acphost.StreamEvent] becomes one JSON message on the event stream
// (Server-Sent Events at "events"), written to every connected tab and
// kept, so that a tab that connects later (or reconnects) replays the
// transcript from the start.
//
// ACPOptions.OnPermission, FSOptions.OnWriteFile and ACPOptions.Elicitation.OnRequest
// are the server's: each request becomes a dialog on every tab, and the hook
// blocks on a channel until one tab answers (api/permission, api/proposal,
// api/elicitation) or its context ends — the turn cancelled, the request
// withdrawn by the agent, the client closed. Either way the dialog closes on
// every tab. A request may wait minutes, or until the turn ends: a closed
// tab does not answer it, a reopened tab shows it again.
//
// # Security
//
// The page shell (index.html, the script's modules, app.css: nothing
// secret) is served to any request that passes the Host and Origin checks; every other
// request (the API, the event stream) must carry the server's token in an
// "Authorization: Bearer" header, compared in constant time. There is no
// cookie: a browser sends a cookie to every port of its host, so any other
// server on localhost would learn it. The printed URL (Server.URL) holds
// the token in its fragment, "#token=…", which never reaches a server or a
// log; the page's script reads it (or a ?token= query), keeps it in
// sessionStorage (per tab, per origin and port) so that a reload goes on
// working, removes it from the address bar and sends it with every
// request, the event stream included (read with fetch, not EventSource,
// so that it carries the header too).
//
// The Host header must be an IP address, "localhost" or one of
// Config.Hosts, so that a page whose DNS name was rebound to this address
// is refused; a request whose Origin is not this server's, or that a
// browser marks cross-site or same-site (another port), is refused; a POST
// must be application/json. Every response carries a
// Content-Security-Policy of 'self' only (no inline script, no eval, no
// frames), X-Content-Type-Options nosniff, no-referrer and no-store. The
// page inserts agent text with textContent only, after [acphost.SafeText]
// on the server, so markup, entities and bidirectional controls stay
// inert; the server sends a display string, through SafeText, for every
// name or id the page shows, and raw values only for answering. A dialog
// never takes the keyboard focus from the prompt the person is typing in,
// and its buttons ignore clicks for a moment after it appears and
// keystrokes that began before it did, so that typing on, or a click meant
// for what was there before, answers nothing. Listening address and TLS
// are the caller's: serve it on loopback unless a person asked otherwise.
package web
