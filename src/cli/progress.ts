/**
 * Progress output of `run-agent` on stderr, driven by the runner's events (STEPFLOW.md §7):
 *
 * - {@linkcode createLineProgress}: one plain, timestamped line per event — for logs, pipes, CI and
 *   `--verbose`;
 * - {@linkcode createLiveProgress}: a single status line redrawn in place on a terminal (spinner,
 *   elapsed time, step, iteration, attempt, the call in flight, the last transition, tokens), cleared
 *   and replaced by a summary line when the run ends.
 *
 * Both take the backend's calls too (through {@linkcode observeBackend}), which is where token usage
 * and check/re-ask calls become visible while a step runs.
 *
 * @module
 */
import type { ExecutorEvents, RunContext, StepInfo } from "../events/types.ts";
import type { StepFlowResult } from "../flow/types.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { ANSWER_EXCERPT_CHARS, excerpt } from "../engine/ask_structured.ts";

/** Where a renderer writes, and how. */
export interface ProgressOptions {
  /** Writes text to stderr (no newline added). */
  write(text: string): void;
  /** Use ANSI colours (only on a terminal and when `NO_COLOR` is unset). */
  color: boolean;
  /** Clock in milliseconds (tests pass a fake one). Default `performance.now`. */
  now?: () => number;
}

/** Options of the live renderer. */
export interface LiveProgressOptions extends ProgressOptions {
  /** Terminal width; the status line is cut to fit. Default 80. */
  columns?: number;
  /** Redraw period of the spinner and clock in ms. Default 100. */
  intervalMs?: number;
  /**
   * Events closer together than this (ms) update the state without redrawing; the next event or
   * tick draws it. Keeps fast flows from flooding the terminal. Default 40.
   */
  minRedrawMs?: number;
}

/** What the renderers learn from a backend call. */
export interface CallObserver {
  /** A call starts. */
  onCallStart?(request: LlmRequest): void;
  /** A call ended with a response (`error` unset) or failed. */
  onCallEnd?(request: LlmRequest, response?: LlmResponse, error?: unknown): void;
}

/** A progress renderer: event handlers for the runner, plus what the CLI feeds it directly. */
export interface ProgressRenderer extends CallObserver {
  /** Handlers to pass as the runner's `events`. */
  readonly events: ExecutorEvents;
  /** Prints a warning (runner `onWarning`) without garbling the live line. */
  warn(message: string): void;
  /** Ends the display: the live line is replaced by `result`'s summary; timers stop. */
  finish(result?: StepFlowResult): void;
}

/**
 * Wraps a backend so that every call is reported to `observer` (start, then end with the response or
 * the error). The wrapped backend keeps the original's name and behaviour.
 *
 * @example
 * ```ts
 * import { observeBackend } from "./progress.ts";
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * let calls = 0;
 * const backend = observeBackend(new ScriptedBackend(["hi"]), { onCallEnd: () => void calls++ });
 * await backend.complete({ kind: "step", agent: "a", stepId: "s", iteration: 1, prompt: "p", cwd: "." });
 * console.log(calls); // 1
 * ```
 */
export function observeBackend(backend: LlmBackend, observer: CallObserver): LlmBackend {
  return {
    name: backend.name,
    async complete(request, options) {
      observer.onCallStart?.(request);
      try {
        const response = await backend.complete(request, options);
        observer.onCallEnd?.(request, response);
        return response;
      } catch (error) {
        observer.onCallEnd?.(request, undefined, error);
        throw error;
      }
    },
  };
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

/** `1234567` → `"1,234,567"`. */
export function formatCount(n: number): string {
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** The one-line outcome of a run: `completed at complete.issue after 3 iterations (…)`. */
export function resultLine(result: StepFlowResult): string {
  const it = `${result.iterations} iteration${result.iterations === 1 ? "" : "s"}`;
  const usage = formatUsage(result.usage);
  return `${
    result.success ? "succeeded" : "failed"
  }: ${result.completionReason} at ${result.finalStepId} after ${it}${usage ? ` (${usage})` : ""}`;
}

/** `tokens unknown for 3 calls`: the backend reported no usage for them. */
function unknownTokens(calls: number): string {
  return `tokens unknown for ${calls} call${calls === 1 ? "" : "s"}`;
}

/**
 * `1,234 tokens (1,200 in, 34 out), 4 calls, tokens unknown for 1 call, $0.0123` (parts that are
 * zero are left out). Calls whose response carried no usage are counted apart, never as 0 tokens.
 */
export function formatUsage(usage: StepFlowResult["usage"] | undefined): string {
  if (!usage) return "";
  const parts: string[] = [];
  const tokens = usage.inputTokens + usage.outputTokens;
  if (tokens > 0) {
    parts.push(
      `${formatCount(tokens)} tokens (${formatCount(usage.inputTokens)} in, ${
        formatCount(usage.outputTokens)
      } out)`,
    );
  }
  if (usage.calls > 0) parts.push(`${usage.calls} call${usage.calls === 1 ? "" : "s"}`);
  const unknown = usage.callsWithoutUsage ?? 0;
  if (unknown > 0) parts.push(unknownTokens(unknown));
  if (usage.costUsd > 0) parts.push(`$${usage.costUsd.toFixed(4)}`);
  return parts.join(", ");
}

// -------------------------------------------------------------------------------------------------
// Plain lines
// -------------------------------------------------------------------------------------------------

/** Options of the line renderer. */
export interface LineProgressOptions extends ProgressOptions {
  /** Also print each backend call and state change (`--verbose`). */
  verbose?: boolean;
}

/**
 * One plain, timestamped line per event, e.g.
 * `[00:01.234] step initial.issue #2 → next (continuation.issue)`. Times count from the renderer's
 * creation. With `verbose`, backend calls (kind, tokens, duration) and state changes get lines too.
 *
 * @example
 * ```ts
 * import { createLineProgress } from "./progress.ts";
 * const lines: string[] = [];
 * const progress = createLineProgress({ write: (t) => void lines.push(t), color: false });
 * await progress.events.onStepStart?.({ runId: "r", stepId: "a", desc: "a", order: 1, path: ["a"], iteration: 1 });
 * console.log(lines[0]); // "[00:00.000] step a #1 started\n" (time varies)
 * ```
 */
export function createLineProgress(options: LineProgressOptions): ProgressRenderer {
  const now = options.now ?? (() => performance.now());
  const start = now();
  const c = palette(options.color);
  const attempts = new AttemptCounter();
  const callStarted = new Map<LlmRequest, number>();
  /** The `order` of the last step iteration whose error already has its own line. */
  let errorReported = -1;
  const line = (text: string) =>
    options.write(`${c.dim(`[${formatClock(now() - start)}]`)} ${text}\n`);
  const step = (info: StepInfo) => `step ${c.bold(info.stepId)} #${info.iteration ?? info.order}`;

  const events: ExecutorEvents = {
    onPlanStart(plan, ctx) {
      const def = plan as { name?: string; entryStepId?: string };
      const verb = ctx.mode === "resume"
        ? "resumed"
        : ctx.mode === "redrive"
        ? "redriven"
        : "started";
      const from = ctx.mode === "resume" || ctx.mode === "redrive"
        ? ` after iteration ${ctx.iteration ?? 0}`
        : def.entryStepId
        ? `, entry ${def.entryStepId}`
        : "";
      line(`run ${ctx.runId} ${verb}: agent ${def.name ?? "?"}${from}`);
    },
    onStepStart(info) {
      const attempt = attempts.start(info.stepId);
      const extras = [
        attempt > 1 ? `attempt ${attempt}` : undefined,
        info.desc && info.desc !== info.stepId ? `"${info.desc}"` : undefined,
      ].filter(Boolean);
      line(`${step(info)} started${extras.length > 0 ? ` (${extras.join(", ")})` : ""}`);
    },
    onStepEnd(info, result) {
      const reported = errorReported === info.order;
      line(`${step(info)} ${describeStepEnd(result, c, reported)}`);
    },
    onStepError(info, error) {
      errorReported = info.order;
      line(`${step(info)} ${c.red("error")} ${errorLabel(error)}`);
    },
    onStepRetry(info, attempt, error) {
      line(`${step(info)} ${c.yellow(`${retryLabel(error)} ${attempt}`)}: ${retryReason(error)}`);
    },
    onStepJump(info, target) {
      line(`${step(info)} jump → ${target}`);
    },
    onPause: () => line("run paused"),
    onResume: () => line("run resumed"),
    onAbort: () => line(c.yellow("run stopping: cancel or abort requested")),
    onTimeout: () => line(c.yellow("run stopping (time limit reached)")),
    onStateChange(next, previous) {
      if (options.verbose) line(`state ${previous} → ${next}`);
    },
    onPlanEnd(_plan, ctx) {
      const result = resultOf(ctx);
      if (!result) return;
      const text = `run ${resultLine(result)}`;
      line(result.success ? c.green(text) : c.red(text));
      if (result.error) line(c.red(`  ${result.error.code}: ${firstLine(result.error.message)}`));
    },
  };
  return {
    events,
    onCallStart(request) {
      callStarted.set(request, now());
      if (options.verbose) {
        line(`  call ${request.kind} of ${request.stepId} #${request.iteration} started`);
      }
    },
    onCallEnd(request, response, error) {
      const began = callStarted.get(request);
      callStarted.delete(request);
      if (!options.verbose) return;
      const took = began === undefined ? "" : ` in ${((now() - began) / 1000).toFixed(1)}s`;
      if (error !== undefined) {
        line(
          `  call ${request.kind} of ${request.stepId} failed${took}: ${
            firstLine(errorMessage(error))
          }`,
        );
        return;
      }
      const usage = response?.usage;
      line(
        `  call ${request.kind} of ${request.stepId} answered${took}${
          usage
            ? ` (${formatCount(usage.inputTokens)} in, ${
              formatCount(usage.outputTokens)
            } out tokens)`
            : " (tokens unknown)"
        }`,
      );
      if (response) options.write(rawAnswer(response.text));
    },
    warn(message) {
      line(c.yellow(`warning: ${message}`));
    },
    finish() {},
  };
}

// -------------------------------------------------------------------------------------------------
// Live view
// -------------------------------------------------------------------------------------------------

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * A status line redrawn in place on a terminal:
 * `⠹ 00:04.2  continuation.issue · iteration 3 · attempt 2 · check call · last initial.issue → next · 1,234 tokens`.
 * Errors and warnings are printed above it as permanent lines. {@linkcode ProgressRenderer.finish}
 * clears it and prints the run's summary line.
 */
export function createLiveProgress(options: LiveProgressOptions): ProgressRenderer {
  const now = options.now ?? (() => performance.now());
  const start = now();
  const c = palette(options.color);
  const columns = Math.max(20, options.columns ?? 80);
  const attempts = new AttemptCounter();
  const status = {
    step: undefined as StepInfo | undefined,
    attempt: 1,
    call: undefined as string | undefined,
    last: undefined as string | undefined,
    tokens: 0,
    unknownCalls: 0,
    paused: false,
    stopping: undefined as string | undefined,
  };
  let frame = 0;
  let drawn = false;
  let finished = false;

  const render = (): string => {
    const parts: string[] = [];
    const s = status.step;
    if (s) {
      parts.push(s.stepId, `iteration ${s.iteration ?? s.order}`);
      if (status.attempt > 1) parts.push(`attempt ${status.attempt}`);
    } else {
      parts.push("starting");
    }
    if (status.paused) parts.push("paused");
    else if (status.stopping) parts.push(status.stopping);
    else if (status.call) parts.push(status.call);
    if (status.last) parts.push(`last ${status.last}`);
    if (status.tokens > 0) parts.push(`${formatCount(status.tokens)} tokens`);
    if (status.unknownCalls > 0) parts.push(unknownTokens(status.unknownCalls));
    const clock = formatClock(now() - start).slice(0, -2); // tenths are enough on screen
    const text = `${clock}  ${parts.join(" · ")}`;
    const spinner = SPINNER[frame % SPINNER.length];
    return `${c.cyan(spinner)} ${truncate(text, columns - 3)}`;
  };
  const minRedrawMs = options.minRedrawMs ?? 40;
  let lastDraw = -Infinity;
  const draw = (force = false) => {
    if (finished) return;
    const t = now();
    if (!force && drawn && t - lastDraw < minRedrawMs) return;
    options.write(`\r\x1b[2K${render()}`);
    drawn = true;
    lastDraw = t;
  };
  const clear = () => {
    if (drawn) options.write("\r\x1b[2K");
    drawn = false;
  };
  /** Prints a permanent line above the status line. */
  const print = (text: string) => {
    clear();
    options.write(`${text}\n`);
    draw(true);
  };
  const timer = setInterval(() => {
    frame++;
    draw(true);
  }, options.intervalMs ?? 100);
  // The clock must never keep the process alive on its own.
  Deno.unrefTimer(timer);

  const events: ExecutorEvents = {
    onPlanStart(_plan, ctx) {
      const usage = ctx.usage as Partial<StepFlowResult["usage"]> | undefined;
      status.tokens = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
      status.unknownCalls = usage?.callsWithoutUsage ?? 0;
    },
    onStepStart(info) {
      status.step = info;
      status.attempt = attempts.start(info.stepId);
      status.call = undefined;
      draw();
    },
    onStepEnd(info, result) {
      const r = (result ?? {}) as StepEndReport;
      status.last = `${info.stepId} → ${r.transition ?? "?"}${
        r.nextStepId && r.nextStepId !== info.stepId ? ` (${r.nextStepId})` : ""
      }`;
      if (r.checkResult?.result === "ng") {
        print(
          `${c.yellow("check ng")} ${info.stepId} #${info.iteration}: ${
            firstLine(r.checkResult.message)
          }`,
        );
      }
      status.call = undefined;
      draw();
    },
    onStepError(info, error) {
      print(`${c.red("error")} ${info.stepId} #${info.iteration}: ${errorLabel(error)}`);
    },
    onStepRetry(info, attempt, error) {
      status.call = `${retryLabel(error)} ${attempt}`;
      print(`${c.yellow(status.call)} ${info.stepId}: ${retryReason(error)}`);
    },
    onPause() {
      status.paused = true;
      draw();
    },
    onResume() {
      status.paused = false;
      draw();
    },
    onAbort() {
      status.stopping = "stopping…";
      draw();
    },
    onTimeout() {
      status.stopping = "time limit reached, stopping…";
      draw();
    },
  };
  return {
    events,
    onCallStart(request) {
      status.call = request.kind === "step" ? "waiting for the model" : `${request.kind} call`;
      draw();
    },
    onCallEnd(_request, response) {
      const usage = response?.usage;
      if (usage) status.tokens += usage.inputTokens + usage.outputTokens;
      else if (response) status.unknownCalls++;
      status.call = undefined;
      draw();
    },
    warn(message) {
      print(c.yellow(`warning: ${message}`));
    },
    finish(result) {
      if (finished) return;
      clearInterval(timer);
      clear();
      finished = true;
      if (!result) return;
      const elapsed = formatClock(now() - start).slice(0, -2);
      const text = `${result.success ? "✓" : "✗"} ${resultLine(result)} in ${elapsed}`;
      options.write(`${result.success ? c.green(text) : c.red(text)}\n`);
    },
  };
}

// -------------------------------------------------------------------------------------------------

/** The fields of the runner's `onStepEnd` result this module reads. */
interface StepEndReport {
  transition?: string;
  intent?: string;
  nextStepId?: string;
  checkResult?: { result: "ok" | "ng"; message: string };
  error?: string;
}

/** Counts consecutive starts of the same step (the history's `attempt`). */
class AttemptCounter {
  #stepId?: string;
  #attempt = 0;
  start(stepId: string): number {
    this.#attempt = stepId === this.#stepId ? this.#attempt + 1 : 1;
    this.#stepId = stepId;
    return this.#attempt;
  }
}

function describeStepEnd(result: unknown, c: Palette, errorReported: boolean): string {
  const r = (result ?? {}) as StepEndReport;
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

/** `re-ask` for an invalid answer asked again (`OUTPUT_REASK`), `retry` for everything else. */
function retryLabel(error: unknown): string {
  return error instanceof StepflowError && error.code === "OUTPUT_REASK" ? "re-ask" : "retry";
}

/**
 * Why a step is retried: a backend retry says so itself; a re-ask gives what was wrong with the
 * answer; a failed step validation says so; otherwise it is the `onError` policy.
 */
function retryReason(error: unknown): string {
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

/** A model's raw answer for `--verbose`: indented, cut to 8,192 characters with its length. */
function rawAnswer(text: string): string {
  const shown = excerpt(text, ANSWER_EXCERPT_CHARS);
  const cut = shown.length > shown.text.length
    ? ` (first ${formatCount(shown.text.length)} shown)`
    : "";
  const body = shown.text === "" ? "    (empty)" : shown.text.replace(/^/gm, "    ");
  return `    answer, ${formatCount(shown.length)} chars${cut}:\n${body}\n`;
}

function errorLabel(error: unknown): string {
  const code = error instanceof StepflowError ? `[${error.code}] ` : "";
  return `${code}${firstLine(errorMessage(error))}`;
}

function resultOf(ctx: RunContext): StepFlowResult | undefined {
  const result = ctx.result as StepFlowResult | undefined;
  return result && typeof result === "object" && "completionReason" in result ? result : undefined;
}

function firstLine(text: string): string {
  const i = text.indexOf("\n");
  return i < 0 ? text : `${text.slice(0, i)} …`;
}

function truncate(text: string, width: number): string {
  const chars = Array.from(text);
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
}

/** ANSI colour helpers; identity functions when colour is off. */
export interface Palette {
  /** Dim text. */
  dim(text: string): string;
  /** Bold text. */
  bold(text: string): string;
  /** Red text. */
  red(text: string): string;
  /** Green text. */
  green(text: string): string;
  /** Yellow text. */
  yellow(text: string): string;
  /** Cyan text. */
  cyan(text: string): string;
}

/** A {@linkcode Palette}: ANSI codes when `color` is true, plain text otherwise. */
export function palette(color: boolean): Palette {
  const wrap = (open: number, close: number) => (text: string) =>
    color ? `\x1b[${open}m${text}\x1b[${close}m` : text;
  return {
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}
