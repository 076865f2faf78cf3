/**
 * The streamable HTTP server's sessions: each client its own, and beyond the limit the least
 * recently used one is closed (clients seldom end theirs), so new clients are never refused.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { serveMcpHttp } from "../../src/mcp_server/http.ts";
import { createAgentMcpServer } from "../../src/mcp_server/server.ts";

Deno.test("mcp HTTP sessions: beyond the limit the least recently used session is closed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-mcp-sessions-" });
  const server = createAgentMcpServer({ cwd: dir, env: {}, backend: {}, version: "test" });
  const http = serveMcpHttp(server, { port: 0, maxSessions: 2 });
  const clients: Client[] = [];
  try {
    const connect = async () => {
      const client = new Client({ name: "test", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      clients.push(client);
      return client;
    };
    const first = await connect(); // no agents: answer_run, list_runs, show_run
    const second = await connect();
    assert.equal((await first.listTools()).tools.length, 3); // first is now the most recent
    const third = await connect(); // closes second, the least recently used
    assert.equal((await third.listTools()).tools.length, 3);
    assert.equal((await first.listTools()).tools.length, 3);
    await assert.rejects(second.listTools(), /Unknown or ended session/);
  } finally {
    for (const client of clients) await client.close().catch(() => {});
    await server.stop();
    await http.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
