// The TypeScript ACP SDK's own WebSocket client (@agentclientprotocol/sdk
// 2.4.0, experimental/ws-client, over the ws package: Node 20 has no
// global WebSocket and undici's would drop the Authorization header)
// against an ACP WebSocket server such as acphost's websocket.Bridge.
//
// usage: node client.mjs URL TOKEN [PROMPT]
// Connects with "Authorization: Bearer TOKEN", initializes, opens a
// session, prompts, answers a permission request with its first option,
// and prints one JSON object: {initialize, sessionId, updates, result}.
// Exits 1 (with the error on stderr) on any failure.
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const [url, token, prompt = "hello"] = process.argv.slice(2);
if (!url || token === undefined) {
  console.error("usage: node client.mjs URL TOKEN [PROMPT]");
  process.exit(2);
}

const updates = [];
const permissions = [];
const stream = createWebSocketStream(url, {
  WebSocket,
  headers: { Authorization: `Bearer ${token}` },
});
const app = acp
  .client({ name: "acphost-wsclient-interop" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params.toolCall?.title ?? "");
    return { outcome: { outcome: "selected", optionId: params.options[0].optionId } };
  });

try {
  const out = await app.connectWith(stream, async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    const { sessionId } = await agent.request(acp.methods.agent.session.new, {
      cwd: process.cwd(),
      mcpServers: [],
    });
    const result = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    return { initialize: init, sessionId, result };
  });
  console.log(JSON.stringify({ ...out, updates, permissions }));
  process.exit(0);
} catch (err) {
  console.error(String(err?.stack ?? err));
  process.exit(1);
}
