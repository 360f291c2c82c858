// Package websocket reaches ACP agents over WebSocket, as the ACP remote
// transport RFD ("Streamable HTTP & WebSocket Transport", WebSocket
// profile) describes: one connection is one agent, each JSON-RPC message
// is one text frame, the server names the connection in the 101's
// Acp-Connection-Id header.
//
// [Transport] is the client side, an acphost.Transport: each Dial opens a
// new connection and so a new agent. [Bridge] is the server side, an
// http.Handler that starts a local stdio agent for each connection it
// accepts and relays its lines; [ListenAndServe] runs one and refuses to
// listen beyond loopback without a token.
//
// What a link promises (acphost.Promises): the agent's exit status when
// the server reports it in the close frame, as a Bridge does (code 1000,
// reason "exit N" or "signal NAME"); no stderr, no group kill (the server
// owns the process), a new agent on each dial, none of the host's files.
// Every other end of the connection is an *acphost.LinkError.
//
// A [Link] is an acphost.MessageLink: the client reads each text frame as
// one whole message and writes each message as one text frame, with no
// line framing in between (pretty-printed JSON is read as sent); binary
// frames are ignored, as the RFD says. Its Read and Write give the same
// messages as lines, for callers that want a byte stream.
//
// Liveness: both sides ping every PingInterval (default 15s); a ping not
// answered within the interval ends the link, unless the side was busy
// handing a message on (a consumer that stopped reading pauses the
// judgement, not the pings).
package websocket
