/**
 * The one structured-output path of the project: ask → read → validate → re-ask. Every engine —
 * the step-flow runner, the PlanSpec runner and plan generation, tool-plan generation and
 * recovery, QPlan's `ai` module — calls {@linkcode askStructured}, so a model's answer is read,
 * bounded and judged the same way everywhere, and every re-ask ({@linkcode reaskPrompt}) says what
 * was wrong in the same words. What really differs between them (a PlanSpec text instead of JSON,
 * a typed parse) is a `read` function and an `expected` phrase, not another loop.
 *
 * @module
 */
import { extractJson } from "../llm/structured_output.ts";
import type { LlmRequest, LlmResponse } from "../llm/types.ts";

/**
 * The deepest nesting of objects and arrays accepted in a model's structured output. `{}` and `[]`
 * are 1 level, `{"a": {}}` is 2. Deeper output is rejected at validation time (and re-asked): it
 * cannot be useful to a flow and deeper data crashes `structuredClone` and `JSON.stringify`.
 */
export const MAX_OUTPUT_DEPTH = 64;

/** The longest raw answer kept in history entries and run logs, in characters. */
export const ANSWER_EXCERPT_CHARS = 8_192;

/** The longest prompt kept in `step_start` run-log entries, in characters. */
export const PROMPT_EXCERPT_CHARS = 16_384;

/** The most validation errors quoted in a re-ask, a log entry or an error message. */
export const MAX_ERRORS_SHOWN = 20;

/** A text cut to a bound, with the full text's length in characters. */
export interface TextExcerpt {
  /** The first characters of the text (all of it when it fits). */
  text: string;
  /** The full length in characters (UTF-16 code units, as `String.length`). */
  length: number;
}

/**
 * The first `max` characters of `text` with its full length.
 *
 * @example
 * ```ts
 * import { excerpt } from "./ask_structured.ts";
 * excerpt("abcdef", 3); // { text: "abc", length: 6 }
 * ```
 */
export function excerpt(text: string, max: number): TextExcerpt {
  return { text: text.length > max ? text.slice(0, max) : text, length: text.length };
}

/**
 * True when `value` nests objects/arrays deeper than `limit` levels. Iterative and linear in the
 * number of nodes (it stops at the first node past the limit), so it is safe on any input.
 *
 * @example
 * ```ts
 * import { exceedsDepth } from "./ask_structured.ts";
 * exceedsDepth({ a: [{}] }, 3); // false
 * exceedsDepth({ a: [{}] }, 2); // true
 * ```
 */
export function exceedsDepth(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit < 1) return true;
  // One interleaved stack (node, depth), allocated only when a node has object children: this runs
  // on every answer, and most answers are a handful of small objects.
  let stack: unknown[] | undefined;
  let node = value as object;
  let depth = 1;
  for (;;) {
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (child !== null && typeof child === "object") {
        if (depth >= limit) return true;
        (stack ??= []).push(child, depth + 1);
      }
    }
    if (stack === undefined || stack.length === 0) return false;
    depth = stack.pop() as number;
    node = stack.pop() as object;
  }
}

/**
 * A copy of `value` in which every object or array nested deeper than `limit` levels is replaced by
 * a string saying so. Iterative (no recursion), so data already stored by an older version can be
 * cloned, printed as JSON or checkpointed without a stack overflow. Returns `value` itself when it is
 * within the limit.
 *
 * @example
 * ```ts
 * import { boundDepth } from "./ask_structured.ts";
 * boundDepth({ a: { b: {} } }, 2); // { a: { b: "[nested deeper than 2 levels: omitted]" } }
 * ```
 */
export function boundDepth(value: unknown, limit: number): unknown {
  if (!exceedsDepth(value, limit)) return value;
  const omitted = `[nested deeper than ${limit} levels: omitted]`;
  const copyOf = (node: object): Record<string, unknown> | unknown[] =>
    Array.isArray(node) ? new Array(node.length) : {};
  const root = copyOf(value as object);
  const stack: { source: object; target: Record<string, unknown> | unknown[]; depth: number }[] = [
    { source: value as object, target: root, depth: 1 },
  ];
  while (stack.length > 0) {
    const { source, target, depth } = stack.pop()!;
    for (const [key, child] of Object.entries(source)) {
      let copy: unknown = child;
      if (child !== null && typeof child === "object") {
        if (depth >= limit) copy = omitted;
        else {
          copy = copyOf(child);
          stack.push({ source: child, target: copy as Record<string, unknown>, depth: depth + 1 });
        }
      }
      // defineProperty, not assignment: a "__proto__" key stays data, never a prototype.
      Object.defineProperty(target, key, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return root;
}

/** Why an answer was rejected, in words a model (and a person reading the log) can act on. */
export interface AnswerRejection {
  /** One sentence: "your answer contained no JSON object", "your answer is not valid JSON: …". */
  reason: string;
  /** The validator's findings (`/next_action/action: must be one of …`), when it ran. */
  errors: string[];
}

/** One re-ask, as reported to {@linkcode AskStructuredOptions.onReask}. */
export interface ReaskInfo extends AnswerRejection {
  /** 1-based re-ask number. */
  attempt: number;
  /** The rejected answer, cut to {@linkcode ANSWER_EXCERPT_CHARS}. */
  answer: TextExcerpt;
}

/** What reading one answer gave: the value, or why the answer was rejected. */
export type AnswerReading<T = unknown> =
  | { ok: true; value: T }
  | { ok: false; rejection: AnswerRejection };

/**
 * The options every {@linkcode askStructured} call takes, whatever its answer format. `S` is what
 * a call may return instead of an answer to end the ask (a step whose tool call waits for
 * permission); `never` when calls always answer.
 */
export interface AskStructuredBaseOptions<S = never> {
  /** The request of the first call (its `outputSchema`, when set, is what the answer must match). */
  request: LlmRequest;
  /**
   * Makes one backend call (the caller adds its timeout, usage accounting, pause, …). It may
   * return a value `stops` recognises instead of a response: the ask then ends with it.
   */
  call: (request: LlmRequest) => Promise<LlmResponse | NoInfer<S>>;
  /**
   * Tells a call's result that ends the ask (see `call`) from a response; the ask then returns
   * `{ ok: false, stopped }` without reading it or asking again. Needed when `S` is not `never`.
   */
  stops?: (result: LlmResponse | S) => result is S;
  /**
   * What a valid answer is, for the last line of a re-ask: "Answer again with only
   * <expected>." (default {@linkcode EXPECTED_JSON}).
   */
  expected?: string;
  /** Re-asks after an invalid answer (default 1). */
  maxReasks?: number;
  /** Nesting limit of a JSON answer (default {@linkcode MAX_OUTPUT_DEPTH}). */
  maxDepth?: number;
  /** Called before each re-ask is sent. */
  onReask?: (info: ReaskInfo) => void | Promise<void>;
}

/**
 * Options of {@linkcode askStructured}: a JSON answer checked by `validate` (read with
 * {@linkcode judgeAnswer}), or any answer read by `read` (PlanSpec text, a typed parse, …).
 */
export type AskStructuredOptions<T = unknown, S = never> =
  & AskStructuredBaseOptions<S>
  & (
    | {
      /** Validates the JSON value of an answer; returns the problems (empty when it is valid). */
      validate: (value: unknown) => string[];
      read?: never;
    }
    | {
      /**
       * Reads one answer into a value or a rejection (use {@linkcode readJsonAnswer} and
       * {@linkcode rejectAnswer} to read JSON the shared way).
       */
      read: (response: LlmResponse) => AnswerReading<T>;
      validate?: never;
    }
  );

/**
 * The outcome of {@linkcode askStructured}: a valid answer, a rejected one, or (when calls may
 * stop the ask, `S` not `never`) `{ ok: false, stopped }`.
 */
export type AskStructuredResult<T = unknown, S = never> =
  | ([S] extends [never] ? never : {
    ok: false;
    /** What a call returned instead of an answer (see `AskStructuredBaseOptions.stops`). */
    stopped: S;
  })
  | {
    ok: true;
    /** The validated value. */
    value: T;
    /** The last response. */
    response: LlmResponse;
    /** The last answer, cut to {@linkcode ANSWER_EXCERPT_CHARS}. */
    answer: TextExcerpt;
    /** Re-asks sent. */
    reasks: number;
  }
  | ({
    ok: false;
    /** The last response. */
    response: LlmResponse;
    /** The last answer, cut to {@linkcode ANSWER_EXCERPT_CHARS}. */
    answer: TextExcerpt;
    /** Re-asks sent. */
    reasks: number;
  } & AnswerRejection);

/**
 * Asks for structured output and insists on it: calls the backend, reads the answer (native
 * structured output, else JSON extracted from the text), rejects output nested deeper than
 * `maxDepth`, validates it, and on failure re-asks (`kind: "reask"`) with the original prompt plus
 * what was wrong, up to `maxReasks` times. It never throws for a bad answer (that is
 * `ok: false` with the reason); call errors propagate.
 *
 * @example
 * ```ts
 * import { askStructured } from "./ask_structured.ts";
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * const backend = new ScriptedBackend(["Sure thing!", '{"greeting": "hi"}']);
 * const result = await askStructured({
 *   request: { kind: "step", agent: "demo", stepId: "hello", iteration: 1, prompt: "Greet", cwd: "." },
 *   call: (req) => backend.complete(req),
 *   validate: (v) => typeof (v as { greeting?: unknown }).greeting === "string" ? [] : ["/greeting: must be string"],
 * });
 * console.log(result.ok, result.reasks); // true 1
 * ```
 */
export async function askStructured<T = unknown, S = never>(
  options: AskStructuredOptions<T, S>,
): Promise<AskStructuredResult<T, S>> {
  type Result = AskStructuredResult<T, S>;
  const { request, call, stops } = options;
  const maxReasks = options.maxReasks ?? 1;
  const maxDepth = options.maxDepth ?? MAX_OUTPUT_DEPTH;
  const read = options.read ??
    ((response: LlmResponse) =>
      judgeAnswer(response, options.validate!, maxDepth) as AnswerReading<T>);
  let result = await call(request);
  for (let reasks = 0;; reasks++) {
    if (stops?.(result)) return { ok: false, stopped: result } as Result;
    // Without `stops`, `S` is never: every result is a response.
    const response = result as LlmResponse;
    const answer = excerpt(response.text, ANSWER_EXCERPT_CHARS);
    const judged = read(response);
    if (judged.ok) return { ok: true, value: judged.value, response, answer, reasks } as Result;
    if (reasks >= maxReasks) {
      return { ok: false, ...judged.rejection, response, answer, reasks } as Result;
    }
    await options.onReask?.({ attempt: reasks + 1, answer, ...judged.rejection });
    result = await call({
      ...request,
      kind: "reask",
      prompt: reaskPrompt(request.prompt, judged.rejection, options.expected),
    });
  }
}

/**
 * Reads, bounds and validates one JSON answer: {@linkcode readJsonAnswer}, then `validate`, whose
 * findings become a schema rejection ({@linkcode rejectAnswer}).
 *
 * @example
 * ```ts
 * import { judgeAnswer } from "./ask_structured.ts";
 * judgeAnswer({ text: '{"n": 1}' }, () => []); // { ok: true, value: { n: 1 } }
 * ```
 */
export function judgeAnswer(
  response: LlmResponse,
  validate: (value: unknown) => string[],
  maxDepth: number = MAX_OUTPUT_DEPTH,
): AnswerReading {
  const read = readJsonAnswer(response, maxDepth);
  if (!read.ok) return read;
  const errors = validate(read.value);
  if (errors.length === 0) return read;
  return { ok: false, rejection: rejectAnswer(SCHEMA_MISMATCH, errors) };
}

/** The reason of a rejection whose errors are a validator's findings. */
export const SCHEMA_MISMATCH = "your answer did not match the required JSON schema";

/**
 * The JSON value of an answer — its native structured output, else the JSON extracted from its
 * text — rejected when there is none or when it nests deeper than `maxDepth`.
 *
 * @example
 * ```ts
 * import { readJsonAnswer } from "./ask_structured.ts";
 * readJsonAnswer({ text: "Sure!" }); // { ok: false, rejection: { reason: "your answer contained no JSON object", errors: [] } }
 * ```
 */
export function readJsonAnswer(
  response: LlmResponse,
  maxDepth: number = MAX_OUTPUT_DEPTH,
): AnswerReading {
  let value = response.structuredOutput;
  if (value === undefined) {
    const extracted = extractJson(response.text);
    if (!extracted.ok) {
      // Past a bound of the extraction, its reason says which; the text is not parsed again.
      const reason = extracted.limit ? extracted.reason : noJsonReason(response.text);
      return { ok: false, rejection: { reason, errors: [] } };
    }
    value = extracted.value;
  }
  if (exceedsDepth(value, maxDepth)) {
    return {
      ok: false,
      rejection: {
        reason:
          `your answer nests objects/arrays deeper than ${maxDepth} levels; answer with a flatter JSON object`,
        errors: [`(root): must not be nested deeper than ${maxDepth} levels`],
      },
    };
  }
  return { ok: true, value };
}

/** What {@linkcode readSchemaAnswer} needs of a schema: a zod schema's `safeParse`. */
export interface AnswerSchema<T> {
  /** Parses a value: the parsed data, or the issues found. */
  safeParse(value: unknown):
    | { success: true; data: T }
    | { success: false; error: { issues: readonly { path: PropertyKey[]; message: string }[] } };
}

/** How {@linkcode readSchemaAnswer} words and checks what the schema accepted. */
export interface SchemaAnswerOptions<T> {
  /** One finding per schema issue, e.g. `steps[1].tool: Required`. */
  formatIssue: (issue: { path: PropertyKey[]; message: string }) => string;
  /** Checks the parsed value further; returns the problems (empty when it is usable). */
  check?: (value: T) => string[];
  /** The reason given for `check`'s problems (default {@linkcode SCHEMA_MISMATCH}). */
  checkReason?: string;
  /** Nesting limit (default {@linkcode MAX_OUTPUT_DEPTH}). */
  maxDepth?: number;
}

/**
 * A JSON answer read the shared way ({@linkcode readJsonAnswer}), then parsed by a zod schema —
 * the parsed value (defaults applied, unknown keys dropped) is what the caller gets — and checked
 * by `options.check`. For engines whose answers are typed by a zod schema rather than a JSON
 * Schema validator.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { readSchemaAnswer } from "./ask_structured.ts";
 * const read = readSchemaAnswer({ text: '{"n": "one"}' }, z.object({ n: z.number() }), {
 *   formatIssue: (i) => `${i.path.join(".")}: ${i.message}`,
 * });
 * console.log(read.ok); // false
 * ```
 */
export function readSchemaAnswer<T>(
  response: LlmResponse,
  schema: AnswerSchema<T>,
  options: SchemaAnswerOptions<T>,
): AnswerReading<T> {
  const read = readJsonAnswer(response, options.maxDepth);
  if (!read.ok) return read;
  const parsed = schema.safeParse(read.value);
  if (!parsed.success) {
    return {
      ok: false,
      rejection: rejectAnswer(SCHEMA_MISMATCH, parsed.error.issues.map(options.formatIssue)),
    };
  }
  const problems = options.check?.(parsed.data) ?? [];
  if (problems.length > 0) {
    return {
      ok: false,
      rejection: rejectAnswer(options.checkReason ?? SCHEMA_MISMATCH, problems),
    };
  }
  return { ok: true, value: parsed.data };
}

/**
 * A rejection quoting at most {@linkcode MAX_ERRORS_SHOWN} findings: a huge invalid answer can
 * produce thousands, and the model needs the first few.
 *
 * @example
 * ```ts
 * import { rejectAnswer } from "./ask_structured.ts";
 * rejectAnswer("your plan could not be used", ["plan has no goal"]);
 * ```
 */
export function rejectAnswer(reason: string, errors: readonly string[]): AnswerRejection {
  const shown = errors.length > MAX_ERRORS_SHOWN
    ? [...errors.slice(0, MAX_ERRORS_SHOWN), `… and ${errors.length - MAX_ERRORS_SHOWN} more`]
    : [...errors];
  return { reason, errors: shown };
}

/** Why no JSON could be read from `text`. */
function noJsonReason(text: string): string {
  const trimmed = text.trim();
  if (trimmed === "") return "your answer was empty";
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      JSON.parse(trimmed);
    } catch (error) {
      return `your answer is not valid JSON: ${(error as Error).message}`;
    }
  }
  return "your answer contained no JSON object";
}

/** What a JSON answer must be, as the re-ask asks for it. */
export const EXPECTED_JSON = "a JSON object that matches the required JSON schema exactly";

/**
 * The one re-ask prompt of every engine: the original prompt, what was wrong, and what to answer
 * instead (`expected`, default {@linkcode EXPECTED_JSON}).
 *
 * @example
 * ```ts
 * import { reaskPrompt } from "./ask_structured.ts";
 * reaskPrompt("Classify.", { reason: "your answer contained no JSON object", errors: [] });
 * // "Classify.\n\n---\nYour previous answer was rejected: your answer contained no JSON object.\n" +
 * // "Answer again with only a JSON object that matches the required JSON schema exactly."
 * ```
 */
export function reaskPrompt(
  prompt: string,
  rejection: AnswerRejection,
  expected: string = EXPECTED_JSON,
): string {
  const errors = rejection.errors.map((e) => `\n- ${e}`).join("");
  return `${prompt}\n\n---\nYour previous answer was rejected: ${rejection.reason}.${errors}\n` +
    `Answer again with only ${expected}.`;
}
