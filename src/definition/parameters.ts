/**
 * Agent parameters (agent.json `parameters`): their CLI flag names, load-time checks, and turning
 * command-line text into typed values — `string`, `number`, `boolean`, and `array` (a repeatable
 * flag or a comma list), each optionally limited by `enum`.
 *
 * @module
 */
import type { ParameterDefinition } from "./schema.ts";

/**
 * The flags `stepflow run` and the other agent subcommands own (every flag of the old `run-agent`
 * form); a parameter's flag (its `flag`, else its key) must be none of these. A drift test keeps
 * this list equal to the CLI's own flag table.
 */
export const RESERVED_PARAMETER_FLAGS: ReadonlySet<string> = new Set([
  "agent",
  "list",
  "validate",
  "connect",
  "init",
  "graph",
  "backend",
  "model",
  "base-url",
  "script",
  "fallback-model",
  "max-attempts",
  "max-rate-limit-wait-ms",
  "idle-timeout-ms",
  "no-stream",
  "max-iterations",
  "max-children",
  "budget-usd",
  "budget-tokens",
  "pricing",
  "allow-fallback",
  "allow-run",
  "skip-validators",
  "permission-asks",
  "permission-mode",
  "store",
  "submit",
  "wait",
  "answer",
  "value",
  "request-id",
  "answered-by",
  "resume",
  "rerun-unfinished-call",
  "redrive",
  "runs",
  "show",
  "run-group",
  "record",
  "replay",
  "as-script",
  "json",
  "verbose",
  "help",
  "h",
]);

/** A parameter value after type-checking (`array` parameters give a list). */
export type ParameterValue = string | number | boolean | (string | number)[];

/**
 * The CLI flag of a parameter, without dashes: its `flag`, else its key.
 *
 * @example
 * ```ts
 * import { parameterFlag } from "./parameters.ts";
 * parameterFlag("iterateMax", { type: "number", flag: "iterate-max" }); // "iterate-max"
 * parameterFlag("issue", { type: "number" }); // "issue"
 * ```
 */
export function parameterFlag(key: string, def: ParameterDefinition): string {
  return def.flag ?? key;
}

function typeOk(value: unknown, type: "string" | "number"): boolean {
  return type === "number"
    ? typeof value === "number" && Number.isFinite(value)
    : typeof value === "string";
}

/**
 * Load-time checks of the declared parameters (all problems, each naming the parameter): a flag
 * that is one of the CLI's own flags, two parameters on one flag, a `default` or `enum` value
 * of the wrong type, a default outside the enum, `items`/`enum` where they mean nothing.
 */
export function checkParameters(
  parameters: Readonly<Record<string, ParameterDefinition>>,
  file = "agent.json",
): string[] {
  const problems: string[] = [];
  const byFlag = new Map<string, string>();
  for (const [key, def] of Object.entries(parameters)) {
    const where = `${file}: parameters.${key}`;
    const flag = parameterFlag(key, def);
    if (RESERVED_PARAMETER_FLAGS.has(flag)) {
      problems.push(
        `${where}: its CLI flag --${flag} clashes with the CLI's own --${flag}. Set "flag" to another name (e.g. "flag": "${key}-value"), or rename the parameter.`,
      );
    }
    const other = byFlag.get(flag);
    if (other !== undefined) {
      problems.push(
        `${where}: parameters "${other}" and "${key}" both use the flag --${flag}; give one a different "flag".`,
      );
    } else byFlag.set(flag, key);

    const element = def.type === "array" ? def.items ?? "string" : def.type;
    if (def.items !== undefined && def.type !== "array") {
      problems.push(
        `${where}.items: only an "array" parameter has items; remove it or set "type": "array".`,
      );
    }
    if (def.enum !== undefined) {
      if (element === "boolean") {
        problems.push(`${where}.enum: a boolean parameter takes no enum; remove it.`);
      } else {
        for (const value of def.enum) {
          if (!typeOk(value, element)) {
            problems.push(
              `${where}.enum: ${
                JSON.stringify(value)
              } is not a ${element}; list ${element} values only.`,
            );
          }
        }
      }
    }
    const value = def.default;
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    if (
      def.type === "array"
        ? !Array.isArray(value)
        : Array.isArray(value) || typeof value !== def.type
    ) {
      problems.push(
        `${where}.default ${JSON.stringify(value)} is ${
          Array.isArray(value) ? "a list" : `a ${typeof value}`
        }, but the parameter's type is "${def.type}"; make them agree.`,
      );
      continue;
    }
    for (const v of values) {
      if (def.type === "array" && !typeOk(v, element as "string" | "number")) {
        problems.push(`${where}.default: element ${JSON.stringify(v)} is not a ${element}.`);
      } else if (def.enum && !def.enum.includes(v as string | number)) {
        problems.push(
          `${where}.default ${JSON.stringify(v)} is not one of its enum values (${
            def.enum.map((e) => JSON.stringify(e)).join(", ")
          }).`,
        );
      }
    }
  }
  return problems;
}

/**
 * Parses the text given for a string, number or array parameter on the command line. An array
 * takes every occurrence of its flag, each split on commas — or, when it starts with `[`, read as a
 * JSON array of the parameter's `items` type. Returns the value, or a message saying what is wrong
 * (the CLI turns it into a usage error).
 *
 * @example
 * ```ts
 * import { parseParameterText } from "./parameters.ts";
 * parseParameterText("labels", { type: "array" }, ["a,b", "c"]); // { value: ["a", "b", "c"] }
 * parseParameterText("files", { type: "array" }, ['["a, b.ts"]']); // { value: ["a, b.ts"] }
 * parseParameterText("n", { type: "number", enum: [1, 2] }, ["3"]).error; // "--n must be one of 1, 2 (got 3)."
 * ```
 */
export function parseParameterText(
  flag: string,
  def: ParameterDefinition,
  raw: readonly string[],
): { value: ParameterValue; error?: undefined } | { error: string; value?: undefined } {
  const element = def.type === "array" ? def.items ?? "string" : def.type;
  const values: (string | number)[] = [];
  const texts: string[] = [];
  if (def.type === "array") {
    for (const r of raw) {
      // A JSON array (`--files '["a, b.ts","c.ts"]'`): its elements as they are, commas and all.
      if (r.trimStart().startsWith("[")) {
        const list = jsonList(flag, r, element as "string" | "number");
        if (typeof list === "string") return { error: list };
        values.push(...list);
      } else texts.push(...r.split(",").map((t) => t.trim()).filter((t) => t !== ""));
    }
  } else texts.push(...raw.slice(-1));
  for (const value of values) {
    if (def.enum && !def.enum.includes(value)) {
      return {
        error: `--${flag} must be one of ${def.enum.map((e) => String(e)).join(", ")} (got ${
          JSON.stringify(value)
        }).`,
      };
    }
  }
  for (const text of texts) {
    let value: string | number = text;
    if (element === "number") {
      value = text.trim() === "" ? NaN : Number(text);
      if (!Number.isFinite(value)) {
        return {
          error: `--${flag} expects ${
            def.type === "array" ? "numbers" : "a number"
          }, got "${text}".`,
        };
      }
    }
    if (def.enum && !def.enum.includes(value)) {
      return {
        error: `--${flag} must be one of ${
          def.enum.map((e) => String(e)).join(", ")
        } (got ${text}).`,
      };
    }
    values.push(value);
  }
  return { value: def.type === "array" ? values : values[0] };
}

/** The elements of a JSON array given for an array parameter, or what is wrong with it. */
function jsonList(
  flag: string,
  text: string,
  element: "string" | "number",
): (string | number)[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return `--${flag} starts with "[" but is not a JSON array (${
      (error as Error).message
    }); give a JSON array of ${element}s, or a comma list without the brackets.`;
  }
  if (!Array.isArray(parsed)) return `--${flag} is not a JSON array.`;
  const bad = parsed.find((v) => !typeOk(v, element));
  if (bad !== undefined || parsed.some((v) => v === undefined)) {
    return `--${flag}: the JSON array holds ${
      JSON.stringify(bad)
    }, which is not a ${element}; each element must be a ${element}.`;
  }
  return parsed as (string | number)[];
}
