/**
 * The built-in PlanSpec prompts (`prompts/planspec/*.md`) and their overrides. They are read and
 * filled (`{variable}`) by the engine kit's one prompt-template code
 * (`src/engine/prompt_template.ts`).
 *
 * @module
 */
import { readBuiltinPrompt } from "../engine/prompt_template.ts";
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

/**
 * Loads one built-in prompt template, `prompts/planspec/<name>.md`.
 *
 * @throws {StepflowError} `PROMPT_NOT_FOUND` when the file cannot be read
 */
export function loadBuiltinPrompt(name: keyof PlanPrompts): Promise<string> {
  return readBuiltinPrompt(`planspec/${name}.md`);
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
