import assert from "node:assert/strict";
import { stepEdges } from "../../src/definition/edges.ts";
import { flowGraph } from "../../src/ui/flow_graph.ts";
import { graphSvg } from "../../src/ui/graph_svg.ts";
import { foldLog, newTimeline } from "../../src/ui/timeline.ts";
import type { RunLogEntry } from "../../src/store/types.ts";
import { demoProject } from "./fixtures.ts";

const ts = "2026-01-01T00:00:00.000Z";
const end = (stepId: string, iteration: number, intent: string, next?: string): RunLogEntry => ({
  ts,
  runId: "r",
  type: "step_end",
  stepId,
  entry: { stepId, iteration, attempt: 1, intent, transition: intent, nextStepId: next },
});

Deno.test("flow graph: every step and every declared route is drawn", async () => {
  const { def } = await demoProject();
  const { nodes, edges } = flowGraph(def);
  const declared = Object.values(def.steps).flatMap((s) => stepEdges(s));
  assert.equal(edges.length, declared.length + 1); // + the start edge
  assert.deepEqual(nodes.map((n) => n.id).sort(), [
    "#done",
    "#start",
    "complete.issue",
    "continuation.issue",
    "initial.issue",
  ]);
  const svg = graphSvg(nodes, edges, "t").text;
  for (const e of edges) {
    assert.match(
      svg,
      new RegExp(`data-from="${e.from}"\\s+data-to="${e.to}"`),
      `${e.from}>${e.to}`,
    );
  }
  // initial.issue → complete.issue skips a layer: drawn around the left, not under a box.
  assert.match(
    svg,
    /class="edge left route" data-from="initial.issue"\s+data-to="complete.issue"/,
  );
});

Deno.test("flow graph: the taken route is the one the intent names, counts per step", async () => {
  const { def } = await demoProject();
  const timeline = newTimeline();
  foldLog(timeline, [
    { ts, runId: "r", type: "step_start", stepId: "initial.issue", iteration: 1 },
    end("initial.issue", 1, "next", "continuation.issue"),
    { ts, runId: "r", type: "step_start", stepId: "continuation.issue", iteration: 2 },
    end("continuation.issue", 2, "repeat", "continuation.issue"),
    { ts, runId: "r", type: "step_start", stepId: "continuation.issue", iteration: 3 },
    end("continuation.issue", 3, "complete", "complete.issue"),
  ]);
  const { nodes, edges } = flowGraph(def, {
    counts: timeline.counts,
    taken: timeline.taken,
    firstStep: timeline.firstStep,
  });
  const taken = edges.filter((e) => e.classes?.includes("taken")).map((e) =>
    `${e.from}>${e.to}:${e.label ?? ""}`
  );
  assert.deepEqual(taken.sort(), [
    "#start>initial.issue:",
    "continuation.issue>complete.issue:complete",
    "continuation.issue>continuation.issue:repeat",
    "initial.issue>continuation.issue:next",
  ]);
  assert.equal(nodes.find((n) => n.id === "continuation.issue")?.badge, "2");
  assert.equal(nodes.find((n) => n.id === "complete.issue")?.badge, undefined);
});

Deno.test("timeline: prompts, answers, re-asks, retries and errors land on their iteration", () => {
  const timeline = newTimeline();
  const touched = foldLog(timeline, [
    { ts, runId: "r", type: "run_start", stepId: "a" },
    {
      ts,
      runId: "r",
      type: "step_start",
      stepId: "a",
      iteration: 1,
      prompt: { text: "P", length: 9 },
    },
    { ts, runId: "r", type: "backend_retry", stepId: "a", attempt: 1, reason: "429", delayMs: 10 },
    {
      ts,
      runId: "r",
      type: "step_reask",
      stepId: "a",
      reason: "schema",
      errors: ["/x: bad"],
      answer: "no",
    },
    {
      ...end("a", 1, "next", "b"),
      answer: { text: "{}", length: 2 },
      usage: { inputTokens: 5, outputTokens: 2 },
    },
    { ts, runId: "r", type: "step_start", stepId: "b", iteration: 2 },
    { ts, runId: "r", type: "step_error", stepId: "b", code: "BACKEND_ERROR", message: "down" },
  ]);
  assert.deepEqual([...touched], [0, 1, 2]);
  const [start, a, b] = timeline.rows;
  assert.equal(start.kind, "event");
  assert.ok(a.kind === "iteration" && b.kind === "iteration");
  assert.deepEqual(a.prompt, { text: "P", length: 9, entry: 1, field: "prompt" });
  assert.deepEqual(a.reasks, [{
    reason: "schema",
    errors: ["/x: bad"],
    answer: { text: "no", length: 2, entry: 3, field: "answer" },
  }]);
  assert.equal(a.retries.length, 1);
  assert.equal(a.answer?.text, "{}");
  assert.deepEqual(a.tokens, { input: 5, output: 2 });
  assert.deepEqual(b.errors, ["BACKEND_ERROR: down"]);
  assert.equal(b.end, undefined);
  // The next entries extend the open row instead of starting a new one.
  const more = foldLog(timeline, [end("b", 2, "complete"), {
    ts,
    runId: "r",
    type: "run_end",
    reason: "completed",
  }]);
  assert.deepEqual([...more], [2, 3]);
  assert.ok(timeline.taken.has("b>done"));
});

Deno.test("graph: a step's self loops (next and repeat to itself) get labels that do not overlap; cut texts keep a tooltip", () => {
  const long = "Collect every flaky test of the nightly run";
  const svg = graphSvg(
    [{ id: "work", label: long, sublabel: "work.collect_every_flaky_test" }, {
      id: "done",
      label: "done",
    }],
    [
      { from: "work", to: "work", label: "next" },
      { from: "work", to: "work", label: "repeat" },
      { from: "work", to: "done", label: "complete (when every test was seen twice)" },
    ],
    "t",
  ).text;
  const labels = [...svg.matchAll(
    /data-from="work"\s+data-to="work"><path d="M([\d.]+),[^"]*"[^>]*\/><text x="([\d.]+)" y="([\d.]+)">(\w+)<\/text>/g,
  )].map((m) => ({ boxRight: Number(m[1]), x: Number(m[2]), y: Number(m[3]), text: m[4] }));
  assert.deepEqual(labels.map((l) => l.text), ["next", "repeat"]);
  // One column, right of the outer loop's apex (0.75 × its 66 px reach), a line apart.
  assert.equal(labels[0].x, labels[1].x);
  assert.ok(labels[0].x >= labels[0].boxRight + 66 * 0.75, JSON.stringify(labels));
  assert.ok(Math.abs(labels[1].y - labels[0].y) >= 14, JSON.stringify(labels));
  // The box shows a shortened name; its tooltip has it whole, and so has a cut edge label.
  assert.match(svg, new RegExp(`<title>${long} \\(work\\.collect_every_flaky_test\\)</title>`));
  assert.match(svg, /class="label">Collect every flaky tes…</);
  assert.match(
    svg,
    /<text x="[\d.]+" y="[\d.]+"><title>complete \(when every test was seen twice\)<\/title>complete \(when every test w…<\/text>/,
  );
});
