/**
 * How one tool call of a step is shown and recorded: a progress line (`↳ Edit src/app.ts ✓ 4 ms`,
 * an `onStepLog` event under the step) and a `tool_call` line in the run log with the decision, who
 * made it, the duration and a bounded excerpt of the arguments and the result.
 *
 * @module
 */
import type { ToolCallRecord } from "../engine/tool_loop.ts";
import type { ToolCallEvent } from "../events/types.ts";

/** Characters of the arguments and of the result kept in a run-log line. */
export const TOOL_LOG_EXCERPT_CHARS = 2_000;

/**
 * The progress line of a call: the tool, what it acted on, and how it ended.
 *
 * @example
 * ```ts
 * import { toolCallLine } from "./tool_call_log.ts";
 * toolCallLine({
 *   stepId: "fix", id: "c1", tool: "Edit", args: { file_path: "src/app.ts" },
 *   decision: "allow", result: "Edited src/app.ts: 1 replacement.", isError: false, durationMs: 4,
 * }); // "↳ Edit src/app.ts ✓ 4 ms"
 * ```
 */
export function toolCallLine(record: ToolCallRecord): string {
  const target = targetOf(record);
  const head = `↳ ${record.tool}${target ? ` ${target}` : ""}`;
  if (record.decision === "deny") return `${head} ✗ refused (${record.decidedBy ?? "permissions"})`;
  if (record.decision === "invalid") return `${head} ✗ invalid call: ${firstLine(record.result)}`;
  if (record.isError) return `${head} ✗ ${firstLine(record.result)} (${record.durationMs} ms)`;
  return `${head} ✓ ${record.durationMs} ms`;
}

/** The run-log line of a call (`type: "tool_call"`), its texts bounded. */
export function toolCallLogFields(record: ToolCallRecord): { type: string; [k: string]: unknown } {
  const fields: { type: string; [k: string]: unknown } = {
    type: "tool_call",
    stepId: record.stepId,
    callId: record.id,
    tool: record.tool,
    decision: record.decision,
    isError: record.isError,
    durationMs: record.durationMs,
    result: clip(record.result),
  };
  if (record.decidedBy) fields.decidedBy = record.decidedBy;
  if (record.args) fields.args = clip(JSON.stringify(record.args));
  return fields;
}

/**
 * The `tool_call_start` line of a call that was allowed, written before it runs: where it is in
 * the step (`call`, `turn`), the tool, an excerpt of its arguments, who allowed it and whether its
 * tool is idempotent (a resume runs an unfinished call again only then).
 */
export function toolCallStartFields(
  stepId: string,
  where: { call: number; turn: number },
  call: ToolCallEvent,
  idempotent: boolean | undefined,
): { type: string; [k: string]: unknown } {
  const target = targetOf(call);
  return {
    type: "tool_call_start",
    stepId,
    ...where,
    callId: call.callId,
    tool: call.tool,
    ...(call.args ? { args: clip(JSON.stringify(call.args)) } : {}),
    ...(target ? { target } : {}),
    ...(call.decidedBy ? { decidedBy: call.decidedBy } : {}),
    idempotent: idempotent === true,
  };
}

/** The record of a call as its `finished` report gives it. */
export function recordOfEvent(stepId: string, call: ToolCallEvent): ToolCallRecord {
  return {
    stepId,
    id: call.callId,
    tool: call.tool,
    ...(call.args ? { args: call.args } : {}),
    decision: call.decision ?? "invalid",
    ...(call.decidedBy ? { decidedBy: call.decidedBy } : {}),
    result: call.result ?? "",
    isError: call.isError ?? false,
    durationMs: call.durationMs ?? 0,
  };
}

/**
 * The whole result of a call, as `content`, when the `tool_call` line's excerpt cut it: what a
 * resumed step sends the model again. Results are bounded before (`AGENT_TOOL_LIMITS.readChars`).
 */
export function replayContent(result: string | undefined): { content?: string } {
  return result !== undefined && result.length > TOOL_LOG_EXCERPT_CHARS ? { content: result } : {};
}

/** The argument that says what a call acted on: a path, a pattern, a command. */
function targetOf(record: { args?: Record<string, unknown> }): string {
  const args = record.args ?? {};
  for (const key of ["file_path", "command", "pattern", "path"]) {
    const value = args[key];
    if (typeof value === "string" && value) return shorten(value, 60);
  }
  return "";
}

function firstLine(text: string): string {
  return shorten(text.split("\n", 1)[0], 100);
}

function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function clip(text: string): string {
  return text.length > TOOL_LOG_EXCERPT_CHARS
    ? `${text.slice(0, TOOL_LOG_EXCERPT_CHARS)}… (${text.length} characters)`
    : text;
}
