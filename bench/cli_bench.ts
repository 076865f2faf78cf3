/**
 * The CLI's own work around a run, which must stay negligible next to a model call:
 * - parsing a command line against an agent with 50 declared parameters (target ≤ 0.2 ms);
 * - the plain progress renderer over a 1,000-iteration run's events (target ≤ 5 ms, i.e. linear);
 * - the live renderer over the same events (target ≤ 5 ms);
 * - the stdout summary of a 1,000-entry history (target ≤ 5 ms).
 */
import { parseCommandLine } from "../src/cli/args.ts";
import { createLineProgress, createLiveProgress } from "../src/cli/progress.ts";
import { formatResult } from "../src/cli/summary.ts";
import type { ParameterDefinition } from "../src/definition/schema.ts";
import type { StepInfo } from "../src/events/types.ts";
import type { HistoryEntry, StepFlowResult } from "../src/flow/types.ts";

const PARAMETERS: Record<string, ParameterDefinition> = {};
const argv = ["--agent", "big", "--json"];
for (let i = 0; i < 50; i++) {
  const type = (["string", "number", "boolean"] as const)[i % 3];
  PARAMETERS[`param${i}`] = { type, description: `Parameter ${i}`, required: i < 10 };
  if (type === "boolean") argv.push(`--param${i}`, "false");
  else argv.push(`--param${i}`, type === "number" ? String(i) : `value ${i}`);
}

Deno.bench("parseCommandLine: 50 declared parameters", () => {
  parseCommandLine(argv, { parameters: PARAMETERS, agentName: "big" });
});

const ITERATIONS = 1_000;
const infos: StepInfo[] = Array.from({ length: ITERATIONS }, (_, i) => ({
  runId: "r1",
  stepId: `step.${i % 7}`,
  desc: `Step ${i % 7}`,
  order: i + 1,
  path: [`Step ${i % 7}`],
  iteration: i + 1,
}));
const request = {
  kind: "step" as const,
  agent: "big",
  stepId: "step.0",
  iteration: 1,
  prompt: "p",
  cwd: ".",
};

async function drive(progress: ReturnType<typeof createLineProgress>): Promise<void> {
  for (const info of infos) {
    await progress.events.onStepStart?.(info);
    progress.onCallStart?.(request);
    progress.onCallEnd?.(request, { text: "", usage: { inputTokens: 900, outputTokens: 100 } });
    await progress.events.onStepEnd?.(info, { transition: "next", nextStepId: "step.1" });
  }
  progress.finish();
}

Deno.bench("line progress: 1,000 iterations", async () => {
  let bytes = 0;
  await drive(createLineProgress({ write: (t) => void (bytes += t.length), color: false }));
});

Deno.bench("live progress: 1,000 iterations", async () => {
  let bytes = 0;
  await drive(
    createLiveProgress({ write: (t) => void (bytes += t.length), color: true, columns: 120 }),
  );
});

const history: HistoryEntry[] = infos.map((info) => ({
  stepId: info.stepId,
  iteration: info.iteration!,
  attempt: 1,
  intent: "next",
  transition: "next",
  nextStepId: "step.1",
  startedAt: new Date(0).toISOString(),
  durationMs: 1234,
}));
const result: StepFlowResult = {
  success: true,
  runId: "r1",
  finalStepId: "step.6",
  completionReason: "completed",
  iterations: ITERATIONS,
  output: { summary: "done", items: Array.from({ length: 100 }, (_, i) => `item ${i}`) },
  state: { history, handoff: {} },
  usage: { inputTokens: 900_000, outputTokens: 100_000, costUsd: 1.5, calls: ITERATIONS },
};

Deno.bench("formatResult: 1,000 history entries", () => {
  formatResult(result, { agentName: "big", color: false });
});
