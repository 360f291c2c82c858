// Package web serves a browser UI for one agent: a live transcript, approval
// dialogs, editable write proposals, a stop button, plan mode, the agent's
// modes and config options, and elicitation forms. It is an http.Handler
// built only on acphost's public API, with its page embedded (go:embed): no
// CDN, no build step, no dependency beyond the standard library and acphost.
// It is the tool behind "acphost web", and the reference for hosting acphost
// in a web application of your own.
//
//	s, err := web.New(ctx, web.Config{Agent: acphost.ACPOptions{Command: "my-agent"}})
//	...
//	defer s.Close()
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	fmt.Println(s.URL("http://" + ln.Addr().String() + "/"))
//	http.Serve(ln, s)
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
// ACPOptions.OnPermission, FSOptions.OnWriteFile and ACPOptions.OnElicitation
// are the server's: each request becomes a dialog on every tab, and the hook
// blocks on a channel until one tab answers (api/permission, api/proposal,
// api/elicitation) or its context ends — the turn cancelled, the request
// withdrawn by the agent, the client closed. Either way the dialog closes on
// every tab. A request may wait minutes, or until the turn ends: a closed
// tab does not answer it, a reopened tab shows it again.
//
// # Security
//
// Every request must carry the server's token: the printed URL's ?token=
// (the page then sets a SameSite=Strict, HttpOnly cookie and redirects to
// drop it from the address bar), that cookie, or an "Authorization: Bearer"
// header. The Host header must be an IP address, "localhost" or one of
// Config.Hosts, so that a page whose DNS name was rebound to this address
// is refused; a request whose Origin is not this server's, or that a
// browser marks cross-site, is refused; a POST must be application/json.
// Every response carries a Content-Security-Policy of 'self' only (no inline
// script, no eval, no frames), X-Content-Type-Options nosniff, no-referrer
// and no-store. The page inserts agent text with textContent only, after
// [acphost.SafeText] on the server, so markup, entities and bidirectional
// controls stay inert. Listening address and TLS are the caller's: serve
// it on loopback unless a person asked otherwise.
package web
