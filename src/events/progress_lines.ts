/**
 * The one text rendering of the shared events: one plain, timestamped line per event, the same for
 * every engine (the step-flow runner, tool plans, PlanSpec runs and QPlan scripts), e.g.
 *
 * ```text
 * [00:00.000] run r-1 started: agent issue-solver, entry initial.issue
 * [00:00.002] step initial.issue #1 started
 * [00:01.234] step initial.issue #1 → next (continuation.issue) check ok
 * [00:00.003]   step stats #2 completed in 2 ms → {"total":6}
 * ```
 *
 * What an engine says beyond the shared fields is shown when the event carries it: the step-flow
 * runner's routing and check verdict at a step's end, a tool plan's tool and final status, a
 * PlanSpec step's type and status, a QPlan step's depth (as indentation) and result.
 *
 * @module
 */
import type { ExecutorEvents, RateLimitWaitEvent, RunContext, StepInfo } from "./types.ts";
import { toolCallDetails, toolCallLine } from "./tool_call_line.ts";
import { StreamedLines } from "./streamed_lines.ts";
import { firstLine, formatCount } from "./line_text.ts";
import { childEndShown } from "./fan_out_progress.ts";

export { firstLine, formatCount } from "./line_text.ts";
export { fanOutCounts, fanOutEndLine } from "./fan_out_progress.ts";
import { fallbackText, rateLimitWaitText } from "./model_notice_text.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { type Palette, palette } from "../palette.ts";
import { cacheShare, formatCost } from "../token_counts.ts";

/** Options of {@linkcode createProgressLines}. */
export interface ProgressLinesOptions {
  /** Writes text (each line ends with `\n`). */
  write(text: string): void;
  /** Use ANSI colours. Default false. */
  color?: boolean;
  /** Clock in milliseconds (tests pass a fake one). Default `performance.now`. */
  now?: () => number;
  /**
   * When the clock shows 00:00, in `now()`'s units. Default: when the renderer is created. A
   * renderer that takes over from an earlier drive's (a run answered at the terminal goes on in a
   * new drive) passes that one's, so the clock goes on instead of starting again.
   */
  startedAt?: number;
  /**
   * Also print state changes, each tool call's arguments and result excerpt, and the model's text
   * as it streams, line by line (`--verbose`).
   */
  verbose?: boolean;
  /** Show a short preview of each step's result at its end (default true). */
  results?: boolean;
}

/** The line renderer: handlers for an engine's `events`, and the line writer they share. */
export interface ProgressLines {
  /** Handlers to pass as an engine's `events`. */
  readonly events: ExecutorEvents;
  /** Writes one timestamped line (for what a CLI reports beside the events). */
  line(text: string): void;
  /** The colours in use. */
  readonly colors: Palette;
  /**
   * Prints the unfinished line of `stepId`'s streamed text (`verbose` only); true when any of its
   * text streamed since the last call (a call's end, where `--verbose` shows the answer).
   */
  endText(stepId: string): boolean;
}

/** How a step-flow run ended, as far as its summary line needs (the flow's `StepFlowResult`). */
export interface RunOutcome {
  /** True when the run completed successfully. */
  success: boolean;
  /** Why it ended (`completed`, `maxIterations`, …). */
  completionReason: string;
  /** The step it ended on. */
  finalStepId: string;
  /** Iterations run. */
  iterations: number;
  /** Token usage and calls, when known. */
  usage?: RunUsage;
  /** The error that ended it. */
  error?: { code: string; message: string };
  /** Who stopped it, for a run a person declined (`completionReason` `declined`). */
  declined?: { by: string; note?: unknown };
}

/**
 * Token usage and cost summed over a run (the flow's `StepFlowResult.usage`). Declared here, below
 * the engines, so the line renderer and the runner share one type.
 */
export interface RunUsage {
  /** Prompt tokens. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Of `inputTokens`, those read from the server's prompt cache; absent when none was. */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the server's prompt cache; absent when none was. */
  cacheWriteTokens?: number;
  /** Cost in US dollars, when backends report it. */
  costUsd: number;
  /** Number of backend calls. */
  calls: number;
  /**
   * Backend calls whose response carried no token usage (a server that sends none, the scripted
   * backend): the token counts above cover only the other calls, so they are a lower bound whenever
   * this is above 0. Absent in checkpoints written before it existed.
   */
  callsWithoutUsage?: number;
  /**
   * Backend calls whose cost is unknown — no usage, or no price for the model: `costUsd` covers only
   * the other calls, so it is a lower bound whenever this is above 0 (and unknown when every call
   * is one of them). Absent when every call was priced.
   */
  callsWithoutCost?: number;
  /** Tool calls that ran (the tool loop's and a backend's own). Absent when none ran. */
  toolCalls?: number;
  /**
   * Spend the run could not measure and counts against its budget at its worst case, in US dollars:
   * attempts cut off after they were sent (the provider may have charged them), calls whose
   * backend reported no usage. Not part of `costUsd`. Absent when there was none.
   */
  estimatedUsd?: number;
  /** The same spend in tokens (input plus output, at the worst case). */
  estimatedTokens?: number;
}

/** `[mm:ss.mmm]` of `ms` (minutes keep counting past 59). */
export function formatClock(ms: number): string {
  const total = Math.max(0, Math.floor(ms));
  const minutes = Math.floor(total / 60_000);
  const seconds = Math.floor((total % 60_000) / 1000);
  const millis = total % 1000;
  return `${String(minutes).padStart(2, "0")}:${String(seconds).padStart(2, "0")}.${
    String(millis).padStart(3, "0")
  }`;
}

/**
 * The one-line outcome of a run: `completed at complete.issue after 3 iterations (…)`, or
 * `waiting for an answer at approve.release after 1 iteration` for a run stopped at an input step.
 */
export function resultLine(result: RunOutcome): string {
  const it = `${result.iterations} iteration${result.iterations === 1 ? "" : "s"}`;
  const usage = formatUsage(result.usage);
  const tail = `at ${result.finalStepId} after ${it}${usage ? ` (${usage})` : ""}`;
  // Not an end: the run stopped at an input step until someone answers.
  if (result.completionReason === "waiting") return `waiting for an answer ${tail}`;
  // A cancelled run did not fail: the user stopped it (it can be continued).
  if (result.completionReason === "cancelled") return `cancelled ${tail}`;
  // Nor did a declined one: a person decided to stop it.
  if (result.completionReason === "declined") {
    return `declined${result.declined ? ` by ${result.declined.by}` : ""} ${tail}`;
  }
  return `${result.success ? "succeeded" : "failed"}: ${result.completionReason} ${tail}`;
}

/**
 * What a person said besides their decision, on one line of at most 300 characters: a lone text
 * as itself, fields as `key: value` (texts bare, anything else as JSON); undefined when there is
 * nothing.
 *
 * @example
 * ```ts
 * import { noteText } from "./progress_lines.ts";
 * noteText({ note: "not this week" }); // "not this week"
 * noteText({ note: "later", risk: 3 }); // "note: later, risk: 3"
 * ```
 */
export function noteText(note: unknown): string | undefined {
  // (JSON.stringify of an answer is safe: it was checked and bounded before it was recorded.)
  if (note === undefined || note === null) return undefined;
  const show = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  if (typeof note !== "object" || Array.isArray(note)) return clip(show(note), NOTE_CHARS);
  const entries = Object.entries(note as Record<string, unknown>);
  if (entries.length === 0) return undefined;
  if (entries.length === 1 && typeof entries[0][1] === "string") {
    return clip(entries[0][1], NOTE_CHARS);
  }
  return clip(entries.map(([k, v]) => `${k}: ${show(v)}`).join(", "), NOTE_CHARS);
}

/** `tokens unknown for 3 calls`: the backend reported no usage for them. */
export function unknownTokens(calls: number): string {
  return `tokens unknown for ${calls} call${calls === 1 ? "" : "s"}`;
}

/**
 * `1,234 tokens (1,200 in, 34 out; 900 cache read, 100 cache write), 4 calls, tokens unknown for
 * 1 call, $0.0123` (parts that are zero are left out). The cache reads and writes are part of the
 * input tokens. Calls whose response carried no usage are counted apart, never as 0 tokens; a cost
 * no call could be priced for is `cost unknown`, never `$0` (see `formatCost`).
 */
export function formatUsage(usage: RunUsage | undefined): string {
  if (!usage) return "";
  const parts: string[] = [];
  const tokens = usage.inputTokens + usage.outputTokens;
  if (tokens > 0) {
    const cache = cacheShare(usage, formatCount);
    parts.push(
      `${formatCount(tokens)} tokens (${formatCount(usage.inputTokens)} in, ${
        formatCount(usage.outputTokens)
      } out${cache ? `; ${cache}` : ""})`,
    );
  }
  if (usage.calls > 0) parts.push(`${usage.calls} call${usage.calls === 1 ? "" : "s"}`);
  const unknown = usage.callsWithoutUsage ?? 0;
  if (unknown > 0) parts.push(unknownTokens(unknown));
  // A call whose tokens are unknown has an unknown cost: "tokens unknown" says so already.
  const unpriced = Math.max(0, (usage.callsWithoutCost ?? 0) - unknown);
  const cost = formatCost({ ...usage, calls: usage.calls - unknown, callsWithoutCost: unpriced });
  if (cost) parts.push(cost);
  return parts.join(", ");
}

/**
 * One plain, timestamped line per shared event. Times count from the renderer's creation; steps
 * of nested engines (QPlan, PlanSpec) are indented by their depth.
 *
 * @example
 * ```ts
 * import { createProgressLines } from "./progress_lines.ts";
 * const lines: string[] = [];
 * const progress = createProgressLines({ write: (t) => void lines.push(t), now: () => 0 });
 * await progress.events.onStepStart?.({ runId: "r", stepId: "a", desc: "A", order: 1, path: ["A"] });
 * console.log(lines[0]); // "[00:00.000] step a #1 started (\"A\")\n"
 * ```
 */
export function createProgressLines(options: ProgressLinesOptions): ProgressLines {
  const now = options.now ?? (() => performance.now());
  const start = options.startedAt ?? now();
  const c = palette(options.color ?? false);
  const showResults = options.results ?? true;
  const attempts = new AttemptCounter();
  /** When each running step started (by step id), for the duration at its end. */
  const started = new Map<string, number>();
  /** The `order` of step iterations whose error already has its own line. */
  const errorReported = new Set<number>();
  const line = (text: string) =>
    options.write(`${c.dim(`[${formatClock(now() - start)}]`)} ${text}\n`);
  const step = (info: StepInfo) => {
    // A tool plan logs about a step before its first attempt (a re-run after a crash): no number.
    const n = info.iteration || info.order;
    return `${indentOf(info)}step ${c.bold(info.stepId)}${n > 0 ? ` #${n}` : ""}`;
  };

  const streamed = new StreamedLines();
  /** The step each streamed text belongs to, until its text is flushed. */
  const streaming = new Map<string, StepInfo>();
  const flushText = (info: StepInfo) => {
    for (const text of streamed.flush(info.stepId)) line(`${step(info)} ${c.dim("›")} ${text}`);
  };

  const events: ExecutorEvents = {
    onPlanStart(plan, ctx) {
      const verb = ctx.mode === "resume"
        ? "resumed"
        : ctx.mode === "redrive"
        ? "redriven"
        : "started";
      line(`run ${ctx.runId} ${verb}: ${describeRun(plan, ctx)}`);
    },
    onStepStart(info) {
      started.set(info.stepId, now());
      const attempt = typeof info.attempt === "number" ? info.attempt : attempts.start(info.stepId);
      const kind = typeof info.tool === "string"
        ? info.tool
        : typeof info.type === "string"
        ? info.type
        : undefined;
      const extras = [
        attempt > 1 ? `attempt ${attempt}` : undefined,
        info.desc && info.desc !== info.stepId ? `"${firstLine(info.desc)}"` : undefined,
        kind,
      ].filter(Boolean);
      line(`${step(info)} started${extras.length > 0 ? ` (${extras.join(", ")})` : ""}`);
    },
    onStepEnd(info, result) {
      flushText(info);
      const reported = errorReported.delete(info.order);
      if (isFlowReport(result)) {
        line(`${step(info)} ${describeStepEnd(result, c, reported)}`);
        return;
      }
      const began = started.get(info.stepId);
      started.delete(info.stepId);
      // A tool-plan step reports the time it waited for a person's approval apart.
      const waited = approvalWaitOf(result);
      const took = began === undefined
        ? ""
        : ` in ${Math.round(now() - began - waited)} ms${
          waited > 0 ? ` (after ${Math.round(waited)} ms waiting for approval)` : ""
        }`;
      const end = describeOutcome(info, result, reported, showResults);
      const text = `${end.status}${took}${end.detail}`;
      line(`${step(info)} ${end.ok ? text : c.yellow(text)}`);
    },
    onStepError(info, error) {
      flushText(info);
      errorReported.add(info.order);
      line(`${step(info)} ${c.red("error")} ${errorLabel(error)}`);
    },
    onStepRetry(info, attempt, error) {
      // A wait the server named has its own line (onRateLimitWait).
      if (isServerWait(error)) return;
      line(`${step(info)} ${c.yellow(`${retryLabel(error)} ${attempt}`)}: ${retryReason(error)}`);
    },
    onStepJump(info, target) {
      line(`${step(info)} jump → ${target}`);
    },
    onModelFallback: (info, fallback) => line(`${step(info)} ${c.yellow(fallbackText(fallback))}`),
    onRateLimitWait: (info, wait) => line(`${step(info)} ${waitLine(wait, c)}`),
    onStepLog(info, message, level) {
      const text = `· ${firstLine(message)}`;
      line(
        `${step(info)} ${
          level === "error" ? c.red(text) : level === "warn" ? c.yellow(text) : text
        }`,
      );
    },
    onFanOut(info, report) {
      const shown = childEndShown(report, options.verbose === true);
      if (shown) line(`${step(info)} ${shown.ok ? shown.text : c.yellow(shown.text)}`);
    },
    onToolCall(info, call) {
      // The text the model wrote before asking for the call comes first.
      if (call.phase === "requested") flushText(info);
      if (call.phase !== "finished") return;
      const text = `${step(info)} ${toolCallLine(call)}`;
      line(call.isError ? c.yellow(text) : text);
      if (!options.verbose) return;
      const pad = " ".repeat(indentOf(info).length + 4);
      for (const detail of toolCallDetails(call)) line(c.dim(`${pad}${detail}`));
    },
    // Streamed text is printed (line by line) only with --verbose; then the backend streams it.
    ...(options.verbose
      ? {
        onStepText(info: StepInfo, text: string) {
          streaming.set(info.stepId, info);
          for (const full of streamed.add(info.stepId, text)) {
            line(`${step(info)} ${c.dim("›")} ${full}`);
          }
        },
      }
      : {}),
    onPause: () => line("run paused"),
    onResume: () => line("run resumed"),
    onAbort: () => line(c.yellow("run stopping: cancel or abort requested")),
    onTimeout: () => line(c.yellow("run stopping (time limit reached)")),
    onStateChange(next, previous) {
      if (options.verbose) line(`state ${previous} → ${next}`);
    },
    onPlanEnd(_plan, ctx) {
      for (const text of planEndLines(ctx, c)) line(text);
    },
  };
  const endText = (stepId: string) => {
    const info = streaming.get(stepId);
    streaming.delete(stepId);
    if (info) flushText(info);
    return info !== undefined;
  };
  return { events, line, colors: c, endText };
}

// -------------------------------------------------------------------------------------------------

/** The lines of a run's end: its result (and a person's note, an error), or a plan's status. */
function planEndLines(ctx: RunContext, c: Palette): string[] {
  const result = resultOf(ctx);
  if (result) {
    const text = `run ${resultLine(result)}`;
    const waiting = result.completionReason === "waiting";
    const declined = result.completionReason === "declined";
    const lines = [
      result.success ? c.green(text) : waiting ? c.yellow(text) : declined ? text : c.red(text),
    ];
    const note = declined ? noteText(result.declined?.note) : undefined;
    if (note) lines.push(`  note: ${note}`);
    if (result.error) {
      lines.push(c.red(`  ${result.error.code}: ${firstLine(result.error.message)}`));
    }
    return lines;
  }
  const status = typeof ctx.status === "string" ? ctx.status : "ended";
  const why = ctx.error === undefined || ctx.error === null || ctx.error === ""
    ? ""
    : `: ${firstLine(messageOf(ctx.error))}`;
  const text = `run ${status}${why}`;
  return [status === "completed" ? c.green(text) : c.red(text)];
}

/** `agent NAME, entry STEP` for a step flow; `"TITLE", N steps` for the other engines. */
function describeRun(plan: unknown, ctx: RunContext): string {
  const p = (plan ?? {}) as {
    name?: string;
    entryStepId?: string;
    totalSteps?: number;
    steps?: unknown[];
    planMeta?: { title?: string };
    title?: string;
  };
  if (typeof p.entryStepId === "string" || ctx.mode !== undefined) {
    const from = ctx.mode === "resume" || ctx.mode === "redrive"
      ? ` after iteration ${ctx.iteration ?? 0}`
      : p.entryStepId
      ? `, entry ${p.entryStepId}`
      : "";
    return `agent ${p.name ?? "?"}${from}`;
  }
  const title = p.planMeta?.title ?? p.title;
  const count = typeof p.totalSteps === "number"
    ? p.totalSteps
    : Array.isArray(p.steps)
    ? p.steps.length
    : undefined;
  const parts = [
    typeof title === "string" && title !== "" ? `"${firstLine(title)}"` : undefined,
    count === undefined ? undefined : `${count} step${count === 1 ? "" : "s"}`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(", ") : "plan";
}

/** Two spaces per level of nesting: QPlan's `depth`, else the hierarchical path's length. */
function indentOf(info: StepInfo): string {
  const depth = typeof info.depth === "number" ? info.depth : info.path.length - 1;
  return depth > 0 ? "  ".repeat(Math.min(depth, 20)) : "";
}

/** `approvalWaitMs` of a tool-plan step's result, else 0. */
function approvalWaitOf(result: unknown): number {
  if (result === null || typeof result !== "object") return 0;
  const waited = (result as { approvalWaitMs?: unknown }).approvalWaitMs;
  return typeof waited === "number" && Number.isFinite(waited) && waited > 0 ? waited : 0;
}

/** The fields of the step-flow runner's `onStepEnd` result this module reads. */
interface StepEndReport {
  transition?: string;
  intent?: string;
  nextStepId?: string;
  checkResult?: { result: "ok" | "ng"; message: string };
  error?: string;
}

function isFlowReport(result: unknown): result is StepEndReport {
  return typeof result === "object" && result !== null && "transition" in result;
}

/**
 * How a step of another engine ended: a tool plan's step says its final status in the info and
 * gives `{ ok, value?, error? }`; a PlanSpec step gives `{ status, result }`; a QPlan step gives
 * its value.
 */
function describeOutcome(
  info: StepInfo,
  result: unknown,
  errorReported: boolean,
  showResults: boolean,
): { status: string; ok: boolean; detail: string } {
  const r = (typeof result === "object" && result !== null ? result : {}) as Record<
    string,
    unknown
  >;
  if (typeof r.ok === "boolean" && typeof info.tool === "string") {
    const status = typeof info.status === "string" ? info.status : r.ok ? "completed" : "failed";
    const error = typeof r.error === "string" && !errorReported ? `: ${firstLine(r.error)}` : "";
    const value = r.ok && showResults && r.value !== undefined ? ` → ${preview(r.value)}` : "";
    return { status, ok: r.ok || status === "skipped", detail: error || value };
  }
  if (
    typeof r.status === "string" && typeof r.result === "string" && typeof info.type === "string"
  ) {
    const detail = showResults && r.result !== "" ? `: ${clip(r.result, 110)}` : "";
    return { status: r.status, ok: r.status === "OK", detail };
  }
  const value = showResults && result !== undefined ? ` → ${preview(result)}` : "";
  return { status: "completed", ok: true, detail: value };
}

/** Counts consecutive starts of the same step (the history's `attempt`); the live view uses it too. */
export class AttemptCounter {
  #stepId?: string;
  #attempt = 0;
  /** A start of `stepId`: its attempt number, 1 unless the previous start was the same step. */
  start(stepId: string): number {
    this.#attempt = stepId === this.#stepId ? this.#attempt + 1 : 1;
    this.#stepId = stepId;
    return this.#attempt;
  }
}

function describeStepEnd(r: StepEndReport, c: Palette, errorReported: boolean): string {
  const transition = r.transition ?? "?";
  let text = `→ ${transition}${r.nextStepId ? ` (${r.nextStepId})` : ""}`;
  if (r.intent && r.intent !== transition) text += ` [intent ${r.intent}]`;
  if (r.checkResult) {
    const verdict = r.checkResult.result === "ok" ? c.green("check ok") : c.yellow("check ng");
    text += ` ${verdict}${r.checkResult.message ? `: ${firstLine(r.checkResult.message)}` : ""}`;
  }
  // An error reported by onStepError already has its own line; others (cancellation) show here.
  if (r.error && !errorReported) text += ` — ${firstLine(r.error)}`;
  return text;
}

/**
 * True for a backend retry that waits for the time the server named: displays show its
 * `onRateLimitWait` instead.
 */
export function isServerWait(error: unknown): boolean {
  return error instanceof StepflowError && error.code === "BACKEND_RETRY" &&
    typeof (error.details as { waitUntil?: unknown } | undefined)?.waitUntil === "string";
}

/** `waiting for the rate limit until 12:03:10 (HTTP 429 …; attempt 1/3)`, in yellow. */
function waitLine(wait: RateLimitWaitEvent, c: Palette): string {
  const what = `${rateLimitWaitText(wait)}${wait.yielded ? ", the run's slot given back" : ""}`;
  return `${c.yellow(what)} (${wait.reason}; attempt ${wait.attempt}/${wait.maxAttempts})`;
}

/** `re-ask` for an invalid answer asked again (`OUTPUT_REASK`), `retry` for everything else. */
export function retryLabel(error: unknown): string {
  return error instanceof StepflowError && error.code === "OUTPUT_REASK" ? "re-ask" : "retry";
}

/**
 * Why a step is retried: a backend retry says so itself; a re-ask gives what was wrong with the
 * answer; a failed step validation says so; otherwise it is the `onError` policy.
 */
export function retryReason(error: unknown): string {
  if (error instanceof StepflowError && error.code === "BACKEND_RETRY") {
    return firstLine(error.message);
  }
  if (error instanceof StepflowError && error.code === "VALIDATION_FAILED") {
    return `validation failed, re-running with the retry prompt: ${firstLine(error.message)}`;
  }
  if (error instanceof StepflowError && error.code === "OUTPUT_REASK") {
    const { reason, errors } = (error.details ?? {}) as { reason?: string; errors?: string[] };
    const found = errors && errors.length > 0 ? `: ${errors.join("; ")}` : "";
    return firstLine(`${reason ?? error.message}${found}`);
  }
  return `onError retry after ${errorLabel(error)}`;
}

/** `[CODE] first line of the message`. */
export function errorLabel(error: unknown): string {
  const code = error instanceof StepflowError ? `[${error.code}] ` : "";
  return `${code}${firstLine(errorMessage(error))}`;
}

/** An error's message, also for the plain `{ message }` objects some engines report. */
function messageOf(error: unknown): string {
  const message = (error as { message?: unknown })?.message;
  return typeof message === "string" ? message : errorMessage(error);
}

function resultOf(ctx: RunContext): RunOutcome | undefined {
  const result = ctx.result as RunOutcome | undefined;
  return result && typeof result === "object" && "completionReason" in result ? result : undefined;
}

/** Characters of a person's note shown on one line. */
const NOTE_CHARS = 300;

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ");
  return one.length <= max ? one : one.slice(0, max - 1) + "…";
}

/** A value as one line of JSON, cut to 80 characters. */
function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  text = text.replace(/\s+/g, " ");
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
