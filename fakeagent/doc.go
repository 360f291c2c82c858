// Package fakeagent is a scriptable Agent Client Protocol (ACP) agent for tests, examples
// and demos.
//
// It is a faithful agent, not a mock of a client's internals: it speaks the agent side of
// ACP, newline-delimited JSON-RPC 2.0, and plays a [Script] of session updates, permission
// requests, other agent→client calls, cancellation behaviours and misbehaviours seen in
// real agents (junk on stdout, huge lines, late updates, ignored EOF or SIGTERM). It uses
// only the standard library, with its own line reader and writer, so it is also an
// independent second implementation of the framing. It records every message it receives
// ([Agent.Received], [Agent.WaitReceived], Script.RecordFile) so tests can check the wire.
//
// # Protocol behaviour
//
// The agent answers initialize with protocolVersion, agentCapabilities, authMethods and
// agentInfo; authenticate with {}; session/new with the next session id (Script.SessionID)
// and Script.NewSessionResult; session/load, if agentCapabilities.loadSession is true,
// by replaying the session's conversation as session/update notifications (each prompt
// as user_message_chunk, then the updates it sent) and then answering; session/set_mode
// with {} followed by a current_mode_update;
// session/set_config_option with the script's config options (NewSessionResult's), the one
// named holding the value sent ({"configOptions":[]} when it has none; an id it does not
// offer is refused -32602); and any other request with -32601.
// session/prompt for a session it neither created nor loaded fails with -32602.
// A systemPrompt on session/new, load, resume or fork is checked as a conforming agent
// checks it (see Script.RefuseSystemPrompt) and kept ([Agent.SystemPrompt]); a turn's
// Usage is sent as the prompt result's usage.
// Each session/prompt plays the next [Turn] on a goroutine of its own while the agent keeps
// reading, so session/cancel and the client's answers are seen during the turn. The
// client's answers may come in any order, its request ids may be of any JSON type (they
// are echoed byte for byte), and lines that are not JSON are recorded and ignored, as are
// unknown notifications. Every line the agent writes is one compact JSON object and "\n",
// written with a single Write.
//
// # In-process use
//
// [Agent.Serve] runs the agent over any reader and writer, for example the ends of two
// [io.Pipe] pairs or of a [net.Pipe]. This is the fast, deterministic choice for most tests:
//
//	agent := fakeagent.New(fakeagent.Script{
//		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
//			fakeagent.Say(fakeagent.Text("let me check")),
//			fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
//			fakeagent.Say(fakeagent.Text("you picked {{answer}}")),
//		}}},
//	})
//	clientToAgentR, clientToAgentW := io.Pipe()
//	agentToClientR, agentToClientW := io.Pipe()
//	go agent.Serve(ctx, clientToAgentR, agentToClientW)
//	// The client writes to clientToAgentW and reads agentToClientR.
//	// Closing clientToAgentW (EOF) ends Serve.
//
// # Subprocess use
//
// Process lifecycle (exit codes, stdin EOF, signals, process groups, stderr) needs a real
// child process. The test binary (or any main program) re-executes itself as the agent:
// call [Main] first thing in TestMain, and start the child with [Command]:
//
//	func TestMain(m *testing.M) {
//		fakeagent.Main() // never returns in the child
//		os.Exit(m.Run())
//	}
//
//	func TestExit(t *testing.T) {
//		path, args, env, err := fakeagent.Command(fakeagent.Script{
//			Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Exit: new(3)}}}},
//		})
//		...
//		cmd := exec.Command(path, args...)
//		cmd.Env = append(os.Environ(), env...)
//		...
//	}
//
// Script.RecordFile and [ReadRecord] give the parent what the child received.
//
// # Replaying a recorded session
//
// [Replay] plays a wire recording made by the acphost client (NDJSON entries of direction
// send, recv, stderr or skip; see [ParseRecording]) back as the agent, so a session seen
// with a real agent can be re-run against the host without that agent. It writes what
// the agent wrote, as fast as possible, but each host message recorded waits until the
// host sends a matching one: the same method for requests and notifications (params are
// not compared), the same agent request id for the host's answers. Responses carry the
// ids the host actually used. Concurrent host messages may arrive in another order than
// recorded. A host request the recording does not expect gets the error -32603 "replay
// diverged", and [Replay.Serve] then returns an error wrapping [ErrReplayDiverged]:
//
//	rec, err := fakeagent.LoadRecording("testdata/session.ndjson")
//	...
//	go fakeagent.NewReplay(rec, 1).Serve(ctx, clientToAgentR, agentToClientW)
//
// [ReplayCommand] starts the same thing as a subprocess, like [Command].
package fakeagent
