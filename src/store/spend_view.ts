/**
 * What a recorded run spent, as the JSON views give it (`--show --json`, the MCP server's run
 * results): the run's cost (`null` when no call could be priced — unknown, never 0), per step (its
 * child runs included), per model call (its `model_call` line: model, tokens, cost, the price and
 * where it came from), the budget it ran with, and the price sources it was priced by. Read from
 * the checkpoint's state and the log, whose shapes a store treats as opaque: only well-formed
 * fields are taken.
 *
 * @module
 */
import { costOrNull } from "../token_counts.ts";
import type { RunCheckpoint, RunLogEntry } from "./types.ts";

/** One model call of a run. */
export interface SpendViewCall {
  /** The iteration it belongs to. */
  iteration?: number;
  /** The step. */
  stepId: string;
  /** `step`, `check`, `reask`. */
  kind: string;
  /** The model it was priced by. */
  model?: string;
  /** Input tokens (cache reads and writes included), when reported. */
  inputTokens?: number;
  /** Output tokens, when reported. */
  outputTokens?: number;
  /** Its cost in US dollars; `null` when unknown. */
  costUsd: number | null;
  /** An attempt cut off after it was sent: its worst case, counted against the budget. */
  estimatedUsd?: number;
  /** Where its price came from (`built-in prices of …`, a pricing file). */
  priceSource?: string;
}

/** What one step spent (its calls and, for an agent step, its child runs). */
export interface SpendViewStep {
  /** Its cost in US dollars; `null` when none of its calls could be priced. */
  costUsd: number | null;
  /** Model calls. */
  calls: number;
  /** Calls whose cost is unknown. */
  callsWithoutCost?: number;
  /** Input plus output tokens. */
  tokens: number;
  /** Tool calls. */
  toolCalls?: number;
}

/** What a run spent (see the module's note). */
export interface SpendView {
  /** Cost in US dollars of the calls that could be priced; `null` when none could. */
  costUsd: number | null;
  /** Model calls (its child runs' included). */
  calls: number;
  /** Calls whose cost is unknown: `costUsd` is a lower bound when this is above 0. */
  callsWithoutCost: number;
  /** Input tokens. */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Tool calls. */
  toolCalls?: number;
  /** Spend counted at its worst case (attempts cut off after they were sent), in US dollars. */
  estimatedUsd?: number;
  /** The budget the run was given (`--budget-usd`, the runner's option), when one was. */
  budget?: Record<string, number>;
  /** Per step. */
  steps: Record<string, SpendViewStep>;
  /** This run's own model calls, in order (a child run's are in its own log). */
  modelCalls: SpendViewCall[];
  /** The price sources the calls were priced by. */
  priceSources: string[];
}

/**
 * The spend of a run from its checkpoint and log.
 *
 * @example
 * ```ts
 * import { spendView } from "./spend_view.ts";
 * const view = spendView({
 *   version: 1, runId: "r", agent: "a", status: "completed", logEntries: 0,
 *   startedAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:01.000Z",
 *   state: { usage: { inputTokens: 10, outputTokens: 5, costUsd: 0, calls: 1, callsWithoutCost: 1 } },
 * }, []);
 * console.log(view.costUsd); // null
 * ```
 */
export function spendView(
  checkpoint: RunCheckpoint | undefined,
  log: readonly RunLogEntry[],
): SpendView {
  const state = (checkpoint?.state ?? {}) as Record<string, unknown>;
  const usage = record(state.usage) ?? {};
  const calls = count(usage.calls);
  const unknown = count(usage.callsWithoutCost);
  const view: SpendView = {
    costUsd: costOrNull({ costUsd: amount(usage.costUsd), calls, callsWithoutCost: unknown }),
    calls,
    callsWithoutCost: unknown,
    inputTokens: count(usage.inputTokens),
    outputTokens: count(usage.outputTokens),
    steps: {},
    modelCalls: [],
    priceSources: [],
  };
  if (count(usage.toolCalls)) view.toolCalls = count(usage.toolCalls);
  if (amount(usage.estimatedUsd)) view.estimatedUsd = amount(usage.estimatedUsd);
  const budget = record(state.budget);
  if (budget) {
    const b: Record<string, number> = {};
    for (const key of ["usd", "tokens", "modelCalls", "toolCalls"]) {
      if (typeof budget[key] === "number") b[key] = budget[key] as number;
    }
    if (Object.keys(b).length) view.budget = b;
  }
  for (const [stepId, value] of Object.entries(record(state.spendByStep) ?? {})) {
    const s = record(value);
    if (!s) continue;
    const stepCalls = count(s.calls);
    const stepUnknown = count(s.callsWithoutCost);
    const step: SpendViewStep = {
      costUsd: costOrNull({
        costUsd: amount(s.costUsd),
        calls: stepCalls,
        callsWithoutCost: stepUnknown,
      }),
      calls: stepCalls,
      tokens: count(s.inputTokens) + count(s.outputTokens),
    };
    if (stepUnknown) step.callsWithoutCost = stepUnknown;
    if (count(s.toolCalls)) step.toolCalls = count(s.toolCalls);
    Object.defineProperty(view.steps, stepId, { value: step, enumerable: true, writable: true });
  }
  const sources = new Set<string>();
  for (const line of log) {
    if (line.type !== "model_call" || typeof line.stepId !== "string") continue;
    const call: SpendViewCall = {
      stepId: line.stepId,
      kind: typeof line.kind === "string" ? line.kind : "step",
      costUsd: typeof line.costUsd === "number" ? line.costUsd : null,
    };
    if (typeof line.iteration === "number") call.iteration = line.iteration;
    if (typeof line.model === "string") call.model = line.model;
    const u = record(line.usage);
    if (u && typeof u.inputTokens === "number") call.inputTokens = u.inputTokens;
    if (u && typeof u.outputTokens === "number") call.outputTokens = u.outputTokens;
    if (typeof line.estimatedUsd === "number") call.estimatedUsd = line.estimatedUsd;
    const source = record(line.price)?.source;
    if (typeof source === "string") {
      call.priceSource = source;
      sources.add(source);
    }
    view.modelCalls.push(call);
  }
  view.priceSources = [...sources];
  return view;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

function amount(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}
