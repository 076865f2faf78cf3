/**
 * Shared setup of the durable-run tests: a linear gate-routed agent (every step answers once, so a
 * scripted backend restarted by a resume gives the same answers as an uninterrupted run), its
 * scripted-backend script, and helpers to drive the real `deno task run-agent`.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type AgentFiles, writeAgent } from "../flow/fixtures.ts";

/** The repository root (where deno.json and its tasks are). */
export const REPO: string = fileURLToPath(new URL("../../", import.meta.url));

/** Flow steps of the pipeline agent, in order; `complete.report` closes the run. */
export const PIPELINE_STEPS: readonly string[] = [
  "work.plan",
  "work.build",
  "work.test",
  "work.fix",
  "work.review",
];

/** The closing step. */
export const CLOSING_STEP = "complete.report";

/** The agent files of `pipeline`: work.plan → … → work.review → complete.report. */
export function pipelineFiles(logging?: Record<string, unknown>): AgentFiles {
  const steps: Record<string, unknown> = {};
  const definitions: Record<string, unknown> = {};
  const prompts: Record<string, string> = {};
  PIPELINE_STEPS.forEach((id, i) => {
    const last = i === PIPELINE_STEPS.length - 1;
    const [c2, c3] = id.split(".");
    steps[id] = {
      stepId: id,
      c2,
      c3,
      outputSchemaRef: { file: "pipeline.schema.json", schema: `#/definitions/${id}` },
      structuredGate: {
        allowedIntents: last ? ["complete"] : ["next"],
        intentField: "next_action.action",
        handoffFields: ["note"],
      },
      transitions: last
        ? { complete: { target: CLOSING_STEP } }
        : { next: { target: PIPELINE_STEPS[i + 1] } },
    };
    definitions[id] = {
      type: "object",
      required: ["stepId", "next_action"],
      properties: {
        stepId: { const: id },
        note: { type: "string" },
        next_action: {
          type: "object",
          required: ["action"],
          properties: { action: { type: "string" } },
        },
      },
    };
    prompts[`steps/${c2}/${c3}/f_default.md`] = `Do ${id} for {uv-topic} (iteration {iteration}).`;
  });
  steps[CLOSING_STEP] = {
    stepId: CLOSING_STEP,
    c2: "complete",
    c3: "report",
    outputSchemaRef: { file: "pipeline.schema.json", schema: `#/definitions/${CLOSING_STEP}` },
  };
  definitions[CLOSING_STEP] = {
    type: "object",
    required: ["stepId", "summary"],
    properties: { stepId: { const: CLOSING_STEP }, summary: { type: "string" } },
  };
  prompts["steps/complete/report/f_default.md"] = "Report on {uv-topic}.";
  return {
    agent: {
      name: "pipeline",
      behavior: { completionType: "issue" },
      parameters: { topic: { type: "string", required: true } },
      ...(logging ? { logging } : {}),
    },
    registry: { version: "1.0.0", entryStepMapping: { issue: PIPELINE_STEPS[0] }, steps },
    prompts,
    schemas: { "pipeline.schema.json": { definitions } },
  };
}

/** The scripted answers of `pipeline`: one per step, each waiting `delayMs`, with usage. */
export function pipelineScript(delayMs = 0): Record<string, unknown[]> {
  const script: Record<string, unknown[]> = {};
  PIPELINE_STEPS.forEach((id, i) => {
    const last = i === PIPELINE_STEPS.length - 1;
    script[id] = [{
      output: {
        stepId: id,
        note: `${id} done`,
        next_action: { action: last ? "complete" : "next" },
      },
      usage: { inputTokens: 100 * (i + 1), outputTokens: 10 * (i + 1) },
      ...(delayMs > 0 ? { delayMs } : {}),
    }];
  });
  script[CLOSING_STEP] = [{
    output: { stepId: CLOSING_STEP, summary: "all done" },
    usage: { inputTokens: 7, outputTokens: 3 },
  }];
  return script;
}

/** A temp folder holding the pipeline agent and a script; returns both paths. */
export async function pipelineWorkspace(
  delayMs = 0,
  logging?: Record<string, unknown>,
): Promise<{ root: string; script: string; runDir: string }> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-durable-" });
  await writeAgent(root, "pipeline", pipelineFiles(logging));
  const script = join(root, "script.json");
  await Deno.writeTextFile(script, JSON.stringify(pipelineScript(delayMs)));
  return { root, script, runDir: join(root, "tmp", "logs", "agents", "pipeline") };
}

/** The one run id recorded in `runDir`. */
export async function onlyRunId(runDir: string): Promise<string> {
  const ids = new Set<string>();
  for await (const e of Deno.readDir(runDir)) {
    if (e.name.endsWith(".jsonl")) ids.add(e.name.slice(0, -".jsonl".length));
  }
  if (ids.size !== 1) {
    throw new Error(`expected one run in ${runDir}, found ${[...ids].join(", ")}`);
  }
  return [...ids][0];
}

/** Polls `check` every 10 ms until it returns a value (at most `timeoutMs`). */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}
