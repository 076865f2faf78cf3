/**
 * Assertions on a {@linkcode TestRun} that read like the flow: the path of steps, the intents, a
 * handoff value, a tool call made or not, the final output. A failure throws an `AssertionError`
 * whose message shows the whole path taken and marks the step where it went wrong.
 *
 * @module
 */
import { AssertionError, deepStrictEqual } from "node:assert";
import type { HistoryEntry } from "../flow/types.ts";
import type { TestRun, TestToolCall } from "./run.ts";

/** A schema with zod's `safeParse` (any zod schema, or anything shaped like one). */
export interface SafeParseSchema {
  /** Validates `value`. */
  safeParse(value: unknown): { success: boolean; error?: unknown };
}

/** The iterations of the flow (validator runs, which repeat their step, left out). */
function flowEntries(run: TestRun): HistoryEntry[] {
  return run.history.filter((h) => h.validation === undefined);
}

/**
 * The path taken, one line per iteration (`#n step intent → transition next`), marking `mark`
 * (0-based) with `>`.
 */
export function formatPath(run: TestRun, mark?: number): string {
  const entries = flowEntries(run);
  const lines = entries.map((h, i) => {
    const parts = [`#${i + 1}`, h.stepId];
    if (h.intent) parts.push(`intent ${h.intent}`);
    parts.push(`→ ${h.transition}${h.nextStepId ? ` ${h.nextStepId}` : ""}`);
    if (h.error) parts.push(`(error: ${h.error.split("\n")[0].slice(0, 120)})`);
    return `${i === mark ? ">" : " "} ${parts.join("  ")}`;
  });
  const r = run.result;
  const end = `run ${r.completionReason} at ${r.finalStepId ?? "-"}${
    r.error ? ` [${r.error.code}] ${r.error.message.split("\n")[0].slice(0, 160)}` : ""
  }`;
  return [
    `Path taken by "${run.agent}" (${entries.length} iteration${entries.length === 1 ? "" : "s"}):`,
    ...lines,
    `  ${end}`,
  ]
    .join("\n");
}

function fail(run: TestRun, message: string, mark?: number): never {
  throw new AssertionError({ message: `${message}\n\n${formatPath(run, mark)}` });
}

/**
 * Asserts the run ended `completed`.
 *
 * @example
 * ```ts
 * import { assertCompleted, runAgentForTest } from "./mod.ts";
 * const run = await runAgentForTest({
 *   agent: "haiku", script: ".agent/haiku/demo.script.yaml", args: { topic: "autumn" },
 * });
 * assertCompleted(run);
 * ```
 */
export function assertCompleted(run: TestRun): void {
  const waiting = run.result.completionReason === "waiting" ? run.result.waiting : undefined;
  if (waiting) {
    fail(
      run,
      `Expected the run to complete, but it waits ${
        waiting.permission
          ? `for permission to run ${waiting.permission.tool} in step "${waiting.stepId}"`
          : `for an answer at step "${waiting.stepId}"`
      } and no answer was left: give it in \`answers\` (an eval case's \`answers\`), or record the run again so that its recording holds the answer.`,
    );
  }
  if (run.result.completionReason !== "completed") {
    fail(run, `Expected the run to complete, but it ended ${run.result.completionReason}.`);
  }
}

/**
 * Asserts the steps taken, in order, are exactly `steps` (one per iteration).
 *
 * @example
 * ```ts
 * import { assertPath, runAgentForTest } from "./mod.ts";
 * const run = await runAgentForTest({
 *   agent: "haiku", script: ".agent/haiku/demo.script.yaml", args: { topic: "autumn" },
 * });
 * assertPath(run, ["draft.haiku", "draft.haiku"]);
 * ```
 */
export function assertPath(run: TestRun, steps: readonly string[]): void {
  compareList(run, steps, (h) => h.stepId, "step");
}

/** Asserts the intents of the iterations, in order (`undefined` for a step without one). */
export function assertIntents(run: TestRun, intents: readonly (string | undefined)[]): void {
  compareList(run, intents, (h) => h.intent, "intent");
}

function compareList<T>(
  run: TestRun,
  expected: readonly T[],
  pick: (h: HistoryEntry) => T,
  what: string,
): void {
  const actual = flowEntries(run).map(pick);
  const n = Math.max(actual.length, expected.length);
  for (let i = 0; i < n; i++) {
    if (actual[i] === expected[i]) continue;
    const want = i < expected.length ? `${what} ${JSON.stringify(expected[i])}` : "the run to end";
    const got = i < actual.length ? `${what} ${JSON.stringify(actual[i])}` : "the run ended";
    fail(
      run,
      `Iteration #${i + 1}: expected ${want}, got ${got}.\nExpected ${what}s: ${
        JSON.stringify(expected)
      }`,
      Math.min(i, actual.length - 1),
    );
  }
}

/**
 * Asserts a step handed off `expected`: every key of `expected` is in the step's handoff with a
 * deeply equal value (other keys may be there too).
 */
export function assertHandoff(run: TestRun, stepId: string, expected: Record<string, unknown>) {
  const handoff = run.result.state.handoff;
  const at = lastIndexOf(run, stepId);
  if (!Object.hasOwn(handoff, stepId)) {
    fail(
      run,
      `Step "${stepId}" handed nothing off (it ${at < 0 ? "never ran" : "set no handoff"}).`,
      at < 0 ? undefined : at,
    );
  }
  const problem = partialMismatch(handoff[stepId], expected, "handoff");
  if (problem) fail(run, `Handoff of step "${stepId}": ${problem}`, at);
}

/**
 * Asserts the run's final output matches a schema (zod's `safeParse`) or contains the fields of a
 * partial object (deeply equal values; other fields may be there too).
 */
export function assertOutput(run: TestRun, expected: SafeParseSchema | Record<string, unknown>) {
  const output = run.result.output;
  const last = flowEntries(run).length - 1;
  if (typeof (expected as SafeParseSchema).safeParse === "function") {
    const parsed = (expected as SafeParseSchema).safeParse(output);
    if (!parsed.success) {
      fail(
        run,
        `The final output does not match the schema: ${String(parsed.error)}\nOutput: ${
          JSON.stringify(output)
        }`,
        last,
      );
    }
    return;
  }
  const problem = partialMismatch(output, expected, "output");
  if (problem) fail(run, `Final output: ${problem}`, last);
}

/** Options of {@linkcode assertToolCall}. */
export interface ToolCallMatch {
  /** Only calls made by this step. */
  stepId?: string;
  /** Fields the call's arguments must contain (deeply equal values). */
  input?: Record<string, unknown>;
  /** Only calls with this outcome: `allow` (it ran), `deny` (refused), `invalid`. */
  decision?: "allow" | "deny" | "invalid";
}

/**
 * Asserts the model called tool `name` (in `stepId`, with `input` fields, with that `decision`,
 * when given). Tool calls are read from the run's `tool_call` log lines ({@linkcode TestRun.toolCalls});
 * a run whose backend runs its tools itself and reports none fails with that explanation.
 */
export function assertToolCall(run: TestRun, name: string, match: ToolCallMatch = {}): void {
  const found = toolCallsOf(run, match.stepId);
  const hit = found.some((c) =>
    c.tool === name &&
    (match.decision === undefined || c.decision === match.decision) &&
    (match.input === undefined || !partialMismatch(c.args, match.input, "input"))
  );
  if (!hit) {
    const seen = found.map((c) => c.decision === "allow" ? c.tool : `${c.tool} (${c.decision})`);
    fail(
      run,
      `Expected a call of tool "${name}"${match.stepId ? ` in step "${match.stepId}"` : ""}${
        match.input ? ` with input ${JSON.stringify(match.input)}` : ""
      }${match.decision ? ` (${match.decision})` : ""}; tools called: ${
        seen.join(", ") || "none"
      }.`,
      match.stepId ? lastIndexOf(run, match.stepId) : undefined,
    );
  }
}

/** Asserts the model never called tool `name` (in `stepId`, when given), refused or not. */
export function assertNoToolCall(run: TestRun, name: string, match: { stepId?: string } = {}) {
  const found = toolCallsOf(run, match.stepId);
  const i = found.findIndex((c) => c.tool === name);
  if (i >= 0) {
    fail(
      run,
      `Expected no call of tool "${name}", but step "${found[i].stepId}" made one (${
        found[i].decision
      }).`,
      lastIndexOf(run, found[i].stepId),
    );
  }
}

/** The run's tool calls (of `stepId`); fails when the backend cannot report them. */
function toolCallsOf(run: TestRun, stepId?: string): TestToolCall[] {
  if (run.toolCalls === undefined) {
    fail(
      run,
      `The run's backend runs its tools itself and reports no tool calls (${run.calls.length} calls), so whether a tool was called cannot be told. Use a backend whose tool calls go through stepflow's tool loop (scripted, a recording, anthropic, openai).`,
    );
  }
  return stepId === undefined ? run.toolCalls : run.toolCalls.filter((c) => c.stepId === stepId);
}

function lastIndexOf(run: TestRun, stepId: string): number {
  return flowEntries(run).map((h) => h.stepId).lastIndexOf(stepId);
}

/** `undefined` when `actual` contains every field of `expected` with equal values; else why not. */
export function partialMismatch(
  actual: unknown,
  expected: unknown,
  path: string,
): string | undefined {
  if (expected !== null && typeof expected === "object" && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) {
      return `${path} is ${JSON.stringify(actual)}, expected an object with ${
        JSON.stringify(expected)
      }`;
    }
    for (const [k, v] of Object.entries(expected)) {
      if (!Object.hasOwn(actual, k)) {
        return `${path}.${k} is missing (expected ${JSON.stringify(v)})`;
      }
      const inner = partialMismatch((actual as Record<string, unknown>)[k], v, `${path}.${k}`);
      if (inner) return inner;
    }
    return undefined;
  }
  try {
    deepStrictEqual(actual, expected);
    return undefined;
  } catch {
    return `${path} is ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`;
  }
}
