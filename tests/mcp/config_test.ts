import assert from "node:assert/strict";
import { parseMcpServers, parseMcpServersOrThrow } from "../../src/definition/mcp_servers.ts";
import { StepflowError } from "../../src/errors.ts";

const ENV = { HOME: "/home/me", TOKEN: "s3cret", EMPTY: "" };

Deno.test("mcpServers: Claude Code's two shapes, ${VAR} and ${VAR:-default} expanded", () => {
  const { servers, problems } = parseMcpServers({
    files: {
      command: "mcp-server-filesystem",
      args: ["${HOME}/src", "${MISSING:-/tmp}"],
      env: { API_TOKEN: "${TOKEN}", MODE: "${EMPTY:-fast}", RAW: "${EMPTY}" },
    },
    local: { type: "stdio", command: "srv" },
    remote: {
      type: "http",
      url: "http://127.0.0.1:3001/mcp",
      headers: { Authorization: "Bearer ${TOKEN}" },
    },
  }, ENV);
  assert.deepEqual(problems, []);
  assert.deepEqual(Object.fromEntries(servers), {
    files: {
      command: "mcp-server-filesystem",
      args: ["/home/me/src", "/tmp"],
      env: { API_TOKEN: "s3cret", MODE: "fast", RAW: "" },
    },
    local: { command: "srv" },
    remote: {
      type: "http",
      url: "http://127.0.0.1:3001/mcp",
      headers: { Authorization: "Bearer s3cret" },
    },
  });
  assert.deepEqual(parseMcpServers(undefined, ENV), { servers: new Map(), problems: [] });
});

Deno.test("mcpServers: every problem at once, naming the server and field", () => {
  const { servers, problems } = parseMcpServers({
    ok: { command: "srv" },
    "bad name": { command: "srv" },
    "a__b": { command: "srv" },
    nocommand: { args: ["x"] },
    typo: { comand: "srv" },
    sse: { type: "sse", url: "http://x" },
    ftp: { type: "http", url: "ftp://x" },
    unset: { type: "http", url: "${NOPE}" },
    weird: 42,
  }, ENV);
  assert.deepEqual([...servers.keys()], ["ok"]);
  const text = problems.join("\n");
  assert.match(text, /the name "bad name" must be 1–64 letters/);
  assert.match(text, /the name "a__b" must be/);
  assert.match(
    text,
    /mcpServers\.nocommand\.command: .*a stdio server is \{ command, args\?, env\? \}/,
  );
  assert.match(text, /mcpServers\.typo: .*comand/);
  assert.match(text, /mcpServers\.sse: type "sse" is not supported; use type "http"/);
  assert.match(text, /mcpServers\.ftp\.url: "ftp:\/\/x" is not an http\(s\) URL/);
  assert.match(
    text,
    /mcpServers\.unset\.url: the environment variable NOPE is not set; set it, or write \$\{NOPE:-default\}/,
  );
  assert.match(text, /mcpServers\.weird: /);
});

Deno.test("mcpServers: hostile input does not crash", () => {
  for (const value of [null, [], "x", 1, JSON.parse('{"__proto__": {"command": "x"}}')]) {
    const { servers } = parseMcpServers(value, ENV);
    assert.equal(servers.size, 0);
  }
  assert.equal(parseMcpServers({ constructor: { command: "x" } }, ENV).servers.size, 1);
  assert.deepEqual(
    parseMcpServers({ s: { command: "x", args: ["${constructor}"] } }, ENV).problems,
    ["mcpServers.s.args[0]: the environment variable constructor is not set; set it, or write ${constructor:-default}"],
  );
  const error = (() => {
    try {
      parseMcpServersOrThrow({ s: {} }, ENV, "--mcp-config servers.json");
    } catch (e) {
      return e;
    }
  })();
  assert.ok(error instanceof StepflowError);
  assert.equal(error.code, "MCP_CONFIG_INVALID");
  assert.match(
    error.message,
    /^Invalid MCP server configuration \(--mcp-config servers.json\):\n- mcpServers\.s\.command/,
  );
});
