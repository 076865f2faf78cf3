/**
 * A fan-out's children under control: a redrive runs only the failed and unfinished items again,
 * a failing item under `onItemError: "fail"` stops the running children with their processes,
 * abort reaches every child, and the runner-wide cap holds over two runs at once.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { pidAlive } from "../../src/pid_alive.ts";
import { sleep } from "../../src/backoff.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { fleetResponder, reviewedPath, USAGE, writeFleetAgents } from "./fan_out_fixtures.ts";
import { gateSchema, writeAgent } from "./fixtures.ts";

async function setup(step: Record<string, unknown> = {}, form?: "plain" | "confirm" | "tools") {
  const root = await Deno.makeTempDir();
  await writeFleetAgents(root, step, form);
  const definition = await loadAgentDefinition("fleet", { cwd: root });
  const store = new FileRunStore(join(root, "runs"));
  return { root, definition, store };
}

const files = (n: number) => Array.from({ length: n }, (_, i) => `src/f${i}.ts`);

Deno.test("a redrive of a fan-out that failed runs only the failed and unfinished items again", async () => {
  const { definition, store } = await setup({ onItemError: "fail", concurrency: 1 });
  let broken = true;
  const reviews = new Map<string, number>();
  const responder = fleetResponder({ files: files(5) });
  const backend = new ScriptedBackend((req) => {
    if (req.stepId === "complete.review") {
      const path = reviewedPath(req);
      reviews.set(path, (reviews.get(path) ?? 0) + 1);
      if (broken && path === "src/f2.ts") return { error: "the model is down" };
    }
    return responder(req);
  });
  const runner = new StepFlowRunner(definition, { backend, store });
  const failed = await runner.run();
  assert.equal(failed.completionReason, "step_failed");
  assert.equal(failed.error?.code, "FANOUT_ITEM_FAILED");
  assert.match(failed.error!.message, /item 3 \(src\/f2\.ts\) failed/);
  assert.deepEqual([...reviews.keys()], ["src/f0.ts", "src/f1.ts", "src/f2.ts"]);

  broken = false;
  const redriven = await runner.run({ redrive: failed.runId });
  assert.equal(redriven.completionReason, "completed", JSON.stringify(redriven.error));
  // f0 and f1 kept their results; f2's child was redriven (not a second child); f3, f4 ran once.
  assert.deepEqual(Object.fromEntries(reviews), {
    "src/f0.ts": 1,
    "src/f1.ts": 1,
    "src/f2.ts": 2,
    "src/f3.ts": 1,
    "src/f4.ts": 1,
  });
  const [fanOut] = fanOutsOf(await store.readLog(failed.runId));
  for (const item of fanOut.items.values()) assert.equal(item.children.length, 1);
  const { results, counts } = redriven.state.handoff["review.each"] as {
    results: { output: { verdict: string } }[];
    counts: unknown;
  };
  assert.deepEqual(counts, { total: 5, completed: 5, failed: 0 });
  assert.equal(results[2].output.verdict, "ok src/f2.ts");
  // Usage counts every child once, the redriven one with its whole total.
  assert.equal(redriven.usage.inputTokens, 10 * (1 + 5 + 1));
});

/** A reviewer that runs `sleep` in Bash (its pid recorded), except for one path that fails. */
function bashResponder(
  backend: () => ScriptedBackend,
  pidDir: string,
  failing: string,
): (req: LlmRequest) => Promise<ScriptedEntry> {
  const fleet = fleetResponder({ files: files(4) });
  return async (req) => {
    if (req.stepId !== "complete.review") return fleet(req);
    const path = reviewedPath(req);
    if (path === failing) {
      // It fails once the three others run their Bash (their pids written): an order, not a delay
      // that a loaded machine outlasts (a contained Bash call starts a supervisor first).
      for (let i = 0; i < 3000 && [...Deno.readDirSync(pidDir)].length < 3; i++) await sleep(10);
      return { error: `cannot review ${path}` };
    }
    const turn = backend().toolTurns.at(-1)!;
    if (turn.messages.some((m) => m.role === "assistant")) {
      return {
        output: { verdict: `ok ${path}`, next_action: { action: "complete" } },
        usage: USAGE,
      };
    }
    const name = path.replaceAll("/", "_");
    return {
      toolCalls: [{
        name: "Bash",
        arguments: { command: `echo $$ > ${join(pidDir, name)}; sleep 31.4159` },
      }],
    };
  };
}

/**
 * Whether the process still runs, given a moment to go: its supervisor kills the call's process
 * group as the run stops, and reaps it just after (a zombie does not run).
 */
async function alive(pid: number): Promise<boolean> {
  for (let i = 0; i < 500 && running(pid); i++) await sleep(10);
  return running(pid);
}

function running(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

Deno.test("under onItemError fail, the first failed child cancels the running ones: their Bash processes are gone", async () => {
  const { root, definition, store } = await setup({ onItemError: "fail", concurrency: 4 }, "tools");
  const pids = join(root, "pids");
  await Deno.mkdir(pids);
  const backend: ScriptedBackend = new ScriptedBackend(
    bashResponder(() => backend, pids, "src/f3.ts"),
  );
  const result = await new StepFlowRunner(definition, { backend, store }).run({ cwd: root });
  assert.equal(result.completionReason, "step_failed", JSON.stringify(result.error));
  assert.equal(result.error?.code, "FANOUT_ITEM_FAILED");
  const written = [...Deno.readDirSync(pids)].map((e) => e.name);
  assert.equal(written.length, 3, `the three others started Bash: ${written}`);
  for (const name of written) {
    const pid = Number(Deno.readTextFileSync(join(pids, name)).trim());
    assert.equal(await alive(pid), false, `Bash of ${name} (pid ${pid}) still runs`);
  }
  const [fanOut] = fanOutsOf(await store.readLog(result.runId));
  const statuses = [...fanOut.items.values()].map((i) => i.children[0].end?.status).sort();
  assert.deepEqual(statuses, ["cancelled", "cancelled", "cancelled", "failed"]);
  for (const item of fanOut.items.values()) {
    const child = await store.loadCheckpoint(item.children[0].childRunId);
    assert.ok(child?.status === "cancelled" || child?.status === "failed", child?.status);
  }
});

Deno.test("abort of the run reaches every running child: their Bash processes are gone", async () => {
  const { root, definition, store } = await setup({ concurrency: 3 }, "tools");
  const pids = join(root, "pids");
  await Deno.mkdir(pids);
  const backend: ScriptedBackend = new ScriptedBackend(bashResponder(() => backend, pids, "none"));
  const runner = new StepFlowRunner(definition, { backend, store });
  const handle = runner.start({ cwd: root });
  for (let i = 0; i < 200 && [...Deno.readDirSync(pids)].length < 3; i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal([...Deno.readDirSync(pids)].length, 3);
  handle.abort();
  const result = await handle.result;
  assert.equal(result.completionReason, "aborted");
  for (const entry of Deno.readDirSync(pids)) {
    const pid = Number(Deno.readTextFileSync(join(pids, entry.name)).trim());
    assert.equal(await alive(pid), false, `Bash of ${entry.name} still runs`);
  }
  const [fanOut] = fanOutsOf(await store.readLog(result.runId));
  for (const item of fanOut.items.values()) {
    assert.equal(item.children[0].end?.status, "cancelled");
  }
});

Deno.test("maxChildren caps the children in flight over every run of the runner", async () => {
  const { definition, store } = await setup({ concurrency: 4 });
  const backend = new ScriptedBackend(fleetResponder({ files: files(6), delayMs: () => 40 }));
  const running = new Map<string, number>();
  let most = 0;
  let stepsSeen = false;
  const runner = new StepFlowRunner(definition, {
    backend,
    store,
    maxChildren: 3,
    events: {
      onFanOut: (info, report) => {
        running.set(info.runId, report.running);
        most = Math.max(most, [...running.values()].reduce((a, b) => a + b, 0));
        if (report.active.some((a) => a.stepId === "complete.review")) stepsSeen = true;
      },
    },
  });
  const [a, b] = await Promise.all([runner.run(), runner.run()]);
  assert.equal(a.completionReason, "completed");
  assert.equal(b.completionReason, "completed");
  assert.ok(most <= 3, `in flight at once: ${most}`);
  assert.ok(most >= 2, `in flight at once: ${most}`);
  assert.ok(stepsSeen, "the running items' steps are reported");
  assert.throws(
    () => new StepFlowRunner(definition, { maxChildren: 0 }),
    (e: Error & { code?: string }) => e.code === "MAX_CHILDREN_INVALID",
  );
});

Deno.test("pause holds the fan-out: no child starts or calls the model until resume", async () => {
  const { definition, store } = await setup({ concurrency: 2 });
  const backend = new ScriptedBackend(fleetResponder({ files: files(6), delayMs: () => 30 }));
  let ended = 0;
  const runner = new StepFlowRunner(definition, {
    backend,
    store,
    events: { onFanOut: (_i, r) => void (ended = r.completed) },
  });
  const handle = runner.start();
  for (let i = 0; i < 200 && ended < 1; i++) await new Promise((r) => setTimeout(r, 10));
  handle.pause();
  await new Promise((r) => setTimeout(r, 150)); // the calls in flight end, then all are held
  const calls = backend.calls.length;
  const done = ended;
  await new Promise((r) => setTimeout(r, 250));
  assert.equal(backend.calls.length, calls, "no model call while paused");
  assert.equal(ended, done, "no child ended while paused");
  assert.ok(done < 6);
  handle.resume();
  const result = await handle.result;
  assert.equal(result.completionReason, "completed");
  assert.equal(ended, 6);
});

Deno.test("a step's onError retry runs only the failed items again, as a redrive does", async () => {
  const { definition, store } = await setup({
    onItemError: "fail",
    concurrency: 2,
    onError: "retry=1",
  });
  let failures = 1;
  const reviews = new Map<string, number>();
  const responder = fleetResponder({ files: files(4) });
  const backend = new ScriptedBackend((req) => {
    if (req.stepId === "complete.review") {
      const path = reviewedPath(req);
      reviews.set(path, (reviews.get(path) ?? 0) + 1);
      if (path === "src/f1.ts" && failures-- > 0) return { error: "flaky" };
    }
    return responder(req);
  });
  const result = await new StepFlowRunner(definition, {
    backend,
    store,
    retryBackoff: { initialMs: 1 },
  }).run();
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  assert.equal(reviews.get("src/f1.ts"), 2);
  const [fanOut] = fanOutsOf(await store.readLog(result.runId));
  for (const item of fanOut.items.values()) assert.equal(item.children.length, 1);
  const attempts = result.state.history.filter((h) => h.stepId === "review.each");
  assert.deepEqual(attempts.map((h) => h.transition), ["retry", "next"]);
});

Deno.test("nested fan-outs under a small maxChildren: a child that fans out gives its place back, nothing starves", async () => {
  const root = await Deno.makeTempDir();
  const word = { word: { type: "string", required: true } };
  await writeAgent(root, "leaf", {
    agent: { name: "leaf", behavior: { completionType: "leaf" }, parameters: word },
    registry: {
      version: "1.0.0",
      entryStepMapping: { leaf: "complete.leaf" },
      steps: {
        "complete.leaf": {
          prompt: { c1: "steps", c2: "complete", c3: "leaf" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "leaf.schema.json", schema: "#/definitions/leaf" },
        },
      },
    },
    prompts: { "steps/complete/leaf/f_default.md": "Say {uv-word}." },
    schemas: { "leaf.schema.json": { definitions: { leaf: gateSchema(["complete"]) } } },
  });
  const fan = (name: string, child: string, param: string, args: Record<string, unknown>) => ({
    agent: {
      name,
      behavior: { completionType: name },
      parameters: { [param]: { type: "array" } },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { [name]: "run.each" },
      steps: {
        "run.each": { kind: "agent", agent: child, forEach: `{uv-${param}}`, args, concurrency: 4 },
      },
    },
    prompts: {},
  });
  await writeAgent(root, "middle", fan("middle", "leaf", "words", { word: "{item}" }));
  await writeAgent(root, "outer", fan("outer", "middle", "groups", { words: "{item}" }));
  const definition = await loadAgentDefinition("outer", { cwd: root });
  const backend = new ScriptedBackend(() => ({
    output: { summary: "said", next_action: { action: "complete" } },
    delayMs: 5,
  }));
  const groups = [["a", "b", "c"], ["d", "e"], ["f", "g"], ["h"]];
  const result = await new StepFlowRunner(definition, {
    backend,
    store: new FileRunStore(join(root, "runs")),
    maxChildren: 2,
    // Starved children would wait for a place forever: the time limit makes that a failure.
  }).run({ args: { groups }, signal: AbortSignal.timeout(30_000) });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  const { counts } = result.output as { counts: unknown };
  assert.deepEqual(counts, { total: 4, completed: 4, failed: 0 });
  assert.equal(backend.calls.length, 8);
});
