/**
 * The tool calls of a timeline row, folded from the run log's `tool_call` lines: one call per
 * call id of the iteration, in the order they were asked. A call is logged when it finished (tool,
 * arguments and result excerpts, decision and who made it, duration); a log may also record it
 * earlier — allowed and starting (a `tool_call_start` line), or any moment before it finished (a
 * `tool_call_<moment>` line, or a `tool_call` line whose `phase` is not `finished`) — and the
 * finished line then completes the same call. A rule someone allowed for the rest of the run when
 * a call asked (a `permission_grant` line) is kept with the calls. Lines are read loosely: fields of the wrong
 * type are ignored, unknown fields and phases tolerated, nothing a model wrote is trusted.
 *
 * @module
 */
import type { RunLogEntry } from "../store/types.ts";

/** One tool call as the dashboard shows it. */
export interface ToolCallView {
  /** The call's id (unique within a model turn; the tool loop's or the model's). */
  callId: string;
  /** The tool, as the model named it. */
  tool: string;
  /** The arguments as the log records them (an excerpt of their JSON). */
  args?: string;
  /** The result or error text the model got (an excerpt), once finished. */
  result?: string;
  /** `allow`, `deny`, `invalid` — or whatever the log says — once decided. */
  decision?: string;
  /** Who decided: a rule, the mode, whoever answered an ask. */
  decidedBy?: string;
  /** When it was decided (ISO), when the log says. */
  decidedAt?: string;
  /** True when the model got an error back. */
  isError?: boolean;
  /** Milliseconds the tool ran. */
  durationMs?: number;
  /** When the first line of the call was logged (ISO). */
  ts: string;
  /** When its finished line was logged (ISO), once finished. */
  endTs?: string;
  /** True once its finished line was read. */
  finished: boolean;
  /**
   * True when the run stopped (ended, resumed, redriven) or the iteration ended while the call was
   * not finished: it will not finish in this attempt.
   */
  stopped?: boolean;
}

/** The calls of one iteration, and the unfinished ones by call id (to complete them). */
export interface RowCalls {
  /** Every call, in the order they were first logged. */
  list: ToolCallView[];
  /** Unfinished calls: call id → index in {@linkcode RowCalls.list}. */
  open: Map<string, number>;
  /** The model's tool turns, when the log records them (`tool_turn` lines). */
  turns: number;
  /** Rules allowed for the rest of the run by whoever answered an ask (`permission_grant`). */
  grants: PermissionGrantView[];
}

/** A rule someone allowed for the rest of the run when a call asked ("always"). */
export interface PermissionGrantView {
  /** The rule (`Bash(npm test)`). */
  rule: string;
  /** Who allowed it. */
  grantedBy?: string;
  /** When (ISO). */
  grantedAt?: string;
  /** The call that asked. */
  callId?: string;
}

/** Adds a `permission_grant` line (a rule without a string `rule` is left out). */
export function addGrant(calls: RowCalls, entry: RunLogEntry): void {
  const rule = text(entry.rule);
  if (rule === undefined) return;
  const grant: PermissionGrantView = { rule };
  copyTexts(grant, entry, ["grantedBy", "grantedAt", "callId"]);
  calls.grants.push(grant);
}

/** The log line types that record a tool call (`tool_call`, and `tool_call_<moment>`). */
export function isToolCallLine(entry: RunLogEntry): boolean {
  return entry.type === "tool_call" || entry.type.startsWith("tool_call_");
}

/**
 * Adds a `tool_call` line to `calls`: a new call, or the completion of the unfinished call with
 * the same id.
 *
 * @example
 * ```ts
 * import { addToolCall, type RowCalls } from "./tool_calls.ts";
 * const calls: RowCalls = { list: [], open: new Map(), turns: 0, grants: [] };
 * const ts = "2026-01-01T00:00:00.000Z";
 * addToolCall(calls, { ts, runId: "r", type: "tool_call_start", callId: "c1", tool: "Read" });
 * addToolCall(calls, {
 *   ts, runId: "r", type: "tool_call", callId: "c1", tool: "Read", decision: "allow",
 *   result: "1\thello", isError: false, durationMs: 2,
 * });
 * console.log(calls.list.length, calls.list[0].finished); // 1 true
 * ```
 */
export function addToolCall(calls: RowCalls, entry: RunLogEntry): void {
  const callId = text(entry.callId) ?? text(entry.id) ?? "";
  // `tool_call` is the finished call (unless its phase says otherwise); `tool_call_start` and
  // the like are moments before.
  const phase = text(entry.phase);
  const finished = entry.type === "tool_call" && (phase === undefined || phase === "finished");
  const known = calls.open.get(callId);
  let call: ToolCallView;
  if (known !== undefined) call = calls.list[known];
  else {
    call = { callId, tool: "", ts: text(entry.ts) ?? "", finished: false };
    calls.list.push(call);
    if (!finished) calls.open.set(callId, calls.list.length - 1);
  }
  merge(call, entry);
  // A start line is written once the call was allowed (it may not say so itself).
  if (entry.type === "tool_call_start") call.decision ??= "allow";
  if (finished) {
    call.finished = true;
    const ts = text(entry.ts);
    if (ts !== undefined) call.endTs = ts;
    delete call.stopped;
    calls.open.delete(callId);
  }
}

/** Marks the unfinished calls as stopped: they will not finish in this attempt of the run. */
export function stopOpenCalls(calls: RowCalls | undefined): boolean {
  if (!calls || calls.open.size === 0) return false;
  for (const index of calls.open.values()) calls.list[index].stopped = true;
  return true;
}

/** Copies the fields a line gives (of the right type) onto the call. */
function merge(call: ToolCallView, entry: RunLogEntry): void {
  copyTexts(call, entry, ["tool", "decision", "decidedBy", "decidedAt"]);
  const args = excerpt(entry.args);
  if (args !== undefined) call.args = args;
  const result = excerpt(entry.result);
  if (result !== undefined) call.result = result;
  if (typeof entry.isError === "boolean") call.isError = entry.isError;
  if (typeof entry.durationMs === "number" && Number.isFinite(entry.durationMs)) {
    call.durationMs = entry.durationMs;
  }
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** Copies each of `keys` that the line gives as text onto `target` (other types are left out). */
function copyTexts<T extends object>(
  target: T,
  entry: RunLogEntry,
  keys: readonly (keyof T & string)[],
): void {
  for (const key of keys) {
    const value = text(entry[key]);
    if (value !== undefined) (target as Record<string, unknown>)[key] = value;
  }
}

/**
 * A logged text (the run log keeps the arguments as JSON text); another value (a log written by
 * something else) is shown as its JSON. Not bounded here: the page cuts what it shows.
 */
function excerpt(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
