/**
 * The one tool loop, shared by every backend that runs tool turns (`anthropic`, `openai`,
 * `scripted`): offer the step's allowed tools, run the calls the model asks for under the step's
 * permissions, send the results back, and repeat until the model answers without a call. That
 * final answer is returned as an ordinary {@linkcode LlmResponse}, so it takes the structured-output
 * path of every other answer (`askStructured`: schema, extraction, re-ask).
 *
 * Nothing the model asks for is trusted: an unknown or unoffered tool, arguments that are not JSON
 * or fail the tool's schema, a refused permission and a tool's own failure go back to the model as
 * error results it can act on. The loop is bounded by tool turns per call and by consecutive bad
 * calls, each with a run error that says what to change.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { extractJson } from "../llm/structured_output.ts";
import type {
  ToolCallRequest,
  ToolResultMessage,
  ToolSpec,
  ToolTurnBackend,
  ToolTurnMessage,
  ToolTurnResponse,
} from "../llm/tool_turn.ts";
import type { LlmCallOptions, LlmRequest, LlmResponse, LlmUsage } from "../llm/types.ts";
import { addTokenCounts } from "../token_counts.ts";
import { AGENT_TOOL_LIMITS, truncateOutput } from "../tools/agent_limits.ts";
import { formatIssues, type ToolRegistry } from "../tools/registry.ts";
import type { PermissionPolicy } from "../tools/permissions.ts";
import {
  decide,
  decideResumed,
  type PermissionAsk,
  type PermissionDeciders,
  type PermissionReply,
  refusalText,
} from "./tool_permission.ts";
import { pathGuard, reachCallPaths } from "../tools/call_paths.ts";
import { exceedsDepth, MAX_OUTPUT_DEPTH } from "./ask_structured.ts";
import type { ToolCallEvent } from "../events/types.ts";
import { DEFAULT_MAX_TOOL_RESULT_CHARS, ToolResultBudget } from "./tool_result_budget.ts";
import { boundToolCalls, MAX_ARGUMENT_CHARS } from "./tool_call_bounds.ts";

/** Tool turns one call may take before it fails (`TOOL_TURNS_EXCEEDED`), by default. */
export const DEFAULT_MAX_TOOL_TURNS = 50;
/** Bad calls in a row (refused, invalid or failed) before the call fails (`TOOL_CALLS_FAILING`). */
export const DEFAULT_MAX_BAD_TOOL_CALLS = 8;
/** Calls one turn may ask for; the rest are answered with an error. */
export const MAX_CALLS_PER_TURN = 32;

// The permission ask and its answer live beside the decision (tool_permission.ts).
export type {
  PermissionAnswerOrWait,
  PermissionAsk,
  PermissionReply,
  PermissionWaits,
} from "./tool_permission.ts";

/**
 * How a tool-loop call ended without an answer: a call's permission ask waits (its answerer said
 * `"wait"`). The loop stopped before that call ran; nothing after it ran either. The caller makes
 * its run wait and, once answered, calls again with {@linkcode ToolLoopOptions.resume}.
 */
export interface ToolLoopWait {
  /** The ask that waits. */
  waiting: PermissionAsk;
}

/** What happened to one call, for logs and events. */
export interface ToolCallRecord {
  /** The step. */
  stepId: string;
  /** The call's id. */
  id: string;
  /** The tool, as the model named it. */
  tool: string;
  /** The arguments, when they parsed. */
  args?: Record<string, unknown>;
  /** `allow` (ran), `deny` (refused) or `invalid` (unknown tool, bad arguments). */
  decision: "allow" | "deny" | "invalid";
  /** Who decided: a rule, the mode, or whoever answered an ask. */
  decidedBy?: string;
  /** When the decision was made (ISO time); absent for an invalid call. */
  decidedAt?: string;
  /** For a call that asked or was refused: the `allowedTools` rule that would allow it. */
  suggestion?: string;
  /** The result or error text sent to the model (bounded). */
  result: string;
  /** True when the model got an error. */
  isError: boolean;
  /** Milliseconds the tool ran (0 when it did not). */
  durationMs: number;
}

/** How the loop runs. */
export interface ToolLoopOptions {
  /** The backend that runs each turn. */
  backend: ToolTurnBackend;
  /** The registry the tools come from. */
  tools: ToolRegistry;
  /** Names of the tools offered (see `offeredTools`). */
  offered: readonly string[];
  /** The step's permissions. */
  policy: PermissionPolicy;
  /** Tool turns per call (default {@linkcode DEFAULT_MAX_TOOL_TURNS}). */
  maxToolTurns?: number;
  /** Bad calls in a row (default {@linkcode DEFAULT_MAX_BAD_TOOL_CALLS}). */
  maxBadCalls?: number;
  /**
   * Characters of tool results the step's conversation holds (default 200,000, ~50k tokens):
   * past it the oldest results are replaced by a short note, down to half, the latest turn's
   * never (see `ToolResultBudget` in src/engine/tool_result_budget.ts). `Infinity`: no bound.
   */
  maxToolResultChars?: number;
  /**
   * Answers an "ask" decision: `true` (or a reply with `allow: true`) runs the call; `undefined`
   * means nobody could answer. Without it, or when it returns `undefined`, the call is refused and
   * the model is told which rule or mode would allow it. `signal` is the call's (cancel,
   * timeout): an answerer that waits for a person stops waiting when it fires. (An answerer that
   * may say `"wait"` instead goes through {@linkcode runToolLoop}.)
   */
  onPermissionRequest?: (
    ask: PermissionAsk,
    signal?: AbortSignal,
  ) => boolean | PermissionReply | undefined | Promise<boolean | PermissionReply | undefined>;
  /** Told after each call. */
  onToolCall?: (record: ToolCallRecord) => void;
  /**
   * Told as each call moves on — `requested`, `decided`, `finished`, in that order — and awaited:
   * a call runs only once its `decided` report returned (a store records it before it acts).
   */
  onToolCallEvent?: (event: ToolLoopCallEvent) => void | Promise<void>;
  /**
   * Told after each model turn, before its calls run: the turns that ask for calls, then the final
   * answer's turn (the runner keeps them for recordings, so a replay asks for the same calls).
   * `replayed` is true for a turn taken from {@linkcode ToolLoopOptions.resume}, not the model.
   */
  onTurn?: (turn: ToolTurnResponse, replayed: boolean) => void | Promise<void>;
  /**
   * Where an interrupted call left off (a run killed in the middle of a step): the conversation is
   * rebuilt from these turns instead of asking the model again, a call with a recorded result is
   * not run again (its result goes back to the model as it was), and a call that was started but
   * has no result runs again under its recorded decision (the caller decides whether that is safe).
   */
  resume?: ToolLoopResume;
}

/** A call's report to {@linkcode ToolLoopOptions.onToolCallEvent}: the event, its step, and more. */
export type ToolLoopCallEvent = ToolCallEvent & {
  /** The step. */
  stepId: string;
  /**
   * On `decided` with `allow`: whether the tool may run twice without harm (idempotent or
   * read-only). A recorder must make the `decided` report durable before a call that is not.
   */
  idempotent?: boolean;
};

/**
 * The recorded part of an interrupted tool-loop call (see {@linkcode ToolLoopOptions.resume}).
 * Calls are keyed by `<turn>:<callId>` (ids are unique within a turn only; turns count from 1).
 */
export interface ToolLoopResume {
  /** The model's turns in order; the last may be the final answer (no calls). */
  turns: ToolTurnResponse[];
  /**
   * The calls that finished: what the model was sent, and the call as it was reported when it
   * ended (for the step's record of its calls; the replay does not report it again).
   */
  finished: ReadonlyMap<string, { result: string; isError: boolean; call?: ToolCallEvent }>;
  /** The calls that were allowed and started, with who allowed them. */
  started: ReadonlyMap<string, string>;
}

/** The key of a call in {@linkcode ToolLoopResume}: its turn (from 1) and its id. */
export function resumeKey(turn: number, callId: string): string {
  return `${turn}:${callId}`;
}

/**
 * Runs `request` with tools: turns until the model answers without a call. The answer's usage and
 * cost are the sums over the turns; `structuredOutput` is extracted from the final text when the
 * request has a schema and the backend gave none natively.
 *
 * @example
 * ```ts
 * import { completeWithTools } from "./tool_loop.ts";
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * import { createToolRegistry } from "../tools/builtin.ts";
 * import { parsePermissionRules } from "../definition/permission_rule.ts";
 * const backend = new ScriptedBackend([
 *   { toolCalls: [{ name: "Glob", arguments: { pattern: "*.json" } }] },
 *   "deno.json is there.",
 * ]);
 * const answer = await completeWithTools(
 *   { kind: "step", agent: "demo", stepId: "look", iteration: 1, prompt: "Look.", cwd: "." },
 *   {
 *     backend,
 *     tools: createToolRegistry({ agentTools: true }),
 *     offered: ["Glob"],
 *     policy: { mode: "default", allow: parsePermissionRules(["Glob"]).rules, deny: [] },
 *   },
 * );
 * console.log(answer.text); // "deno.json is there."
 * ```
 */
export async function completeWithTools(
  request: LlmRequest,
  loop: ToolLoopOptions,
  options: LlmCallOptions = {},
): Promise<LlmResponse> {
  // Its answerer never says "wait" (ToolLoopOptions' type), so the loop never ends with a wait.
  return await runToolLoop(request, loop, options) as LlmResponse;
}

/** {@linkcode ToolLoopOptions} whose answerer may say `"wait"` (see {@linkcode runToolLoop}). */
export type WaitingToolLoopOptions = Omit<ToolLoopOptions, "onPermissionRequest"> & {
  /** {@linkcode ToolLoopOptions.onPermissionRequest}, or `"wait"`: the call waits. */
  onPermissionRequest?: PermissionDeciders["onPermissionRequest"];
};

/**
 * {@linkcode completeWithTools} for a caller whose permission asks may wait: an answerer that says
 * `"wait"` ends the loop at that call, before it runs, with a {@linkcode ToolLoopWait} — returned,
 * never thrown, so the caller's run waits as it does for any other wait.
 */
export async function runToolLoop(
  request: LlmRequest,
  loop: WaitingToolLoopOptions,
  options: LlmCallOptions = {},
): Promise<LlmResponse | ToolLoopWait> {
  const maxTurns = loop.maxToolTurns ?? DEFAULT_MAX_TOOL_TURNS;
  const maxBad = loop.maxBadCalls ?? DEFAULT_MAX_BAD_TOOL_CALLS;
  const offered = new Set(loop.offered);
  const specs: ToolSpec[] = loop.offered.map((name) => {
    const d = loop.tools.descriptor(name);
    if (!d) {
      throw new StepflowError("TOOL_UNKNOWN", `The tool "${name}" is offered but not registered.`);
    }
    return { name: d.name, description: d.description, inputSchema: d.inputSchema };
  });
  const messages: ToolTurnMessage[] = [{ role: "user", content: request.prompt }];
  const response: LlmResponse = { text: "" };
  let sessionId = request.sessionId;
  const usage: LlmUsage = { inputTokens: 0, outputTokens: 0 };
  let usageKnown = true;
  let cost = 0;
  let badInARow = 0;
  const budget = new ToolResultBudget(loop.maxToolResultChars ?? DEFAULT_MAX_TOOL_RESULT_CHARS);
  const replay = loop.resume;
  for (let turn = 1;; turn++) {
    options.signal?.throwIfAborted();
    // A resumed call takes its recorded turns first; the model answers the turns after them.
    const recorded = replay?.turns[turn - 1];
    const asked = recorded ?? await loop.backend.toolTurn({
      kind: request.kind,
      agent: request.agent,
      cwd: request.cwd,
      stepId: request.stepId,
      iteration: request.iteration,
      ...(request.model ? { model: request.model } : {}),
      ...(request.modelChain ? { modelChain: request.modelChain } : {}),
      ...(request.systemPrompt ? { systemPrompt: request.systemPrompt } : {}),
      ...(sessionId ? { sessionId } : {}),
      // A copy: the conversation grows after this turn, and a backend may keep what it was sent.
      messages: [...messages],
      tools: specs,
      ...(request.outputSchema ? { outputSchema: request.outputSchema } : {}),
    }, options);
    // Bounded before anything keeps it: the log, a recording, the conversation, events.
    const { turn: answer, oversized } = boundToolCalls(asked, turn);
    await loop.onTurn?.(answer, recorded !== undefined);
    if (answer.sessionId) sessionId = answer.sessionId;
    if (answer.usage) addTokenCounts(usage, answer.usage);
    else usageKnown = false;
    cost += answer.costUsd ?? 0;
    // The model chain's fall-throughs of every turn, and who answered the last one.
    if (answer.fallbacks?.length) (response.fallbacks ??= []).push(...answer.fallbacks);
    if (answer.model !== undefined) response.model = answer.model;
    if (answer.backend !== undefined) response.backend = answer.backend;
    if (answer.toolCalls.length === 0) {
      response.text = answer.text;
      if (answer.structuredOutput !== undefined) {
        response.structuredOutput = answer.structuredOutput;
      }
      break;
    }
    if (turn > maxTurns) {
      throw new StepflowError(
        "TOOL_TURNS_EXCEEDED",
        `Step "${request.stepId}": the model was still calling tools after ${maxTurns} tool turns (last: ${
          answer.toolCalls.map((c) => c.name).join(", ")
        }). Break the step into smaller steps, or raise maxToolTurns.`,
        { details: { stepId: request.stepId, maxToolTurns: maxTurns } },
      );
    }
    messages.push({ role: "assistant", text: answer.text, toolCalls: answer.toolCalls });
    const results: ToolResultMessage[] = [];
    for (const [index, call] of answer.toolCalls.entries()) {
      const key = resumeKey(turn, call.id);
      const done = replay?.finished.get(key);
      if (done) {
        // Finished before the interruption: its result goes back to the model as it was.
        results.push({ id: call.id, name: call.name, content: done.result, isError: done.isError });
        badInARow = done.isError ? badInARow + 1 : 0;
        continue;
      }
      const size = oversized.get(index);
      const record = index >= MAX_CALLS_PER_TURN || size !== undefined
        ? await reportInvalid(
          loop,
          invalid(
            call,
            request,
            size === undefined
              ? `Too many tool calls in one turn (at most ${MAX_CALLS_PER_TURN}); ask for the rest in the next turn.`
              : `Arguments of ${call.name}: more than ${MAX_ARGUMENT_CHARS} characters (${size}); send less.`,
          ),
        )
        : await runCall(call, request, loop, offered, options.signal, replay?.started.get(key));
      // A call whose ask waits ends the loop here: it has not run, and neither has any after it.
      if ("waiting" in record) return record;
      await loop.onToolCallEvent?.({ ...callEvent("finished", record), ...finishedFields(record) });
      loop.onToolCall?.(record);
      results.push({
        id: call.id,
        name: call.name,
        content: record.result,
        isError: record.isError,
      });
      badInARow = record.isError ? badInARow + 1 : 0;
      if (badInARow >= maxBad) {
        throw new StepflowError(
          "TOOL_CALLS_FAILING",
          `Step "${request.stepId}": ${badInARow} tool calls in a row were refused or failed (last: ${record.tool}: ${
            firstLine(record.result)
          }). Check the step's allowedTools and permissionMode, or its prompt.`,
          { details: { stepId: request.stepId, maxBadCalls: maxBad, lastTool: record.tool } },
        );
      }
    }
    messages.push({ role: "tool", results });
    budget.add(messages);
  }
  if (sessionId) response.sessionId = sessionId;
  if (usageKnown) response.usage = usage;
  if (cost > 0) response.costUsd = cost;
  if (request.outputSchema && response.structuredOutput === undefined) {
    const extracted = extractJson(response.text);
    if (extracted.ok) response.structuredOutput = extracted.value;
  }
  return response;
}

async function runCall(
  call: ToolCallRequest,
  request: LlmRequest,
  loop: WaitingToolLoopOptions,
  offered: ReadonlySet<string>,
  signal: AbortSignal | undefined,
  startedBy: string | undefined,
): Promise<ToolCallRecord | ToolLoopWait> {
  const parsed = parseArguments(call.arguments);
  await loop.onToolCallEvent?.({
    phase: "requested",
    stepId: request.stepId,
    callId: call.id,
    tool: String(call.name).slice(0, 200),
    ...(parsed.ok ? { args: parsed.args } : {}),
  });
  if (!offered.has(call.name)) {
    const list = [...offered].join(", ") || "(none)";
    return await reportInvalid(
      loop,
      invalid(
        call,
        request,
        `The tool "${
          String(call.name).slice(0, 100)
        }" is not available in this step. Available tools: ${list}.`,
      ),
    );
  }
  if (!parsed.ok) {
    return await reportInvalid(
      loop,
      invalid(call, request, `Arguments of ${call.name}: ${parsed.problem}`),
    );
  }
  const checked = loop.tools.validateArgs(call.name, parsed.args);
  if (!checked.ok) {
    return await reportInvalid(
      loop,
      invalid(
        call,
        request,
        `Invalid arguments for ${call.name}: ${
          formatIssues(checked.issues)
        }. Fix them and call again.`,
        parsed.args,
      ),
    );
  }
  const args = checked.args as Record<string, unknown>;
  // Its paths, resolved once: what the rules judge is what the tool acts on.
  const paths = await reachCallPaths(call.name, args, request.cwd);
  // A call started before an interruption keeps the decision it ran under (nobody is asked twice).
  const decision = startedBy !== undefined
    ? decideResumed(loop.policy, call, args, request.cwd, startedBy, paths?.judged)
    : await decide(call, args, request, loop, signal, paths?.judged);
  if (decision.behavior === "wait") return { waiting: decision.ask };
  const decided = {
    decidedBy: decision.by,
    decidedAt: decision.at,
    ...(decision.suggestion ? { suggestion: decision.suggestion } : {}),
  };
  if (decision.behavior !== "allow") {
    const refused: ToolCallRecord = {
      stepId: request.stepId,
      id: call.id,
      tool: call.name,
      args,
      decision: "deny",
      ...decided,
      result: refusalText(call.name, decision),
      isError: true,
      durationMs: 0,
    };
    await loop.onToolCallEvent?.(callEvent("decided", refused));
    return refused;
  }
  const descriptor = loop.tools.descriptor(call.name);
  await loop.onToolCallEvent?.({
    phase: "decided",
    stepId: request.stepId,
    callId: call.id,
    tool: call.name,
    args,
    decision: "allow",
    decidedBy: decision.by,
    idempotent: descriptor?.idempotent === true || descriptor?.readOnly === true,
    decidedAt: decision.at,
  });
  const started = performance.now();
  let result: string;
  let isError = false;
  try {
    const value = await loop.tools.invoke(call.name, args, {
      workspaceRoot: request.cwd,
      stepId: request.stepId,
      ...(signal ? { signal } : {}),
      ...(paths ? { paths: pathGuard(loop.policy, request.cwd, call.name, paths) } : {}),
    });
    result = typeof value === "string" ? value : JSON.stringify(value ?? null);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    isError = true;
    const code = error instanceof StepflowError ? ` (${error.code})` : "";
    result = `Error${code}: ${errorMessage(error)}`;
  }
  return {
    stepId: request.stepId,
    id: call.id,
    tool: call.name,
    args,
    decision: "allow",
    ...decided,
    result: truncateOutput(
      result,
      AGENT_TOOL_LIMITS.readChars,
      "ask the tool for less (offset/limit, head_limit, a narrower path)",
    ),
    isError,
    durationMs: Math.round(performance.now() - started),
  };
}

/** The `decided` report of a call found invalid before any permission was asked. */
async function reportInvalid(
  loop: WaitingToolLoopOptions,
  record: ToolCallRecord,
): Promise<ToolCallRecord> {
  await loop.onToolCallEvent?.(callEvent("decided", record));
  return record;
}

/** A call's report at `phase`, with its decision (the result fields are added for `finished`). */
function callEvent(
  phase: ToolCallEvent["phase"],
  record: ToolCallRecord,
): ToolLoopCallEvent {
  const event: ToolLoopCallEvent = {
    phase,
    stepId: record.stepId,
    callId: record.id,
    tool: record.tool,
    decision: record.decision,
  };
  if (record.args) event.args = record.args;
  if (record.decidedBy) event.decidedBy = record.decidedBy;
  if (record.decidedAt) event.decidedAt = record.decidedAt;
  if (record.suggestion) event.suggestion = record.suggestion;
  return event;
}

function finishedFields(record: ToolCallRecord): Partial<ToolCallEvent> {
  return { result: record.result, isError: record.isError, durationMs: record.durationMs };
}

function invalid(
  call: ToolCallRequest,
  request: LlmRequest,
  message: string,
  args?: Record<string, unknown>,
): ToolCallRecord {
  const record: ToolCallRecord = {
    stepId: request.stepId,
    id: call.id,
    tool: String(call.name).slice(0, 200),
    decision: "invalid",
    result: message,
    isError: true,
    durationMs: 0,
  };
  if (args) record.args = args;
  return record;
}

/** The arguments as an object: parsed when given as text, bounded in size and depth. */
function parseArguments(
  raw: unknown,
): { ok: true; args: Record<string, unknown> } | { ok: false; problem: string } {
  let value = raw;
  if (typeof raw === "string") {
    if (raw.length > MAX_ARGUMENT_CHARS) {
      return { ok: false, problem: `more than ${MAX_ARGUMENT_CHARS} characters; send less.` };
    }
    if (raw.trim() === "") return { ok: true, args: {} };
    try {
      value = JSON.parse(raw);
    } catch (error) {
      return {
        ok: false,
        problem: `not valid JSON (${errorMessage(error)}); send a JSON object.`,
      };
    }
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, problem: "expected a JSON object of named arguments." };
  }
  if (exceedsDepth(value, MAX_OUTPUT_DEPTH)) {
    return { ok: false, problem: `nested deeper than ${MAX_OUTPUT_DEPTH} levels.` };
  }
  return { ok: true, args: value as Record<string, unknown> };
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0];
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
