import assert from "node:assert/strict";
import { parseMcpServers, parseMcpServersOrThrow } from "../../src/definition/mcp_servers.ts";
import { StepflowError } from "../../src/errors.ts";
import {
  MCP_CONFIG_MAX_BYTES,
  parseMcpConfigText,
  readMcpConfigFile,
} from "../../src/mcp/config_file.ts";
import { timeoutFromEnv } from "../../src/mcp/timeouts.ts";
import {
  configuredMcpServers,
  mcpServersUsed,
  parseMcpToolName,
  unknownMcpToolMessage,
} from "../../src/mcp/tool_names.ts";

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

Deno.test("MCP configuration file: Claude Code's .mcp.json shape, every problem at once", async () => {
  const servers = parseMcpConfigText(
    '{ "mcpServers": { "files": { "command": "srv", "args": ["${HOME}"] } } }',
    ENV,
    ".mcp.json",
  );
  assert.deepEqual(Object.fromEntries(servers), { files: { command: "srv", args: ["/home/me"] } });
  const problems = (text: string) => {
    try {
      parseMcpConfigText(text, ENV, "cfg.json");
    } catch (error) {
      assert.ok(error instanceof StepflowError);
      assert.equal(error.code, "MCP_CONFIG_INVALID");
      return error.message;
    }
    assert.fail("expected MCP_CONFIG_INVALID");
  };
  assert.match(
    problems("{ nope"),
    /Invalid MCP server configuration \(cfg\.json\):\n- it is not JSON/,
  );
  assert.match(problems("[]"), /write \{ "mcpServers": /);
  assert.match(problems("{}"), /"mcpServers" is missing/);
  const many = problems(
    '{ "mcpServer": {}, "mcpServers": { "a__b": { "command": "x" }, "t": { "type": "http", "url": "${NOPE}" } } }',
  );
  assert.match(many, /- unknown key "mcpServer" \(did you mean "mcpServers"\?\)/);
  assert.match(many, /- mcpServers: the name "a__b" must be 1–64 letters/);
  assert.match(many, /- mcpServers\.t\.url: the environment variable NOPE is not set/);
  // Hostile input does not crash: prototype keys are data, deep nesting is a shape problem.
  assert.match(problems('{ "mcpServers": { "__proto__": { "command": 1 } } }'), /__proto__/);
  assert.match(problems(`{ "mcpServers": ${"[".repeat(5000)}${"]".repeat(5000)} }`), /object/);
  // A file over 1 MiB is refused before it is read.
  const dir = await Deno.makeTempDir({ prefix: "stepflow_mcp_cfg_" });
  await Deno.writeTextFile(`${dir}/big.json`, " ".repeat(MCP_CONFIG_MAX_BYTES + 1));
  const big = await readMcpConfigFile(`${dir}/big.json`, ENV).then(() => undefined, (e) => e);
  assert.match(String(big?.message), /is \d+ bytes; an MCP configuration is at most 1 MiB/);
});

Deno.test("MCP tool names: the server read back, and names that name nothing explained with the closest name", () => {
  assert.deepEqual(parseMcpToolName("mcp__fs__read_text_file"), {
    server: "fs",
    tool: "read_text_file",
  });
  assert.deepEqual(parseMcpToolName("mcp__fs__a__b"), { server: "fs", tool: "a__b" });
  assert.deepEqual(parseMcpToolName("mcp__fs"), { server: "fs", tool: "" });
  assert.equal(parseMcpToolName("read_file"), undefined);
  assert.deepEqual(
    mcpServersUsed(["mcp__b__x", "read_file", "mcp__a__y", "mcp__b__z", "mcp__gone__x"], [
      "a",
      "b",
      "c",
    ]),
    ["b", "a"],
  );
  const registered = ["mcp__fs__read_text_file", "mcp__fs__write_file", "read_file"];
  assert.equal(unknownMcpToolMessage("read_flie", registered, ["fs"]), undefined);
  assert.equal(
    unknownMcpToolMessage("mcp__fs__write_flie", registered, ["fs"]),
    'the MCP server "fs" has no tool "write_flie". Did you mean "mcp__fs__write_file"? Its tools: mcp__fs__read_text_file, mcp__fs__write_file.',
  );
  assert.equal(
    unknownMcpToolMessage("mcp__flies__write_file", registered, ["fs", "files"]),
    'no MCP server "flies" is configured (configured: fs, files). Did you mean "mcp__files__write_file"?',
  );
  // Too short to tell a typo from another name: no guess.
  assert.equal(
    unknownMcpToolMessage("mcp__sf__write_file", registered, ["fs"]),
    'no MCP server "sf" is configured (configured: fs).',
  );
  assert.match(
    unknownMcpToolMessage("mcp__x__y", [], [])!,
    /no MCP server is configured; configure "x"/,
  );
  assert.deepEqual(configuredMcpServers(registered, ["web"]), ["fs", "web"]);
});

Deno.test("MCP_TIMEOUT and MCP_TOOL_TIMEOUT: milliseconds replacing the defaults; anything else refused", () => {
  assert.equal(
    timeoutFromEnv("MCP_TOOL_TIMEOUT", 120_000, { MCP_TOOL_TIMEOUT: "300000" }),
    300_000,
  );
  assert.equal(timeoutFromEnv("MCP_TOOL_TIMEOUT", 120_000, { MCP_TOOL_TIMEOUT: " 5 " }), 5);
  assert.equal(timeoutFromEnv("MCP_TOOL_TIMEOUT", 120_000, {}), 120_000);
  assert.equal(timeoutFromEnv("MCP_TOOL_TIMEOUT", 120_000, { MCP_TOOL_TIMEOUT: "" }), 120_000);
  for (const bad of ["0", "-1", "1.5", "10s", "abc", "99999999999"]) {
    const error = (() => {
      try {
        timeoutFromEnv("MCP_TIMEOUT", 30_000, { MCP_TIMEOUT: bad });
      } catch (e) {
        return e;
      }
    })();
    assert.ok(error instanceof StepflowError, bad);
    assert.equal(error.code, "MCP_CONFIG_INVALID");
    assert.match(
      error.message,
      /^MCP_TIMEOUT=".*" is not a timeout: set a whole number of milliseconds/,
    );
  }
});
