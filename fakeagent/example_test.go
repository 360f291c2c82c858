package fakeagent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/acphost/acphost/fakeagent"
)

// Example drives an in-process agent by hand over two pipes: a handshake, then one turn
// that streams a message before the prompt's answer.
func Example() {
	agent := fakeagent.New(fakeagent.Script{
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hello"))}}},
	})
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	go agent.Serve(context.Background(), toAgentR, fromAgentW)
	defer toAgentW.Close() // EOF ends Serve
	out := bufio.NewReader(fromAgentR)

	// io.Pipe is synchronous: read each answer before sending the next request.
	exchange := func(request string, lines int) {
		fmt.Fprintln(toAgentW, request)
		for range lines {
			line, _ := out.ReadString('\n')
			fmt.Print(line)
		}
	}
	exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, 1)
	exchange(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, 1)
	exchange(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, 2)
	fmt.Println(agent.Methods())
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false,"promptCapabilities":{"image":true,"embeddedContext":true}},"authMethods":[],"agentInfo":{"name":"fakeagent","version":"0.0.0"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}
	// {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}
	// {"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}
	// [initialize session/new session/prompt]
}
