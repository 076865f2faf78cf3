/**
 * How a finished tool call reads in a progress view, from its `onToolCall` event: one line
 * (`↳ Edit src/app.ts ✓ 4 ms`), and with `--verbose` its arguments and the start of its result.
 *
 * @module
 */
import type { ToolCallEvent } from "./types.ts";

/** Characters of the arguments shown by {@linkcode toolCallDetails}. */
export const TOOL_DETAIL_ARGS_CHARS = 200;
/** Lines of the result shown by {@linkcode toolCallDetails}, each cut to 160 characters. */
export const TOOL_DETAIL_RESULT_LINES = 3;

/**
 * The line of a finished call: the tool, what it acted on, and how it ended.
 *
 * @example
 * ```ts
 * import { toolCallLine } from "./tool_call_line.ts";
 * toolCallLine({
 *   phase: "finished", callId: "c1", tool: "Edit", args: { file_path: "src/app.ts" },
 *   decision: "allow", result: "Edited src/app.ts: 1 replacement.", isError: false, durationMs: 4,
 * }); // "↳ Edit src/app.ts ✓ 4 ms"
 * ```
 */
export function toolCallLine(call: ToolCallEvent): string {
  const target = toolCallTarget(call);
  const head = `↳ ${oneLine(call.tool, 60)}${target ? ` ${target}` : ""}`;
  const result = call.result ?? "";
  if (call.decision === "deny") {
    const how = call.decidedBy === "nobody to ask" ? howToAllow(call) : "";
    return `${head} ✗ refused (${call.decidedBy ?? "permissions"})${how ? `: ${how}` : ""}`;
  }
  if (call.decision === "invalid") return `${head} ✗ invalid call: ${firstLine(result)}`;
  if (call.isError) return `${head} ✗ ${firstLine(result)} (${call.durationMs ?? 0} ms)`;
  return `${head} ✓ ${call.durationMs ?? 0} ms`;
}

/** The agent tools `acceptEdits` runs without asking inside the working folder. */
const EDIT_TOOLS: ReadonlySet<string> = new Set(["Write", "Edit"]);

/**
 * How a refused call could be allowed, in a few words: the `allowedTools` rule, and for an edit the
 * permission mode (`--permission-mode` of `run-agent`). Empty when no rule would.
 *
 * @example
 * ```ts
 * import { howToAllow } from "./tool_call_line.ts";
 * howToAllow({ tool: "Edit", suggestion: "Edit(src/app.ts)" });
 * // 'allow with allowedTools "Edit(src/app.ts)" or --permission-mode acceptEdits'
 * ```
 */
export function howToAllow(call: Pick<ToolCallEvent, "tool" | "suggestion">): string {
  if (!call.suggestion) return "";
  const mode = EDIT_TOOLS.has(call.tool) ? " or --permission-mode acceptEdits" : "";
  return `allow with allowedTools "${oneLine(call.suggestion, 200)}"${mode}`;
}

/**
 * The permission mode that would allow a refused call, for the run log's `allowWith`: only for
 * edits (no mode but `bypassPermissions` runs other tools, and that is not advice to give).
 */
export function modeToAllow(tool: string): "acceptEdits" | undefined {
  return EDIT_TOOLS.has(tool) ? "acceptEdits" : undefined;
}

/**
 * What `--verbose` adds under a call's line: its arguments (as one line of JSON) and the first
 * lines of its result, bounded.
 *
 * @example
 * ```ts
 * import { toolCallDetails } from "./tool_call_line.ts";
 * toolCallDetails({
 *   phase: "finished", callId: "c1", tool: "Read", args: { file_path: "a.ts" },
 *   decision: "allow", result: "1\tone\n2\ttwo", isError: false, durationMs: 1,
 * }); // ['args {"file_path":"a.ts"}', "result 1 one", "       2 two"]
 * ```
 */
export function toolCallDetails(call: ToolCallEvent): string[] {
  const lines: string[] = [];
  if (call.args) lines.push(`args ${oneLine(json(call.args), TOOL_DETAIL_ARGS_CHARS)}`);
  const result = (call.result ?? "").split("\n");
  while (result.length > 0 && result[result.length - 1].trim() === "") result.pop();
  const shown = result.slice(0, TOOL_DETAIL_RESULT_LINES).map((l) => oneLine(l, 160));
  if (shown.length === 0) return lines;
  if (result.length > shown.length) shown.push(`… (${result.length - shown.length} more lines)`);
  shown.forEach((l, i) => lines.push(`${i === 0 ? "result " : "       "}${l}`));
  return lines;
}

/**
 * What a call acts on, as its line shows it: a path, a pattern, a command (empty when none), on one
 * line of at most `max` characters.
 *
 * @example
 * ```ts
 * import { toolCallTarget } from "./tool_call_line.ts";
 * toolCallTarget({ args: { command: "npm test" } }); // "npm test"
 * ```
 */
export function toolCallTarget(call: Pick<ToolCallEvent, "args">, max = 60): string {
  const args = call.args ?? {};
  for (const key of ["file_path", "command", "pattern", "path", "url"]) {
    const value = args[key];
    if (typeof value === "string" && value) return oneLine(value, max);
  }
  return "";
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function firstLine(text: string): string {
  return oneLine(text.split("\n", 1)[0], 100);
}

/** One line of at most `max` characters; control characters (escape sequences) made harmless. */
export function oneLine(text: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const flat = text.replace(/\s+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
