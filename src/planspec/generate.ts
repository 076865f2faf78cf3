import { type AnswerReading, askStructured, rejectAnswer } from "../engine/ask_structured.ts";
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import { StepflowError } from "../errors.ts";
import type { LlmBackend, LlmRequest } from "../llm/types.ts";
import { PlanParseError } from "./errors.ts";
import { parsePlan } from "./parse.ts";
import { loadPlanPrompts, type PlanPrompts } from "./prompts.ts";
import type { PlanSpec } from "./types.ts";
import { planErrors, validatePlan } from "./validate.ts";

/** The step id of plan-generation calls (a scripted backend answers them under this key). */
export const GENERATE_STEP_ID = "planspec.generate";

/**
 * Pulls the plan out of an LLM answer: the content of a fenced block when there is one holding a
 * plan, then everything from the first `# Plan:` / `Goal:` line (or first step line) to the last
 * step or body line. Prose around the plan is dropped.
 *
 * @example
 * ```ts
 * import { extractPlanText } from "./generate.ts";
 * console.log(extractPlanText("Here it is:\nGoal: g\n1. [act] A\nGood luck!"));
 * // "Goal: g\n1. [act] A\n"
 * ```
 */
export function extractPlanText(answer: string): string {
  let text = answer.replace(/\r\n/g, "\n");
  const fenced = [...text.matchAll(/```[^\n]*\n([\s\S]*?)```/g)]
    .find((m) => PLAN_START.test(m[1].split("\n").find((l) => l.trim() !== "") ?? ""));
  if (fenced) text = fenced[1];
  const lines = text.split("\n");
  const start = lines.findIndex((l) => PLAN_START.test(l));
  if (start < 0) return text.trim() === "" ? "" : text.trim() + "\n";
  let end = lines.length - 1;
  while (end > start && !PLAN_BODY.test(lines[end])) end--;
  if (end === start) end = lines.length - 1;
  return lines.slice(start, end + 1).join("\n").trimEnd() + "\n";
}

/** A line that can open a plan: a title, the goal, the steps heading or a step line. */
const PLAN_START = /^\s*(#(?!#)|##\s*steps|(\*\*)?goal(\*\*)?\s*:|\d+(\.\d+)*\.?\s*\[)/i;
/** A line that can close a plan: a step line or a body line. */
const PLAN_BODY = /^\s*(\d+(\.\d+)*\.?\s*\[|>)/;

/** Options of {@linkcode generatePlan}. */
export interface GeneratePlanOptions {
  /** The backend that writes the plan. */
  backend: LlmBackend;
  /** Prompt overrides (default: the built-in `prompts/planspec/*.md`). */
  prompts?: Partial<PlanPrompts>;
  /** Model override. */
  model?: string;
  /** Working directory passed to the backend. */
  cwd?: string;
  /** Cancels the calls. */
  signal?: AbortSignal;
}

/** What {@linkcode generatePlan} produced. */
export interface GeneratedPlan {
  /** The parsed, valid plan. */
  plan: PlanSpec;
  /** The plan text as extracted from the answer. */
  text: string;
  /** Validation warnings (`warn: …`). */
  warnings: string[];
  /** 1, or 2 when the first answer was invalid and the model was re-asked. */
  attempts: number;
}

/**
 * Generates a plan for a task description: one call with the generation prompt, the answer parsed
 * and validated, and one re-ask with the parse or validation errors when it is invalid.
 *
 * @throws {StepflowError} `PLAN_GENERATION_INVALID` when the second answer is still invalid; its
 * `details` hold `errors` and the last answer's `text`, so nothing is lost.
 *
 * @example
 * ```ts
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * import { generatePlan } from "./generate.ts";
 * const backend = new ScriptedBackend({
 *   "planspec.generate": ["# Plan: Demo\nGoal: Say hi\n## Steps\n1. [act] Print a greeting → greeting\n"],
 * });
 * const { plan } = await generatePlan("say hi", { backend });
 * console.log(plan.title); // "Demo"
 * ```
 */
export async function generatePlan(
  description: string,
  options: GeneratePlanOptions,
): Promise<GeneratedPlan> {
  const prompts = await loadPlanPrompts(options.prompts);
  const prompt = renderPromptTemplate(prompts.generate, { description: description.trim() });
  return await requestPlan(prompt, GENERATE_STEP_ID, options);
}

/** Why a plan answer was rejected, as the re-ask says it. */
const PLAN_REJECTED = "your plan is not a valid PlanSpec plan";

/** What the re-ask of a plan-writing call asks for. */
const EXPECTED_PLAN =
  "the whole corrected plan in the PlanSpec format (a `Goal:` line, `## Steps`, step lines)";

/**
 * One plan-writing exchange (generation or `REPLAN ALL` regeneration) on the shared re-ask path:
 * ask, read the plan text, parse and validate it, re-ask once with the errors. Used by
 * {@linkcode generatePlan} and by the plan runner.
 */
export async function requestPlan(
  prompt: string,
  stepId: string,
  options: GeneratePlanOptions & { iteration?: number },
): Promise<GeneratedPlan> {
  const request: LlmRequest = {
    kind: "step",
    agent: "planspec",
    stepId,
    iteration: options.iteration ?? 1,
    prompt,
    cwd: options.cwd ?? Deno.cwd(),
  };
  if (options.model) request.model = options.model;
  // The last answer's every error and text, for the error (the re-ask quotes the first few).
  let errors: string[] = [];
  let text = "";
  const asked = await askStructured({
    request,
    call: (req) => options.backend.complete(req, { signal: options.signal }),
    read: (response): AnswerReading<Omit<GeneratedPlan, "attempts">> => {
      text = extractPlanText(response.text);
      const checked = checkPlanText(text);
      if (checked.plan) {
        return { ok: true, value: { plan: checked.plan, text, warnings: checked.warnings } };
      }
      errors = checked.errors;
      return { ok: false, rejection: rejectAnswer(PLAN_REJECTED, errors) };
    },
    expected: EXPECTED_PLAN,
  });
  if (asked.ok) return { ...asked.value, attempts: asked.reasks + 1 };
  throw new StepflowError(
    "PLAN_GENERATION_INVALID",
    `The generated plan is invalid after a re-ask:\n${errors.map((e) => `  - ${e}`).join("\n")}`,
    { details: { errors, text } },
  );
}

/** Parses and validates plan text: the plan and its warnings, or the errors. */
export function checkPlanText(
  text: string,
): { plan?: PlanSpec; errors: string[]; warnings: string[] } {
  let plan: PlanSpec;
  try {
    plan = parsePlan(text);
  } catch (error) {
    if (error instanceof PlanParseError) return { errors: [error.message], warnings: [] };
    throw error;
  }
  const messages = validatePlan(plan);
  const errors = planErrors(messages);
  const warnings = messages.filter((m) => m.startsWith("warn:"));
  return errors.length > 0 ? { errors, warnings } : { plan, errors, warnings };
}
