/**
 * The built-in PlanSpec prompts (`prompts/planspec/*.md`) and their `{{variable}}` substitution.
 * They are read relative to this module, with `Deno.readTextFile` for local files and `fetch` when
 * the module is loaded from a URL (a published package).
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** The prompt templates a plan run and `plan new` use. */
export interface PlanPrompts {
  /** Plan generation from a task description. Variables: `description`. */
  generate: string;
  /** Whole-plan regeneration (`REPLAN ALL`). Variables: `goal`, `reason`, `plan_state`, `history`. */
  regenerate: string;
  /** New children of a container (`REPLAN <id>`). Variables: `goal`, `plan_state`, `step_id`, `step_type`, `description`, `reason`. */
  children: string;
  /** Step execution. Variables: `goal`, `constraints`, `step_id`, `step_type`, `description`, `detail`, `inputs`, `outputs`, `history`, `task_kind`. */
  step: string;
  /** Step reflection. Variables: `goal`, `step_id`, `description`, `status`, `result`, `plan_state`, `can_interact`, `attempt`, `max_attempts`, `history`. */
  reflect: string;
  /** End-of-round re-planning. Variables: `goal`, `round`, `max_rounds`, `issues`, `plan_state`, `history`. */
  replan: string;
}

/** The names of the built-in prompts. */
export const PLAN_PROMPT_NAMES: readonly (keyof PlanPrompts)[] = [
  "generate",
  "regenerate",
  "children",
  "step",
  "reflect",
  "replan",
];

const cache = new Map<string, Promise<string>>();

/**
 * Loads one built-in prompt template.
 *
 * @throws {StepflowError} `PROMPT_NOT_FOUND` when the file cannot be read
 */
export function loadBuiltinPrompt(name: keyof PlanPrompts): Promise<string> {
  let pending = cache.get(name);
  if (!pending) {
    pending = readPrompt(new URL(`../../prompts/planspec/${name}.md`, import.meta.url));
    pending.catch(() => cache.delete(name));
    cache.set(name, pending);
  }
  return pending;
}

async function readPrompt(url: URL): Promise<string> {
  try {
    if (url.protocol === "file:") return await Deno.readTextFile(url);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.text();
  } catch (error) {
    throw new StepflowError(
      "PROMPT_NOT_FOUND",
      `Cannot read the built-in PlanSpec prompt ${url.href}: ${(error as Error).message}`,
      { cause: error, details: { url: url.href } },
    );
  }
}

/**
 * Loads every built-in prompt, replacing those given in `overrides`.
 *
 * @throws {StepflowError} `USAGE` when `overrides` names a prompt that does not exist (`reask`
 * included: every engine re-asks with the one prompt of the engine kit)
 */
export async function loadPlanPrompts(overrides: Partial<PlanPrompts> = {}): Promise<PlanPrompts> {
  const unknown = Object.keys(overrides).filter((name) =>
    !(PLAN_PROMPT_NAMES as readonly string[]).includes(name)
  );
  if (unknown.length > 0) {
    throw new StepflowError(
      "USAGE",
      `prompts: no PlanSpec prompt is named ${unknown.map((n) => `"${n}"`).join(", ")} (known: ${
        PLAN_PROMPT_NAMES.join(", ")
      })${
        unknown.includes("reask")
          ? "; re-asks use the one re-ask prompt every engine shares, which is not a template"
          : ""
      }. Remove it from the prompt overrides.`,
      { details: { unknown: [...unknown] } },
    );
  }
  const entries = await Promise.all(
    PLAN_PROMPT_NAMES.map(async (name) => [name, overrides[name] ?? await loadBuiltinPrompt(name)]),
  );
  return Object.fromEntries(entries) as PlanPrompts;
}

/**
 * Replaces `{{name}}` placeholders in one pass (substituted values are never scanned again).
 *
 * @throws {StepflowError} `PROMPT_VARIABLE` for a placeholder without a value
 *
 * @example
 * ```ts
 * import { fillTemplate } from "./prompts.ts";
 * console.log(fillTemplate("Do {{task}}.", { task: "{{x}}" })); // "Do {{x}}."
 * ```
 */
export function fillTemplate(template: string, variables: Record<string, string>): string {
  return template.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (_m, name: string) => {
    const value = variables[name];
    if (value === undefined) {
      throw new StepflowError(
        "PROMPT_VARIABLE",
        `Prompt template uses {{${name}}}, which has no value (known: ${
          Object.keys(variables).join(", ")
        }).`,
        { details: { variable: name } },
      );
    }
    return value;
  });
}
