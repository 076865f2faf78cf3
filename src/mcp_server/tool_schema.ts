/**
 * An agent's declared parameters (agent.json `parameters`) as the JSON Schema of its MCP tool, and
 * the check of the arguments a client sends against them. The arguments are untrusted input: the
 * check never recurses, never reads inherited keys (`constructor`, `__proto__`), bounds every
 * string and list, and answers every problem as one {@linkcode StepflowError}
 * (`MCP_ARGUMENTS_INVALID`) naming the argument and what it expects.
 *
 * @module
 */
import type { ParameterDefinition } from "../definition/schema.ts";
import type { ParameterValue } from "../definition/parameters.ts";
import { closestMatch } from "../definition/suggest.ts";
import { StepflowError } from "../errors.ts";

/** The argument that becomes the run's `{input_text}` (what `run-agent` reads from stdin). */
export const INPUT_TEXT_ARGUMENT = "input_text";

/** Longest string argument accepted, in UTF-16 code units (1 MiB of text). */
export const MAX_STRING_ARGUMENT = 1_048_576;

/** Most elements of an `array` argument. */
export const MAX_ARRAY_ARGUMENT = 10_000;

/** A JSON Schema object, as MCP's `inputSchema` carries it. */
export interface ToolInputSchema {
  /** Always `object`. */
  type: "object";
  /** One property per parameter. */
  properties: Record<string, Record<string, unknown>>;
  /** The parameters without a default that must be given. */
  required?: string[];
  /** Always false: an argument the agent does not declare is refused. */
  additionalProperties: false;
  /** Index signature required by the SDK's tool type. */
  [key: string]: unknown;
}

/**
 * The input schema of an agent's tool: each declared parameter as a property (type, description,
 * enum, default), `required` for required parameters without a default, and an optional
 * `input_text` (the run's `{input_text}`) unless the agent declares a parameter of that name.
 *
 * @example
 * ```ts
 * import { parametersInputSchema } from "./tool_schema.ts";
 * const schema = parametersInputSchema({ topic: { type: "string", required: true } });
 * console.log(schema.required); // ["topic"]
 * ```
 */
export function parametersInputSchema(
  parameters: Readonly<Record<string, ParameterDefinition>>,
): ToolInputSchema {
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  for (const [key, def] of Object.entries(parameters)) {
    properties[key] = propertySchema(def);
    if (def.required && def.default === undefined) required.push(key);
  }
  if (!Object.hasOwn(parameters, INPUT_TEXT_ARGUMENT)) {
    properties[INPUT_TEXT_ARGUMENT] = {
      type: "string",
      description:
        "Text the agent's prompts see as {input_text} (what stepflow run reads from stdin)",
      maxLength: MAX_STRING_ARGUMENT,
    };
  }
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

function propertySchema(def: ParameterDefinition): Record<string, unknown> {
  const describe = def.description !== undefined ? { description: def.description } : {};
  const withDefault = def.default !== undefined ? { default: def.default } : {};
  if (def.type === "array") {
    const items: Record<string, unknown> = { type: def.items ?? "string" };
    if (def.enum) items.enum = def.enum;
    return { type: "array", items, maxItems: MAX_ARRAY_ARGUMENT, ...describe, ...withDefault };
  }
  const schema: Record<string, unknown> = { type: def.type, ...describe, ...withDefault };
  if (def.enum) schema.enum = def.enum;
  if (def.type === "string") schema.maxLength = MAX_STRING_ARGUMENT;
  return schema;
}

/** What {@linkcode checkToolArguments} returns: the run's parameters and `{input_text}`. */
export interface CheckedArguments {
  /** The parameters, typed, defaults applied (a null-prototype record). */
  args: Record<string, ParameterValue>;
  /** The `input_text` argument, when given. */
  inputText?: string;
}

/**
 * Checks a tool call's `arguments` against the agent's parameters: every key declared, every value
 * of its type and enum, every required parameter present; applies defaults. Throws
 * `MCP_ARGUMENTS_INVALID` listing every problem.
 *
 * @example
 * ```ts
 * import { checkToolArguments } from "./tool_schema.ts";
 * const { args } = checkToolArguments("haiku", { topic: { type: "string" } }, { topic: "rain" });
 * console.log(args.topic); // "rain"
 * ```
 */
export function checkToolArguments(
  agent: string,
  parameters: Readonly<Record<string, ParameterDefinition>>,
  input: unknown,
): CheckedArguments {
  const given = (input ?? {}) as Record<string, unknown>;
  if (typeof given !== "object" || Array.isArray(given)) {
    throw invalid(agent, [`the arguments must be an object, got ${kindOf(given)}`]);
  }
  const problems: string[] = [];
  const args: Record<string, ParameterValue> = Object.create(null);
  const takesInputText = !Object.hasOwn(parameters, INPUT_TEXT_ARGUMENT);
  let inputText: string | undefined;
  for (const key of Object.keys(given)) {
    const value = given[key];
    if (takesInputText && key === INPUT_TEXT_ARGUMENT) {
      const problem = stringProblem(value);
      if (problem) problems.push(`${INPUT_TEXT_ARGUMENT}: ${problem}`);
      else inputText = value as string;
      continue;
    }
    if (!Object.hasOwn(parameters, key)) {
      const known = Object.keys(parameters);
      const near = closestMatch(key, known);
      problems.push(
        `${JSON.stringify(key.slice(0, 100))} is not a parameter of agent "${agent}"${
          near ? ` (did you mean "${near}"?)` : ""
        }; it takes ${known.length > 0 ? known.join(", ") : "no parameters"}`,
      );
      continue;
    }
    const problem = valueProblem(parameters[key], value);
    if (problem) problems.push(`${key}: ${problem}`);
    else args[key] = value as ParameterValue;
  }
  for (const [key, def] of Object.entries(parameters)) {
    if (Object.hasOwn(args, key) || problems.some((p) => p.startsWith(`${key}:`))) continue;
    if (def.default !== undefined) args[key] = def.default;
    else if (def.required) problems.push(`${key}: required, but not given`);
  }
  if (problems.length > 0) throw invalid(agent, problems);
  return { args, ...(inputText !== undefined ? { inputText } : {}) };
}

function valueProblem(def: ParameterDefinition, value: unknown): string | undefined {
  if (def.type === "boolean") {
    return typeof value === "boolean" ? undefined : `expects true or false, got ${kindOf(value)}`;
  }
  if (def.type !== "array") return elementProblem(def.type, def.enum, value);
  if (!Array.isArray(value)) return `expects a list, got ${kindOf(value)}`;
  if (value.length > MAX_ARRAY_ARGUMENT) {
    return `has ${value.length} elements; at most ${MAX_ARRAY_ARGUMENT} are accepted`;
  }
  for (let i = 0; i < value.length; i++) {
    const problem = elementProblem(def.items ?? "string", def.enum, value[i]);
    if (problem) return `element ${i} ${problem}`;
  }
  return undefined;
}

function elementProblem(
  type: "string" | "number",
  allowed: readonly (string | number)[] | undefined,
  value: unknown,
): string | undefined {
  if (type === "number") {
    if (typeof value !== "number" || !Number.isFinite(value)) {
      return `expects a number, got ${kindOf(value)}`;
    }
  } else {
    const problem = stringProblem(value);
    if (problem) return problem;
  }
  if (allowed && !allowed.includes(value as string | number)) {
    return `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}, got ${
      kindOf(value)
    }`;
  }
  return undefined;
}

function stringProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return `expects a string, got ${kindOf(value)}`;
  if (value.length > MAX_STRING_ARGUMENT) {
    return `is ${value.length} characters long; at most ${MAX_STRING_ARGUMENT} are accepted`;
  }
  return undefined;
}

/** A short, bounded description of an untrusted value for a message. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") {
    return value.length > 40 ? `a string of ${value.length} characters` : JSON.stringify(value);
  }
  return `${typeof value} ${String(value)}`;
}

function invalid(agent: string, problems: string[]): StepflowError {
  return new StepflowError(
    "MCP_ARGUMENTS_INVALID",
    `Invalid arguments for agent "${agent}": ${
      problems.slice(0, 20).join("; ")
    }. The tool's input schema lists the parameters it takes.`,
    { details: { agent, problems: problems.slice(0, 20) } },
  );
}

/** Deepest nesting of an `answer_run` value (an input step's answer is a small form). */
export const MAX_ANSWER_DEPTH = 64;

/** Most values (objects, lists, strings, numbers…) in one `answer_run` value. */
export const MAX_ANSWER_NODES = 100_000;

/**
 * Checks an `answer_run` value before the runner sees it: any JSON, but bounded — nesting at most
 * {@linkcode MAX_ANSWER_DEPTH}, at most {@linkcode MAX_ANSWER_NODES} values, each string and list
 * within the argument limits, only finite numbers. Walks without recursion and reads own keys
 * only; whether the value fits the step's schema is the runner's check. Throws
 * `MCP_ARGUMENTS_INVALID` naming the first problem and where it is.
 *
 * @example
 * ```ts
 * import { checkAnswerValue } from "./tool_schema.ts";
 * checkAnswerValue({ decision: "next", note: "ship it" }); // fine
 * ```
 */
export function checkAnswerValue(value: unknown): void {
  const pending: AnswerNode[] = [{ value, key: "value", depth: 0 }];
  let nodes = 0;
  while (pending.length > 0) {
    const node = pending.pop()!;
    const v = node.value;
    let problem: string | undefined;
    if (++nodes > MAX_ANSWER_NODES) {
      problem = `holds more than ${MAX_ANSWER_NODES} values; an answer is a small form`;
      node.parent = undefined;
      node.key = "value";
    } else if (node.depth > MAX_ANSWER_DEPTH) {
      problem = `nested deeper than ${MAX_ANSWER_DEPTH} levels`;
    } else if (typeof v === "string") {
      problem = stringProblem(v);
    } else if (typeof v === "number" && !Number.isFinite(v)) {
      problem = `expects a finite number, got ${kindOf(v)}`;
    } else if (Array.isArray(v)) {
      if (v.length > MAX_ARRAY_ARGUMENT) {
        problem = `has ${v.length} elements; at most ${MAX_ARRAY_ARGUMENT} are accepted`;
      } else {
        v.forEach((item, i) =>
          pending.push({ value: item, key: `[${i}]`, parent: node, depth: node.depth + 1 })
        );
      }
    } else if (v !== null && typeof v === "object") {
      for (const key of Object.keys(v)) {
        if (key.length > MAX_STRING_ARGUMENT) problem = `has a key of ${key.length} characters`;
        const child = (v as Record<string, unknown>)[key];
        const shown = key.length > 40 ? `${key.slice(0, 40)}…` : key;
        pending.push({ value: child, key: `.${shown}`, parent: node, depth: node.depth + 1 });
      }
    } else if (v !== null && typeof v !== "boolean" && typeof v !== "number") {
      problem = `expects JSON, got ${kindOf(v)}`;
    }
    if (problem) {
      const where = `${answerPath(node)}: ${problem}`;
      throw new StepflowError(
        "MCP_ARGUMENTS_INVALID",
        `Invalid arguments for answer_run: ${where}. Send the answer the run's question asks for (show_run shows it).`,
        { details: { tool: "answer_run", problems: [where] } },
      );
    }
  }
}

/** One value met while checking an answer; the path is built only for the one with a problem. */
interface AnswerNode {
  value: unknown;
  key: string;
  parent?: AnswerNode;
  depth: number;
}

function answerPath(node: AnswerNode): string {
  const keys: string[] = [];
  for (let at: AnswerNode | undefined = node; at; at = at.parent) keys.push(at.key);
  return keys.reverse().join("");
}
