/**
 * The command lines export over OTLP/HTTP with nothing but the standard environment variables:
 * the real `run-agent`, `worker` and `mcp` processes send to a receiver on 127.0.0.1 (tests/
 * telemetry/otlp_receiver.ts), in the default encoding (protobuf) and in JSON. The batch delay is
 * set far beyond each test (`OTEL_BSP_SCHEDULE_DELAY`, `OTEL_METRIC_EXPORT_INTERVAL`), so every
 * span and metric received was delivered by the flush at exit — on a normal end, a waiting run,
 * Ctrl-C, SIGTERM and the worker's and the MCP server's graceful stops.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { exportPlan } from "../../src/cli/kit/telemetry_export.ts";
import { pidAlive } from "../../src/pid_alive.ts";
import { SPAN_ATTRIBUTES as A, TRACER_NAME } from "../../src/flow/telemetry.ts";
import { main as runAgentMain } from "../../src/cli/run_agent.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { copyDir, finish, REPO_ROOT, spawnCli } from "../cli/helpers.ts";
import { writeShipAgents } from "../flow/agent_step_fixtures.ts";
import { openAiCompletion, startFakeServer } from "../llm/fake_server.ts";
import { pipelineWorkspace, waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./otlp_receiver.ts";

/** Only the flush at exit can deliver within a test: the periodic exports are an hour away. */
function otelEnv(receiver: OtlpReceiver, extra: Record<string, string> = {}) {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: "3600000",
    OTEL_METRIC_EXPORT_INTERVAL: "3600000",
    ...extra,
  };
}

async function userWith(agents: string[]): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow-otlp-" });
  for (const agent of agents) {
    await copyDir(join(REPO_ROOT, ".agent", agent), join(user, ".agent", agent));
  }
  return user;
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string) => {
  const found = byName(spans, name);
  assert.equal(found.length, 1, `one span ${name}: ${spans.map((s) => s.name).join(", ")}`);
  return found[0];
};

/** Every span's parent was received too (nothing lost), all in one trace under one root. */
function assertWholeTree(spans: ReceivedSpan[]): ReceivedSpan {
  const ids = new Set(spans.map((s) => s.spanId));
  const roots = spans.filter((s) => s.parentSpanId === undefined);
  assert.equal(roots.length, 1, `one root: ${roots.map((s) => s.name).join(", ")}`);
  for (const span of spans) {
    if (span.parentSpanId) assert.ok(ids.has(span.parentSpanId), `the parent of ${span.name}`);
    assert.equal(span.traceId, roots[0].traceId, `${span.name} is in the run's trace`);
    assert.equal(span.scope, TRACER_NAME);
  }
  return roots[0];
}

Deno.test("export plan: the standard variables decide what is exported, and how", () => {
  assert.deepEqual(exportPlan({}), { notes: [] }, "nothing set: no export");
  assert.deepEqual(exportPlan({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }), {
    traces: "http/protobuf",
    metrics: "http/protobuf",
    notes: [],
  });
  assert.deepEqual(
    exportPlan({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" }),
    { traces: "http/protobuf", notes: [] },
    "a traces endpoint exports traces only",
  );
  assert.deepEqual(exportPlan({ OTEL_TRACES_EXPORTER: "otlp" }), {
    traces: "http/protobuf",
    notes: [],
  }, "otlp asked for by name: the default endpoint");
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };
  assert.deepEqual(exportPlan({ ...endpoint, OTEL_SDK_DISABLED: "TRUE" }), { notes: [] });
  assert.deepEqual(exportPlan({ ...endpoint, OTEL_TRACES_EXPORTER: "none" }), {
    metrics: "http/protobuf",
    notes: [],
  });
  assert.deepEqual(
    exportPlan({
      ...endpoint,
      OTEL_METRICS_EXPORTER: "none",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    }),
    { traces: "http/json", notes: [] },
  );
  assert.deepEqual(
    exportPlan({
      ...endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
    }),
    { traces: "http/protobuf", metrics: "http/json", notes: [] },
    "the per-signal protocol wins",
  );
  const grpc = exportPlan({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" });
  assert.equal(grpc.traces, undefined);
  assert.match(grpc.notes[0], /OTEL_EXPORTER_OTLP_PROTOCOL=grpc: .*http\/protobuf.*4318/);
  const consoleOnly = exportPlan({ ...endpoint, OTEL_TRACES_EXPORTER: "console" });
  assert.equal(consoleOnly.traces, undefined);
  assert.match(consoleOnly.notes[0], /OTEL_TRACES_EXPORTER=console: .*OTLP only/);
  // Deno's own export (OTEL_DENO=true) registered its providers first: left alone.
  assert.deepEqual(exportPlan(endpoint, { tracer: true, meter: true }), { notes: [] });
});

Deno.test("run-agent exports over OTLP/HTTP (protobuf by default): the run, its steps, model calls and tool calls, with the resource and headers of the environment", async () => {
  const receiver = startOtlpReceiver();
  const user = await userWith(["tool-fixer"]);
  try {
    const run = await finish(spawnCli("run-agent", [
      "--agent",
      "tool-fixer",
      "--backend",
      "scripted",
      "--script",
      join(user, ".agent/tool-fixer/demo.script.yaml"),
      "--topic",
      "the greeting misses a space",
    ], {
      userDir: user,
      env: otelEnv(receiver, {
        OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=acme",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=ci",
      }),
    }));
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /stepflow telemetry/);
    assert.ok(receiver.requests.length >= 2);
    for (const request of receiver.requests) {
      assert.equal(request.contentType, "application/x-protobuf");
      assert.equal(request.headers["x-tenant"], "acme");
    }
    const spans = receiver.spans;
    const root = assertWholeTree(spans);
    assert.equal(root.name, "invoke_agent tool-fixer");
    assert.equal(root.kind, 1); // INTERNAL
    assert.equal(root.resource["service.name"], "stepflow");
    assert.equal(root.resource["deployment.environment.name"], "ci");
    assert.equal(root.attributes[A.operation], "invoke_agent");
    assert.equal(root.attributes[A.agentName], "tool-fixer");
    assert.equal(root.attributes[A.provider], "scripted");
    const runId = root.attributes[A.runId] as string;
    assert.equal(root.attributes[A.conversationId], runId);
    assert.equal(root.attributes[A.completionReason], "completed");

    const steps = spans.filter((s) => s.name.startsWith("stepflow.step "));
    assert.ok(steps.length >= 2);
    for (const step of steps) assert.equal(step.parentSpanId, root.spanId);
    const stepIds = new Set(steps.map((s) => s.spanId));
    const calls = byName(spans, "chat");
    assert.ok(calls.length >= 3);
    for (const call of calls) {
      assert.ok(stepIds.has(call.parentSpanId!), "a model call is a child of its step");
      assert.equal(call.kind, 3); // CLIENT
      assert.equal(call.attributes[A.operation], "chat");
      assert.equal(call.attributes[A.runId], runId);
    }
    const edit = one(spans, "execute_tool Edit");
    const bash = byName(spans, "execute_tool Bash").find((s) => s.status.code !== 0)!;
    const fixStep = steps.find((s) => s.spanId === edit.parentSpanId)!;
    assert.equal(fixStep.attributes[A.stepId], "s_f1e0");
    assert.equal(bash.parentSpanId, fixStep.spanId);
    assert.equal(edit.attributes[A.operation], "execute_tool");
    assert.equal(edit.attributes[A.toolName], "Edit");
    assert.equal(edit.attributes[A.toolType], "function");
    assert.equal(edit.status.code, 0);
    assert.equal(bash.attributes[A.errorType], "permission_denied");
    assert.equal(bash.status.code, 2);

    const durations = receiver.points.filter((p) =>
      p.metric === "gen_ai.client.operation.duration"
    );
    assert.equal(durations[0].unit, "s");
    assert.equal(durations[0].attributes[A.operation], "chat");
    assert.equal(durations.reduce((n, p) => n + p.count, 0), calls.length);
  } finally {
    await receiver.close();
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent (http/json): an agent step's child run nests under that step in the parent's trace, and a waiting run is delivered at exit", async () => {
  const receiver = startOtlpReceiver();
  const user = await Deno.makeTempDir({ prefix: "stepflow-otlp-ship-" });
  try {
    await writeShipAgents(user);
    await Deno.writeTextFile(
      join(user, "ship.script.json"),
      JSON.stringify({
        "plan.ship": [{ output: { version: "2.0.0", next_action: { action: "next" } } }],
        "draft.release": [{ output: { plan: "tag", next_action: { action: "next" } } }],
      }),
    );
    const run = await finish(spawnCli("run-agent", [
      "--agent",
      "ship",
      "--script",
      "ship.script.json",
    ], {
      userDir: user,
      env: otelEnv(receiver, {
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "release-bot",
      }),
    }));
    assert.equal(run.code, 4, run.stderr); // waits for an answer
    assert.ok(receiver.requests.every((r) => r.contentType.startsWith("application/json")));
    const spans = receiver.spans;
    const root = assertWholeTree(spans);
    assert.equal(root.name, "invoke_agent ship");
    assert.equal(root.resource["service.name"], "release-bot");
    assert.equal(root.status.code, 0, "waiting is not an error");
    const agentStep = one(spans, "stepflow.step release.ship");
    assert.equal(agentStep.parentSpanId, root.spanId);
    const child = one(spans, "invoke_agent release");
    assert.equal(child.parentSpanId, agentStep.spanId);
    assert.equal(child.attributes[A.parentRunId], root.attributes[A.runId]);
    const draft = one(spans, "stepflow.step draft.release");
    assert.equal(draft.parentSpanId, child.spanId);
    const draftCall = spans.find((s) => s.name === "chat" && s.parentSpanId === draft.spanId);
    assert.ok(draftCall, "the child's model call is under the child's step");
  } finally {
    await receiver.close();
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent: each child of a fan-out step is a span of its own under the step's span", async () => {
  const receiver = startOtlpReceiver();
  const user = await userWith(["review-files", "file-reviewer"]);
  try {
    const run = await finish(spawnCli("run-agent", [
      "--agent",
      "review-files",
      "--script",
      ".agent/review-files/demo.script.yaml",
    ], { userDir: user, env: otelEnv(receiver) }));
    assert.equal(run.code, 0, run.stderr);
    const spans = receiver.spans;
    const root = assertWholeTree(spans);
    assert.equal(root.name, "invoke_agent review-files");
    const fanOut = one(spans, "stepflow.step review.each");
    assert.equal(fanOut.parentSpanId, root.spanId);
    const children = byName(spans, "invoke_agent file-reviewer");
    assert.equal(children.length, 4, "one span per item");
    for (const child of children) {
      assert.equal(child.parentSpanId, fanOut.spanId, "a child's span is under the fan-out step");
      assert.equal(child.attributes[A.parentRunId], root.attributes[A.runId]);
      const steps = spans.filter((s) => s.parentSpanId === child.spanId);
      assert.ok(steps.length > 0, "the child's steps are under the child");
    }
    assert.equal(new Set(children.map((c) => c.attributes[A.runId])).size, 4, "four child runs");
  } finally {
    await receiver.close();
    await Deno.remove(user, { recursive: true });
  }
});

/** Four answers of the issue-solver demo as a chat-completions server would send them. */
async function issueSolverAnswers(options: Parameters<typeof openAiCompletion>[1]) {
  const { parse } = await import("yaml");
  const script = parse(
    await Deno.readTextFile(join(REPO_ROOT, ".agent/issue-solver/demo.script.yaml")),
  ) as Record<string, { output: unknown }[]>;
  return [
    script["initial.issue"][0],
    script["continuation.issue"][0],
    script["continuation.issue"][1],
    script["complete.issue"][0],
  ].map((a) => openAiCompletion(JSON.stringify(a.output), options));
}

function openAiArgs(server: { url: string }) {
  return [
    "--agent",
    "issue-solver",
    "--backend",
    "openai",
    "--base-url",
    `${server.url}/v1`,
    "--model",
    "gpt-5.4-mini",
    "--topic",
    "Fix the flaky login test",
  ];
}

Deno.test("run-agent on an OpenAI-compatible server: chat spans carry the server's model, usage and finish reason, the token histogram counts them, and content only when opted in", async () => {
  const receiver = startOtlpReceiver();
  const server = startFakeServer(
    await issueSolverAnswers({
      promptTokens: 120,
      completionTokens: 30,
      cachedTokens: 100,
      model: "gpt-5.4-mini-2026-03-01",
    }),
  );
  const user = await userWith(["issue-solver"]);
  try {
    const run = await finish(spawnCli("run-agent", openAiArgs(server), {
      userDir: user,
      env: otelEnv(receiver, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "SPAN_ONLY" }),
    }));
    assert.equal(run.code, 0, run.stderr);
    const spans = receiver.spans;
    const root = assertWholeTree(spans);
    assert.equal(root.attributes[A.provider], "openai");
    assert.equal(root.attributes[A.inputTokens], "480");
    const calls = byName(spans, "chat gpt-5.4-mini");
    assert.equal(calls.length, 4);
    for (const call of calls) {
      assert.equal(call.attributes[A.provider], "openai");
      assert.equal(call.attributes[A.model], "gpt-5.4-mini");
      assert.equal(call.attributes[A.responseModel], "gpt-5.4-mini-2026-03-01");
      assert.equal(call.attributes[A.inputTokens], "120");
      assert.equal(call.attributes[A.outputTokens], "30");
      assert.equal(call.attributes[A.cacheReadTokens], "100");
      assert.deepEqual(call.attributes[A.finishReasons], ["stop"]);
      assert.equal(call.attributes[A.outputType], "json");
    }
    const input = JSON.parse(calls[0].attributes[A.inputMessages] as string);
    assert.equal(input[0].role, "user");
    assert.match(input[0].parts[0].content, /Fix the flaky login test/);
    const output = JSON.parse(calls[0].attributes[A.outputMessages] as string);
    assert.equal(output[0].finish_reason, "stop");
    assert.match(output[0].parts[0].content, /next_action/);

    const tokens = receiver.points.filter((p) => p.metric === "gen_ai.client.token.usage");
    const inputTokens = tokens.find((p) => p.attributes[A.tokenType] === "input")!;
    assert.equal(inputTokens.unit, "{token}");
    assert.equal(inputTokens.count, 4);
    assert.equal(inputTokens.sum, 480);
    assert.equal(inputTokens.attributes[A.responseModel], "gpt-5.4-mini-2026-03-01");
    assert.deepEqual(inputTokens.bounds.slice(0, 4), [1, 4, 16, 64]);
    const outputTokens = tokens.find((p) => p.attributes[A.tokenType] === "output")!;
    assert.equal(outputTokens.sum, 120);
  } finally {
    await server.close();
    await receiver.close();
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("Ctrl-C and SIGTERM during a model call: the process exits at once and the run's spans still arrive", async () => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const receiver = startOtlpReceiver();
    const server = startFakeServer([{ ...openAiCompletion("{}"), delayMs: 600_000 }]);
    const user = await userWith(["issue-solver"]);
    try {
      const child = spawnCli("run-agent", openAiArgs(server), {
        userDir: user,
        env: otelEnv(receiver),
      });
      await waitFor("the model call", () => Promise.resolve(server.requests.length || undefined));
      const signalled = performance.now();
      child.kill(signal);
      const run = await finish(child);
      // At once, not after the model call (ten minutes away): a bound a busy machine keeps.
      assert.ok(performance.now() - signalled < 8_000, "exits promptly");
      // Both cancel the run, which records its end; SIGTERM's exit code is 128 + 15.
      assert.equal(run.code, signal === "SIGINT" ? 130 : 143, run.stderr);
      const spans = receiver.spans;
      const root = assertWholeTree(spans);
      assert.equal(root.name, "invoke_agent issue-solver");
      assert.equal(root.status.code, 2);
      assert.equal(root.attributes[A.completionReason], "cancelled");
      const call = one(spans, "chat gpt-5.4-mini");
      assert.equal(call.status.code, 2, "the call cut short is recorded, as failed");
    } finally {
      await server.close();
      await receiver.close();
      await Deno.remove(user, { recursive: true });
    }
  }
});

Deno.test("a collector that is down costs the command nothing but one line per failure", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const user = await userWith(["tool-fixer"]);
  try {
    const run = await finish(spawnCli("run-agent", [
      "--agent",
      "tool-fixer",
      "--backend",
      "scripted",
      "--script",
      join(user, ".agent/tool-fixer/demo.script.yaml"),
      "--topic",
      "x",
    ], {
      userDir: user,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_TIMEOUT: "500",
      },
    }));
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /run succeeded: completed/);
    assert.match(
      run.stderr,
      new RegExp(
        `stepflow telemetry: could not deliver to the collector at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`,
      ),
    );
    assert.doesNotMatch(run.stderr, /^\s+at /m, "no stack trace");
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test({
  name: "worker: the runs it drives are exported, and its graceful SIGTERM delivers them",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root, script } = await pipelineWorkspace();
    const receiver = startOtlpReceiver();
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    const worker = spawnCli("worker", ["--store", db, "--script", script, "--poll-ms", "100"], {
      userDir: root,
      env: otelEnv(receiver),
    });
    try {
      let stdout = "";
      const code = await runAgentMain([
        "--agent",
        "pipeline",
        "--topic",
        "x",
        "--store",
        db,
        "--submit",
      ], {
        stdout: { write: (t) => void (stdout += t) },
        stderr: { write: () => {} },
        stdin: null,
        env: { INIT_CWD: root, NO_COLOR: "1" },
        cwd: REPO_ROOT,
        isTerminal: { stdin: false, stdout: false, stderr: false },
      });
      assert.equal(code, 0);
      const runId = stdout.trim();
      await waitFor(
        "the run to complete",
        async () => (await store.loadCheckpoint(runId))?.status === "completed" || undefined,
        30_000,
      );
      assert.equal(receiver.spans.length, 0, "nothing exported before the stop");
      worker.kill("SIGTERM");
      const stopped = await finish(worker);
      assert.equal(stopped.code, 0, stopped.stderr);
      // pg-boss traces its queue work too (its own scope); the run is stepflow's trace.
      const ours = receiver.spans.filter((s) => s.scope === TRACER_NAME);
      const run = assertWholeTree(ours);
      assert.equal(run.name, "invoke_agent pipeline");
      assert.equal(run.attributes[A.runId], runId);
      assert.equal(run.attributes[A.completionReason], "completed");
      assert.equal(byName(ours, "chat").length, 6);
    } finally {
      try {
        worker.kill("SIGKILL");
      } catch {
        // stopped already
      }
      await worker.status;
      await store.close();
      await receiver.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test("mcp: a run started by a tool call is exported, delivered when the client goes away", async () => {
  const receiver = startOtlpReceiver();
  const user = await userWith(["haiku"]);
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "-A",
      join(REPO_ROOT, "src", "cli", "mcp.ts"),
      "--script",
      ".agent/haiku/demo.script.yaml",
    ],
    cwd: user,
    env: { ...Deno.env.toObject(), INIT_CWD: user, NO_COLOR: "1", ...otelEnv(receiver) },
    stderr: "pipe",
  });
  const client = new Client({ name: "stepflow-otel-test", version: "1.0.0" });
  try {
    await client.connect(transport);
    const pid = transport.pid!;
    const result = await client.callTool({ name: "run_haiku", arguments: { topic: "autumn" } });
    const answer = result.structuredContent as { runId: string; success: boolean };
    assert.equal(answer.success, true);
    await client.close();
    await waitFor("the server to exit", () => Promise.resolve(!pidAlive(pid) || undefined));
    const root = assertWholeTree(receiver.spans);
    assert.equal(root.name, "invoke_agent haiku");
    assert.equal(root.attributes[A.runId], answer.runId);
    assert.ok(byName(receiver.spans, "chat").length >= 2);
  } finally {
    await client.close();
    await receiver.close();
    await Deno.remove(user, { recursive: true });
  }
});
