/**
 * The form a person fills in to answer an input step, read from the step's output schema: one
 * field per leaf of the answer object (nested objects are walked), each with the way it is asked —
 * a choice list for an `enum` (or `const`), yes/no for a boolean, text for a string, a number, or
 * JSON for anything else (arrays, untyped values, `$ref`s). The terminal prompt and the dashboard's
 * generated form both read this one description, and the loader refuses an input step whose schema
 * yields none (docs/agents.md, "Input steps").
 *
 * @module
 */

/** How one field of an answer is asked. */
export type AnswerFieldKind = "choice" | "boolean" | "string" | "number" | "integer" | "json";

/** One field of an answer form. */
export interface AnswerField {
  /** The field's path in the answer object (`["next_action", "action"]`). */
  path: readonly string[];
  /** The path as one dot path (`next_action.action`), as `intentField` names it. */
  name: string;
  /** How the field is asked. */
  kind: AnswerFieldKind;
  /** Whether the answer must have it (required at every level of its path). */
  required: boolean;
  /** The schema's `title`, when any. */
  title?: string;
  /** The schema's `description`, when any. */
  description?: string;
  /** The values a `choice` field offers, in schema order. */
  choices?: readonly unknown[];
  /** The schema's `default`, when any. */
  default?: unknown;
}

/** The form of an input step's answer. */
export interface AnswerForm {
  /** The fields in schema order. */
  fields: readonly AnswerField[];
}

/** Why a schema cannot be an answer form (the loader names the step and file around it). */
export class AnswerFormError extends Error {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "AnswerFormError";
  }
}

/** Nesting of objects a form walks; deeper objects are asked as JSON. */
const MAX_FORM_DEPTH = 4;
/** Fields of one form; more is not a question a person answers field by field. */
const MAX_FORM_FIELDS = 50;
const COMBINATORS = ["oneOf", "anyOf", "allOf", "not", "if"] as const;

/**
 * The answer form of an output schema. The schema must describe an object with `properties`
 * (the gate reads the intent out of it); an object reached through `oneOf`/`anyOf`/`allOf`/`not`/
 * `if` cannot be laid out as fields.
 *
 * @example
 * ```ts
 * import { answerForm } from "./answer_form.ts";
 * const form = answerForm({
 *   type: "object",
 *   required: ["decision"],
 *   properties: { decision: { enum: ["next", "abort"] }, note: { type: "string" } },
 * });
 * console.log(form.fields.map((f) => `${f.name}:${f.kind}`)); // ["decision:choice", "note:string"]
 * ```
 *
 * @throws {AnswerFormError} saying what in the schema cannot be a form and how to change it
 */
export function answerForm(schema: unknown): AnswerForm {
  const fields: AnswerField[] = [];
  walkObject(schema, [], true, fields, 0);
  if (fields.length === 0) {
    throw new AnswerFormError(
      "the answer schema has no properties to ask: give it at least one property (an enum of the intents, typically)",
    );
  }
  return { fields };
}

function walkObject(
  node: unknown,
  path: string[],
  required: boolean,
  fields: AnswerField[],
  depth: number,
): void {
  const where = path.length === 0 ? "the answer schema" : `property "${path.join(".")}"`;
  if (!isRecord(node)) throw new AnswerFormError(`${where} is not a schema object`);
  const combinator = COMBINATORS.find((k) => node[k] !== undefined);
  if (combinator !== undefined) {
    throw new AnswerFormError(
      `${where} uses "${combinator}", which a form cannot lay out as fields: describe the answer as one object with "properties" (use "enum" for alternatives)`,
    );
  }
  if (node.type !== "object" && !(node.type === undefined && isRecord(node.properties))) {
    throw new AnswerFormError(
      `${where} must be an object with "properties" (found ${
        node.type === undefined ? "no type" : `type ${JSON.stringify(node.type)}`
      }): a person answers field by field, and the gate reads the intent out of an object`,
    );
  }
  const properties = isRecord(node.properties) ? node.properties : {};
  const requiredNames = Array.isArray(node.required) ? node.required : [];
  for (const name of Object.keys(properties)) {
    const child = properties[name];
    const childPath = [...path, name];
    const childRequired = required && requiredNames.includes(name);
    if (isRecord(child) && isPlainObjectSchema(child) && depth + 1 < MAX_FORM_DEPTH) {
      walkObject(child, childPath, childRequired, fields, depth + 1);
    } else {
      fields.push(leafField(child, childPath, childRequired));
    }
    if (fields.length > MAX_FORM_FIELDS) {
      throw new AnswerFormError(
        `the answer schema has more than ${MAX_FORM_FIELDS} fields: ask fewer (group the rest in one array or object field, which is asked as JSON)`,
      );
    }
  }
}

/** An object schema whose properties a form walks (no combinator, at least one property). */
function isPlainObjectSchema(node: Record<string, unknown>): boolean {
  return (node.type === "object" || node.type === undefined) && isRecord(node.properties) &&
    Object.keys(node.properties).length > 0 && COMBINATORS.every((k) => node[k] === undefined);
}

function leafField(node: unknown, path: string[], required: boolean): AnswerField {
  const field: AnswerField = { path, name: path.join("."), kind: "json", required };
  if (!isRecord(node)) return field;
  if (typeof node.title === "string") field.title = node.title;
  if (typeof node.description === "string") field.description = node.description;
  if (node.default !== undefined) field.default = node.default;
  if (Array.isArray(node.enum) && node.enum.length > 0) {
    field.kind = "choice";
    field.choices = node.enum;
  } else if (node.const !== undefined) {
    field.kind = "choice";
    field.choices = [node.const];
  } else if (node.type === "boolean") field.kind = "boolean";
  else if (node.type === "string") field.kind = "string";
  else if (node.type === "number") field.kind = "number";
  else if (node.type === "integer") field.kind = "integer";
  return field;
}

/**
 * Builds the answer object from one value per field (a field left `undefined` is left out).
 * Names are data: a field called `__proto__` or `constructor` becomes an own property.
 *
 * @example
 * ```ts
 * import { answerForm, assembleAnswer } from "./answer_form.ts";
 * const form = answerForm({ type: "object", properties: { a: { type: "object", properties: { b: { type: "string" } } } } });
 * console.log(assembleAnswer(form, new Map([["a.b", "x"]]))); // { a: { b: "x" } }
 * ```
 */
export function assembleAnswer(
  form: AnswerForm,
  values: ReadonlyMap<string, unknown>,
): Record<string, unknown> {
  const answer: Record<string, unknown> = {};
  for (const field of form.fields) {
    if (!values.has(field.name)) continue;
    const value = values.get(field.name);
    if (value === undefined) continue;
    let node = answer;
    for (const key of field.path.slice(0, -1)) {
      if (!isRecord(node[key]) || !Object.hasOwn(node, key)) define(node, key, {});
      node = node[key] as Record<string, unknown>;
    }
    define(node, field.path[field.path.length - 1], value);
  }
  return answer;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * Checks that a form can carry the gate's intent: `intentField` is one of its fields, asked as a
 * choice (enum) or a string. Returns the problem, or `undefined`.
 */
export function intentFieldProblem(form: AnswerForm, intentField: string): string | undefined {
  const field = form.fields.find((f) => f.name === intentField);
  if (!field) {
    return `structuredGate.intentField "${intentField}" is not a field of the answer schema (fields: ${
      form.fields.map((f) => f.name).join(", ")
    }): add it as a property, an "enum" of the intents the person may pick`;
  }
  if (field.kind !== "choice" && field.kind !== "string") {
    return `structuredGate.intentField "${intentField}" is asked as ${field.kind}, but an intent is text: make it { "enum": ["next", …] }`;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * An answer with every required field filled (a choice's first value, text, 0, false): the value a
 * printed answer command carries, so that it runs as printed.
 *
 * @example
 * ```ts ignore
 * exampleAnswer(form); // { decision: "next" }
 * ```
 */
export function exampleAnswer(form: AnswerForm): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of form.fields) {
    if (!field.required && field.kind !== "choice") continue;
    const value = field.default ??
      (field.kind === "choice"
        ? field.choices![0]
        : field.kind === "boolean"
        ? false
        : field.kind === "number" || field.kind === "integer"
        ? 0
        : field.kind === "string"
        ? "…"
        : null);
    let node = out;
    for (const key of field.path.slice(0, -1)) {
      node[key] ??= {};
      node = node[key] as Record<string, unknown>;
    }
    node[field.path[field.path.length - 1]] = value;
  }
  return out;
}
