/**
 * `run-agent` at a terminal: asks the person whether a tool call that needs permission may run —
 * the step, the tool, its arguments (bounded, control characters made visible: a model wrote
 * them), why it asks and the rule that would allow it — and takes yes, no, or always for this run
 * (the runner remembers "always" as a grant of that rule, docs/tools.md "Who answers an ask").
 * The questions go to stderr, the answers come from the one line reader of the terminal, the same
 * question loop as an input step's fields (`askUntilValid`).
 *
 * @module
 */
import type { PermissionReply, RunPermissionAsk } from "../flow/types.ts";
import { askUntilValid } from "./answer_prompt.ts";
import type { LineReader } from "./kit/line_reader.ts";

/** Arguments shown, at most. */
const MAX_SHOWN_ARGS = 12;
/** Lines of one argument's value shown, at most. */
const MAX_VALUE_LINES = 6;
/** Characters of one shown line, at most. */
const MAX_LINE_CHARS = 200;

/** Where the question goes and the answer comes from. */
export interface PermissionPromptIo {
  /** The terminal's lines (shared with the input-step prompt). */
  lines: LineReader;
  /** Writes the question (stderr). */
  write(text: string): void;
  /** Who answers, as recorded (`terminal (erin)`). */
  who: string;
  /** Clears the live progress line while asking; returns the function that brings it back. */
  hold?(): () => void;
}

/**
 * Asks at the terminal whether `ask`'s call may run. The answer's `by` is `io.who`; when the
 * terminal's input ends the call is refused (and so is every later ask: nobody is left to answer).
 *
 * @example
 * ```ts
 * import { askPermission } from "./permission_prompt.ts";
 * import { lineReader } from "./kit/line_reader.ts";
 * const lines = lineReader(ReadableStream.from([new TextEncoder().encode("a\n")]));
 * const reply = await askPermission({
 *   stepId: "fix", callId: "c1", tool: "Bash", args: { command: "npm test" },
 *   reason: "Bash needs permission in default mode.", suggestion: "Bash(npm test)",
 *   runId: "r1", agent: "demo", iteration: 2, signal: new AbortController().signal,
 * }, { lines, write: () => {}, who: "terminal" });
 * console.log(reply); // { allow: true, always: true, by: "terminal" }
 * ```
 */
export async function askPermission(
  ask: RunPermissionAsk,
  io: PermissionPromptIo,
): Promise<PermissionReply> {
  const release = io.hold?.();
  // A question nobody needs any more says so, so a late answer is not taken for it.
  const withdraw = () => io.write("\n  (no answer needed any more: the step stopped)\n");
  ask.signal.addEventListener("abort", withdraw, { once: true });
  try {
    io.write(permissionQuestion(ask));
    const always = ask.suggestion ? ` (allows "${visible(ask.suggestion)}")` : "";
    const answered = await askUntilValid(
      { lines: io.lines, write: io.write, signal: ask.signal },
      `Allow it? y = yes, n = no, a = always for this run${always} [y/n/a]: `,
      parseChoice,
    );
    if (!answered) {
      io.write("\n");
      return {
        allow: false,
        by: `${io.who}, input ended`,
        message: "nobody answered (the terminal's input ended).",
      };
    }
    return { ...answered.value, by: io.who };
  } finally {
    ask.signal.removeEventListener("abort", withdraw);
    release?.();
  }
}

/** The lines that put the question: the step, the tool and its arguments, why, the rule. */
export function permissionQuestion(ask: RunPermissionAsk): string {
  const lines = [
    "",
    `Step "${ask.stepId}" (iteration ${ask.iteration}) asks to run ${visible(ask.tool)}:`,
    ...argumentLines(ask.args),
    `  Why it asks: ${visible(ask.reason)}`,
  ];
  if (ask.suggestion) {
    lines.push(`  Allowed without asking by: "${visible(ask.suggestion)}" in allowedTools`);
  }
  return `${lines.join("\n")}\n`;
}

function parseChoice(
  text: string,
): { ok: true; value: { allow: boolean; always?: boolean } } | { ok: false; problem: string } {
  switch (text.toLowerCase()) {
    case "y":
    case "yes":
      return { ok: true, value: { allow: true } };
    case "n":
    case "no":
      return { ok: true, value: { allow: false } };
    case "a":
    case "always":
      return { ok: true, value: { allow: true, always: true } };
    default:
      return { ok: false, problem: "Answer y (yes), n (no) or a (always for this run)." };
  }
}

/** The arguments, one `name: value` each, bounded in count, lines and width. */
function argumentLines(args: Readonly<Record<string, unknown>>): string[] {
  const entries = Object.entries(args);
  const out: string[] = [];
  for (const [name, value] of entries.slice(0, MAX_SHOWN_ARGS)) {
    const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
    const valueLines = text.split(/\r?\n/);
    out.push(`    ${visible(name)}: ${visible(valueLines[0])}`);
    for (const line of valueLines.slice(1, MAX_VALUE_LINES)) out.push(`      ${visible(line)}`);
    if (valueLines.length > MAX_VALUE_LINES) {
      out.push(`      … ${valueLines.length - MAX_VALUE_LINES} more lines`);
    }
  }
  if (entries.length > MAX_SHOWN_ARGS) {
    out.push(`    … ${entries.length - MAX_SHOWN_ARGS} more arguments`);
  }
  return out;
}

/**
 * One line as it may reach a terminal: control characters (escape sequences a model could use to
 * rewrite the screen) shown as `\x1b`-style escapes, tabs as spaces, cut to the line width.
 */
function visible(text: string): string {
  const shown = text.replaceAll("\t", "  ").replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
  return shown.length > MAX_LINE_CHARS ? `${shown.slice(0, MAX_LINE_CHARS)}…` : shown;
}
