/**
 * The records of a run's spend, shared by its ledger, its resume and its views: the spend per step,
 * the part of the run's state the counts live in, the run log's `model_call` line (written and read
 * back), and adding one usage to another.
 *
 * @module
 */
import type { ModelPricing } from "../llm/pricing.ts";
import type { LlmUsage } from "../llm/types.ts";
import type { RunUsage } from "./types.ts";

/** What one step spent: its model calls, its tool calls and its child runs. */
export interface StepSpend {
  /** Known cost in US dollars. */
  costUsd: number;
  /** Input tokens. */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Model calls. */
  calls: number;
  /** Calls whose cost is unknown (absent when none). */
  callsWithoutCost?: number;
  /** Tool calls (absent when none). */
  toolCalls?: number;
}

/** The part of a run's state the ledger keeps its counts in (the runner's state). */
export interface SpendHolder {
  /** The run. */
  runId: string;
  /** Its agent. */
  agent: string;
  /** The run's usage (replaced, not only changed, when a step's state is put back). */
  usage: RunUsage;
  /** Spend per step (replaced on every change: a step's saved state keeps the object it had). */
  spendByStep?: Record<string, StepSpend>;
  /** `model_call` lines of the run log counted in `usage`. */
  loggedModelCalls?: number;
}

/** Spend to add: a call's, a tool call's, or an unmeasured attempt's. */
export interface SpendDelta {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** Known cost; `undefined` with `calls: 1` is a call of unknown cost. */
  costUsd?: number;
  calls?: number;
  callsWithoutUsage?: number;
  callsWithoutCost?: number;
  toolCalls?: number;
  estimatedUsd?: number;
  estimatedTokens?: number;
}

/** A model call (or an attempt that may have been charged) as the run log's `model_call` line has it. */
export interface ModelCallLine {
  /** The step. */
  stepId: string;
  /** `step`, `check`, `reask`. */
  kind: string;
  /** The model it was priced by. */
  model?: string;
  /** Its usage, when reported. */
  usage?: LlmUsage;
  /** Its cost, when known. */
  costUsd?: number;
  /** The price it was priced at, and where that price comes from. */
  price?: { model: string; source: string } & ModelPricing;
  /** An attempt that failed after it was sent (no usage): counted at its worst case. */
  unmeasured?: true;
  /** Its worst case in dollars, when it had no usage. */
  estimatedUsd?: number;
  /** Its worst case in tokens, when it had no usage. */
  estimatedTokens?: number;
}

/** The spend a `model_call` line records. */
export function lineDelta(line: ModelCallLine): SpendDelta {
  const delta: SpendDelta = { calls: 1 };
  const usage = line.usage;
  if (usage) {
    delta.inputTokens = usage.inputTokens;
    delta.outputTokens = usage.outputTokens;
    if (usage.cacheReadTokens) delta.cacheReadTokens = usage.cacheReadTokens;
    if (usage.cacheWriteTokens) delta.cacheWriteTokens = usage.cacheWriteTokens;
  } else delta.callsWithoutUsage = 1;
  if (line.costUsd !== undefined) delta.costUsd = line.costUsd;
  else delta.callsWithoutCost = 1;
  if (line.estimatedUsd) delta.estimatedUsd = line.estimatedUsd;
  if (line.estimatedTokens) delta.estimatedTokens = line.estimatedTokens;
  return delta;
}

/** A logged `model_call` line as the call it recorded; undefined when it does not read as one. */
export function readModelCallLine(entry: Record<string, unknown>): ModelCallLine | undefined {
  if (typeof entry.stepId !== "string") return undefined;
  const line: ModelCallLine = {
    stepId: entry.stepId,
    kind: typeof entry.kind === "string" ? entry.kind : "step",
  };
  const usage = entry.usage as Record<string, unknown> | undefined;
  if (
    usage && typeof usage === "object" && isCount(usage.inputTokens) && isCount(usage.outputTokens)
  ) {
    line.usage = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens };
    if (isCount(usage.cacheReadTokens)) line.usage.cacheReadTokens = usage.cacheReadTokens;
    if (isCount(usage.cacheWriteTokens)) line.usage.cacheWriteTokens = usage.cacheWriteTokens;
  }
  if (isAmount(entry.costUsd)) line.costUsd = entry.costUsd;
  if (isAmount(entry.estimatedUsd)) line.estimatedUsd = entry.estimatedUsd;
  if (isAmount(entry.estimatedTokens)) line.estimatedTokens = entry.estimatedTokens;
  return line;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function isAmount(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/**
 * A copy of a spend-per-step record (its entries copied too). A plain object whose entries are
 * defined as own properties (a step named `__proto__` or `constructor` is an entry like any other;
 * readers go through `Object.hasOwn` or `Object.entries`) — not a null-prototype one: an object
 * without a prototype in the run's state made every checkpoint's `JSON.stringify` leave V8's fast
 * path, 3.5× the cost of the whole checkpoint.
 */
export function copySpendByStep(
  byStep: Readonly<Record<string, StepSpend>>,
): Record<string, StepSpend> {
  const copy: Record<string, StepSpend> = {};
  for (const [id, spend] of Object.entries(byStep)) {
    if (spend && typeof spend === "object") {
      Object.defineProperty(copy, id, { value: { ...spend }, enumerable: true, writable: true });
    }
  }
  return copy;
}

/** The spend of `stepId` in `state` (created at 0 on its first call), to change in place. */
export function stepSpendOf(state: SpendHolder, stepId: string): StepSpend {
  // Own properties of a plain object, never a null prototype (see copySpendByStep).
  const byStep = state.spendByStep ??= {};
  if (Object.hasOwn(byStep, stepId)) return byStep[stepId];
  const step: StepSpend = { costUsd: 0, inputTokens: 0, outputTokens: 0, calls: 0 };
  Object.defineProperty(byStep, stepId, { value: step, enumerable: true, writable: true });
  return step;
}

/** Adds `delta` to `usage` in place. */
export function addDelta(usage: RunUsage, delta: SpendDelta): void {
  if (delta.inputTokens) usage.inputTokens += delta.inputTokens;
  if (delta.outputTokens) usage.outputTokens += delta.outputTokens;
  if (delta.cacheReadTokens) {
    usage.cacheReadTokens = (usage.cacheReadTokens ?? 0) + delta.cacheReadTokens;
  }
  if (delta.cacheWriteTokens) {
    usage.cacheWriteTokens = (usage.cacheWriteTokens ?? 0) + delta.cacheWriteTokens;
  }
  if (delta.costUsd) usage.costUsd += delta.costUsd;
  if (delta.calls) usage.calls += delta.calls;
  if (delta.callsWithoutUsage) {
    usage.callsWithoutUsage = (usage.callsWithoutUsage ?? 0) + delta.callsWithoutUsage;
  }
  if (delta.callsWithoutCost) {
    usage.callsWithoutCost = (usage.callsWithoutCost ?? 0) + delta.callsWithoutCost;
  }
  if (delta.toolCalls) usage.toolCalls = (usage.toolCalls ?? 0) + delta.toolCalls;
  if (delta.estimatedUsd) usage.estimatedUsd = (usage.estimatedUsd ?? 0) + delta.estimatedUsd;
  if (delta.estimatedTokens) {
    usage.estimatedTokens = (usage.estimatedTokens ?? 0) + delta.estimatedTokens;
  }
}

/** What `now` has beyond `counted`, field by field (never below 0); undefined when nothing. */
export function usageDelta(now: RunUsage, counted: RunUsage): SpendDelta | undefined {
  const d = (a: number | undefined, b: number | undefined) => Math.max(0, (a ?? 0) - (b ?? 0));
  const delta: SpendDelta = {
    inputTokens: d(now.inputTokens, counted.inputTokens),
    outputTokens: d(now.outputTokens, counted.outputTokens),
    cacheReadTokens: d(now.cacheReadTokens, counted.cacheReadTokens),
    cacheWriteTokens: d(now.cacheWriteTokens, counted.cacheWriteTokens),
    costUsd: d(now.costUsd, counted.costUsd),
    calls: d(now.calls, counted.calls),
    callsWithoutUsage: d(now.callsWithoutUsage, counted.callsWithoutUsage),
    callsWithoutCost: d(now.callsWithoutCost, counted.callsWithoutCost),
    toolCalls: d(now.toolCalls, counted.toolCalls),
    estimatedUsd: d(now.estimatedUsd, counted.estimatedUsd),
    estimatedTokens: d(now.estimatedTokens, counted.estimatedTokens),
  };
  return Object.values(delta).some((v) => v) ? delta : undefined;
}

/** Adds to `total` what `now` has beyond `counted` (a child's usage counted before). */
export function addUsageBeyond(total: RunUsage, now: RunUsage, counted: RunUsage): void {
  const delta = usageDelta(now, counted);
  if (delta) addDelta(total, delta);
}
