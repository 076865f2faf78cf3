/**
 * `run-agent` at a terminal: asks the person the question of an input step, one prompt per field
 * of its answer form (`src/definition/answer_form.ts`) — a numbered choice list for an enum, y/n
 * for a boolean, a line of text for a string, a number, JSON for the rest — and builds the answer.
 * An optional field is skipped with an empty line; a field with a `default` takes it. A line that
 * does not fit the field is asked again with the reason. The runner checks the whole answer
 * against the schema afterwards, as for every answer.
 *
 * @module
 */
import type { AnswerField, AnswerForm } from "../definition/answer_form.ts";
import { assembleAnswer } from "../definition/answer_form.ts";
import { UsageError } from "../errors.ts";
import type { LineReader } from "./kit/line_reader.ts";

/** Where the questions go and the answers come from. */
export interface AnswerPromptIo {
  /** The terminal's lines. */
  lines: LineReader;
  /** Writes a question (stderr, so stdout stays the run's result). */
  write(text: string): void;
  /** Stops asking (Ctrl-C). */
  signal?: AbortSignal;
}

/**
 * Asks every field of `form` and returns the answer object.
 *
 * @example
 * ```ts
 * import { answerForm } from "../definition/answer_form.ts";
 * import { askAnswer } from "./answer_prompt.ts";
 * import { lineReader } from "./kit/line_reader.ts";
 * const form = answerForm({ type: "object", properties: { decision: { enum: ["next", "abort"] } } });
 * const lines = lineReader(ReadableStream.from([new TextEncoder().encode("2\n")]));
 * console.log(await askAnswer(form, { lines, write: () => {} })); // { decision: "abort" }
 * ```
 *
 * @throws {UsageError} when the terminal's input ends before every required field is answered
 */
export async function askAnswer(
  form: AnswerForm,
  io: AnswerPromptIo,
): Promise<Record<string, unknown>> {
  const values = new Map<string, unknown>();
  for (const field of form.fields) {
    values.set(field.name, await askField(field, io));
  }
  return assembleAnswer(form, values);
}

async function askField(field: AnswerField, io: AnswerPromptIo): Promise<unknown> {
  io.write(fieldQuestion(field));
  const answered = await askUntilValid(io, `${fieldLabel(field)}${fieldHint(field)}: `, (text) => {
    if (text !== "") return parseField(field, text);
    if (field.default !== undefined) return { ok: true, value: field.default };
    if (!field.required) return { ok: true, value: undefined };
    return { ok: false, problem: `"${field.name}" is required.` };
  });
  if (!answered) {
    throw new UsageError(
      `The terminal's input ended before "${field.name}" was answered; nothing was recorded. The run still waits: answer it with its answer subcommand and --value.`,
    );
  }
  return answered.value;
}

/**
 * Asks `prompt` until a line (trimmed) parses, telling the person what was wrong each time; the
 * one question loop of the terminal prompts (an input step's fields, a tool call's permission).
 * Returns `undefined` when the terminal's input ends first.
 *
 * @example
 * ```ts
 * import { askUntilValid } from "./answer_prompt.ts";
 * import { lineReader } from "./kit/line_reader.ts";
 * const lines = lineReader(ReadableStream.from([new TextEncoder().encode("maybe\ny\n")]));
 * const yes = (t: string) =>
 *   t === "y" ? { ok: true as const, value: true } : { ok: false as const, problem: "y or n" };
 * console.log(await askUntilValid({ lines, write: () => {} }, "Go? ", yes)); // { value: true }
 * ```
 */
export async function askUntilValid<T>(
  io: AnswerPromptIo,
  prompt: string,
  parse: (text: string) => { ok: true; value: T } | { ok: false; problem: string },
): Promise<{ value: T } | undefined> {
  for (;;) {
    io.write(prompt);
    const line = await io.lines.next(io.signal);
    if (line === undefined) return undefined;
    const parsed = parse(line.trim());
    if (parsed.ok) return { value: parsed.value };
    io.write(`  ${parsed.problem}\n`);
  }
}

/** The lines shown before a field's prompt: its description and, for a choice, the list. */
function fieldQuestion(field: AnswerField): string {
  const lines: string[] = [];
  if (field.description) lines.push(`  ${field.description}`);
  if (field.kind === "choice") {
    field.choices!.forEach((choice, i) => lines.push(`  ${i + 1}) ${shown(choice)}`));
  }
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}

function fieldLabel(field: AnswerField): string {
  return field.title ? `${field.title} (${field.name})` : field.name;
}

function fieldHint(field: AnswerField): string {
  const parts: string[] = [];
  switch (field.kind) {
    case "choice":
      parts.push(`1-${field.choices!.length}`);
      break;
    case "boolean":
      parts.push("y/n");
      break;
    case "json":
      parts.push("JSON");
      break;
    case "number":
    case "integer":
      parts.push(field.kind);
      break;
  }
  if (field.default !== undefined) parts.push(`default ${shown(field.default)}`);
  else if (!field.required) parts.push("empty to skip");
  return parts.length > 0 ? ` [${parts.join(", ")}]` : "";
}

type Parsed = { ok: true; value: unknown } | { ok: false; problem: string };

/** One line as the value of `field`. */
export function parseField(field: AnswerField, text: string): Parsed {
  switch (field.kind) {
    case "choice": {
      const choices = field.choices!;
      const index = /^\d+$/.test(text) ? Number(text) - 1 : -1;
      if (index >= 0 && index < choices.length) return { ok: true, value: choices[index] };
      const named = choices.find((c) => shown(c) === text || String(c) === text);
      if (named !== undefined) return { ok: true, value: named };
      return {
        ok: false,
        problem: `Pick 1-${choices.length} or one of: ${choices.map(shown).join(", ")}.`,
      };
    }
    case "boolean": {
      const word = text.toLowerCase();
      if (["y", "yes", "true"].includes(word)) return { ok: true, value: true };
      if (["n", "no", "false"].includes(word)) return { ok: true, value: false };
      return { ok: false, problem: "Answer y or n." };
    }
    case "string":
      return { ok: true, value: text };
    case "number":
    case "integer": {
      const n = Number(text);
      if (!Number.isFinite(n) || (field.kind === "integer" && !Number.isInteger(n))) {
        return {
          ok: false,
          problem: `"${text}" is not ${field.kind === "integer" ? "an integer" : "a number"}.`,
        };
      }
      return { ok: true, value: n };
    }
    case "json":
      try {
        return { ok: true, value: JSON.parse(text) };
      } catch (error) {
        return { ok: false, problem: `Not JSON (${(error as Error).message}); e.g. ["a", "b"].` };
      }
  }
}

function shown(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}
