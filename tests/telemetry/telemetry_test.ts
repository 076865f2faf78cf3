/**
 * OpenTelemetry spans of a run, checked with the SDK's in-memory exporter.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { metrics, trace } from "@opentelemetry/api";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import {
  endOpenRuns,
  SPAN_ATTRIBUTES as A,
  TRACER_NAME,
  tracingEnabled,
} from "../../src/flow/telemetry.ts";
import { CAPTURE_CONTENT_ENV, capturesContent } from "../../src/flow/telemetry_content.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { shipBackend, writeShipAgents } from "../flow/agent_step_fixtures.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { pipelineFiles, pipelineScript } from "../store/helpers.ts";

async function pipeline() {
  const root = await Deno.makeTempDir({ prefix: "stepflow-otel-" });
  await writeAgent(root, "pipeline", pipelineFiles());
  return await loadAgentDefinition("pipeline", { cwd: root });
}

/** Registers an in-memory exporter for the duration of `fn`. */
async function withExporter(fn: (exporter: InMemorySpanExporter) => Promise<void>) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  assert.equal(trace.setGlobalTracerProvider(provider), true);
  try {
    await fn(exporter);
  } finally {
    trace.disable();
    await provider.shutdown();
  }
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

Deno.test("spans of a run: run → step iteration → backend call, with agent, step, intent and tokens", async () => {
  const def = await pipeline();
  await withExporter(async (exporter) => {
    assert.equal(tracingEnabled(), true);
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(pipelineScript() as never),
    }).run({ args: { topic: "t" }, runId: "otel-1" });
    assert.equal(result.success, true);

    const spans = exporter.getFinishedSpans();
    assert.ok(spans.every((s) => s.instrumentationScope.name === TRACER_NAME));
    const runs = spans.filter((s) => s.name === "invoke_agent pipeline");
    const steps = spans.filter((s) => s.name.startsWith("stepflow.step "));
    const calls = spans.filter((s) => s.name === "chat");
    assert.equal(runs.length, 1);
    assert.equal(steps.length, 6);
    assert.equal(calls.length, 6);
    const run = runs[0];
    assert.equal(parentOf(run), undefined);
    assert.equal(run.kind, 0); // INTERNAL
    assert.deepEqual(run.attributes, {
      [A.operation]: "invoke_agent",
      [A.provider]: "scripted",
      [A.agentName]: "pipeline",
      [A.conversationId]: "otel-1",
      [A.agent]: "pipeline",
      [A.runId]: "otel-1",
      [A.runMode]: "start",
      [A.completionReason]: "completed",
      [A.iterations]: 6,
      [A.inputTokens]: 1507,
      [A.outputTokens]: 153,
      [A.costUsd]: 0,
      [A.callsWithoutUsage]: 0,
    });

    const build = steps.find((s) => s.name === "stepflow.step work.build")!;
    assert.equal(parentOf(build), run.spanContext().spanId);
    assert.equal(build.spanContext().traceId, run.spanContext().traceId);
    assert.deepEqual(build.attributes, {
      [A.agent]: "pipeline",
      [A.runId]: "otel-1",
      [A.stepId]: "work.build",
      [A.iteration]: 2,
      [A.intent]: "next",
      [A.transition]: "next",
      [A.nextStepId]: "work.test",
      [A.inputTokens]: 200,
      [A.outputTokens]: 20,
    });
    const buildCall = calls.find((s) => parentOf(s) === build.spanContext().spanId)!;
    assert.equal(buildCall.kind, 2); // CLIENT
    assert.deepEqual(buildCall.attributes, {
      [A.operation]: "chat",
      [A.provider]: "scripted",
      [A.conversationId]: "otel-1",
      [A.agent]: "pipeline",
      [A.runId]: "otel-1",
      [A.stepId]: "work.build",
      [A.iteration]: 2,
      [A.callKind]: "step",
      [A.backend]: "scripted",
      [A.outputType]: "json",
      [A.inputTokens]: 200,
      [A.outputTokens]: 20,
    });
    const review = steps.find((s) => s.name === "stepflow.step work.review")!;
    assert.equal(review.attributes[A.intent], "complete");
    assert.equal(review.attributes[A.transition], "complete");
  });
});

Deno.test("a failed step and run carry error status, the error code and the exception", async () => {
  const def = await pipeline();
  await withExporter(async (exporter) => {
    const script = { ...pipelineScript(), "work.build": [{ error: "quota exceeded" }] };
    const store = new MemoryRunStore();
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(script as never),
      store,
    }).run({ args: { topic: "t" }, runId: "otel-2" });
    assert.equal(result.completionReason, "step_failed");
    const spans = exporter.getFinishedSpans();
    const run = spans.find((s) => s.name === "invoke_agent pipeline")!;
    assert.equal(run.status.code, 2); // ERROR
    assert.match(run.status.message!, /Step "work\.build" failed: scripted backend error: quota/);
    assert.equal(run.attributes[A.errorCode], "BACKEND_ERROR");
    assert.equal(run.attributes[A.errorType], "BACKEND_ERROR");
    const step = spans.find((s) => s.name === "stepflow.step work.build")!;
    assert.equal(step.status.code, 2);
    assert.equal(step.attributes[A.transition], "fail");
    assert.ok(step.events.some((e) => e.name === "exception"));
    const call = spans.find((s) => s.name === "chat" && s.attributes[A.stepId] === "work.build")!;
    assert.equal(call.status.code, 2);
    assert.equal(call.attributes[A.errorType], "BACKEND_ERROR");

    // The redrive is its own run span, marked as such.
    exporter.reset();
    await new StepFlowRunner(def, {
      backend: new ScriptedBackend(pipelineScript() as never),
      store,
    }).run({ redrive: "otel-2" });
    const redrive = exporter.getFinishedSpans().find((s) => s.name === "invoke_agent pipeline")!;
    assert.equal(redrive.attributes[A.runMode], "redrive");
    assert.equal(redrive.attributes[A.completionReason], "completed");
  });
});

Deno.test("no tracer provider: tracing is off and a run does no tracing work at all", async () => {
  trace.disable();
  assert.equal(tracingEnabled(), false);
  const def = await pipeline();
  const original = trace.getTracer;
  let tracers = 0;
  trace.getTracer = (...args: Parameters<typeof original>) => {
    tracers++;
    return original.apply(trace, args);
  };
  try {
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(pipelineScript() as never),
    }).run({ args: { topic: "t" } });
    assert.equal(result.success, true);
    assert.equal(tracers, 0, "no tracer is even requested without a provider");
  } finally {
    trace.getTracer = original;
  }
  // With a provider registered, the same run asks for its tracer once.
  await withExporter(async () => {
    trace.getTracer = (...args: Parameters<typeof original>) => {
      tracers++;
      return original.apply(trace, args);
    };
    try {
      await new StepFlowRunner(def, {
        backend: new ScriptedBackend(pipelineScript() as never),
      }).run({ args: { topic: "t" } });
    } finally {
      trace.getTracer = original;
    }
    assert.equal(tracers, 1);
  });
});

Deno.test("spans of a step with tools: the traced backend still runs tool turns, a span per turn", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-otel-tools-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Glob"],
  });
  await writeAgent(root, "looker", files);
  const def = await loadAgentDefinition("looker", { cwd: root });
  await withExporter(async (exporter) => {
    const backend = new ScriptedBackend(seed001Script({
      s_a8f3: [{ toolCalls: [{ name: "Glob", arguments: { pattern: "*" } }] }, "Seen."],
      s_c9d4: ["Fine."],
    }));
    const result = await new StepFlowRunner(def, { backend }).run({
      args: { topic: "t" },
      cwd: root,
    });
    assert.equal(result.success, true, JSON.stringify(result.error));
    assert.equal(backend.toolTurns.length, 7, "the tool loop ran through the traced backend");
    const calls = exporter.getFinishedSpans().filter((s) =>
      s.name === "chat" && s.attributes[A.callKind] === "step"
    );
    assert.equal(calls.length, 4, "two turns for the step that called a tool, one for each other");
  });
});

Deno.test("a span per tool call: child of its step, with the tool, decision, who decided, error and duration", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-otel-tools-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Glob", "Edit(docs/**)"],
    permissionMode: "default",
  });
  await writeAgent(root, "looker", files);
  const def = await loadAgentDefinition("looker", { cwd: root });
  await withExporter(async (exporter) => {
    const backend = new ScriptedBackend(seed001Script({
      s_a8f3: [
        {
          toolCalls: [
            { name: "Glob", arguments: { pattern: "*" }, id: "c_glob" },
            {
              name: "Edit",
              arguments: { file_path: "x.txt", old_string: "a", new_string: "b" },
              id: "c_edit",
            },
          ],
        },
        "Seen.",
      ],
      s_c9d4: ["Fine."],
    }));
    const result = await new StepFlowRunner(def, { backend }).run({
      args: { topic: "t" },
      cwd: root,
      runId: "otel-tools",
    });
    assert.equal(result.success, true, JSON.stringify(result.error));
    const spans = exporter.getFinishedSpans();
    const step = spans.find((s) => s.name === "stepflow.step s_a8f3")!;
    const tools = spans.filter((s) => s.name.startsWith("execute_tool "));
    assert.deepEqual(tools.map((s) => s.name), ["execute_tool Glob", "execute_tool Edit"]);
    const [glob, edit] = tools;
    assert.equal(parentOf(glob), step.spanContext().spanId);
    assert.equal(parentOf(edit), step.spanContext().spanId);
    const { [A.toolDurationMs]: duration, ...attributes } = glob.attributes;
    assert.equal(typeof duration, "number");
    assert.deepEqual(attributes, {
      [A.operation]: "execute_tool",
      [A.toolName]: "Glob",
      [A.toolCallId]: "c_glob",
      [A.toolType]: "function",
      [A.agent]: "code-improver",
      [A.runId]: "otel-tools",
      [A.stepId]: "s_a8f3",
      [A.iteration]: 1,
      [A.toolDecision]: "allow",
      [A.toolDecidedBy]: "rule Glob",
      [A.toolIsError]: false,
    });
    assert.equal(glob.status.code, 0);
    assert.equal(edit.attributes[A.toolDecision], "deny");
    assert.equal(edit.attributes[A.toolDecidedBy], "nobody to ask");
    assert.equal(edit.attributes[A.toolIsError], true);
    assert.equal(edit.attributes[A.toolDurationMs], 0);
    assert.equal(edit.status.code, 2); // ERROR
    assert.equal(edit.attributes[A.errorType], "permission_denied");
    assert.equal(glob.attributes[A.toolArguments], undefined, "no content unless opted in");
    assert.match(edit.status.message!, /^Permission denied: Edit/);
    assert.ok(
      glob.startTime[0] * 1e9 + glob.startTime[1] <= edit.startTime[0] * 1e9 + edit.startTime[1],
    );
  });
});

/** Registers a meter provider whose reader the test collects from, for the duration of `fn`. */
async function withMeter(fn: (collect: () => Promise<HistogramPoint[]>) => Promise<void>) {
  class TestReader extends MetricReader {
    protected onForceFlush(): Promise<void> {
      return Promise.resolve();
    }
    protected onShutdown(): Promise<void> {
      return Promise.resolve();
    }
  }
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  try {
    await fn(async () => {
      const { resourceMetrics } = await reader.collect();
      return resourceMetrics.scopeMetrics.flatMap((s) =>
        s.metrics.flatMap((m) =>
          m.dataPoints.map((p) => ({
            name: m.descriptor.name,
            unit: m.descriptor.unit,
            attributes: p.attributes,
            value: p.value as { count: number; sum?: number; buckets: { boundaries: number[] } },
          }))
        )
      );
    });
  } finally {
    metrics.disable();
    await provider.shutdown();
  }
}

interface HistogramPoint {
  name: string;
  unit: string;
  attributes: Record<string, unknown>;
  value: { count: number; sum?: number; buckets: { boundaries: number[] } };
}

Deno.test("metrics: a token-usage and a duration record per model call, by operation, provider and token type", async () => {
  const def = await pipeline();
  await withMeter(async (collect) => {
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(pipelineScript() as never),
    }).run({ args: { topic: "t" } });
    assert.equal(result.success, true);
    const points = await collect();
    const usage = points.filter((p) => p.name === "gen_ai.client.token.usage");
    const input = usage.find((p) => p.attributes[A.tokenType] === "input")!;
    const output = usage.find((p) => p.attributes[A.tokenType] === "output")!;
    assert.equal(input.unit, "{token}");
    assert.deepEqual(input.attributes, {
      [A.operation]: "chat",
      [A.provider]: "scripted",
      [A.tokenType]: "input",
    });
    assert.equal(input.value.count, 6);
    assert.equal(input.value.sum, 1507);
    assert.equal(output.value.sum, 153);
    assert.deepEqual(input.value.buckets.boundaries.slice(0, 3), [1, 4, 16]);
    const duration = points.find((p) => p.name === "gen_ai.client.operation.duration")!;
    assert.equal(duration.unit, "s");
    assert.equal(duration.value.count, 6);
    assert.deepEqual(duration.value.buckets.boundaries.slice(0, 2), [0.01, 0.02]);
  });
});

Deno.test("content is recorded only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT asks: prompt, answer, tool arguments and result", async () => {
  assert.equal(capturesContent(undefined), false);
  assert.equal(capturesContent("false"), false);
  assert.equal(capturesContent("NO_CONTENT"), false);
  assert.equal(capturesContent("EVENT_ONLY"), false);
  assert.equal(capturesContent("True"), true);
  assert.equal(capturesContent("SPAN_ONLY"), true);
  assert.equal(capturesContent("span_and_event"), true);
  const root = await Deno.makeTempDir({ prefix: "stepflow-otel-content-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Glob"],
  });
  await writeAgent(root, "looker", files);
  await Deno.writeTextFile(`${root}/notes.txt`, "x");
  const def = await loadAgentDefinition("looker", { cwd: root });
  Deno.env.set(CAPTURE_CONTENT_ENV, "true");
  try {
    await withExporter(async (exporter) => {
      const backend = new ScriptedBackend(seed001Script({
        s_a8f3: [
          { toolCalls: [{ name: "Glob", arguments: { pattern: "*.txt" }, id: "c_glob" }] },
          "Seen.",
        ],
        s_c9d4: ["Fine."],
      }));
      const result = await new StepFlowRunner(def, { backend }).run({
        args: { topic: "t" },
        cwd: root,
      });
      assert.equal(result.success, true, JSON.stringify(result.error));
      const spans = exporter.getFinishedSpans();
      const turns = spans.filter((s) =>
        s.name === "chat" && s.attributes[A.stepId] === "s_a8f3" &&
        s.attributes[A.callKind] === "step"
      );
      assert.equal(turns.length, 2);
      const firstIn = JSON.parse(turns[0].attributes[A.inputMessages] as string);
      assert.equal(firstIn.length, 1);
      assert.equal(firstIn[0].role, "user");
      assert.equal(firstIn[0].parts[0].type, "text");
      assert.match(firstIn[0].parts[0].content, /\S/);
      assert.deepEqual(JSON.parse(turns[0].attributes[A.outputMessages] as string), [{
        role: "assistant",
        parts: [{ type: "tool_call", id: "c_glob", name: "Glob", arguments: { pattern: "*.txt" } }],
        finish_reason: "tool_call",
      }]);
      // The second turn sends the tool's result back: the conversation so far, in order.
      const secondIn = JSON.parse(turns[1].attributes[A.inputMessages] as string);
      assert.deepEqual(secondIn.map((m: { role: string }) => m.role), [
        "user",
        "assistant",
        "tool",
      ]);
      assert.equal(secondIn[2].parts[0].type, "tool_call_response");
      assert.equal(secondIn[2].parts[0].id, "c_glob");
      assert.match(secondIn[2].parts[0].response, /notes\.txt/);
      assert.deepEqual(JSON.parse(turns[1].attributes[A.outputMessages] as string), [{
        role: "assistant",
        parts: [{ type: "text", content: "Seen." }],
        finish_reason: "stop",
      }]);
      const glob = spans.find((s) => s.name === "execute_tool Glob")!;
      assert.deepEqual(JSON.parse(glob.attributes[A.toolArguments] as string), {
        pattern: "*.txt",
      });
      assert.match(glob.attributes[A.toolResult] as string, /notes\.txt/);
    });
  } finally {
    Deno.env.delete(CAPTURE_CONTENT_ENV);
  }
});

Deno.test("a child run's span is a child of its agent step's span, in the same trace, across the answer that finishes both", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-otel-child-" });
  await writeShipAgents(root);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const store = new FileRunStore(join(root, "runs"));
  await withExporter(async (exporter) => {
    const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run();
    assert.equal(first.completionReason, "waiting");
    let spans = exporter.getFinishedSpans();
    const parentRun = spans.find((s) => s.name === "invoke_agent ship")!;
    const agentStep = spans.find((s) => s.name === "stepflow.step release.ship")!;
    const childRun = spans.find((s) => s.name === "invoke_agent release")!;
    // A run that waits for an answer is not an error.
    assert.equal(parentRun.status.code, 0);
    assert.equal(parentRun.attributes[A.completionReason], "waiting");
    assert.equal(parentOf(agentStep), parentRun.spanContext().spanId);
    assert.equal(parentOf(childRun), agentStep.spanContext().spanId);
    assert.equal(childRun.spanContext().traceId, parentRun.spanContext().traceId);
    assert.equal(childRun.attributes[A.parentRunId], first.runId);
    const childCall = spans.find((s) => s.name === "chat" && s.attributes[A.agent] === "release")!;
    assert.equal(
      parentOf(childCall),
      spans.find((s) => s.name === "stepflow.step draft.release")!
        .spanContext().spanId,
    );

    exporter.reset();
    const done = await new StepFlowRunner(definition, { backend: shipBackend(), store }).answer(
      first.runId,
      { decision: "next" },
    );
    assert.equal(done.completionReason, "completed", JSON.stringify(done.error));
    spans = exporter.getFinishedSpans();
    const resumed = spans.find((s) => s.name === "invoke_agent ship")!;
    assert.equal(resumed.attributes[A.runMode], "resume");
    const step = spans.find((s) => s.name === "stepflow.step release.ship")!;
    const child = spans.find((s) => s.name === "invoke_agent release")!;
    assert.equal(child.attributes[A.runMode], "resume");
    assert.equal(parentOf(child), step.spanContext().spanId, "the resumed child nests too");
    assert.equal(child.spanContext().traceId, resumed.spanContext().traceId);
  });
});

Deno.test("endOpenRuns ends a run cut short: its span and its step's are recorded with the reason", async () => {
  const def = await pipeline();
  await withExporter(async (exporter) => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => release = resolve);
    const scripted = new ScriptedBackend(pipelineScript() as never);
    let reached!: () => void;
    const inCall = new Promise<void>((resolve) => reached = resolve);
    const backend = {
      name: "slow",
      complete: async (...args: Parameters<ScriptedBackend["complete"]>) => {
        reached();
        await gate;
        return scripted.complete(...args);
      },
    };
    const running = new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
    await inCall;
    endOpenRuns("the process exited (code 143) before the run ended");
    const spans = exporter.getFinishedSpans();
    const run = spans.find((s) => s.name === "invoke_agent pipeline")!;
    assert.equal(run.status.code, 2);
    assert.match(run.status.message!, /process exited \(code 143\)/);
    assert.ok(spans.some((s) => s.name.startsWith("stepflow.step ") && s.status.code === 2));
    const call = spans.find((s) => s.name === "chat")!;
    assert.equal(call.status.code, 2, "the model call in flight is ended too");
    release();
    await running;
    const ids = exporter.getFinishedSpans().map((s) => s.spanContext().spanId);
    assert.equal(new Set(ids).size, ids.length, "no span is ended (and exported) twice");
  });
});
