/**
 * `deno task mcp` as a real process, driven by the official MCP client SDK over stdio and over
 * streamable HTTP: tools listed from `.agent/`, a scripted run with progress notifications, a
 * cancelled request that cancels the run (recorded `cancelled`), list/show runs, untrusted
 * arguments answered as tool errors, and the process's end (stdin closed, SIGTERM).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, JSONRPCMessage, Progress } from "@modelcontextprotocol/sdk/types.js";
import { pidAlive } from "../../src/pid_alive.ts";
import { copyDir, REPO_ROOT } from "../cli/helpers.ts";
import { waitFor } from "../store/helpers.ts";

const SERVER = join(REPO_ROOT, "src", "cli", "mcp.ts");

/** A user folder holding a copy of the haiku example and a script whose first answer waits. */
async function userFolder(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-mcp-" });
  await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(dir, ".agent", "haiku"));
  await Deno.writeTextFile(
    join(dir, "slow.script.yaml"),
    'draft.haiku:\n  - { text: "never", delayMs: 600000 }\n',
  );
  return dir;
}

function text(result: unknown): string {
  const content = (result as CallToolResult).content;
  return content.map((c: { type: string; text?: string }) => (c.type === "text" ? c.text : ""))
    .join("");
}

async function stdioClient(dir: string, args: string[]) {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", SERVER, ...args],
    cwd: dir,
    env: { ...Deno.env.toObject(), INIT_CWD: dir, NO_COLOR: "1" },
    stderr: "pipe",
  });
  // Every message the server sent, in the order read, before the SDK's client dispatches it.
  const wire: JSONRPCMessage[] = [];
  transport.onmessage = (message: JSONRPCMessage) => void wire.push(message);
  const client = new Client({ name: "stepflow-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, wire };
}

/**
 * The progress lines the server sent, in order and before the result, for the tool call whose
 * result names `runId`, read off the wire (`stdioClient`'s `wire`, from the call on). The SDK's
 * client dispatches a notification a microtask after reading it and forgets the request's progress
 * handler when the result is read, so the lines read in one chunk with the result never reach
 * `onprogress` (on a loaded machine, the last few; modelcontextprotocol/typescript-sdk#2580).
 */
function progressSent(messages: JSONRPCMessage[], runId: string): string[] {
  const sent = messages as Record<string, unknown>[];
  const resultAt = sent.findIndex((m) =>
    (m.result as CallToolResult | undefined)?.structuredContent?.runId === runId
  );
  assert.ok(resultAt >= 0, `the result of run ${runId} was read`);
  return sent.slice(0, resultAt).flatMap((m) => {
    const params = m.params as { progressToken?: unknown; message?: string } | undefined;
    return m.method === "notifications/progress" && params?.progressToken === sent[resultAt].id
      ? [params!.message ?? ""]
      : [];
  });
}

/** Waits until `show_run`-free listing says the only run of haiku has `status`. */
async function runStatus(client: Client, status: string): Promise<Record<string, unknown>> {
  return await waitFor(`a haiku run ${status}`, async () => {
    const result = await client.callTool({ name: "list_runs", arguments: { agent: "haiku" } });
    const runs = (result.structuredContent as { runs: Record<string, unknown>[] }).runs;
    return runs.find((run) => run.status === status);
  });
}

Deno.test("mcp over stdio: tools, a scripted run with progress, list and show runs, bad arguments", async () => {
  const dir = await userFolder();
  const { client, wire } = await stdioClient(dir, ["--script", ".agent/haiku/demo.script.yaml"]);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t: { name: string }) => t.name), [
      "run_haiku",
      "answer_run",
      "list_runs",
      "show_run",
    ]);
    const haiku = tools[0];
    assert.deepEqual(haiku.inputSchema.required, ["topic"]);
    assert.equal(
      (haiku.inputSchema.properties as Record<string, { type: string }>).topic.type,
      "string",
    );

    const progress: string[] = [];
    const sentBefore = wire.length;
    const result = await client.callTool(
      { name: "run_haiku", arguments: { topic: "autumn" } },
      undefined,
      { onprogress: (p: Progress) => void progress.push(p.message ?? "") },
    );
    assert.equal(result.isError, undefined, text(result));
    const answer = result.structuredContent as Record<string, unknown>;
    assert.equal(answer.success, true);
    assert.equal(answer.completionReason, "completed");
    assert.match(String(answer.output), /Red leaves on the path/);
    // The demo script reports no usage and the haiku names no model: its cost is unknown, never 0.
    const usage = answer.usage as Record<string, unknown>;
    assert.equal(usage.costUsd, null);
    assert.equal(usage.callsWithoutCost, usage.calls);
    const runId = String(answer.runId);
    assert.match(text(result), new RegExp(`Run ${runId} of agent "haiku" completed`));
    // One notification per step event, all sent before the result: the run's start, two step
    // starts, two step ends, the end.
    const lines = progressSent(wire.slice(sentBefore), runId);
    assert.equal(lines.length, 6, lines.join("\n"));
    assert.match(lines[0], new RegExp(`run ${runId} started`));
    assert.match(lines[4], /step draft\.haiku #2 → complete check ok/);
    assert.match(lines[5], /run succeeded: completed at draft\.haiku/);
    // The SDK client hands them to `onprogress` in order, but not those read with the result (see
    // progressSent): what it got is the first of the lines sent.
    assert.deepEqual(progress, lines.slice(0, progress.length));

    const listed = await client.callTool({ name: "list_runs", arguments: {} });
    assert.match(text(listed), new RegExp(`${runId}\\s+\\S+ \\S+\\s+completed`));
    const shown = await client.callTool({ name: "show_run", arguments: { agent: "haiku", runId } });
    assert.equal(shown.isError, undefined, text(shown));
    assert.equal((shown.structuredContent as Record<string, unknown>).shownStatus, "completed");
    assert.match(text(shown), /draft\.haiku/);
    const cost = (shown.structuredContent as { cost: Record<string, unknown> }).cost;
    assert.equal(cost.costUsd, null);
    assert.equal((cost.modelCalls as unknown[]).length, usage.calls);

    const missing = await client.callTool({
      name: "show_run",
      arguments: { agent: "haiku", runId: "r-none" },
    });
    assert.equal(missing.isError, true);
    assert.match(text(missing), /^RUN_NOT_FOUND: No run r-none of agent "haiku"/);

    // Untrusted arguments are tool errors, and the server keeps serving.
    const bad = [
      [
        { name: "run_haiku", arguments: { topic: 7 } },
        /^MCP_ARGUMENTS_INVALID: .*topic: expects a string/,
      ],
      [
        { name: "run_haiku", arguments: JSON.parse('{"topic":"x","constructor":{}}') },
        /"constructor" is not a parameter/,
      ],
      [
        { name: "run_haiku", arguments: { topic: "x".repeat(2_000_000) } },
        /characters long; at most/,
      ],
      [
        { name: "run_haiku", arguments: { topic: "x", extra: deepList(5_000) } },
        /"extra" is not a parameter/,
      ],
      [{ name: "run_haiko", arguments: {} }, /^MCP_TOOL_UNKNOWN: .*did you mean "run_haiku"/],
      [{ name: "run_..", arguments: {} }, /^MCP_TOOL_UNKNOWN/],
      [
        { name: "show_run", arguments: { agent: "../..", runId: "x" } },
        /^MCP_TOOL_UNKNOWN: There is no agent "..\/.."/,
      ],
      [
        { name: "list_runs", arguments: { agent: 3 } },
        /^MCP_ARGUMENTS_INVALID: .*agent: expects a name/,
      ],
      // `__proto__` as a key of its own (as JSON.parse makes it) is refused like any other
      // undeclared argument, not dropped on the way in.
      [
        { name: "run_haiku", arguments: JSON.parse('{"topic":"x","__proto__":{"topic":"y"}}') },
        /^MCP_ARGUMENTS_INVALID: .*"__proto__" is not a parameter of agent "haiku"/,
      ],
      [
        { name: "list_runs", arguments: JSON.parse('{"__proto__":{"agent":"haiku"}}') },
        /^MCP_ARGUMENTS_INVALID: .*"__proto__" is not an argument of list_runs/,
      ],
    ] as const;
    for (const [call, expected] of bad) {
      const answer = await client.callTool(
        call as { name: string; arguments: Record<string, unknown> },
      );
      assert.equal(answer.isError, true, call.name);
      assert.match(text(answer), expected);
    }
    assert.equal((await client.listTools()).tools.length, 4);
    // None of them started a run: the first run is the only one recorded.
    const runs = await client.callTool({ name: "list_runs", arguments: { agent: "haiku" } });
    assert.equal((runs.structuredContent as { runs: unknown[] }).runs.length, 1, text(runs));
  } finally {
    await client.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mcp over stdio: a run that waits for input, answer_run refuses a bad answer, records a good one once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-mcp-" });
  const agent = "release-approval";
  await copyDir(join(REPO_ROOT, ".agent", agent), join(dir, ".agent", agent));
  const { client, wire } = await stdioClient(dir, [
    "--script",
    `.agent/${agent}/demo.script.yaml`,
  ]);
  try {
    const tools = (await client.listTools()).tools;
    const answerTool = tools.find((t: { name: string }) => t.name === "answer_run")!;
    assert.deepEqual(answerTool.inputSchema.required, ["agent", "runId", "value"]);
    // The agent's description (no final period) is a sentence of its own before the tool's words.
    const runTool = tools.find((t: { name: string }) => t.name === `run_${agent}`)!;
    assert.match(String(runTool.description), /, then reports\. Answers the run's output/);

    // The run stops at the input step: not an error, it says what it waits for.
    const first = await client.callTool({ name: `run_${agent}`, arguments: { version: "1.4.0" } });
    assert.equal(first.isError, undefined, text(first));
    const waiting = first.structuredContent as Record<string, unknown>;
    assert.equal(waiting.status, "waiting");
    assert.equal(waiting.completionReason, "waiting");
    const runId = String(waiting.runId);
    const question = waiting.waiting as Record<string, unknown>;
    assert.equal(question.stepId, "approve.release");
    assert.match(String(question.question), /1\.4\.0/);
    assert.match(text(first), /is waiting for an answer at input step "approve\.release"/);
    // What the answer must be: the step's schema (without the file's other definitions) and a
    // value that matches it, ready to send.
    const schema = question.answerSchema as Record<string, unknown>;
    assert.equal(schema.type, "object");
    assert.deepEqual(
      (schema.properties as Record<string, { enum?: string[] }>).decision.enum,
      ["next", "abort"],
    );
    assert.equal(schema.definitions, undefined);
    assert.deepEqual(question.exampleValue, { decision: "next" });
    assert.ok(
      text(first).includes(`must match this JSON Schema: ${JSON.stringify(schema)}`),
      text(first),
    );
    assert.ok(
      text(first).includes(
        `answer_run tool, for example:\n  ${
          JSON.stringify({ agent, runId, value: { decision: "next" } })
        }`,
      ),
      text(first),
    );

    // show_run asks the same question.
    const shown = await client.callTool({ name: "show_run", arguments: { agent, runId } });
    assert.equal((shown.structuredContent as Record<string, unknown>).shownStatus, "waiting");
    assert.deepEqual((shown.structuredContent as Record<string, unknown>).waiting, question);
    assert.match(text(shown), /Waiting for an answer at input step "approve\.release"/);
    assert.match(text(shown), /answer_run tool/);

    // Bad answers are tool errors naming why, and nothing is recorded: the run still waits.
    const bad = [
      [{ decision: "maybe" }, /^INPUT_ANSWER_INVALID: /],
      [{ decision: "next", extra: deepList(100) }, /^MCP_ARGUMENTS_INVALID: .*nested deeper/],
      [{ decision: "x".repeat(2_000_000) }, /^MCP_ARGUMENTS_INVALID: .*characters long/],
    ] as const;
    for (const [value, expected] of bad) {
      const refused = await client.callTool({
        name: "answer_run",
        arguments: { agent, runId, value },
      });
      assert.equal(refused.isError, true);
      assert.match(text(refused), expected);
    }
    for (
      const [args, expected] of [
        [{ agent, runId: "../x", value: {} }, /^MCP_ARGUMENTS_INVALID: .*is not a run id/],
        [{ agent: "../..", runId, value: {} }, /^MCP_TOOL_UNKNOWN: There is no agent/],
        [{ agent, runId }, /^MCP_ARGUMENTS_INVALID: .*value: required/],
      ] as const
    ) {
      const refused = await client.callTool({ name: "answer_run", arguments: args });
      assert.equal(refused.isError, true);
      assert.match(text(refused), expected);
    }
    const still = await client.callTool({ name: "show_run", arguments: { agent, runId } });
    assert.equal((still.structuredContent as Record<string, unknown>).shownStatus, "waiting");
    assert.doesNotMatch(JSON.stringify(still.structuredContent), /answeredBy/);

    // A good answer is recorded as `mcp` and continues the run, with progress, to its end.
    const progress: string[] = [];
    const sentBefore = wire.length;
    const done = await client.callTool(
      { name: "answer_run", arguments: { agent, runId, value: { decision: "next", note: "go" } } },
      undefined,
      { onprogress: (p: Progress) => void progress.push(p.message ?? "") },
    );
    assert.equal(done.isError, undefined, text(done));
    const end = done.structuredContent as Record<string, unknown>;
    assert.equal(end.runId, runId);
    assert.equal(end.success, true);
    assert.equal(end.completionReason, "completed");
    assert.match(JSON.stringify(end.output), /1\.4\.0 was released/);
    assert.match(text(done), new RegExp(`Run ${runId} of agent "${agent}" completed`));
    const lines = progressSent(wire.slice(sentBefore), runId);
    assert.ok(lines.some((line) => /complete\.release/.test(line)), lines.join("\n"));
    assert.deepEqual(progress, lines.slice(0, progress.length));
    const after = await client.callTool({ name: "show_run", arguments: { agent, runId } });
    const history = (after.structuredContent as Record<string, unknown>).history as {
      stepId: string;
      input?: { answeredBy?: string };
    }[];
    const answered = history.find((entry) => entry.stepId === "approve.release");
    assert.equal(answered?.input?.answeredBy, "mcp");

    // A second answer is refused: the run no longer waits.
    const again = await client.callTool({
      name: "answer_run",
      arguments: { agent, runId, value: { decision: "abort" } },
    });
    assert.equal(again.isError, true);
    assert.match(text(again), /^INPUT_NOT_WAITING: /);

    // A person's "no" is their decision, not a failed run: no tool error; who and the note said.
    const other = await client.callTool({ name: `run_${agent}`, arguments: { version: "1.5.0" } });
    const otherId = String((other.structuredContent as Record<string, unknown>).runId);
    const declined = await client.callTool({
      name: "answer_run",
      arguments: { agent, runId: otherId, value: { decision: "abort", note: "freeze" } },
    });
    assert.equal(declined.isError, undefined, text(declined));
    const no = declined.structuredContent as Record<string, unknown>;
    assert.equal(no.completionReason, "declined");
    assert.equal((no.declined as Record<string, unknown>).by, "mcp");
    assert.equal(no.error, undefined);
    assert.match(text(declined), /was declined by mcp at step "approve\.release"[^]*Note: freeze/);
  } finally {
    await client.close();
    await Deno.remove(dir, { recursive: true });
  }
});

function deepList(depth: number): unknown {
  let value: unknown = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

Deno.test("mcp over stdio: cancelling the request cancels the run, recorded cancelled", async () => {
  const dir = await userFolder();
  const { client } = await stdioClient(dir, ["--script", "slow.script.yaml"]);
  try {
    const cancel = new AbortController();
    const call = client.callTool(
      { name: "run_haiku", arguments: { topic: "slow" } },
      undefined,
      {
        signal: cancel.signal,
        onprogress: (p: Progress) => {
          if (p.message?.includes("step draft.haiku #1 started")) cancel.abort("enough");
        },
      },
    );
    await assert.rejects(call);
    const run = await runStatus(client, "cancelled");
    assert.equal(run.completionReason, "cancelled");
  } finally {
    await client.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mcp over streamable HTTP: tools, a run with progress, a cancelled run, foreign Host refused", async () => {
  const dir = await userFolder();
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER, "--port", "0", "--script", "slow.script.yaml"],
    cwd: dir,
    env: { INIT_CWD: dir, NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines = server.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let stderr = "";
  try {
    while (!/listening on (\S+)/.test(stderr)) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`the server exited: ${stderr}`);
      stderr += value;
    }
    const url = new URL(stderr.match(/listening on (\S+)/)![1]);
    assert.equal(url.hostname, "127.0.0.1");

    // DNS rebinding: a page on another name resolving to 127.0.0.1 gets nothing (fetch sets
    // Host itself, so this request is written by hand).
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(url.port) });
    await conn.write(
      new TextEncoder().encode(
        `POST /mcp HTTP/1.1\r\nHost: evil.example:${url.port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      ),
    );
    const buf = new Uint8Array(64);
    const n = await conn.read(buf);
    conn.close();
    assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 403/);

    const client = new Client({ name: "stepflow-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t: { name: string }) => t.name), [
        "run_haiku",
        "answer_run",
        "list_runs",
        "show_run",
      ]);
      const progress: string[] = [];
      const cancel = new AbortController();
      const call = client.callTool(
        { name: "run_haiku", arguments: { topic: "over http" } },
        undefined,
        {
          signal: cancel.signal,
          onprogress: (p: Progress) => {
            progress.push(p.message ?? "");
            if (p.message?.includes("step draft.haiku #1 started")) cancel.abort("enough");
          },
        },
      );
      await assert.rejects(call);
      assert.match(progress[0], /run \S+ started: agent haiku/);
      await runStatus(client, "cancelled");
    } finally {
      await client.close();
    }
    server.kill("SIGTERM");
    const status = await server.status;
    assert.equal(status.code, 0);
  } finally {
    await lines.cancel().catch(() => {});
    try {
      server.kill("SIGKILL");
    } catch { /* already ended */ }
    await server.status;
    await Deno.remove(dir, { recursive: true });
  }
});

/** One JSON-RPC line exchange with a server process started by hand (no SDK in between). */
function rawServer(dir: string, args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER, ...args],
    cwd: dir,
    env: { INIT_CWD: dir, NO_COLOR: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return {
    child,
    writer,
    send: (message: unknown) =>
      writer.write(new TextEncoder().encode(`${JSON.stringify(message)}\n`)),
    /** The next stdout message that `match` accepts. */
    async next(match: (message: Record<string, unknown>) => boolean) {
      for (;;) {
        const newline = buffered.indexOf("\n");
        if (newline >= 0) {
          const message = JSON.parse(buffered.slice(0, newline));
          buffered = buffered.slice(newline + 1);
          if (match(message)) return message;
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error("the server closed stdout");
        buffered += value;
      }
    },
    /** Waits for the process to end (its last answers may still be written), then closes up. */
    async end() {
      const status = await child.status;
      await reader.cancel().catch(() => {});
      await child.stderr.cancel().catch(() => {});
      return status;
    },
  };
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

Deno.test("mcp process: exits 0 when stdin closes", async () => {
  const dir = await userFolder();
  const server = rawServer(dir, []);
  try {
    await server.send(INITIALIZE);
    const reply = await server.next((m) => m.id === 1);
    const result = reply.result as Record<string, Record<string, unknown>>;
    assert.equal(result.serverInfo.name, "stepflow");
    // Tools, without a promise of list-change notifications the server never sends.
    assert.deepEqual(result.capabilities.tools, {});
    await server.writer.close();
    const status = await server.end();
    assert.equal(status.code, 0);
    assert.equal(pidAlive(server.child.pid), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mcp process: a message over 10 MiB closes the connection: stdout ends, exit 1, MCP_MESSAGE_TOO_LARGE", async () => {
  const dir = await userFolder();
  const server = rawServer(dir, []);
  try {
    await server.send(INITIALIZE);
    await server.next((m) => m.id === 1);
    await server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    // 11 MiB in one line, queued without waiting: a server that stops reading past its limit
    // leaves the pipe full, and a server that ends breaks it.
    const line = `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"${
      "x".repeat(11 * 1024 * 1024)
    }"}}\n`;
    server.writer.write(new TextEncoder().encode(line)).catch(() => {});
    // The client sees stdout end (no hang), and the process is gone. (Bounded, so that a server
    // that keeps the connection open fails the test instead of hanging it.)
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("stdout still open after 60 s")), 60_000);
    });
    await assert.rejects(
      Promise.race([server.next(() => false), hung]).finally(() => clearTimeout(timer)),
      /the server closed stdout/,
    );
    const stderr = new TextDecoder().decode(
      await new Response(server.child.stderr).arrayBuffer(),
    );
    const status = await server.child.status;
    assert.equal(status.code, 1, stderr);
    assert.match(stderr, /MCP_MESSAGE_TOO_LARGE: .*over 10 MiB/);
    assert.doesNotMatch(stderr, /\n\s+at /); // no stack trace
  } finally {
    try {
      server.child.kill("SIGKILL");
    } catch { /* it ended */ }
    await server.writer.close().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mcp process: SIGTERM during a run cancels it, records it and exits 0", async () => {
  const dir = await userFolder();
  const server = rawServer(dir, ["--script", "slow.script.yaml"]);
  try {
    await server.send(INITIALIZE);
    await server.next((m) => m.id === 1);
    await server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await server.send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "run_haiku", arguments: { topic: "x" }, _meta: { progressToken: "p" } },
    });
    await server.next((m) =>
      m.method === "notifications/progress" &&
      String((m.params as Record<string, unknown>).message).includes("draft.haiku #1 started")
    );
    server.child.kill("SIGTERM");
    const status = await server.end();
    assert.equal(status.code, 0);
    // The run recorded its end before the process exited.
    const runs = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        join(REPO_ROOT, "src", "cli", "run_agent.ts"),
        "--agent",
        "haiku",
        "--runs",
        "--json",
      ],
      cwd: REPO_ROOT,
      env: { INIT_CWD: dir, NO_COLOR: "1" },
    }).outputSync();
    const listed = JSON.parse(new TextDecoder().decode(runs.stdout));
    assert.equal(listed.length, 1);
    assert.equal(listed[0].status, "cancelled");
  } finally {
    await server.writer.close().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mcp process: a non-loopback --host is refused with MCP_BIND_FAILED, exit 2", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER, "--port", "0", "--host", "0.0.0.0"],
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 2, stderr);
  assert.match(stderr, /^error: The MCP server listens on loopback only, not on 0\.0\.0\.0/);
  assert.doesNotMatch(stderr, /\n\s+at /); // no stack trace
});

Deno.test("mcp process: usage errors exit 2 with the fix, --help exits 0", async () => {
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", SERVER, ...args],
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  };
  const typo = await run("--prot", "8421");
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /Unknown option --prot\. Did you mean --port\?/);
  const host = await run("--host", "127.0.0.1");
  assert.equal(host.code, 2);
  assert.match(host.stderr, /--host sets where --port listens; add --port N/);
  const both = await run("--backend", "openai", "--script", "a.yaml");
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--script is for the scripted backend/);
  const help = await run("--help");
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: stepflow mcp/);
  assert.match(help.stdout, /--port N/);
});
