/**
 * Prompt variables (docs/agents.md, "Prompts"). Only these single-brace forms are variables:
 * `{uv-<name>}`, `{input_text}`, `{iteration}`, `{step_id}`, `{handoff.<key>}`, and in a retry after a
 * failed step validation `{validation.output}` / `{validation.pattern}` / `{validation.command}`.
 * Every other brace text — JSON examples in prompts — is left exactly as written.
 *
 * A variable may be optional: `{handoff.verdict?}` becomes the empty string when it has no value,
 * `{handoff.verdict?=none yet}` becomes `none yet`. Without `?`, a variable with no value is an
 * error ({@linkcode MissingVariablesError}).
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { ownValue } from "../own_record.ts";

/** The values available to a prompt. */
export interface PromptVariables {
  /** `{uv-<name>}` values: the run's args. */
  uv: Readonly<Record<string, unknown>>;
  /** `{input_text}`: stdin or `args.input_text`. */
  inputText?: string;
  /** `{iteration}`. */
  iteration?: number;
  /** `{step_id}`. */
  stepId?: string;
  /** `{handoff.<key>}`: the latest handoff value of each key. */
  handoff?: Readonly<Record<string, unknown>>;
  /** `{validation.*}`: the failed validation a retry prompt reports (absent otherwise). */
  validation?: { output: string; pattern?: string; command: string };
  /**
   * The agent's declared parameters (agent.json `parameters`), when known: only those can be set
   * with a CLI flag, so a missing `{uv-<name>}` outside them is not told to "pass --<name>".
   */
  parameters?: Readonly<Record<string, unknown>>;
}

// Group 1: the name; group 2: "?" or "?=default" (the default holds no braces or line breaks).
const VARIABLE =
  /\{(uv-[A-Za-z0-9_][A-Za-z0-9_.-]*|input_text|iteration|step_id|handoff\.[A-Za-z0-9_][A-Za-z0-9_.-]*|validation\.(?:output|pattern|command))(\?(?:=[^{}\n]*)?)?\}/g;

/** Thrown when a prompt uses variables that have no value; lists every one of them. */
export class MissingVariablesError extends StepflowError {
  /** The missing variable names, as written (`uv-topic`, `handoff.issue`, …). */
  readonly missing: string[];
  /**
   * Creates the error.
   *
   * @param missing the names
   * @param where file and step, for the message
   */
  constructor(
    missing: string[],
    where: { file?: string; stepId?: string } = {},
    parameters?: Readonly<Record<string, unknown>>,
  ) {
    const settable = (key: string) => parameters === undefined || Object.hasOwn(parameters, key);
    const hints = missing.map((name) =>
      name.startsWith("uv-") && settable(name.slice(3))
        ? `{${name}} ← pass --${name.slice(3)} <value> (or args.${name.slice(3)})`
        : name.startsWith("uv-")
        ? `{${name}} ← "${
          name.slice(3)
        }" is not a parameter of the agent, so no CLI flag sets it: declare it in agent.json "parameters" (then pass --${
          name.slice(3)
        } <value>), pass args.${
          name.slice(3)
        } through the API, or write {${name}?} to allow an empty value`
        : name === "input_text"
        ? "{input_text} ← pipe text on stdin (or args.input_text)"
        : name.startsWith("validation.")
        ? `{${name}} ← only set in the retry prompt after a failed step validation`
        : name.startsWith("handoff.")
        ? `{${name}} ← no earlier step handed off "${
          name.slice(8)
        }" (check handoffFields, or write {${name}?} to allow an empty value)`
        : `{${name}}`
    );
    super(
      "PROMPT_VARIABLES_MISSING",
      `Prompt ${where.file ?? ""}${
        where.stepId ? ` (step "${where.stepId}")` : ""
      } uses ${missing.length} variable(s) with no value:\n  ${hints.join("\n  ")}`,
      { details: { missing, ...where } },
    );
    this.missing = missing;
  }
}

/**
 * The variable names a template uses, in order of first use (optional ones included).
 *
 * @example
 * ```ts
 * import { listVariables } from "./variables.ts";
 * listVariables('Fix {uv-topic} at {iteration}; keep {"json": 1}'); // ["uv-topic", "iteration"]
 * ```
 */
export function listVariables(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(VARIABLE)) seen.add(m[1]);
  return [...seen];
}

/**
 * The variable names a template needs a value for: those used at least once without `?`.
 *
 * @example
 * ```ts
 * import { listRequiredVariables } from "./variables.ts";
 * listRequiredVariables("{handoff.a} {handoff.b?} {handoff.c?=none}"); // ["handoff.a"]
 * ```
 */
export function listRequiredVariables(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(VARIABLE)) if (m[2] === undefined) seen.add(m[1]);
  return [...seen];
}

/**
 * Substitutes the variables of `template`. Throws {@linkcode MissingVariablesError} naming every
 * variable that has no value.
 *
 * @example
 * ```ts
 * import { substituteVariables } from "./variables.ts";
 * substituteVariables("Topic: {uv-topic} ({step_id})", { uv: { topic: "auth" }, stepId: "s_a8f3" });
 * // "Topic: auth (s_a8f3)"
 * ```
 */
export function substituteVariables(
  template: string,
  vars: PromptVariables,
  where: { file?: string; stepId?: string } = {},
): string {
  const parsed = parsedTemplate(template);
  const { literals, names, optionals, wholes } = parsed;
  let missing: string[] | undefined;
  let out = literals[0];
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    let value = lookup(name, vars);
    if (value === undefined) {
      const optional = optionals[i];
      if (optional !== undefined) value = optional.slice(2); // "?" → "", "?=text" → "text"
      else {
        missing ??= [];
        if (!missing.includes(name)) missing.push(name);
        value = wholes[i];
      }
    }
    out += value + literals[i + 1];
  }
  if (missing !== undefined) throw new MissingVariablesError(missing, where, vars.parameters);
  return out;
}

/** A template split at its variables: `literals[i]`, variable `i`, …, `literals[names.length]`. */
interface ParsedTemplate {
  literals: string[];
  /** Each variable's name (group 1). */
  names: string[];
  /** Each variable's `?` / `?=default` (group 2), when written. */
  optionals: (string | undefined)[];
  /** Each variable as written (kept when it has no value, for the error's sake). */
  wholes: string[];
}

/**
 * Templates split once: a step's prompt is substituted at every iteration, and scanning it with
 * the variable pattern each time was most of the substitution's cost. Keyed by the template text
 * (a prompt file's body, kept by the resolver); bounded, emptied when full.
 */
const parsedTemplates = new Map<string, ParsedTemplate>();
const PARSED_TEMPLATES_MAX = 256;

function parsedTemplate(template: string): ParsedTemplate {
  let parsed = parsedTemplates.get(template);
  if (parsed !== undefined) return parsed;
  parsed = { literals: [], names: [], optionals: [], wholes: [] };
  let from = 0;
  for (const m of template.matchAll(VARIABLE)) {
    parsed.literals.push(template.slice(from, m.index));
    parsed.names.push(m[1]);
    parsed.optionals.push(m[2]);
    parsed.wholes.push(m[0]);
    from = m.index + m[0].length;
  }
  parsed.literals.push(template.slice(from));
  if (parsedTemplates.size >= PARSED_TEMPLATES_MAX) parsedTemplates.clear();
  parsedTemplates.set(template, parsed);
  return parsed;
}

function lookup(name: string, vars: PromptVariables): string | undefined {
  if (name === "input_text") {
    const v = vars.inputText ?? vars.uv["input_text"];
    return v === undefined || v === null ? undefined : stringify(v);
  }
  if (name === "iteration") {
    return vars.iteration === undefined ? undefined : String(vars.iteration);
  }
  if (name === "step_id") return vars.stepId;
  // Names come from prompt files: only own keys count (`{uv-constructor}` is not Object's).
  if (name.startsWith("uv-")) return stringify(own(vars.uv, name.slice(3)));
  if (name.startsWith("handoff.")) return stringify(own(vars.handoff, name.slice(8)));
  if (name === "validation.output") return vars.validation?.output;
  if (name === "validation.command") return vars.validation?.command;
  if (name === "validation.pattern") {
    return vars.validation ? vars.validation.pattern ?? "" : undefined;
  }
  return undefined;
}

function own(record: Readonly<Record<string, unknown>> | undefined, key: string): unknown {
  return record === undefined ? undefined : ownValue(record, key);
}

function stringify(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === "string" ? value : JSON.stringify(value);
}
