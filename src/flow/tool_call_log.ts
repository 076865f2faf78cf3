/**
 * How one tool call of a step is shown and recorded: a progress line (`↳ Edit src/app.ts ✓ 4 ms`,
 * an `onStepLog` event under the step) and a `tool_call` line in the run log with the decision, who
 * made it, the duration and a bounded excerpt of the arguments and the result.
 *
 * @module
 */
import type { ToolCallRecord } from "../engine/tool_loop.ts";

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
  const target = toolCallTarget(record);
  const head = `↳ ${record.tool}${target ? ` ${target}` : ""}`;
  if (record.decision === "deny") {
    const how = record.decidedBy === "nobody to ask" ? howToAllow(record) : "";
    return `${head} ✗ refused (${record.decidedBy ?? "permissions"})${how ? `: ${how}` : ""}`;
  }
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
  if (record.decidedAt) fields.decidedAt = record.decidedAt;
  if (record.decision === "deny" && record.suggestion) {
    // How to allow it: the rule, and the mode that would (edits only: no mode but
    // bypassPermissions runs other tools, and that is not advice to give in a log).
    fields.allowWith = {
      allowedTools: record.suggestion,
      ...(EDIT_TOOLS.has(record.tool) ? { permissionMode: "acceptEdits" } : {}),
    };
  }
  if (record.args) fields.args = clip(JSON.stringify(record.args));
  return fields;
}

/** The agent tools `acceptEdits` runs without asking inside the working folder. */
const EDIT_TOOLS = new Set(["Write", "Edit"]);

/**
 * How a refused call could be allowed, in a few words: the `allowedTools` rule, and for an edit the
 * permission mode (`--permission-mode` of `run-agent`).
 */
export function howToAllow(record: Pick<ToolCallRecord, "tool" | "suggestion">): string {
  if (!record.suggestion) return "";
  const mode = EDIT_TOOLS.has(record.tool) ? " or --permission-mode acceptEdits" : "";
  return `allow with allowedTools "${record.suggestion}"${mode}`;
}

/** The argument that says what a call acted on: a path, a pattern, a command (shortened). */
export function toolCallTarget(record: Pick<ToolCallRecord, "args">): string {
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
  // A model wrote it, and it reaches terminals: no escape sequences, one line.
  // deno-lint-ignore no-control-regex
  const flat = text.replace(/\s+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function clip(text: string): string {
  return text.length > TOOL_LOG_EXCERPT_CHARS
    ? `${text.slice(0, TOOL_LOG_EXCERPT_CHARS)}… (${text.length} characters)`
    : text;
}
