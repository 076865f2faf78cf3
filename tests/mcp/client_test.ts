/**
 * The MCP client against real servers from npm: server-everything and server-filesystem over stdio,
 * server-everything over streamable HTTP. Every test checks that no process is left behind.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { McpConnection } from "../../src/mcp/connection.ts";
import { connectMcpServers } from "../../src/mcp/servers.ts";
import { ToolRegistry } from "../../src/tools/registry.ts";
import { completeWithTools } from "../../src/engine/tool_loop.ts";
import { parsePermissionRules } from "../../src/definition/permission_rule.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { offeredTools } from "../../src/tools/permissions.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { freePort, groupGone, running, serverCommand, startHttpEverything } from "./npm_servers.ts";

async function failure(p: Promise<unknown>): Promise<StepflowError> {
  const error = await p.then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, `expected a StepflowError, got ${error}`);
  return error;
}

Deno.test("stdio: server-everything's tools are mcp__everything__*, callable through the one registry", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const servers = await connectMcpServers(
    new Map([["everything", { command: everything, env: { STEPFLOW_MCP_PROBE: "seen" } }]]),
  );
  const [pid] = servers.pids();
  try {
    const registry = servers.registerIn(new ToolRegistry());
    const names = registry.list().map((t) => t.name);
    assert.ok(names.includes("mcp__everything__echo"), names.join(", "));
    assert.ok(names.includes("mcp__everything__get-sum"));
    const ctx = { workspaceRoot: "." };
    assert.equal(
      await registry.invoke("mcp__everything__echo", { message: "hi" }, ctx),
      "Echo: hi",
    );
    assert.match(
      await registry.invoke("mcp__everything__get-sum", { a: 2, b: 3 }, ctx) as string,
      /\b5\b/,
    );
    // Arguments are checked against the server's JSON Schema before any call.
    const bad = await failure(registry.invoke("mcp__everything__get-sum", { a: "two" }, ctx));
    assert.equal(bad.code, "TOOL_ARGS_INVALID");
    assert.match(bad.message, /a: must be number|b: /);
    // Annotations: readOnlyHint makes a tool read-only (and safe to re-run).
    assert.equal(registry.descriptor("mcp__everything__echo")!.readOnly, true);
    assert.equal(registry.descriptor("mcp__everything__toggle-simulated-logging")!.readOnly, false);
    assert.equal(
      (registry.descriptor("mcp__everything__echo")!.inputSchema as { type: string }).type,
      "object",
    );
    // Images are named, not dumped; the env given in the configuration reaches the server.
    assert.match(
      await registry.invoke("mcp__everything__get-tiny-image", {}, ctx) as string,
      /\[image image\/png, \d+ bytes, not shown\]/,
    );
    assert.match(
      await registry.invoke("mcp__everything__get-env", {}, ctx) as string,
      /STEPFLOW_MCP_PROBE.*seen/,
    );
  } finally {
    await servers.close();
  }
  assert.deepEqual(await groupGone(pid), [], "no process left behind");
});

Deno.test("stdio: server-filesystem works inside its folder and reports refusals as tool errors", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow_mcp_fs_" }));
  await Deno.writeTextFile(join(dir, "note.txt"), "from disk\n");
  const filesystem = await serverCommand("mcp-server-filesystem");
  const servers = await connectMcpServers(new Map([["fs", { command: filesystem, args: [dir] }]]));
  const [pid] = servers.pids();
  try {
    const registry = servers.registerIn(new ToolRegistry());
    const ctx = { workspaceRoot: dir };
    assert.match(
      await registry.invoke(
        "mcp__fs__read_text_file",
        { path: join(dir, "note.txt") },
        ctx,
      ) as string,
      /from disk/,
    );
    const refused = await failure(
      registry.invoke("mcp__fs__read_text_file", { path: "/etc/hostname" }, ctx),
    );
    assert.equal(refused.code, "MCP_TOOL_ERROR");
    assert.match(refused.message, /^mcp__fs__read_text_file failed: .*(denied|outside)/i);
  } finally {
    await servers.close();
  }
  assert.deepEqual(await groupGone(pid), []);
});

Deno.test("stdio: a call past its timeout is an error, and the server still answers afterwards", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const connection = await McpConnection.connect("everything", { command: everything }, {
    callTimeoutMs: 400,
  });
  try {
    const slow = await failure(
      connection.callTool("trigger-long-running-operation", { duration: 30, steps: 3 }),
    );
    assert.equal(slow.code, "MCP_CALL_TIMEOUT");
    assert.match(
      slow.message,
      /did not answer within 400 ms while calling trigger-long-running-operation/,
    );
    const echo = await connection.callTool("echo", { message: "still here" });
    assert.deepEqual(echo.content, [{ type: "text", text: "Echo: still here" }]);
  } finally {
    await connection.close();
  }
});

Deno.test("stdio: a server that dies mid-call is an error at once, not a hang; later calls fail fast", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const connection = await McpConnection.connect("everything", { command: everything }, {
    callTimeoutMs: 120_000,
  });
  const pid = connection.pid!;
  try {
    // Kill it once the call is under way: at its first progress report.
    const { promise: started, resolve } = Promise.withResolvers<void>();
    const call = connection.callTool(
      "trigger-long-running-operation",
      { duration: 60, steps: 60 },
      {
        onProgress: () => resolve(),
      },
    );
    await started;
    Deno.kill(pid, "SIGKILL");
    const died = await failure(call);
    assert.equal(died.code, "MCP_SERVER_EXITED");
    assert.match(
      died.message,
      /MCP server "everything" exited \(killed by SIGKILL\) while calling trigger-long-running-operation/,
    );
    assert.equal(connection.alive, false);
    const later = await failure(connection.callTool("echo", { message: "x" }));
    assert.equal(later.code, "MCP_SERVER_EXITED");
  } finally {
    await connection.close();
  }
  assert.deepEqual(await groupGone(pid), []);
});

Deno.test("stdio: a result over 10 MiB is MCP_MESSAGE_TOO_LARGE saying so, not a server that exited", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow_mcp_big_" }));
  try {
    // A real server answering a real call with 12 MB of text (a file it was asked to read).
    await Deno.writeTextFile(join(dir, "big.txt"), "x".repeat(12_000_000));
    const filesystem = await serverCommand("mcp-server-filesystem");
    const connection = await McpConnection.connect("fs", { command: filesystem, args: [dir] });
    const pid = connection.pid!;
    try {
      const big = await failure(
        connection.callTool("read_text_file", { path: join(dir, "big.txt") }),
      );
      assert.equal(big.code, "MCP_MESSAGE_TOO_LARGE");
      assert.match(
        big.message,
        /^MCP server "fs" sent a message over 10 MiB while calling read_text_file/,
      );
      assert.match(big.message, /Ask the tool for less/);
      assert.equal(connection.alive, false);
      // Its tools are gone for the run, and say why.
      const later = await failure(connection.callTool("list_allowed_directories", {}));
      assert.equal(later.code, "MCP_MESSAGE_TOO_LARGE");
    } finally {
      await connection.close();
    }
    assert.deepEqual(await groupGone(pid), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stdio: closing kills the whole process group — a wrapper shell, a child ignoring TERM", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const dir = await Deno.makeTempDir({ prefix: "stepflow_mcp_group_" });
  const pidFile = join(dir, "sleeper.pid");
  // As `npx` does, a wrapper starts the real server; a sleeper that ignores TERM sits beside it.
  const script = `trap '' TERM; sleep 300 & echo $! > ${pidFile}; "${everything}"; wait`;
  const connection = await McpConnection.connect("wrapped", {
    command: "bash",
    args: ["-c", script],
  }, {
    killGraceMs: 100,
  });
  const pid = connection.pid!;
  const sleeper = Number((await Deno.readTextFile(pidFile)).trim());
  assert.ok(running(sleeper));
  const echo = await connection.callTool("echo", { message: "wrapped" });
  assert.deepEqual(echo.content, [{ type: "text", text: "Echo: wrapped" }]);
  await connection.close();
  assert.deepEqual(await groupGone(pid), [], "every process of the group is gone");
  assert.equal(running(sleeper), false);
});

Deno.test("connect: a missing command, a crashing server, a silent one — clear errors, nothing left", async () => {
  const missing = await failure(
    McpConnection.connect("nope", { command: "no-such-mcp-server-xyz" }),
  );
  assert.equal(missing.code, "MCP_CONNECT_FAILED");
  assert.match(
    missing.message,
    /MCP server "nope" could not be started \(no-such-mcp-server-xyz\): the command was not found/,
  );

  const crash = await failure(McpConnection.connect("crash", {
    command: "bash",
    args: ["-c", "echo 'cannot open database' >&2; exit 3"],
  }));
  assert.equal(crash.code, "MCP_CONNECT_FAILED");
  assert.match(
    crash.message,
    /exited before completing the MCP handshake[\s\S]*Its last output:\ncannot open database/,
  );

  const dir = await Deno.makeTempDir({ prefix: "stepflow_mcp_silent_" });
  const pidFile = join(dir, "silent.pid");
  const silent = await failure(McpConnection.connect("silent", {
    command: "bash",
    args: ["-c", `echo $$ > ${pidFile}; exec sleep 300`],
  }, { connectTimeoutMs: 500, killGraceMs: 100 }));
  assert.equal(silent.code, "MCP_CONNECT_TIMEOUT");
  assert.match(silent.message, /did not complete the handshake within 500 ms and was stopped/);
  assert.deepEqual(await groupGone(Number((await Deno.readTextFile(pidFile)).trim())), []);
});

Deno.test("connectMcpServers: one server failing closes the others", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const dir = await Deno.makeTempDir({ prefix: "stepflow_mcp_partial_" });
  const pidFile = join(dir, "good.pid");
  const error = await failure(connectMcpServers(
    new Map([
      ["good", { command: "bash", args: ["-c", `echo $$ > ${pidFile}; exec "${everything}"`] }],
      ["bad", { command: "no-such-mcp-server-xyz" }],
    ]),
  ));
  assert.equal(error.code, "MCP_CONNECT_FAILED");
  assert.match(error.message, /"bad"/);
  assert.deepEqual(await groupGone(Number((await Deno.readTextFile(pidFile)).trim())), []);
});

Deno.test("streamable HTTP: server-everything over HTTP, headers sent, tools callable", async () => {
  const server = await startHttpEverything();
  try {
    const servers = await connectMcpServers(
      new Map([["web", {
        type: "http" as const,
        url: server.url,
        headers: { "X-Stepflow-Test": "1" },
      }]]),
    );
    try {
      assert.deepEqual(servers.pids(), [], "nothing started for an HTTP server");
      const registry = servers.registerIn(new ToolRegistry());
      assert.equal(
        await registry.invoke("mcp__web__echo", { message: "over http" }, { workspaceRoot: "." }),
        "Echo: over http",
      );
    } finally {
      await servers.close();
    }
    const unreachable = await failure(McpConnection.connect("gone", {
      type: "http",
      url: `http://127.0.0.1:${freePort()}/mcp`,
    }, { connectTimeoutMs: 5_000 }));
    assert.equal(unreachable.code, "MCP_CONNECT_FAILED");
    assert.match(
      unreachable.message,
      /MCP server "gone" could not be reached \(http:\/\/127\.0\.0\.1:\d+\/mcp\)/,
    );
  } finally {
    await server.close();
  }
});

Deno.test("MCP tools in the tool loop: allowed like any tool; in plan mode read-only ones run, others are refused", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const servers = await connectMcpServers(new Map([["everything", { command: everything }]]));
  const [pid] = servers.pids();
  try {
    const registry = servers.registerIn(new ToolRegistry());
    const allow = parsePermissionRules(["mcp__everything"]).rules;
    const backend = new ScriptedBackend([
      {
        toolCalls: [
          { name: "mcp__everything__echo", arguments: { message: "from the loop" } },
          { name: "mcp__everything__toggle-simulated-logging", arguments: {} },
        ],
      },
      "done",
    ]);
    const answer = await completeWithTools(
      { kind: "step", agent: "t", stepId: "s", iteration: 1, prompt: "Go.", cwd: "." },
      {
        backend,
        tools: registry,
        offered: offeredTools(allow, [], registry.list().map((t) => t.name)),
        policy: { mode: "plan", allow, deny: [] },
      },
    );
    assert.equal(answer.text, "done");
    const last = backend.toolTurns[1].messages.at(-1)!;
    assert.equal(last.role, "tool");
    const [echo, toggle] = (last as { results: { content: string; isError: boolean }[] }).results;
    assert.deepEqual(echo, {
      id: "call_1_1",
      name: "mcp__everything__echo",
      content: "Echo: from the loop",
      isError: false,
    });
    assert.equal(toggle.isError, true);
    assert.match(toggle.content, /refused in plan mode: only read-only tools run/);
  } finally {
    await servers.close();
  }
  assert.deepEqual(await groupGone(pid), []);
});

Deno.test("agent.json mcpServers: a step's tool loop starts the allowed servers, calls them, closes them", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const root = await Deno.makeTempDir({ prefix: "stepflow_mcp_flow_" });
  const pidFile = join(root, "server.pid");
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "mcp__everything"],
    mcpServers: {
      everything: {
        command: "bash",
        args: ["-c", `echo $$ > ${pidFile}; exec "\${MCP_EVERYTHING}"`],
      },
      unused: { command: "no-such-mcp-server-xyz" },
    },
  });
  await writeAgent(root, "code-improver", files);
  const def = await loadAgentDefinition("code-improver", { cwd: root });
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [
      { toolCalls: [{ name: "mcp__everything__echo", arguments: { message: "via agent.json" } }] },
      "Echoed.",
    ],
    s_c9d4: ["Fine."],
  }));
  Deno.env.set("MCP_EVERYTHING", everything);
  try {
    const result = await new StepFlowRunner(def, { backend }).run({
      args: { topic: "t" },
      cwd: root,
    });
    assert.equal(result.success, true, JSON.stringify(result.error));
  } finally {
    Deno.env.delete("MCP_EVERYTHING");
  }
  const last = backend.toolTurns[1].messages.at(-1)!;
  assert.equal(last.role, "tool");
  assert.equal(
    (last as { results: { content: string }[] }).results[0].content,
    "Echo: via agent.json",
  );
  assert.deepEqual(backend.toolTurns[0].tools.map((t) => t.name).slice(0, 2), [
    "Read",
    "mcp__everything__echo",
  ]);
  // The server is gone after the run; the unused one was never started.
  const pids = (await Deno.readTextFile(pidFile)).trim();
  assert.deepEqual(await groupGone(Number(pids)), []);
});
