/**
 * Progress output of `run-agent` on stderr, driven by the runner's events (docs/runner.md,
 * "Events"):
 *
 * - {@linkcode createLineProgress}: one plain, timestamped line per event — for logs, pipes, CI and
 *   `--verbose`. It is the one line renderer every command uses (`events/progress_lines.ts`),
 *   plus the backend calls and the raw answers `--verbose` adds;
 * - {@linkcode createLiveProgress}: a single status line redrawn in place on a terminal (spinner,
 *   elapsed time, step, iteration, attempt, the call in flight, the last transition, tokens), cleared
 *   and replaced by a summary line when the run ends.
 *
 * Both take the backend's calls too (through {@linkcode observeBackend}), which is where token usage
 * and check/re-ask calls become visible while a step runs.
 *
 * @module
 */
import type { ExecutorEvents, FanOutReport, StepInfo } from "../events/types.ts";
import type { StepFlowResult } from "../flow/types.ts";
import { supportsToolTurns, type ToolTurnBackend, turnAsRequest } from "../llm/tool_turn.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { errorMessage } from "../errors.ts";
import { ANSWER_EXCERPT_CHARS, excerpt } from "../engine/ask_structured.ts";
import { type Palette, palette } from "../palette.ts";
import { cacheShare } from "../token_counts.ts";
import { oneLine, toolCallLine, toolCallTarget } from "../events/tool_call_line.ts";
import { fallbackText, modelRefText, rateLimitWaitText } from "../events/model_notice_text.ts";
import {
  AttemptCounter,
  createProgressLines,
  errorLabel,
  fanOutCounts,
  fanOutEndLine,
  firstLine,
  formatClock,
  formatCount,
  isServerWait,
  resultLine,
  retryLabel,
  retryReason,
  unknownTokens,
} from "../events/progress_lines.ts";

export { type Palette, palette } from "../palette.ts";
export { formatClock, formatCount, formatUsage, resultLine } from "../events/progress_lines.ts";

/** Where a renderer writes, and how. */
export interface ProgressOptions {
  /** Writes text to stderr (no newline added). */
  write(text: string): void;
  /** Use ANSI colours (only on a terminal and when `NO_COLOR` is unset). */
  color: boolean;
  /** Clock in milliseconds (tests pass a fake one). Default `performance.now`. */
  now?: () => number;
  /**
   * When the clock shows 00:00, in `now()`'s units. Default: when the renderer is created. The
   * renderer of a later drive of the same command (a run answered at the terminal goes on in a new
   * drive) passes the first one's {@linkcode ProgressRenderer.startedAt}, so the clock goes on.
   */
  startedAt?: number;
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
  /** When its clock shows 00:00 (see {@linkcode ProgressOptions.startedAt}). */
  readonly startedAt?: number;
  /**
   * Clears the live line and stops redrawing it while a question is asked at the terminal;
   * returns the function that brings it back. Absent where nothing is redrawn.
   */
  hold?(): () => void;
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
  const observed = async <R>(
    request: LlmRequest,
    call: () => Promise<R>,
    answer: (result: R) => LlmResponse,
  ): Promise<R> => {
    observer.onCallStart?.(request);
    try {
      const result = await call();
      observer.onCallEnd?.(request, answer(result));
      return result;
    } catch (error) {
      observer.onCallEnd?.(request, undefined, error);
      throw error;
    }
  };
  // The backend's default model and flags go through: the run prices calls and checks a
  // budget's prices by them.
  const model = (backend as { model?: unknown }).model;
  const wrapped: LlmBackend & Partial<ToolTurnBackend> & { model?: string } = {
    name: backend.name,
    ...(typeof model === "string" ? { model } : {}),
    complete: (request, options) =>
      observed(request, () => backend.complete(request, options), (r) => r),
    ...(backend.reportsToolCalls ? { reportsToolCalls: true } : {}),
    ...(backend.walksModelChains ? { walksModelChains: true } : {}),
    ...(backend.reportsCost ? { reportsCost: true } : {}),
  };
  // Each turn of the tool loop is a model call too: observed as one.
  if (supportsToolTurns(backend)) {
    wrapped.toolTurn = (turn, options) => {
      const request = turnAsRequest(turn);
      return observed(request, () => backend.toolTurn(turn, options), (r) => {
        const response: LlmResponse = { text: r.text };
        if (r.usage) response.usage = r.usage;
        if (r.costUsd !== undefined) response.costUsd = r.costUsd;
        if (r.model !== undefined) response.model = r.model;
        return response;
      });
    };
  }
  return wrapped;
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
  const startedAt = options.startedAt ?? now();
  const lines = createProgressLines({ ...options, now, startedAt });
  const { line, colors: c } = lines;
  const callStarted = new Map<LlmRequest, number>();
  return {
    startedAt,
    events: lines.events,
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
      // The rest of the text that streamed during the call comes before the call's end.
      const streamed = lines.endText(request.stepId);
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
            ? ` (${formatCount(usage.inputTokens)} in, ${formatCount(usage.outputTokens)} out${
              cacheShare(usage, formatCount) ? `; ${cacheShare(usage, formatCount)}` : ""
            } tokens)`
            : " (tokens unknown)"
        }`,
      );
      // Text that streamed was printed as it came: the answer is not printed a second time.
      if (streamed) {
        if (response) {
          line(`    answer, ${formatCount(response.text.length)} chars (streamed above)`);
        }
      } else if (response) options.write(rawAnswer(response.text));
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
  const start = options.startedAt ?? now();
  const c = palette(options.color);
  const columns = Math.max(20, options.columns ?? 80);
  const status: LiveStatus = { attempt: 1, tokens: 0, unknownCalls: 0, paused: false };
  let frame = 0;
  let drawn = false;
  let finished = false;
  let held = false;

  const minRedrawMs = options.minRedrawMs ?? 40;
  let lastDraw = -Infinity;
  const draw = (force = false) => {
    if (finished || held) return;
    const t = now();
    if (!force && drawn && t - lastDraw < minRedrawMs) return;
    options.write(`\r\x1b[2K${statusLine(status, now() - start, frame, columns, c)}`);
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

  return {
    startedAt: start,
    events: liveEvents(status, { draw, print, colors: c }),
    onCallStart(request) {
      status.call = request.kind === "step" ? "waiting for the model" : `${request.kind} call`;
      status.text = undefined;
      draw();
    },
    onCallEnd(_request, response) {
      const usage = response?.usage;
      if (usage) status.tokens += usage.inputTokens + usage.outputTokens;
      else if (response) status.unknownCalls++;
      status.call = undefined;
      status.text = undefined;
      draw();
    },
    warn(message) {
      print(c.yellow(`warning: ${message}`));
    },
    hold() {
      clear();
      held = true;
      return () => {
        held = false;
        draw(true);
      };
    },
    finish(result) {
      if (finished) return;
      clearInterval(timer);
      clear();
      finished = true;
      if (result) options.write(`${finishLine(result, now() - start, c)}\n`);
    },
  };
}

/** What the live status line shows; the run's events update it. */
interface LiveStatus {
  step?: StepInfo;
  attempt: number;
  call?: string;
  last?: string;
  tokens: number;
  unknownCalls: number;
  paused: boolean;
  stopping?: string;
  /** The end of the model's text as it streams (shown in place of the call). */
  text?: string;
  /** The step (and iteration) whose tool calls were last printed. */
  callsOf?: string;
  /** A fan-out step in progress: its counts and running items. */
  fanOut?: { stepId: string; report: FanOutReport };
}

/** Characters of the streamed text the status line keeps. */
const LIVE_TEXT_CHARS = 60;

/** The status line for `status`, `elapsedMs` into the run, cut to the terminal's `columns`. */
function statusLine(
  status: LiveStatus,
  elapsedMs: number,
  frame: number,
  columns: number,
  c: Palette,
): string {
  const parts: string[] = [];
  const s = status.step;
  const fan = status.fanOut;
  if (fan && !status.paused && !status.stopping) {
    // `review.each 12/40 done · 4 running · 1 failed · [13] src/cli.ts: review.file, …`
    parts.push(`${fan.stepId} ${fanOutCounts(fan.report)}`);
    if (status.tokens > 0) parts.push(`${formatCount(status.tokens)} tokens`);
    const running = fan.report.active.map((a) =>
      `[${a.index + 1}] ${tail(a.item, 28)}${a.stepId ? `: ${a.stepId}` : ""}`
    );
    if (running.length > 0) parts.push(running.join(", "));
    const clock = formatClock(elapsedMs).slice(0, -2);
    return `${c.cyan(SPINNER[frame % SPINNER.length])} ${
      truncate(`${clock}  ${parts.join(" · ")}`, columns - 3)
    }`;
  }
  if (s) {
    parts.push(s.stepId, `iteration ${s.iteration ?? s.order}`);
    if (status.attempt > 1) parts.push(`attempt ${status.attempt}`);
  } else {
    parts.push("starting");
  }
  if (status.paused) parts.push("paused");
  else if (status.stopping) parts.push(status.stopping);
  else if (status.text) parts.push(`“…${status.text}”`);
  else if (status.call) parts.push(status.call);
  if (status.last) parts.push(`last ${status.last}`);
  if (status.tokens > 0) parts.push(`${formatCount(status.tokens)} tokens`);
  if (status.unknownCalls > 0) parts.push(unknownTokens(status.unknownCalls));
  const clock = formatClock(elapsedMs).slice(0, -2); // tenths are enough on screen
  const text = `${clock}  ${parts.join(" · ")}`;
  const spinner = SPINNER[frame % SPINNER.length];
  return `${c.cyan(spinner)} ${truncate(text, columns - 3)}`;
}

/** The run's closing line: a mark, the result and the time taken, colored by outcome. */
function finishLine(result: StepFlowResult, elapsedMs: number, c: Palette): string {
  const elapsed = formatClock(elapsedMs).slice(0, -2);
  const cancelled = result.completionReason === "cancelled";
  const waiting = result.completionReason === "waiting";
  const declined = result.completionReason === "declined";
  const mark = result.success ? "✓" : cancelled || declined ? "■" : waiting ? "…" : "✗";
  const text = `${mark} ${resultLine(result)} in ${elapsed}`;
  // A person's "no" is neither a success nor a failure: no colour.
  const tone = result.success
    ? c.green
    : cancelled || waiting
    ? c.yellow
    : declined
    ? (t: string) => t
    : c.red;
  return tone(text);
}

/** How the live view's events reach the screen: redraw the status line, or print above it. */
interface LiveScreen {
  draw: (force?: boolean) => void;
  print: (text: string) => void;
  colors: Palette;
}

/** The run's events as updates of `status` (redrawn) and permanent lines (check ng, errors, retries). */
function liveEvents(status: LiveStatus, { draw, print, colors: c }: LiveScreen): ExecutorEvents {
  const attempts = new AttemptCounter();
  return {
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
    onFanOut(info, report) {
      status.fanOut = { stepId: info.stepId, report };
      const change = report.change;
      if (change?.kind === "waiting") {
        print(
          `${c.yellow("waiting")} ${info.stepId} item ${
            change.index + 1
          } (${change.item}): child run ${change.runId ?? "?"} waits for an answer`,
        );
      } else if (
        change?.kind === "ended" && change.status !== "completed" && change.status !== "cancelled"
      ) {
        print(c.yellow(`${info.stepId} ${fanOutEndLine(report)}`));
      }
      draw();
    },
    onStepEnd(info, result) {
      if (status.fanOut?.stepId === info.stepId) delete status.fanOut;
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
      if (isServerWait(error)) return; // shown by onRateLimitWait
      status.call = `${retryLabel(error)} ${attempt}`;
      print(`${c.yellow(status.call)} ${info.stepId}: ${retryReason(error)}`);
    },
    onRateLimitWait(info, wait) {
      // On the status line until the call goes on (the next attempt's text, its end).
      status.call = rateLimitWaitText(wait);
      status.text = undefined;
      print(
        `${
          c.yellow(status.call)
        } ${info.stepId}: ${wait.reason} (attempt ${wait.attempt}/${wait.maxAttempts})`,
      );
    },
    onModelFallback(info, fallback) {
      status.call = `on ${modelRefText(fallback.to)}`;
      print(`${c.yellow("fallback")} ${info.stepId}: ${fallbackText(fallback)}`);
    },
    onToolCall(info, call) {
      if (call.phase === "requested") {
        const target = toolCallTarget(call);
        status.call = `${oneLine(call.tool, 40)}${target ? ` ${target}` : ""}…`;
        status.text = undefined;
        draw();
        return;
      }
      if (call.phase !== "finished") return;
      // The calls of a step are printed under one line naming it.
      const of = `${info.stepId} #${info.iteration ?? info.order}`;
      if (status.callsOf !== of) print(c.bold(of));
      status.callsOf = of;
      const text = `  ${toolCallLine(call)}`;
      status.call = "waiting for the model";
      print(call.isError ? c.yellow(text) : text);
    },
    onStepText(_info, text) {
      const recent = `${status.text ?? ""}${text}`.slice(-2 * LIVE_TEXT_CHARS);
      status.text = oneLine(recent, Infinity).slice(-LIVE_TEXT_CHARS);
      draw();
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
    onStateChange(next) {
      if (next !== "waiting") return;
      status.call = "waiting for an answer";
      draw(true);
    },
  };
}

// -------------------------------------------------------------------------------------------------

/** The fields of the runner's `onStepEnd` result this module reads. */
interface StepEndReport {
  transition?: string;
  nextStepId?: string;
  checkResult?: { result: "ok" | "ng"; message: string };
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

/** The end of `text` when it is longer than `width` (a path's end says most). */
function tail(text: string, width: number): string {
  const chars = Array.from(text);
  return chars.length <= width ? text : `…${chars.slice(chars.length - width + 1).join("")}`;
}

function truncate(text: string, width: number): string {
  const chars = Array.from(text);
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
}
