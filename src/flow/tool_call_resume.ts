/**
 * Durable tool calls: what a step with tools writes to the run log so that a run killed in the
 * middle of the step resumes **inside** it, and how the conversation is rebuilt from those lines.
 *
 * A step's tool-loop call writes, in the run log:
 *
 * - a `tool_turn` line per model turn (its text and calls, usage; the final answer's turn too);
 * - a `tool_call_start` line when a call was allowed, before it runs (made durable at once —
 *   the run's checkpoint is saved again with an `inStep` marker — when its tool is not idempotent);
 * - the `tool_call` line when it finished (result excerpt, status, duration; the whole result as
 *   the model got it in `content` when the excerpt cut it), durable at once after a tool that is
 *   not idempotent.
 *
 * A resume finds the marker in the checkpoint, reads the lines of that iteration from it on, and
 * gives each of the iteration's tool-loop calls its recorded turns and results
 * ({@linkcode ToolLoopResume}). A call started but not finished runs again only when its tool is
 * idempotent; otherwise the resume stops with `TOOL_CALL_UNFINISHED` unless the user allows it.
 *
 * @module
 */
import type { ToolCallEvent } from "../events/types.ts";
import type { ToolLoopResume } from "../engine/tool_loop.ts";
import { resumeKey } from "../engine/tool_loop.ts";
import { StepflowError } from "../errors.ts";
import type { ToolCallRequest, ToolTurnResponse } from "../llm/tool_turn.ts";

/**
 * Where a step with tools left off, as a checkpoint saved in the middle of the step records it:
 * the checkpoint's state is the one the step started from (so the step is entered again with the
 * same counters), plus this marker.
 */
export interface InStepMarker {
  /** The step. */
  stepId: string;
  /** The iteration the step runs as (the lines of the step carry it). */
  iteration: number;
  /** The first log line of the step's iteration (0-based). */
  fromLine: number;
}

/** A call found started but not finished (the process stopped while it ran, or just before). */
export interface UnfinishedCall {
  /** The tool. */
  tool: string;
  /** The call's id within its turn. */
  callId: string;
  /** The argument that says what it acted on (a command, a path), bounded. */
  target?: string;
  /** Whether the tool may run twice without harm. */
  idempotent: boolean;
  /**
   * The run-log line (0-based) of the call's latest `tool_call_start`: a call started again after
   * a resume has a later one, which tells a permission given for the earlier start from it.
   */
  startLine: number;
}

/** The recorded tool-loop calls of the step a run was killed in. */
export interface ResumedStep {
  /** The marker the checkpoint held. */
  marker: InStepMarker;
  /** Per tool-loop call of the iteration (its index among the iteration's backend calls). */
  calls: Map<number, ToolLoopResume>;
  /** Calls started and not finished, in log order. */
  unfinished: UnfinishedCall[];
}

/** True when `value` looks like an {@linkcode InStepMarker} (a checkpoint is untrusted input). */
export function isInStepMarker(value: unknown): value is InStepMarker {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  return typeof m.stepId === "string" && Number.isInteger(m.iteration) &&
    Number.isInteger(m.fromLine) && (m.fromLine as number) >= 0;
}

/**
 * The step a resume of a run whose checkpoint state is `state` continues inside, with its recorded
 * calls — or undefined when the run did not stop inside a step with tools (no marker, or a marker
 * of another step or iteration: the step is then entered afresh). What `--resume` acts on, and what
 * the dashboard reads to say beforehand that a resume would stop at an unfinished call.
 *
 * @example
 * ```ts
 * import { resumedStepOf } from "./tool_call_resume.ts";
 * const state = { currentStepId: "fix", iteration: 1, inStep: { stepId: "fix", iteration: 2, fromLine: 0 } };
 * console.log(resumedStepOf(state, [])?.marker.stepId); // "fix"
 * ```
 */
export function resumedStepOf(
  state: { inStep?: unknown; currentStepId?: unknown; iteration?: unknown },
  log: readonly { type: string; [key: string]: unknown }[],
): ResumedStep | undefined {
  const marker = state.inStep;
  return isInStepMarker(marker) && marker.stepId === state.currentStepId &&
      typeof state.iteration === "number" && marker.iteration === state.iteration + 1
    ? rebuildStep(log, marker)
    : undefined;
}

interface MutableCall {
  turns: Map<number, ToolTurnResponse>;
  finished: Map<string, { result: string; isError: boolean; call?: ToolCallEvent }>;
  started: Map<string, string>;
  startedTools: Map<
    string,
    { tool: string; idempotent: boolean; target?: string; startLine: number }
  >;
}

/**
 * The recorded calls of the marker's step, from the log lines of its iteration at or after
 * `marker.fromLine`. Lines that do not parse as expected are skipped (the call then runs as if
 * they were not there, which is what an unrecorded moment means).
 *
 * @example
 * ```ts
 * import { rebuildStep } from "./tool_call_resume.ts";
 * const resumed = rebuildStep([
 *   { type: "step_start", stepId: "fix", iteration: 2 },
 *   { type: "tool_turn", stepId: "fix", iteration: 2, call: 0, turn: 1, text: "",
 *     toolCalls: [{ id: "c1", name: "Bash", arguments: { command: "make" } }] },
 *   { type: "tool_call_start", stepId: "fix", iteration: 2, call: 0, turn: 1, callId: "c1",
 *     tool: "Bash", decidedBy: "rule Bash(make)", idempotent: false },
 * ], { stepId: "fix", iteration: 2, fromLine: 0 });
 * console.log(resumed.unfinished[0].tool); // "Bash"
 * ```
 */
export function rebuildStep(
  log: readonly { type: string; [key: string]: unknown }[],
  marker: InStepMarker,
): ResumedStep {
  const byCall = new Map<number, MutableCall>();
  for (let i = marker.fromLine; i < log.length; i++) {
    const line = log[i];
    if (line.stepId !== marker.stepId || line.iteration !== marker.iteration) continue;
    if (line.type !== "tool_turn" && line.type !== "tool_call_start" && line.type !== "tool_call") {
      continue;
    }
    const index = line.call;
    const turn = line.turn;
    if (!Number.isInteger(index) || !Number.isInteger(turn) || (turn as number) < 1) continue;
    let call = byCall.get(index as number);
    if (!call) {
      byCall.set(
        index as number,
        call = {
          turns: new Map(),
          finished: new Map(),
          started: new Map(),
          startedTools: new Map(),
        },
      );
    }
    if (line.type === "tool_turn") {
      const recorded = recordedTurn(line);
      if (recorded) call.turns.set(turn as number, recorded);
      continue;
    }
    if (typeof line.callId !== "string") continue;
    const key = resumeKey(turn as number, line.callId);
    if (line.type === "tool_call_start") {
      call.started.set(key, typeof line.decidedBy === "string" ? line.decidedBy : "allowed");
      call.startedTools.set(key, {
        tool: String(line.tool),
        idempotent: line.idempotent === true,
        ...(typeof line.target === "string" ? { target: line.target } : {}),
        startLine: i,
      });
    } else {
      const content = typeof line.content === "string" ? line.content : line.result;
      if (typeof content !== "string") continue;
      call.finished.set(key, {
        result: content,
        isError: line.isError === true,
        call: finishedCall(line, line.callId),
      });
    }
  }
  const calls = new Map<number, ToolLoopResume>();
  const unfinished: UnfinishedCall[] = [];
  for (const [index, call] of [...byCall].sort((a, b) => a[0] - b[0])) {
    // Turns are used up to the first gap: a turn after a missing one has nothing to follow.
    const turns: ToolTurnResponse[] = [];
    for (let t = 1; call.turns.has(t); t++) turns.push(call.turns.get(t)!);
    calls.set(index, { turns, finished: call.finished, started: call.started });
    for (const [key, info] of call.startedTools) {
      if (call.finished.has(key)) continue;
      unfinished.push({ callId: key.slice(key.indexOf(":") + 1), ...info });
    }
  }
  return { marker, calls, unfinished };
}

/** A `tool_turn` line as the turn it recorded, or undefined when it is not one. */
function recordedTurn(line: { [key: string]: unknown }): ToolTurnResponse | undefined {
  if (typeof line.text !== "string" || !Array.isArray(line.toolCalls)) return undefined;
  const toolCalls: ToolCallRequest[] = [];
  for (const c of line.toolCalls) {
    if (typeof c !== "object" || c === null) return undefined;
    const { id, name } = c as Record<string, unknown>;
    if (typeof id !== "string" || typeof name !== "string") return undefined;
    toolCalls.push({ id, name, arguments: (c as Record<string, unknown>).arguments });
  }
  const turn: ToolTurnResponse = { text: line.text, toolCalls };
  if (line.structuredOutput !== undefined) turn.structuredOutput = line.structuredOutput;
  if (typeof line.sessionId === "string") turn.sessionId = line.sessionId;
  if (isUsage(line.usage)) turn.usage = line.usage;
  if (typeof line.costUsd === "number") turn.costUsd = line.costUsd;
  return turn;
}

function isUsage(value: unknown): value is { inputTokens: number; outputTokens: number } {
  if (typeof value !== "object" || value === null) return false;
  const u = value as Record<string, unknown>;
  return typeof u.inputTokens === "number" && typeof u.outputTokens === "number";
}

/** The `tool_turn` log line of a model turn of a step's tool-loop call. */
export function toolTurnLogFields(
  stepId: string,
  call: number,
  turn: number,
  response: ToolTurnResponse,
): { type: string; [key: string]: unknown } {
  return {
    type: "tool_turn",
    stepId,
    call,
    turn,
    text: response.text,
    toolCalls: response.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
    ...(response.structuredOutput !== undefined
      ? { structuredOutput: response.structuredOutput }
      : {}),
    ...(response.sessionId ? { sessionId: response.sessionId } : {}),
    ...(response.usage ? { usage: response.usage } : {}),
    ...(response.costUsd !== undefined ? { costUsd: response.costUsd } : {}),
  };
}

/**
 * `TOOL_CALL_UNFINISHED`: the run was killed while calls whose tools are not idempotent ran (or
 * were about to): running them again could repeat their effect, so the resume stops before
 * anything runs and says how to go on.
 */
export function unfinishedCallError(
  runId: string,
  agent: string,
  stepId: string,
  calls: readonly UnfinishedCall[],
): StepflowError {
  const list = calls.map((c) => `${c.tool}${c.target ? ` (${c.target})` : ""}`).join(", ");
  const one = calls.length === 1;
  return new StepflowError(
    "TOOL_CALL_UNFINISHED",
    `Run ${runId} was stopped (killed or crashed) in step "${stepId}" while the tool call ${list} ${
      one ? "was" : "were"
    } running, before ${
      one ? "its" : "their"
    } result was saved: the tool may have done its work already, and ${
      one ? `${calls[0].tool} is` : "these tools are"
    } not idempotent, so running it again could repeat the effect. Check the effect, then resume the run with the unfinished call re-run anyway (API: run({ resume, rerunUnfinishedCall: true })). Nothing was changed.`,
    {
      details: {
        runId,
        stepId,
        calls: calls.map((c) => ({ tool: c.tool, callId: c.callId })),
        next: { action: "resume", runId, args: ["--rerun-unfinished-call"] },
        agent,
      },
    },
  );
}

/** The `run_resume` line's note of a run resumed inside a step. */
export function resumedSummary(resumed: ResumedStep): Record<string, unknown> {
  let finished = 0;
  for (const call of resumed.calls.values()) finished += call.finished.size;
  return {
    stepId: resumed.marker.stepId,
    finishedCalls: finished,
    ...(resumed.unfinished.length
      ? { rerun: resumed.unfinished.map((c) => ({ tool: c.tool, callId: c.callId })) }
      : {}),
  };
}

/** The progress line of a step resumed inside: what is replayed, what runs again. */
export function resumedLine(resumed: ResumedStep): string {
  const summary = resumedSummary(resumed);
  const again = resumed.unfinished.map((c) =>
    `${c.tool}${c.target ? ` ${c.target}` : ""} runs again (${
      c.idempotent ? "idempotent" : "--rerun-unfinished-call"
    })`
  );
  return [
    `resumed inside the step: ${summary.finishedCalls} finished tool call(s) replayed from the run log`,
    ...again,
  ].join("; ");
}

/** A `tool_call` log line as the `finished` report it was written from (its texts as logged). */
function finishedCall(line: { [key: string]: unknown }, callId: string): ToolCallEvent {
  const decision = line.decision === "allow" || line.decision === "deny"
    ? line.decision
    : "invalid";
  const call: ToolCallEvent = {
    phase: "finished",
    callId,
    tool: String(line.tool),
    decision,
    isError: line.isError === true,
    durationMs: typeof line.durationMs === "number" ? line.durationMs : 0,
  };
  if (typeof line.decidedBy === "string") call.decidedBy = line.decidedBy;
  if (typeof line.decidedAt === "string") call.decidedAt = line.decidedAt;
  if (typeof line.result === "string") call.result = line.result;
  if (typeof line.args === "string") {
    try {
      const args = JSON.parse(line.args);
      if (args && typeof args === "object" && !Array.isArray(args)) call.args = args;
    } catch {
      // An excerpt cut short: the summary goes without its arguments.
    }
  }
  return call;
}
