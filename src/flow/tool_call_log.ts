/**
 * How one tool call of a step is recorded: a `tool_call` line in the run log with the decision, who
 * made it, the duration and a bounded excerpt of the arguments and the result. (Progress views draw
 * the call from its `onToolCall` events: `events/tool_call_line.ts`.)
 *
 * @module
 */
import type { ToolCallEvent } from "../events/types.ts";
import { modeToAllow, toolCallTarget } from "../events/tool_call_line.ts";

/** Characters of the arguments and of the result kept in a run-log line. */
export const TOOL_LOG_EXCERPT_CHARS = 2_000;

/**
 * The run-log line of a finished call (`type: "tool_call"`), its texts bounded.
 *
 * @example
 * ```ts
 * import { toolCallLogFields } from "./tool_call_log.ts";
 * toolCallLogFields("fix", {
 *   phase: "finished", callId: "c1", tool: "Edit", args: { file_path: "src/app.ts" },
 *   decision: "allow", decidedBy: "acceptEdits mode", result: "Edited.", isError: false,
 *   durationMs: 4,
 * }); // { type: "tool_call", stepId: "fix", callId: "c1", tool: "Edit", … }
 * ```
 */
export function toolCallLogFields(
  stepId: string,
  call: ToolCallEvent,
): { type: string; [k: string]: unknown } {
  const fields: { type: string; [k: string]: unknown } = {
    type: "tool_call",
    stepId,
    callId: call.callId,
    tool: call.tool,
    decision: call.decision,
    isError: call.isError ?? false,
    durationMs: call.durationMs ?? 0,
    result: clip(call.result ?? ""),
  };
  if (call.decidedBy) fields.decidedBy = call.decidedBy;
  if (call.decidedAt) fields.decidedAt = call.decidedAt;
  if (call.decision === "deny" && call.suggestion) {
    // How to allow it: the rule, and for an edit the mode.
    const mode = modeToAllow(call.tool);
    fields.allowWith = { allowedTools: call.suggestion, ...(mode ? { permissionMode: mode } : {}) };
  }
  if (call.args) fields.args = clip(JSON.stringify(call.args));
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
  const target = toolCallTarget(call);
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

/**
 * The whole result of a call, as `content`, when the `tool_call` line's excerpt cut it: what a
 * resumed step sends the model again. Results are bounded before (`AGENT_TOOL_LIMITS.readChars`).
 */
export function replayContent(result: string | undefined): { content?: string } {
  return result !== undefined && result.length > TOOL_LOG_EXCERPT_CHARS ? { content: result } : {};
}

function clip(text: string): string {
  return text.length > TOOL_LOG_EXCERPT_CHARS
    ? `${text.slice(0, TOOL_LOG_EXCERPT_CHARS)}… (${text.length} characters)`
    : text;
}
